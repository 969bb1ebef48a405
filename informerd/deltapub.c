/* deltapub: the delta stream and its snapshots (Clone pattern). See deltapub.h. */
#include "deltapub.h"

#include "clock.h"
#include "metrics.h"
#include "proto.h"
#include "rmsg.h"

#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

struct deltapub {
    const cache_t *cache;
    void *pub, *snapshot;
    FILE *tail;
    loop_t *loop;               /* attached to, or NULL */
    int hugz_timer;
    metric_family_t *m_deltas;
};

deltapub_t *deltapub_new(const cache_t *cache, void **pub_p, void **snapshot_p, FILE *tail)
{
    deltapub_t *p = calloc(1, sizeof(*p));
    if (p) {
        p->cache = cache;
        p->pub = *pub_p;
        p->snapshot = *snapshot_p;
        p->tail = tail;
        p->m_deltas = metrics_counter(metrics_default(), "informer_deltas_total", "Cache deltas per kind and type.",
                                      "kind,type");
    } else {
        if (*pub_p)
            zmq_close(*pub_p);
        if (*snapshot_p)
            zmq_close(*snapshot_p);
    }
    *pub_p = *snapshot_p = NULL;
    return p;
}

/* One JSON line: {"seq","type","kind","key","resourceVersion","object"}; the object is the
 * cache's text as is. */
static void tail_print(FILE *out, uint64_t seq, const char *type, const cache_item_t *it)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "seq", json_object_new_int64((int64_t)seq));
    json_object_object_add(o, "type", json_object_new_string(type));
    json_object_object_add(o, "kind", json_object_new_string(it->kind));
    json_object_object_add(o, "key", json_object_new_string(it->key));
    const char *rv = it->resource_version ? it->resource_version : "";
    json_object_object_add(o, "resourceVersion", json_object_new_string(rv));
    const char *head = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    /* head ends with '}': splice the object in as the last member. */
    if (head && *head)
        fprintf(out, "%.*s,\"object\":%s}\n", (int)strlen(head) - 1, head, it->json);
    fflush(out);
    json_object_put(o);
}

/* The frames an object travels in after the command (and seq, and type for a delta):
 * kind, key, resourceVersion, object. */
static void add_object(rmsg_t *m, const cache_item_t *it)
{
    rmsg_addstr(m, it->kind);
    rmsg_addstr(m, it->key);
    rmsg_addstr(m, it->resource_version ? it->resource_version : "");
    rmsg_addmem(m, it->json, it->json_len);
}

void deltapub_delta(deltapub_t *p, const cache_delta_t *d)
{
    const cache_item_t *it = d->item;
    const char *type = cache_change_name(d->type);
    metric_counter_add(p->m_deltas, METRIC_LABELS(it->kind, type), 1);
    if (p->pub) {
        rmsg_t *m = rmsg_new();
        rmsg_addstr(m, PROTO_DELTA);
        rmsg_addf(m, "%llu", (unsigned long long)d->seq);
        rmsg_addstr(m, type);
        add_object(m, it);
        rmsg_send(&m, p->pub, ZMQ_DONTWAIT);
    }
    if (p->tail)
        tail_print(p->tail, d->seq, type, it);
}

/* ---- snapshots ---------------------------------------------------------------------- */

typedef struct {
    deltapub_t *p;
    const rmsg_t *id;   /* the asker's routing id */
    uint64_t seq;
} snap_ctx_t;

/* A message to the asker of sc, starting with the command and the snapshot's seq. */
static rmsg_t *snap_msg(const snap_ctx_t *sc, const char *command)
{
    rmsg_t *m = rmsg_new();
    size_t idlen;
    const char *id = rmsg_frame(sc->id, 0, &idlen);
    rmsg_addmem(m, id, idlen);
    rmsg_addstr(m, command);
    rmsg_addf(m, "%llu", (unsigned long long)sc->seq);
    return m;
}

static int snap_visit(void *ud, const cache_item_t *it)
{
    snap_ctx_t *sc = ud;
    rmsg_t *m = snap_msg(sc, PROTO_SNAP);
    add_object(m, it);
    rmsg_send(&m, sc->p->snapshot, 0);
    return 0;
}

/* ICANHAZ: the whole cache, then KTHXBAI with the sequence number it is at. */
static int on_snapshot(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket, (void)fd, (void)revents;
    deltapub_t *p = arg;
    rmsg_t *m;
    while ((m = rmsg_recv(p->snapshot, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, 4096)) != NULL) {
        rmsg_t *id = rmsg_pop_frame_msg(m);
        if (id && rmsg_frame_is(m, 0, PROTO_ICANHAZ)) {
            snap_ctx_t sc = {p, id, cache_seq(p->cache)};
            cache_snapshot(p->cache, NULL, snap_visit, &sc);
            rmsg_t *end = snap_msg(&sc, PROTO_KTHXBAI);
            rmsg_send(&end, p->snapshot, 0);
        }
        rmsg_destroy(&id);
        rmsg_destroy(&m);
    }
    return 0;
}

/* Every heartbeat period: HUGZ with the cache's sequence number. */
static int on_hugz(loop_t *loop, int id, void *arg)
{
    (void)loop, (void)id;
    deltapub_t *p = arg;
    rmsg_t *h = rmsg_new();
    rmsg_addstr(h, PROTO_HUGZ);
    rmsg_addf(h, "%llu", (unsigned long long)cache_seq(p->cache));
    rmsg_send(&h, p->pub, ZMQ_DONTWAIT);
    return 0;
}

int deltapub_attach(deltapub_t *p, loop_t *loop)
{
    p->loop = loop;
    if (p->pub)
        p->hugz_timer = loop_add_timer(loop, 0, PROTO_HEARTBEAT_MS * NS_PER_MS, on_hugz, p);
    if (p->hugz_timer < 0 || (p->snapshot && loop_add_socket(loop, p->snapshot, LOOP_IN, on_snapshot, p)))
        return -1;
    return 0;
}

void deltapub_destroy(deltapub_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    deltapub_t *p = *self_p;
    if (p->loop) {
        if (p->snapshot)
            loop_remove_socket(p->loop, p->snapshot);
        if (p->hugz_timer > 0)
            loop_cancel_timer(p->loop, p->hugz_timer);
    }
    if (p->pub)
        zmq_close(p->pub);
    if (p->snapshot)
        zmq_close(p->snapshot);
    free(p);
    *self_p = NULL;
}
