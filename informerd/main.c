/* informerd: lists and watches RedisClusters and the objects the operator owns, keeps
 * the cache and the work queue, and publishes every change over ZeroMQ.
 *
 *   informerd [flags]          serve the work queue and the delta stream (under supervisor)
 *   informerd --tail [flags]   alone: print every cache change as a JSON line
 */
#include "daemon.h"
#include "informer.h"
#include "subscriber.h"
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
    "Lists and watches RedisClusters and the ConfigMaps, Services, StatefulSets, PDBs and Pods the\n"
    "operator owns, keeps the cache and the work queue (client-go semantics), dispatches\n"
    "keys to workerd processes while this replica leads, and publishes every cache change\n"
    "over ZeroMQ. --tail prints the changes as JSON lines: the operator's view while you\n"
    "debug on a laptop, with no supervisor and no workers. --subscribe prints the cache\n"
    "and the live deltas of an informerd that runs on --runtime-dir (the Clone pattern).";

int main(int argc, char **argv)
{
    rdc_common_opts_t c;
    opts_common_defaults(&c);
    int tail = 0, subscribe = 0;
    double reconcile_timeout = 120, watch_timeout = 0;
    int list_page = INFORMER_LIST_PAGE_DEFAULT;
    int max_response = INFORMER_MAX_RESPONSE_DEFAULT, max_object = INFORMER_MAX_OBJECT_DEFAULT;
    double sync_timeout = INFORMER_CACHE_SYNC_TIMEOUT_DEFAULT;
    opt_t table[OPTS_COMMON_COUNT + 9];
    opts_common_fill(&c, table);
    table[OPTS_COMMON_COUNT] = (opt_t){"tail", OPT_BOOL, &tail,
                                       "print every cache change as a JSON line on stdout"};
    table[OPTS_COMMON_COUNT + 1] = (opt_t){"reconcile-timeout", OPT_DURATION, &reconcile_timeout,
                                           "an item in flight longer than this is taken back from its worker"};
    table[OPTS_COMMON_COUNT + 2] = (opt_t){"subscribe", OPT_BOOL, &subscribe,
                                           "print the cache and the delta stream of an informerd running on --runtime-dir"};
    table[OPTS_COMMON_COUNT + 3] = (opt_t){"watch-timeout", OPT_DURATION, &watch_timeout,
                                           "server-side timeout of each watch (default: random 5 to 10 min, as client-go)"};
    table[OPTS_COMMON_COUNT + 4] = (opt_t){"list-page-size", OPT_INT, &list_page,
                                           "objects per LIST page (client-go pages by 500); smaller pages lower the memory peak of a relist"};
    table[OPTS_COMMON_COUNT + 5] = (opt_t){"max-response-bytes", OPT_INT, &max_response,
                                           "cap on one API response (a LIST page): a page over it is asked again smaller"};
    table[OPTS_COMMON_COUNT + 6] = (opt_t){"max-object-bytes", OPT_INT, &max_object,
                                           "an object larger than this is cached as its metadata only and not reconciled (Warning Event ObjectTooLarge)"};
    table[OPTS_COMMON_COUNT + 7] = (opt_t){"cache-sync-timeout", OPT_DURATION, &sync_timeout,
                                           "exit 1 when the caches have not synced by then, naming the kinds (as controller-runtime's CacheSyncTimeout; 0 = wait forever)"};
    table[OPTS_COMMON_COUNT + 8] = (opt_t){NULL, OPT_END, NULL, NULL};
    /* Accepts every shared flag (the supervisor passes them all), lists those it uses. */
    opts_common_select(table, "kubeconfig,context,leader-elect,namespace,sync-period,graceful-shutdown-timeout,log-level,log-format,kube-api-qps,kube-api-burst,runtime-dir");
    int early = opts_main("informerd", summary, table, &c, argc, argv, NULL, 0, NULL);
    if (early >= 0)
        return early;
    if (c.sync_period <= 0) {
        fprintf(stderr, "informerd: --sync-period must be positive\n");
        return 2;
    }
    if (list_page < 1 || list_page > 10000) {
        fprintf(stderr, "informerd: --list-page-size must be between 1 and 10000\n");
        return 2;
    }
    if (max_response < 4096 || max_object < 4096) {
        fprintf(stderr, "informerd: --max-response-bytes and --max-object-bytes must be at least 4096\n");
        return 2;
    }
    if (sync_timeout < 0) {
        fprintf(stderr, "informerd: --cache-sync-timeout must not be negative\n");
        return 2;
    }
    if (subscribe) {
        char dir[4096];
        int fd = daemon_loop_setup(c.runtime_dir, dir, sizeof(dir));
        if (fd < 0)
            return 1;
        int rc = subscriber_run(dir, stdout, fd);
        close(fd);
        return rc;
    }
    kube_config_t *cfg = NULL;
    kube_client_t *client = NULL;
    kube_client_opts_t co;
    kube_client_opts_init(&co);
    co.user_agent = "informerd/" RDC_VERSION;
    co.max_retries = 2;
    co.timeout_ms = 60000;
    co.max_response_bytes = (size_t)max_response;
    if (daemon_kube_connect(&c, &co, &cfg, &client))
        return 1;
    int code = 1;
    int sfd = -1;
    char rtdir[4096];
    if ((sfd = daemon_loop_setup(c.runtime_dir, rtdir, sizeof(rtdir))) < 0)
        goto out;
    const char *name = getenv("RDC_CHILD_NAME");
    informer_config_t ic = {
        .client = client,
        .opts = &c,
        .runtime_dir = rtdir,
        .name = name && *name ? name : "informerd",
        .tail = tail ? stdout : NULL,
        .serve = !tail,
        .signal_fd = sfd,
        .reconcile_timeout_s = reconcile_timeout,
        .watch_timeout_s = watch_timeout,
        .list_page_size = list_page,
        .max_response_bytes = (size_t)max_response,
        .max_object_bytes = (size_t)max_object,
        .cache_sync_timeout_s = sync_timeout,
    };
    rlog_info("informerd started", "version", RDC_VERSION, "server", kube_config_rest(cfg)->server,
              "mode", tail ? "tail" : "serve");
    code = informer_run(&ic);
out:
    if (sfd >= 0)
        close(sfd);
    kube_client_destroy(&client);
    kube_config_destroy(&cfg);
    metrics_default_free();
    return code;
}
