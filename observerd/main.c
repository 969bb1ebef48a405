/* observerd: the Redis observer. Keeps a connection to every Redis pod of the clusters
 * informerd caches, PINGs and reads INFO replication every second, and tells informerd
 * (which queues a reconcile) when a node's reachability, role, primary or link changes.
 * It decides nothing.
 *
 *   observerd [flags]                     under the supervisor, beside informerd
 *   observerd --once NAMESPACE/NAME       alone: one observation of a cluster's pods, as JSON
 */
#include "daemon.h"
#include "kube_client.h"
#include "kube_config.h"
#include "log.h"
#include "observer.h"
#include "opts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char summary[] =
    "The Redis observer. Follows informerd's cache (snapshot, then deltas) for the\n"
    "RedisClusters and their pods, keeps one connection per Redis pod, PINGs it and reads\n"
    "INFO replication every --probe-interval (bounded by --probe-timeout), authenticating\n"
    "with the password of spec.auth.secretRef, and sends informerd an observation (which\n"
    "queues a reconcile) when a node's reachability, role, primary or link changes, and\n"
    "every second while a primary is unreachable. Exposes rdc_redis_* and redis_exporter's\n"
    "redis_* metrics per pod. --once NAMESPACE/NAME reads a cluster's pods from the API,\n"
    "probes each once and prints the observation as JSON: no informerd needed.";

int main(int argc, char **argv)
{
    rdc_common_opts_t c;
    opts_common_defaults(&c);
    const char *once = NULL;
    double interval = OBSERVER_PROBE_INTERVAL_DEFAULT, timeout = OBSERVER_PROBE_TIMEOUT_DEFAULT;
    int info_every = OBSERVER_INFO_EVERY_DEFAULT, port = 6379, no_kube = 0;
    const opt_t own[] = {
        {"once", OPT_STRING, &once, "observe the pods of RedisCluster NAMESPACE/NAME once, print JSON, exit"},
        {"probe-interval", OPT_DURATION, &interval, "how often each Redis pod is probed (PING + INFO replication)"},
        {"probe-timeout", OPT_DURATION, &timeout, "a probe not answered within this counts as unreachable"},
        {"info-every", OPT_INT, &info_every, "read every default INFO section (the redis_* metrics) every N probes"},
        {"redis-port", OPT_INT, &port, "the port Redis listens on in each pod"},
        {"no-kube", OPT_BOOL, &no_kube,
         "do not talk to the API server (no Secrets: clusters with auth are probed "
         "without a password); for tests"},
        {NULL, OPT_END, NULL, NULL},
    };
    /* Accepts every shared flag (the supervisor passes them all), lists those it uses. */
    int early = opts_daemon_main("observerd", summary, &c, own, argc, argv,
                                 "kubeconfig,context,log-level,log-format,kube-api-qps,kube-api-burst,runtime-dir");
    if (early >= 0)
        return early;
    if (interval <= 0 || timeout <= 0 || timeout >= interval) {
        fprintf(stderr, "observerd: need 0 < --probe-timeout < --probe-interval\n");
        return 2;
    }
    if (info_every < 0 || port < 1 || port > 65535) {
        fprintf(stderr, "observerd: --info-every must be >= 0 and --redis-port 1..65535\n");
        return 2;
    }
    kube_config_t *cfg = NULL;
    kube_client_t *client = NULL;
    kube_client_opts_t co = daemon_client_opts("observerd/" RDC_VERSION);
    co.timeout_ms = 10000;
    int code = 1, sfd = -1;
    char rtdir[4096];
    if (once) {
        const char *slash = strchr(once, '/');
        if (!slash || slash == once || !slash[1] || strchr(slash + 1, '/')) {
            fprintf(stderr, "observerd: --once wants NAMESPACE/NAME, got \"%s\"\n", once);
            return 2;
        }
        char ns[254];
        snprintf(ns, sizeof(ns), "%.*s", (int)(slash - once), once);
        if (daemon_kube_connect(&c, &co, &cfg, &client))
            return 1;
        code = observer_once(client, ns, slash + 1, port, (int64_t)(timeout * 1e9), stdout);
        goto out;
    }
    if (!no_kube && daemon_kube_connect(&c, &co, &cfg, &client))
        return 1;
    if ((sfd = daemon_loop_setup(c.runtime_dir, rtdir, sizeof(rtdir))) < 0)
        goto out;
    const char *name = getenv("RDC_CHILD_NAME");
    observer_config_t oc = {
        .client = client,
        .opts = &c,
        .runtime_dir = rtdir,
        .name = name && *name ? name : "observerd",
        .signal_fd = sfd,
        .probe_interval_ns = (int64_t)(interval * 1e9),
        .probe_timeout_ns = (int64_t)(timeout * 1e9),
        .info_every = info_every,
        .redis_port = port,
    };
    code = observer_run(&oc);
out:
    daemon_release(sfd, &client, &cfg);
    return code;
}
