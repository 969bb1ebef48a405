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

/* The flags of informerd's own, as read. */
typedef struct {
    int tail, subscribe;
    double reconcile_timeout, watch_timeout, sync_timeout, child_delay;
    int list_page, max_response, max_object;
} own_opts_t;

/* 0 when the flags hold together, else 2 after saying why on stderr. */
static int check_flags(const rdc_common_opts_t *c, const own_opts_t *o)
{
    const char *why = NULL;
    if (c->sync_period <= 0)
        why = "--sync-period must be positive";
    else if (o->list_page < 1 || o->list_page > 10000)
        why = "--list-page-size must be between 1 and 10000";
    else if (o->max_response < 4096 || o->max_object < 4096)
        why = "--max-response-bytes and --max-object-bytes must be at least 4096";
    else if (o->sync_timeout < 0)
        why = "--cache-sync-timeout must not be negative";
    else if (o->child_delay < 0 || o->child_delay > 10)
        why = "--child-enqueue-delay must be between 0 and 10s";
    if (!why)
        return 0;
    fprintf(stderr, "informerd: %s\n", why);
    return 2;
}

/* --subscribe: print the cache and the deltas of the informerd on the runtime dir. */
static int subscribe_run(const rdc_common_opts_t *c)
{
    char dir[4096];
    int fd = daemon_loop_setup(c->runtime_dir, dir, sizeof(dir));
    if (fd < 0)
        return 1;
    int rc = subscriber_run(dir, stdout, fd);
    close(fd);
    return rc;
}

/* Connect, then serve the queue (or --tail) until a signal; the exit code. */
static int serve(rdc_common_opts_t *c, const own_opts_t *o)
{
    kube_config_t *cfg = NULL;
    kube_client_t *client = NULL;
    kube_client_opts_t co = daemon_client_opts("informerd/" RDC_VERSION);
    co.max_retries = 2;
    co.timeout_ms = 60000;
    co.max_response_bytes = (size_t)o->max_response;
    if (daemon_kube_connect(c, &co, &cfg, &client))
        return 1;
    int code = 1;
    char rtdir[4096];
    int sfd = daemon_loop_setup(c->runtime_dir, rtdir, sizeof(rtdir));
    if (sfd >= 0) {
        informer_config_t ic = {
            .client = client,
            .opts = c,
            .runtime_dir = rtdir,
            .name = daemon_child_name("informerd"),
            .tail = o->tail ? stdout : NULL,
            .serve = !o->tail,
            .signal_fd = sfd,
            .reconcile_timeout_s = o->reconcile_timeout,
            .child_enqueue_delay_s = o->child_delay,
            .watch_timeout_s = o->watch_timeout,
            .list_page_size = o->list_page,
            .max_response_bytes = (size_t)o->max_response,
            .max_object_bytes = (size_t)o->max_object,
            .cache_sync_timeout_s = o->sync_timeout,
        };
        rlog_info("informerd started", "version", RDC_VERSION, "server", kube_config_rest(cfg)->server,
                  "mode", o->tail ? "tail" : "serve");
        code = informer_run(&ic);
        close(sfd);
    }
    kube_client_destroy(&client);
    kube_config_destroy(&cfg);
    return code;
}

int main(int argc, char **argv)
{
    rdc_common_opts_t c;
    opts_common_defaults(&c);
    own_opts_t o = {
        .reconcile_timeout = 120,
        .list_page = INFORMER_LIST_PAGE_DEFAULT,
        .max_response = INFORMER_MAX_RESPONSE_DEFAULT,
        .max_object = INFORMER_MAX_OBJECT_DEFAULT,
        .sync_timeout = INFORMER_CACHE_SYNC_TIMEOUT_DEFAULT,
        .child_delay = INFORMER_CHILD_ENQUEUE_DELAY_DEFAULT,
    };
    const opt_t own[] = {
        {"tail", OPT_BOOL, &o.tail, "print every cache change as a JSON line on stdout"},
        {"reconcile-timeout", OPT_DURATION, &o.reconcile_timeout,
         "an item in flight longer than this is taken back from its worker"},
        {"child-enqueue-delay", OPT_DURATION, &o.child_delay,
         "a child's change queues its RedisCluster this much later, so that a burst of them (a pod and its "
         "StatefulSet's status) is one reconcile (client-go's AddAfter; 0 = at once)"},
        {"subscribe", OPT_BOOL, &o.subscribe,
         "print the cache and the delta stream of an informerd running on --runtime-dir"},
        {"watch-timeout", OPT_DURATION, &o.watch_timeout,
         "server-side timeout of each watch (default: random 5 to 10 min, as client-go)"},
        {"list-page-size", OPT_INT, &o.list_page,
         "objects per LIST page (client-go pages by 500); smaller pages lower the memory peak of a relist"},
        {"max-response-bytes", OPT_INT, &o.max_response,
         "cap on one API response (a LIST page): a page over it is asked again smaller"},
        {"max-object-bytes", OPT_INT, &o.max_object,
         "an object larger than this is cached as its metadata only and not reconciled (Warning Event ObjectTooLarge)"},
        {"cache-sync-timeout", OPT_DURATION, &o.sync_timeout,
         "exit 1 when the caches have not synced by then, naming the kinds (as controller-runtime's "
         "CacheSyncTimeout; 0 = wait forever)"},
        {NULL, OPT_END, NULL, NULL},
    };
    /* Accepts every shared flag (the supervisor passes them all), lists those it uses. */
    static const char used[] = "kubeconfig,context,leader-elect,namespace,sync-period,graceful-shutdown-timeout,"
                               "log-level,log-format,kube-api-qps,kube-api-burst,runtime-dir";
    int early = opts_daemon_main("informerd", summary, &c, own, argc, argv, used);
    if (early >= 0)
        return early;
    if (check_flags(&c, &o))
        return 2;
    int code = o.subscribe ? subscribe_run(&c) : serve(&c, &o);
    metrics_default_free();
    return code;
}
