/* elector: electord's event loop around the pure election machine (election.h).
 *
 * It GETs the Lease when an attempt is due, steps the machine, performs the write it asks
 * for (POST, or PUT with the resourceVersion read), reports the outcome, and publishes
 * the leadership state on the leader PUB socket on every change and every retry period:
 *   LEADER is_leader holder transitions epoch valid_until_mono_ms
 * valid_until is the machine's fence deadline (CLOCK_MONOTONIC ms on this host): the
 * workers of this replica refuse to write past it unless a newer message extends it.
 * Every API request has a timeout of one retry period, so no request of ours can land
 * long after we stopped believing we lead. On SIGTERM a leader releases the Lease
 * (client-go's ReleaseOnCancel) before exiting 0.
 *
 * With leader election off it publishes is_leader 1, epoch 0 and a validity far in the
 * future, and touches no Lease: every replica acts, as controller-runtime does.
 */
#ifndef RDC_ELECTOR_H
#define RDC_ELECTOR_H

#include "kube_client.h"
#include "opts.h"

typedef struct {
    kube_client_t *client;          /* its timeout should be <= one retry period */
    const rdc_common_opts_t *opts;
    const char *ns;                 /* namespace of the Lease */
    const char *runtime_dir;
    const char *name;               /* for the metrics file */
    int publish;                    /* 1: bind the leader PUB socket */
    int signal_fd;
} elector_config_t;

/* Run until SIGTERM/SIGINT. Returns the exit code. */
int elector_run(const elector_config_t *cfg);

#endif
