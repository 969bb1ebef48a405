/* workerd: Pulls RedisCluster keys from informerd, reconciles their ConfigMap, Service and StatefulSet, reports status.
 *
 * This is the daemon's command-line shell: flags, logging, configuration. Its module
 * (the event loop and the logic) is tracked in the project's issues and lands next to
 * this file; until it does, the daemon refuses to run rather than pretend to.
 */
#include "kube_config.h"
#include "log.h"
#include "opts.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    rdc_common_opts_t c;
    opts_common_defaults(&c);
    opt_t table[OPTS_COMMON_COUNT + 1];
    opts_common_fill(&c, table);
    table[OPTS_COMMON_COUNT] = (opt_t){NULL, OPT_END, NULL, NULL};
    static const char summary[] =
        "Pulls RedisCluster keys from informerd, reconciles their ConfigMap, Service and StatefulSet, reports status.";

    char err[512];
    if (opts_parse(table, argc, argv, NULL, 0, NULL, err, sizeof(err))) {
        fprintf(stderr, "workerd: %s\n", err);
        return 2;
    }
    if (c.help) {
        opts_usage(stdout, "workerd", summary, table);
        return 0;
    }
    if (c.version) {
        printf("workerd %s\n", RDC_VERSION);
        return 0;
    }
    if (opts_apply_logging(&c, "workerd", err, sizeof(err))) {
        fprintf(stderr, "workerd: %s\n", err);
        return 2;
    }
    kube_config_opts_t ko = {.kubeconfig_path = c.kubeconfig, .context = c.context};
    kube_config_t *cfg = NULL;
    if (kube_config_load(&ko, &cfg, err, sizeof(err))) {
        rlog_error("cannot load the Kubernetes configuration", "error", err, NULL);
        return 1;
    }
    const kube_rest_config_t *rc = kube_config_rest(cfg);
    rlog_info("configuration loaded", "server", rc->server, "source", rc->source, NULL);
    rlog_error("not implemented yet: see the project's open issues", NULL);
    kube_config_destroy(&cfg);
    return 3;
}
