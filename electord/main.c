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
    opt_t table[OPTS_COMMON_COUNT + 2];
    opts_common_fill(&c, table);
    table[OPTS_COMMON_COUNT] = (opt_t){"no-publish", OPT_BOOL, &standalone,
                                       "do not bind the leader socket (several electords on one runtime dir)"};
    table[OPTS_COMMON_COUNT + 1] = (opt_t){NULL, OPT_END, NULL, NULL};
    char err[1024];
    if (opts_parse(table, argc, argv, NULL, 0, NULL, err, sizeof(err))) {
        fprintf(stderr, "electord: %s\n", err);
        return 2;
    }
    if (c.help) {
        opts_usage(stdout, "electord", summary, table);
        return 0;
    }
    if (c.version) {
        printf("electord %s\n", RDC_VERSION);
        return 0;
    }
    if (opts_apply_logging(&c, "electord", err, sizeof(err))) {
        fprintf(stderr, "electord: %s\n", err);
        return 2;
    }
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
        kube_client_opts_t co;
        kube_client_opts_init(&co);
        co.user_agent = "electord/" RDC_VERSION;
        /* One retry period per request, no retries: a late answer is worth nothing. */
        co.timeout_ms = (int64_t)(c.retry_period * 1000);
        co.connect_timeout_ms = co.timeout_ms;
        co.max_retries = 0;
        if (daemon_kube_connect(&c, &co, &cfg, &client))
            return 1;
        if (!ns)
            ns = kube_config_rest(cfg)->namespace_;
    }
    if (daemon_runtime_dir(c.runtime_dir, rtdir, sizeof(rtdir), err, sizeof(err))) {
        rlog_error("cannot use the runtime directory", "error", err);
        goto out;
    }
    sfd = daemon_signalfd(err, sizeof(err));
    if (sfd < 0) {
        rlog_error("cannot set up signals", "error", err);
        goto out;
    }
    const char *name = getenv("RDC_CHILD_NAME");
    elector_config_t ec = {
        .client = client,
        .opts = &c,
        .ns = ns ? ns : "default",
        .runtime_dir = rtdir,
        .name = name && *name ? name : "electord",
        .publish = !standalone,
        .signal_fd = sfd,
    };
    code = elector_run(&ec);
out:
    if (sfd >= 0)
        close(sfd);
    kube_client_destroy(&client);
    kube_config_destroy(&cfg);
    metrics_default_free();
    return code;
}
