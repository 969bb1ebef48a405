/* sim_redis: the Redis servers of the failover simulation. See sim_redis.h. */
#include "sim_redis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FULL_SYNC_MIN_TICKS 3  /* a full resynchronisation: 0.3 s ... */
#define FULL_SYNC_MAX_TICKS 30 /* ... to 3 s */

static void link_down(sr_node_t *r, int64_t tick);

/* A new history: the index, or -1 when out of memory. */
static int new_hist(sr_cluster_t *c, int parent, int64_t fork, int64_t base, int promoted)
{
    if (c->nhists == c->caphists) {
        size_t cap = c->caphists ? 2 * c->caphists : 64;
        sr_hist_t *h = realloc(c->hists, cap * sizeof(*h));
        if (!h)
            return -1;
        c->hists = h;
        c->caphists = cap;
    }
    c->hists[c->nhists] = (sr_hist_t){parent, fork, base, promoted};
    return (int)c->nhists++;
}

int sr_init(sr_cluster_t *c, int count)
{
    memset(c, 0, sizeof(*c));
    c->count = count < SR_MAX_NODES ? count : SR_MAX_NODES;
    for (int i = 0; i < c->count; i++) {
        c->n[i].link_down_since = -1;
        c->n[i].hist = 0;
    }
    return new_hist(c, -1, 0, 0, 0) < 0 ? -1 : 0;
}

void sr_free(sr_cluster_t *c)
{
    free(c->hists);
    memset(c, 0, sizeof(*c));
}

int sr_at(const sr_cluster_t *c, int ip)
{
    for (int i = 0; ip && i < c->count; i++)
        if (c->n[i].ip == ip)
            return i;
    return -1;
}

int sr_answers(const sr_cluster_t *c, int i)
{
    return i >= 0 && c->n[i].running && !c->n[i].frozen && !c->n[i].isolated;
}

/* A master's history changed, or it became a replica: Redis drops the replicas linked
 * to it (they reconnect at once and resynchronise as they can). */
static void drop_followers(sr_cluster_t *c, int i, int64_t tick)
{
    for (int k = 0; k < c->count; k++) {
        sr_node_t *r = &c->n[k];
        if (k == i || r->role != SR_REPLICA || r->master_ip != c->n[i].ip || !r->link_up)
            continue;
        r->link_up = 0;
        r->link_down_since = tick;
        r->next_connect = tick + 1;
    }
}

void sr_start(sr_cluster_t *c, int i, int ip, int with_data, int min_replicas, int max_lag_s, int64_t tick)
{
    sr_node_t *n = &c->n[i];
    int isolated = n->isolated;
    int hist = with_data ? new_hist(c, n->hist, n->len, n->len, 0) : new_hist(c, -1, 0, 0, 0);
    int64_t len = with_data ? n->len : 0;
    memset(n, 0, sizeof(*n));
    n->running = 1;
    n->isolated = isolated;
    n->ip = ip;
    n->role = SR_MASTER;
    n->link_down_since = -1;
    n->hist = hist < 0 ? 0 : hist;
    n->len = hist < 0 ? 0 : len;
    n->min_replicas = min_replicas;
    n->max_lag_s = max_lag_s;
    n->next_connect = tick;
}

void sr_stop(sr_cluster_t *c, int i)
{
    sr_node_t *n = &c->n[i];
    n->running = 0;
    n->frozen = 0;
    n->link_up = 0;
    n->syncing = 0;
    n->fo_target = 0;
}

void sr_freeze(sr_cluster_t *c, int i, int64_t tick)
{
    c->n[i].frozen = 1;
    c->n[i].frozen_since = tick;
}

void sr_thaw(sr_cluster_t *c, int i, int64_t tick)
{
    sr_node_t *n = &c->n[i];
    if (!n->frozen)
        return;
    n->frozen = 0;
    if (n->role == SR_REPLICA && n->link_up && tick - n->frozen_since >= SR_REPL_TIMEOUT_TICKS)
        link_down(n, tick);
}

void sr_replicaof(sr_cluster_t *c, int i, int ip, int64_t tick)
{
    sr_node_t *n = &c->n[i];
    if (n->role == SR_REPLICA && n->master_ip == ip)
        return;
    /* Redis 7 keeps its own replicas here: they are dropped when its history changes
     * (the partial resync with a new replid, or the end of a full one). */
    n->role = SR_REPLICA;
    n->master_ip = ip;
    n->link_up = 0;
    n->link_down_since = -1; /* never linked to this master yet */
    n->syncing = 0;
    n->fo_target = 0;
    n->next_connect = tick + 1;
}

/* Server i becomes a master of a history of its own (forked from the data it holds). */
static void promote(sr_cluster_t *c, int i, int64_t tick)
{
    sr_node_t *n = &c->n[i];
    int h = new_hist(c, n->hist, n->len, c->hists[n->hist].base, 1);
    if (h >= 0)
        n->hist = h;
    n->role = SR_MASTER;
    n->master_ip = 0;
    n->link_up = 0;
    n->link_down_since = -1;
    n->syncing = 0;
    drop_followers(c, i, tick);
    c->promotions++;
}

int sr_no_one(sr_cluster_t *c, int i, int64_t tick)
{
    if (c->n[i].role == SR_MASTER)
        return 0;
    promote(c, i, tick);
    return 1;
}

/* 1 when r can get a write of master m now: linked to it, both reachable to each other. */
static int linked(const sr_node_t *r, const sr_node_t *m)
{
    return r != m && r->running && r->role == SR_REPLICA && m->ip && r->master_ip == m->ip && r->link_up &&
           r->hist == m->hist && !r->isolated && !m->isolated;
}

int sr_failover_to(sr_cluster_t *c, int i, int target_ip, int64_t timeout_ms, int64_t tick)
{
    sr_node_t *m = &c->n[i];
    int t = sr_at(c, target_ip);
    if (m->role != SR_MASTER || m->fo_target || t < 0 || !linked(&c->n[t], m))
        return -1;
    m->fo_target = target_ip;
    m->fo_deadline = tick + timeout_ms / SR_TICK_MS;
    return 0;
}

static void link_down(sr_node_t *r, int64_t tick)
{
    r->link_up = 0;
    r->link_down_since = tick;
    r->next_connect = tick + 1;
}

/* PSYNC: 1 when replica r can continue from master m without a full copy (same
 * history and not ahead, or m promoted from r's history after the point r holds). */
static int psync_ok(const sr_cluster_t *c, const sr_node_t *r, const sr_node_t *m)
{
    const sr_hist_t *h = &c->hists[m->hist];
    return (r->hist == m->hist && r->len <= m->len) || (h->promoted && h->parent == r->hist && r->len <= h->fork);
}

/* A replica whose link is up: it hears its master, or notices it is gone. */
static void replica_linked_step(sr_cluster_t *c, sr_node_t *r, int mi, int64_t tick, sim_rng_t *rng)
{
    const sr_node_t *m = mi >= 0 ? &c->n[mi] : NULL;
    if (!m || !m->running) {
        link_down(r, tick); /* the kernel resets the connection: noticed at once */
        return;
    }
    if (m->frozen || m->isolated || r->isolated) {
        if (tick - r->last_io >= SR_REPL_TIMEOUT_TICKS)
            link_down(r, tick);
        return;
    }
    if (r->hist != m->hist) {
        link_down(r, tick);
        return;
    }
    /* It hears its master when data comes, else at its PING every repl-ping-replica-period. */
    if ((m->len > r->len && sim_rng_chance(rng, 3, 4)) || tick - r->last_io >= SR_PING_TICKS) {
        r->len = m->len > r->len ? m->len : r->len;
        r->last_io = tick;
    }
}

/* A replica whose link is down: a full resynchronisation goes on, or it tries again. */
static void replica_unlinked_step(sr_cluster_t *c, sr_node_t *r, int mi, int64_t tick, sim_rng_t *rng)
{
    const sr_node_t *m = mi >= 0 ? &c->n[mi] : NULL;
    int answering = m && sr_answers(c, mi) && !r->isolated;
    /* A replica serves replicas of its own only while its link to its master is up:
     * Redis answers SYNC/PSYNC with -NOMASTERLINK otherwise (syncCommand). */
    int serves = answering && (m->role == SR_MASTER || m->link_up);
    if (r->syncing) {
        if (!answering || m->hist != r->sync_hist) {
            r->syncing = 0;
            r->next_connect = tick + SR_RECONNECT_TICKS;
        } else if (tick >= r->sync_done) {
            r->syncing = 0;
            r->hist = m->hist;
            r->len = m->len;
            r->link_up = 1;
            r->last_io = tick;
        }
        return;
    }
    if (tick < r->next_connect)
        return;
    r->next_connect = tick + SR_RECONNECT_TICKS;
    if (!serves)
        return;
    if (psync_ok(c, r, m)) {
        r->hist = m->hist;
        r->link_up = 1;
        r->last_io = tick;
        return;
    }
    r->syncing = 1;
    r->sync_hist = m->hist;
    r->sync_done = tick + sim_rng_range(rng, FULL_SYNC_MIN_TICKS, FULL_SYNC_MAX_TICKS);
}

/* FAILOVER on master i: swap once the target holds every write; abort past the timeout.
 * Returns the promoted server, or -1. */
static int failover_step(sr_cluster_t *c, int i, int64_t tick)
{
    sr_node_t *m = &c->n[i];
    int t = sr_at(c, m->fo_target);
    if (t >= 0 && linked(&c->n[t], m) && sr_answers(c, t) && c->n[t].len == m->len) {
        m->fo_target = 0;
        promote(c, t, tick);
        /* the old master follows the new one: PSYNC FAILOVER, a partial resync */
        drop_followers(c, i, tick);
        m->role = SR_REPLICA;
        m->master_ip = c->n[t].ip;
        m->hist = c->n[t].hist;
        m->link_up = 1;
        m->link_down_since = -1;
        m->last_io = tick;
        return t;
    }
    if (tick > m->fo_deadline)
        m->fo_target = 0; /* timed out: aborted, writes go on here */
    return -1;
}

void sr_step(sr_cluster_t *c, int64_t tick, sim_rng_t *rng, int *promoted)
{
    int np = 0;
    for (int i = 0; i < c->count; i++) {
        sr_node_t *r = &c->n[i];
        if (!r->running || r->frozen || r->role != SR_REPLICA)
            continue;
        int mi = sr_at(c, r->master_ip);
        if (r->link_up)
            replica_linked_step(c, r, mi, tick, rng);
        else
            replica_unlinked_step(c, r, mi, tick, rng);
    }
    for (int i = 0; i < c->count; i++) {
        sr_node_t *m = &c->n[i];
        if (!m->running || m->frozen || m->role != SR_MASTER || !m->fo_target)
            continue;
        int t = failover_step(c, i, tick);
        if (t >= 0 && promoted && np < SR_MAX_NODES)
            promoted[np++] = t;
    }
    if (promoted && np < SR_MAX_NODES)
        promoted[np] = -1;
}

/* Replicas of master m that min-replicas-to-write counts: linked, acknowledging within
 * min-replicas-max-lag (a frozen one stops acknowledging). */
static int good_replicas(const sr_cluster_t *c, const sr_node_t *m, int64_t tick)
{
    int k = 0;
    for (int i = 0; i < c->count; i++) {
        const sr_node_t *r = &c->n[i];
        if (linked(r, m) && (!r->frozen || (tick - r->frozen_since) * SR_TICK_MS <= m->max_lag_s * 1000))
            k++;
    }
    return k;
}

sr_refusal_t sr_write_refusal(const sr_cluster_t *c, int i, int64_t tick)
{
    if (i < 0 || !c->n[i].running)
        return SR_GONE;
    const sr_node_t *m = &c->n[i];
    if (m->frozen || m->isolated)
        return SR_NO_ANSWER;
    if (m->role == SR_REPLICA)
        return SR_READONLY;
    if (m->fo_target)
        return SR_PAUSED;
    if (good_replicas(c, m, tick) < m->min_replicas)
        return SR_NOREPLICAS;
    return SR_OK;
}

sr_write_t sr_write(sr_cluster_t *c, int i)
{
    sr_node_t *m = &c->n[i];
    sr_write_t w = {m->hist, m->len};
    m->len++;
    return w;
}

int sr_holds(const sr_cluster_t *c, int i, sr_write_t w)
{
    if (w.hist < 0)
        return 1;
    int h = c->n[i].hist;
    int64_t len = c->n[i].len;
    while (h != w.hist) {
        const sr_hist_t *x = &c->hists[h];
        if (x->parent < 0)
            return 0;
        if (x->fork < len)
            len = x->fork;
        h = x->parent;
    }
    return w.pos < len;
}

int sr_acked(const sr_cluster_t *c, int i, sr_write_t w, int64_t tick)
{
    (void)tick;
    for (int k = 0; k < c->count; k++)
        if (linked(&c->n[k], &c->n[i]) && !c->n[k].frozen && sr_holds(c, k, w))
            return 1;
    return 0;
}

int sr_can_ack(const sr_cluster_t *c, int i, int64_t tick)
{
    (void)tick;
    for (int k = 0; k < c->count; k++)
        if (linked(&c->n[k], &c->n[i]) && !c->n[k].frozen)
            return 1;
    return 0;
}

int64_t sr_offset(const sr_cluster_t *c, int i)
{
    const sr_node_t *n = &c->n[i];
    return (n->len - c->hists[n->hist].base) * SR_WRITE_BYTES;
}

void sr_ip_str(int ip, char *out, size_t cap)
{
    snprintf(out, cap, "10.%d.%d.%d", (ip / 62500) % 250, (ip / 250) % 250, ip % 250 + 1);
}

int sr_ip_parse(const char *s)
{
    long part[4];
    char *end = NULL;
    for (int k = 0; k < 4; k++) {
        part[k] = strtol(s, &end, 10);
        if (end == s || (k < 3 && *end != '.') || (k == 3 && *end))
            return 0;
        s = end + 1;
    }
    if (part[0] != 10 || part[3] < 1)
        return 0;
    return (int)(part[1] * 62500 + part[2] * 250 + part[3] - 1);
}

/* The slaveN lines of master i: the replicas connected to it (a frozen one stays
 * connected, its acknowledgements growing old). */
static size_t slave_lines(const sr_cluster_t *c, int i, int64_t tick, char *out, size_t cap, int *count)
{
    const sr_node_t *m = &c->n[i];
    size_t l = 0;
    *count = 0;
    for (int k = 0; k < c->count && l < cap; k++) {
        const sr_node_t *r = &c->n[k];
        if (k == i || !r->running || r->role != SR_REPLICA || !m->ip || r->master_ip != m->ip || r->isolated ||
            m->isolated || (!r->link_up && !r->syncing))
            continue;
        char ip[32];
        sr_ip_str(r->ip, ip, sizeof(ip));
        int64_t lag = r->frozen ? (tick - r->frozen_since) / 10 : 0;
        int n = snprintf(out + l, cap - l, "slave%d:ip=%s,port=6379,state=%s,offset=%lld,lag=%lld\r\n", *count, ip,
                         r->link_up ? "online" : "wait_bgsave", (long long)sr_offset(c, k), (long long)lag);
        if (n < 0 || (size_t)n >= cap - l)
            break;
        l += (size_t)n;
        (*count)++;
    }
    return l;
}

void sr_info(const sr_cluster_t *c, int i, int64_t tick, char *out, size_t cap)
{
    const sr_node_t *n = &c->n[i];
    char slaves[2048] = "", host[32];
    int nslaves = 0;
    slave_lines(c, i, tick, slaves, sizeof(slaves), &nslaves);
    long long off = (long long)sr_offset(c, i);
    if (n->role == SR_MASTER) {
        snprintf(out, cap,
                 "# Replication\r\nrole:master\r\nconnected_slaves:%d\r\n%smaster_failover_state:%s\r\n"
                 "master_replid:%040d\r\nmaster_repl_offset:%lld\r\n",
                 nslaves, slaves, n->fo_target ? "waiting-for-sync" : "no-failover", n->hist, off);
        return;
    }
    sr_ip_str(n->master_ip, host, sizeof(host));
    long long down = n->link_up || n->link_down_since < 0 ? -1 : (long long)(tick - n->link_down_since) / 10;
    char down_line[64] = "";
    if (!n->link_up)
        snprintf(down_line, sizeof(down_line), "master_link_down_since_seconds:%lld\r\n", down);
    snprintf(out, cap,
             "# Replication\r\nrole:slave\r\nmaster_host:%s\r\nmaster_port:6379\r\nmaster_link_status:%s\r\n"
             "master_last_io_seconds_ago:%lld\r\n"
             "master_sync_in_progress:%d\r\nslave_repl_offset:%lld\r\n%sconnected_slaves:%d\r\n%s"
             "master_failover_state:no-failover\r\nmaster_replid:%040d\r\nmaster_repl_offset:%lld\r\n",
             host, n->link_up ? "up" : "down", n->link_up ? (long long)(tick - n->last_io) / 10 : -1LL, n->syncing,
             off, down_line, nslaves, slaves, n->hist, off);
}

void sr_info_keyspace(const sr_cluster_t *c, int i, char *out, size_t cap)
{
    const sr_node_t *n = &c->n[i];
    if (n->len > 0)
        snprintf(out, cap, "# Keyspace\r\ndb0:keys=%lld,expires=0,avg_ttl=0\r\n", (long long)n->len);
    else
        snprintf(out, cap, "# Keyspace\r\n");
}
