/* backupgauge: the gauges of backups. See backupgauge.h. */
#include "backupgauge.h"

#include "buf.h"
#include "clock.h"
#include "hash.h"
#include "hashmap.h"
#include "jsonx.h"
#include "rdc_api.h"
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

#define NS_PER_S INT64_C(1000000000)
#define RB_KIND "RedisBackup"
#define SCHEDULE_LABEL "cache.example.com/schedule"

/* What one cluster shows; -1: absent. */
typedef struct {
    char *key;             /* "namespace/name", the map's key */
    char *ns, *name;       /* the labels (one allocation with key) */
    uint64_t schedule;     /* hash_fnv of spec.backup.schedule when cron_parse took it, else 0 */
    cron_t cron;
    int64_t period, period_at; /* cron_period, and when (wall seconds) it was computed */
    int64_t success_ts, success_size, waiting_since;
} cluster_t;

struct backupgauge {
    const cache_t *cache;
    hm_t *clusters; /* key -> cluster_t: the clusters with series */
    hm_t *dirty;    /* key -> the key itself (malloc'd): to compute again */
    metric_family_t *m_success, *m_size, *m_period, *m_waiting;
};

backupgauge_t *backupgauge_new(const cache_t *cache, metrics_registry_t *reg)
{
    backupgauge_t *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->cache = cache;
    g->clusters = hm_new(0);
    g->dirty = hm_new(0);
    static const char l[] = "namespace,rediscluster";
    g->m_success = metrics_gauge(reg, "rdc_backup_last_success_timestamp_seconds",
                                 "The latest status.completionTime of the cluster's Succeeded RedisBackups.", l);
    g->m_size = metrics_gauge(reg, "rdc_backup_last_success_size_bytes",
                              "status.size of the cluster's latest Succeeded RedisBackup.", l);
    g->m_period = metrics_gauge(reg, "rdc_backup_schedule_period_seconds",
                                "spec.backup.schedule's period: the longest interval between its fire times "
                                "in the coming week.",
                                l);
    g->m_waiting = metrics_gauge(reg, "rdc_backup_schedule_waiting_since_timestamp_seconds",
                                 "A schedule without a Succeeded RedisBackup: the creationTimestamp of the oldest "
                                 "RedisBackup it made.",
                                 l);
    if (!g->clusters || !g->dirty || !g->m_success || !g->m_size || !g->m_period || !g->m_waiting)
        backupgauge_destroy(&g);
    return g;
}

void backupgauge_destroy(backupgauge_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    backupgauge_t *g = *self_p;
    hm_destroy_with(&g->clusters, free); /* a cluster_t and its strings are one allocation */
    hm_destroy_with(&g->dirty, free);
    free(g);
    *self_p = NULL;
}

void backupgauge_on_delta(backupgauge_t *g, const cache_delta_t *d)
{
    const cache_item_t *it = d->item;
    int rb = !strcmp(it->kind, RB_KIND);
    if ((!rb && strcmp(it->kind, RDC_KIND)) || (d->type == CACHE_MODIFIED && d->unread_only))
        return;
    char key[512];
    if (cache_item_owner_key(g->cache, it, key, sizeof(key)) || !key[0] || hm_get(g->dirty, key))
        return;
    char *copy = strdup(key);
    if (copy && hm_put(g->dirty, copy, copy, NULL))
        free(copy);
}

/* ---- one cluster's values -------------------------------------------------------------- */

/* Unix seconds of the RFC 3339 time s, or -1 when s is not one. */
static int64_t seconds_of(const char *s)
{
    int64_t ns;
    return s && clock_parse_rfc3339(s, &ns) == 0 ? ns / NS_PER_S : -1;
}

/* The latest success and the oldest of the schedule's backups (name: the cluster's) of
 * rbs, a JSON array, into c. */
static void scan_backups(cluster_t *c, const json_object *rbs)
{
    int64_t oldest = -1;
    c->success_ts = c->success_size = c->waiting_since = -1;
    for (size_t i = 0; i < jsonx_len(rbs); i++) {
        const json_object *rb = json_object_array_get_idx(rbs, i), *st = jsonx_get(rb, "status");
        int64_t t;
        if (jsonx_str_is(st, "phase", "Succeeded")) {
            if ((t = seconds_of(jsonx_str(st, "completionTime"))) > c->success_ts) {
                c->success_ts = t;
                c->success_size = jsonx_int_or(st, "size", -1);
            }
        } else if (jsonx_str_is(JSONX_AT(rb, "metadata", "labels"), SCHEDULE_LABEL, c->name) &&
                   (t = seconds_of(JSONX_STR_AT(rb, "metadata", "creationTimestamp"))) >= 0 &&
                   (oldest < 0 || t < oldest)) {
            oldest = t;
        }
    }
    if (c->schedule && c->success_ts < 0)
        c->waiting_since = oldest;
}

/* c's schedule from the RedisCluster rc; its period computed again when it changed. */
static void read_schedule(cluster_t *c, const json_object *rc, int64_t now_s)
{
    const char *expr = JSONX_STR_AT(rc, "spec", "backup", "schedule");
    char err[200];
    cron_t cron = {0};
    uint64_t h = expr && cron_parse(expr, &cron, err, sizeof(err)) == 0 ? hash_fnv(HASH_FNV_START, expr) : 0;
    if (h == c->schedule)
        return;
    c->schedule = h;
    c->cron = cron;
    c->period = h ? cron_period(&cron, now_s) : -1;
    c->period_at = now_s;
}

/* A new cluster_t for key (its strings in the same allocation), or NULL. */
static cluster_t *cluster_new(const char *key)
{
    size_t n = strlen(key) + 1;
    cluster_t *c = calloc(1, sizeof(*c) + 2 * n);
    if (!c)
        return NULL;
    c->key = (char *)(c + 1);
    memcpy(c->key, key, n);
    c->ns = c->key + n;
    memcpy(c->ns, key, n);
    char *slash = strchr(c->ns, '/');
    c->name = slash ? slash + 1 : c->ns + n - 1;
    if (slash)
        *slash = '\0';
    c->period = -1;
    return c;
}

/* Read key's RedisBackups, then the RedisCluster, into c. Returns 1 when it has a series to
 * show, 0 when not, -1 when out of memory. */
static int read_cluster(const backupgauge_t *g, cluster_t *c, int64_t now_s)
{
    const char *text = cache_get_json(g->cache, RDC_KIND, c->key);
    if (!text)
        return 0;
    buf_t b;
    buf_init(&b, 0);
    if (cache_label_children_json(g->cache, RB_KIND, c->key, &b)) {
        buf_free(&b);
        return -1;
    }
    int none = !strcmp(buf_str(&b), "[]");
    json_object *rc = NULL, *rbs = NULL;
    if (none && !strstr(text, "\"backup\"")) { /* most clusters: no parse */
        buf_free(&b);
        return 0;
    }
    rc = cache_get_parsed(g->cache, RDC_KIND, c->key);
    rbs = none ? NULL : json_tokener_parse(buf_str(&b));
    buf_free(&b);
    int r = -1;
    if (rc && (none || rbs)) {
        read_schedule(c, rc, now_s);
        scan_backups(c, rbs);
        r = c->schedule || c->success_ts >= 0;
    }
    json_object_put(rc);
    json_object_put(rbs);
    return r;
}

/* Compute key's values again: kept when it has a series, dropped when not (or when out of
 * memory: better no series than a stale one). */
static void recompute(backupgauge_t *g, const char *key, int64_t now_s)
{
    cluster_t *c = hm_get(g->clusters, key), *fresh = NULL;
    if (!c && !(c = fresh = cluster_new(key)))
        return;
    if (read_cluster(g, c, now_s) == 1) {
        if (fresh && hm_put(g->clusters, fresh->key, fresh, NULL))
            free(fresh);
        return;
    }
    if (!fresh)
        hm_remove(g->clusters, key);
    free(c);
}

/* ---- the update ------------------------------------------------------------------------ */

/* Set the series of c. */
static void show(const backupgauge_t *g, const cluster_t *c)
{
    const char *const *l = METRIC_LABELS(c->ns, c->name);
    if (c->success_ts >= 0)
        metric_gauge_set(g->m_success, l, (double)c->success_ts);
    if (c->success_ts >= 0 && c->success_size >= 0)
        metric_gauge_set(g->m_size, l, (double)c->success_size);
    if (c->schedule && c->period > 0)
        metric_gauge_set(g->m_period, l, (double)c->period);
    if (c->waiting_since >= 0)
        metric_gauge_set(g->m_waiting, l, (double)c->waiting_since);
}

void backupgauge_update(backupgauge_t *g, int64_t now_s)
{
    hm_iter_t it = HM_ITER_INIT;
    const char *key;
    void *v;
    while (hm_next(g->dirty, &it, &key, &v)) {
        recompute(g, key, now_s);
        free(hm_remove(g->dirty, key));
    }
    metric_family_t *fams[] = {g->m_success, g->m_size, g->m_period, g->m_waiting};
    for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++)
        metric_family_reset(fams[i]);
    it = HM_ITER_INIT;
    while (hm_next(g->clusters, &it, NULL, &v)) {
        cluster_t *c = v;
        if (c->schedule && now_s - c->period_at >= BACKUPGAUGE_PERIOD_REFRESH_S) {
            c->period = cron_period(&c->cron, now_s);
            c->period_at = now_s;
        }
        show(g, c);
    }
}
