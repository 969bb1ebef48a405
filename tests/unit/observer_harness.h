/* observer_harness: observerd's whole loop (observer_run, in a child process) with the
 * test playing informerd: it binds the deltas PUB, the snapshot ROUTER and the observe
 * PULL of a runtime directory of its own, answers every snapshot request with the items
 * the test set (h->items, sent with sequence number h->seq), publishes deltas, and reads
 * what observerd sends and its metrics file (<dir>/metrics/observerd-test.prom); with
 * h->log_to_file its log goes to <dir>/observerd.log (oh_log_count) instead of stderr;
 * with h->api_port it reads Secrets from a fake API server on that port (fake_api.h).
 * Static helpers: include in one test file. */
#ifndef RDC_TEST_OBSERVER_HARNESS_H
#define RDC_TEST_OBSERVER_HARNESS_H

#include "clock.h"
#include "daemon.h"
#include "kube_client.h"
#include "kube_config.h"
#include "observer.h"
#include "proto.h"
#include "rmsg.h"
#include "tmpdir.h"

#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

typedef struct {
    const char *kind, *key, *json;
} oh_item_t;

typedef struct {
    char dir[128];
    void *zctx, *pub, *router, *pull;
    pid_t child;
    uint64_t seq;
    const oh_item_t *items;  /* the snapshot (the test's, may change between snapshots) */
    size_t nitems;
    int log_to_file;         /* observerd's stderr to <dir>/observerd.log */
    int api_port;            /* > 0: observerd reads Secrets from a fake API server there */
} oh_t;

/* In observerd's child: a client of the fake API server at port (token auth) with its
 * configuration in *cfg, or NULL. */
static inline kube_client_t *oh_api_client(int port, kube_config_t **cfg)
{
    char yaml[1024], err[256];
    snprintf(yaml, sizeof(yaml),
             "apiVersion: v1\nkind: Config\nclusters:\n- name: f\n  cluster: {server: http://127.0.0.1:%d}\n"
             "contexts:\n- name: f\n  context: {cluster: f, user: u}\ncurrent-context: f\n"
             "users:\n- name: u\n  user: {token: t}\n",
             port);
    *cfg = NULL;
    if (port <= 0 || kube_config_load_buffer(yaml, strlen(yaml), "test", NULL, cfg, err, sizeof(err)))
        return NULL;
    kube_client_opts_t o;
    kube_client_opts_init(&o);
    o.qps = 0;
    return kube_client_new(*cfg, &o, NULL);
}

static inline void *oh_bind(oh_t *h, int type, const char *name)
{
    char ep[256];
    void *s = zmq_socket(h->zctx, type);
    int linger = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof(linger));
    if (zmq_bind(s, daemon_endpoint(h->dir, name, ep, sizeof(ep)))) {
        zmq_close(s);
        return NULL;
    }
    return s;
}

/* Make the runtime directory /tmp/rdc-<tag>-<pid>, fork observerd (probing port) and
 * bind the sockets. Call it before this process makes a ZeroMQ context of its own.
 * Returns 0, or 1 when something could not be set up. */
static inline int oh_start(oh_t *h, const char *tag, int port)
{
    snprintf(h->dir, sizeof(h->dir), "/tmp/rdc-%s-%d", tag, (int)getpid());
    char mdir[160];
    snprintf(mdir, sizeof(mdir), "%s/metrics", h->dir);
    mkdir(h->dir, 0700);
    mkdir(mdir, 0700);
    /* Fork before this process makes its ZeroMQ context (and its threads): the child
     * connects, and ZeroMQ reconnects once the binds below exist. */
    h->child = fork();
    if (h->child == 0) {
        char err[128], log[200];
        snprintf(log, sizeof(log), "%s/observerd.log", h->dir);
        int fd = h->log_to_file ? open(log, O_WRONLY | O_CREAT | O_APPEND, 0600) : -1;
        if (fd >= 0) {
            dup2(fd, 2);
            close(fd);
        }
        int sfd = daemon_signalfd(err, sizeof(err));
        rdc_common_opts_t opts;
        opts_common_defaults(&opts);
        kube_config_t *kcfg = NULL;
        kube_client_t *client = oh_api_client(h->api_port, &kcfg);
        observer_config_t cfg = {
            .client = client,
            .opts = &opts,
            .runtime_dir = h->dir,
            .name = "observerd-test",
            .signal_fd = sfd,
            .probe_interval_ns = NS_PER_SEC,
            .probe_timeout_ns = 500 * NS_PER_MS,
            .info_every = 5,
            .redis_port = port,
        };
        int code = observer_run(&cfg);
        kube_client_destroy(&client);
        kube_config_destroy(&kcfg);
        exit(code); /* exit, not _exit: LeakSanitizer checks the daemon */
    }
    h->zctx = zmq_ctx_new();
    h->pub = oh_bind(h, ZMQ_PUB, PROTO_EP_DELTAS);
    h->router = oh_bind(h, ZMQ_ROUTER, PROTO_EP_SNAPSHOT);
    h->pull = oh_bind(h, ZMQ_PULL, PROTO_EP_OBSERVE);
    if (!h->pub || !h->router || !h->pull)
        return 1;
    return h->child > 0 ? 0 : 1;
}

/* Kill observerd (if still running), close the sockets, remove the directory. */
static inline void oh_stop(oh_t *h)
{
    if (h->child > 0) {
        kill(h->child, SIGKILL);
        waitpid(h->child, NULL, 0);
    }
    h->child = 0;
    void *socks[] = {h->pub, h->router, h->pull};
    for (size_t i = 0; i < 3; i++)
        if (socks[i])
            zmq_close(socks[i]);
    h->pub = h->router = h->pull = NULL;
    if (h->zctx)
        zmq_ctx_term(h->zctx);
    h->zctx = NULL;
    (void)tmpdir_remove(h->dir);
}

/* SIGTERM observerd and reap it: 1 when it exited with 0 (under the sanitizers,
 * LeakSanitizer has then checked it), 0 otherwise. */
static inline int oh_sigterm(oh_t *h)
{
    kill(h->child, SIGTERM);
    int status = 0;
    pid_t got = waitpid(h->child, &status, 0);
    int ok = got == h->child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    h->child = 0;
    return ok;
}

/* Answer the snapshot requests waiting, each with h->items. */
static inline void oh_answer_snapshot(oh_t *h)
{
    rmsg_t *m;
    while ((m = rmsg_recv(h->router, ZMQ_DONTWAIT, 8, 1 << 20)) != NULL) {
        size_t idlen = 0;
        const char *id = rmsg_frame(m, 0, &idlen);
        if (rmsg_frame_is(m, 1, PROTO_ICANHAZ)) {
            for (size_t i = 0; i < h->nitems; i++) {
                rmsg_t *r = rmsg_new();
                rmsg_addmem(r, id, idlen);
                rmsg_addstr(r, PROTO_SNAP);
                rmsg_addf(r, "%llu", (unsigned long long)h->seq);
                rmsg_addstr(r, h->items[i].kind);
                rmsg_addstr(r, h->items[i].key);
                rmsg_addstr(r, "1");
                rmsg_addstr(r, h->items[i].json);
                rmsg_send(&r, h->router, 0);
            }
            rmsg_t *r = rmsg_new();
            rmsg_addmem(r, id, idlen);
            rmsg_addstr(r, PROTO_KTHXBAI);
            rmsg_addf(r, "%llu", (unsigned long long)h->seq);
            rmsg_send(&r, h->router, 0);
        }
        rmsg_destroy(&m);
    }
}

/* The next OBSERVED within ms (answering snapshot requests meanwhile), parsed; NULL when
 * none came. *key gets its key. */
static inline json_object *oh_next_observed(oh_t *h, int ms, char *key, size_t keycap)
{
    int64_t end = clock_mono_ns() + (int64_t)ms * NS_PER_MS;
    while (clock_mono_ns() < end) {
        zmq_pollitem_t it[2] = {{h->pull, 0, ZMQ_POLLIN, 0}, {h->router, 0, ZMQ_POLLIN, 0}};
        zmq_poll(it, 2, 50);
        oh_answer_snapshot(h);
        rmsg_t *m = rmsg_recv(h->pull, ZMQ_DONTWAIT, 8, 1 << 20);
        if (!m)
            continue;
        json_object *o = NULL;
        if (rmsg_frame_is(m, 0, PROTO_OBSERVED) && rmsg_size(m) == 3) {
            char *k = rmsg_strdup(m, 1);
            snprintf(key, keycap, "%s", k ? k : "");
            free(k);
            char *text = rmsg_strdup(m, 2);
            o = text ? json_tokener_parse(text) : NULL;
            free(text);
        }
        rmsg_destroy(&m);
        if (o)
            return o;
    }
    return NULL;
}

/* Publish DELTA seq type kind key rv json (seq: the next one). */
static inline void oh_delta(oh_t *h, const char *type, const char *kind, const char *key, const char *json)
{
    rmsg_t *d = rmsg_new();
    rmsg_addstr(d, PROTO_DELTA);
    rmsg_addf(d, "%llu", (unsigned long long)++h->seq);
    rmsg_addstr(d, type);
    rmsg_addstr(d, kind);
    rmsg_addstr(d, key);
    rmsg_addstr(d, "2");
    rmsg_addstr(d, json);
    rmsg_send(&d, h->pub, 0);
}

/* The node of observation obs for pod, or NULL. */
static inline json_object *oh_node_of(json_object *obs, const char *pod)
{
    json_object *nodes = NULL;
    json_object_object_get_ex(obs, "nodes", &nodes);
    for (size_t i = 0; i < json_object_array_length(nodes); i++) {
        json_object *n = json_object_array_get_idx(nodes, i), *p = NULL;
        if (json_object_object_get_ex(n, "pod", &p) && strcmp(json_object_get_string(p), pod) == 0)
            return n;
    }
    return NULL;
}

static inline const char *oh_str(json_object *n, const char *f)
{
    json_object *v = NULL;
    return json_object_object_get_ex(n, f, &v) ? json_object_get_string(v) : "";
}

static inline int64_t oh_int(json_object *n, const char *f)
{
    json_object *v = NULL;
    return json_object_object_get_ex(n, f, &v) ? json_object_get_int64(v) : -999;
}

/* How many lines of observerd's log (log_to_file) contain every one of the strings
 * needles[0..n). */
static inline int oh_log_count(const oh_t *h, const char *const *needles, size_t n)
{
    char path[200], line[4096];
    snprintf(path, sizeof(path), "%s/observerd.log", h->dir);
    FILE *f = fopen(path, "r");
    int count = 0;
    while (f && fgets(line, sizeof(line), f)) {
        size_t i = 0;
        while (i < n && strstr(line, needles[i]))
            i++;
        count += i == n;
    }
    if (f)
        fclose(f);
    return count;
}

/* The value of the metric line starting with prefix in observerd's metrics file, or -1. */
static inline double oh_metric(const oh_t *h, const char *prefix)
{
    char path[256], line[1024];
    snprintf(path, sizeof(path), "%s/metrics/observerd-test.prom", h->dir);
    FILE *f = fopen(path, "r");
    double v = -1;
    while (f && fgets(line, sizeof(line), f)) {
        if (strncmp(line, prefix, strlen(prefix)) == 0) {
            v = strtod(line + strlen(prefix), NULL);
            break;
        }
    }
    if (f)
        fclose(f);
    return v;
}

#endif
