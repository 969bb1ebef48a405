/* electord: holds the coordination.k8s.io/v1 Lease so that only one replica of the
 * operator acts, and publishes the leadership state to the other daemons.
 *
 *   electord --kubeconfig ... --leader-elect --leader-election-id x
 * campaigns and logs every transition; start a second one beside it to see who leads.
 */
#include "daemon.h"
#include "elector.h"
#include "kube_client.h"
#include "kube_config.h"
#include "log.h"
#include "metrics.h"
#include "opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char summary[] =
    "Campaigns for the Lease named by --leader-election-id with client-go's semantics\n"
    "(expiry judged by our own monotonic clock, optimistic concurrency, release on\n"
    "shutdown) and publishes is_leader, the epoch and a write deadline to the workers.\n"
    "Alone, it logs every transition: run two to see who leads.";

int main(int argc, char **argv)
{
    rdc_common_opts_t c;
    opts_common_defaults(&c);
    int standalone = 0;
    const opt_t own[] = {
        {"no-publish", OPT_BOOL, &standalone,
         "do not bind the leader socket (several electords on one runtime dir)"},
        {NULL, OPT_END, NULL, NULL},
    };
    /* Accepts every shared flag (the supervisor passes them all), lists those it uses. */
    int early = opts_daemon_main("electord", summary, &c, own, argc, argv,
                                 "kubeconfig,context,leader-elect,leader-election-id,"
                                 "leader-election-namespace,leader-election-lease-duration,"
                                 "leader-election-renew-deadline,leader-election-retry-period,"
                                 "log-level,log-format,kube-api-qps,kube-api-burst,runtime-dir");
    if (early >= 0)
        return early;
    /* client-go's checks: duration > deadline > 1.2 x period, all positive. */
    if (c.leader_elect && !(c.lease_duration > c.renew_deadline &&
                            c.renew_deadline > 1.2 * c.retry_period && c.retry_period > 0)) {
        fprintf(stderr, "electord: need --leader-election-lease-duration > "
                        "--leader-election-renew-deadline > 1.2 x --leader-election-retry-period > 0 "
                        "(got %gs, %gs, %gs)\n", c.lease_duration, c.renew_deadline, c.retry_period);
        return 2;
    }
    kube_config_t *cfg = NULL;
    kube_client_t *client = NULL;
    int code = 1, sfd = -1;
    char rtdir[4096];
    const char *ns = c.leader_election_namespace;
    if (c.leader_elect) {
        kube_client_opts_t co = daemon_client_opts("electord/" RDC_VERSION);
        /* One retry period per request, no retries: a late answer is worth nothing. */
        co.timeout_ms = (int64_t)(c.retry_period * 1000);
        co.connect_timeout_ms = co.timeout_ms;
        co.max_retries = 0;
        if (daemon_kube_connect(&c, &co, &cfg, &client))
            return 1;
        if (!ns)
            ns = kube_config_rest(cfg)->namespace_;
    }
    if ((sfd = daemon_loop_setup(c.runtime_dir, rtdir, sizeof(rtdir))) < 0)
        goto out;
    elector_config_t ec = {
        .client = client,
        .opts = &c,
        .ns = ns ? ns : "default",
        .runtime_dir = rtdir,
        .name = daemon_child_name("electord"),
        .publish = !standalone,
        .signal_fd = sfd,
    };
    code = elector_run(&ec);
out:
    daemon_release(sfd, &client, &cfg);
    return code;
}
