/*
 * bench/clusterwriter: a Redis Cluster client that counts only acknowledged writes, for
 * the Cluster-mode tests (tests/e2e/test_cluster_mode.sh) and benchmarks. It is
 * cluster-aware the way redis-cli -c and the client libraries are: it keeps the slot map
 * (CLUSTER SLOTS), sends each key to the master of its slot (CRC16 of the key, or of its
 * {hash tag}, modulo 16384), follows -MOVED (map read again) and -ASK (ASKING, then the
 * command on the node named).
 *
 *   clusterwriter write --seeds H:P[,H:P..] --acks FILE --events FILE [--rate N]
 *                       [--prefix P] [--wait-ms 100] [--replicas 1] [--duration S]
 *                       [--count N] [--password-file F]
 *       SET <P><i> <i> then, with --replicas >= 1, WAIT <replicas> <wait-ms> on the same
 *       node, i = 1, 2, ... A write is ACKNOWLEDGED only when SET answered +OK and WAIT an
 *       integer >= --replicas; it is then appended to --acks as "<key> <value> <addr>"
 *       (flushed per line). Any other outcome is a failure: the map is read again and the
 *       SAME i retried. --events gets ackwriter's JSON lines (start, fail, accept, ack,
 *       target, stop), so tests/e2e/lib_replset.sh's rs_unavailability reads them too,
 *       and a "slow" line (its wall-clock t, "ms" and the node's "addr") for every SET
 *       that waited CW_SLOW_MS or longer (bench/reshard.sh places them in the run).
 *       Runs until SIGTERM/SIGINT, --duration seconds or --count acknowledged writes;
 *       --rate writes per second at most (default 200; 0 = as fast as it can). At the end it
 *       prints one line, "acked=<n> failed=<n> longest_gap_ms=<n>" then the distributions:
 *         longest_gap_ms  the longest time from one SET Redis accepted to the next (the
 *                         pause a client saw: refusals, redirections and slow answers
 *                         alike, the rate's own spacing included); in the "stop" event too.
 *         gap_*           every such gap: gap_p50_ms gap_p99_ms gap_p999_ms gap_max_ms
 *                         (ms, 2 decimals) and gap_over_10ms gap_over_50ms (how many gaps
 *                         were longer). At --rate 200 a gap is 5 ms at the least.
 *         set_*           the same of every SET's latency: from its first send (after the
 *                         previous accepted SET) to Redis accepting it, its refusals,
 *                         MOVED/ASK hops and 20 ms retry pauses included, the rate's spacing
 *                         not (WAIT not either): what one SET cost a client, the fairer
 *                         figure when two runs' rates or retries differ.
 *       The percentiles come from a log-linear histogram (bench/latency_hist.h): each is
 *       the top of its bucket, at most 6.25% above the true value and never above the max;
 *       the counts over 10 and 50 ms and the max are exact.
 *
 *   clusterwriter fill --seeds H:P[,..] --count N [--prefix P] [--value-bytes B]
 *       N keys <P><i> with B-byte values (default 16), pipelined by node in batches of
 *       1000, following MOVED/ASK; prints "filled=<n> seconds=<s>" (no WAIT: a bulk load).
 *
 *   clusterwriter verify --seeds H:P[,..] (--acks FILE | --count N [--prefix P])
 *       Reads back every key (GET through the map) and prints "acked=<n> present=<n>
 *       missing=<n> wrong=<n>"; with --count, the keys fill wrote (values <i>, or B bytes
 *       of 'x' with --value-bytes). Exit 0 when none is missing or wrong, 1 when some are,
 *       2 on a usage or I/O error (an empty or absent FILE is an error).
 *
 * Exit codes: 0 OK, 1 verify found missing keys, 2 usage or setup error.
 */
#include "bench_util.h"
#include "latency_hist.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CW_SLOTS 16384
#define CW_MAX_NODES 128
#define CW_ADDR 64

typedef struct {
    char addr[CW_ADDR]; /* "ip:port" */
    redisContext *c;
} cw_node_t;

typedef struct {
    cw_node_t node[CW_MAX_NODES];
    int n;
    short slot[CW_SLOTS]; /* node index of each slot's master, -1 unknown */
    char seeds[1024];
    char password[256];
    int timeout_ms;
} cw_t;

/* The node of addr (added when new), or -1 when the table is full. */
static int cw_node(cw_t *w, const char *addr)
{
    for (int i = 0; i < w->n; i++)
        if (!strcmp(w->node[i].addr, addr))
            return i;
    if (w->n == CW_MAX_NODES)
        return -1;
    snprintf(w->node[w->n].addr, CW_ADDR, "%s", addr);
    w->node[w->n].c = NULL;
    return w->n++;
}

static void cw_drop(cw_t *w, int i)
{
    if (w->node[i].c)
        redisFree(w->node[i].c);
    w->node[i].c = NULL;
}

/* A connection to node i (made and authenticated when needed), or NULL. */
static redisContext *cw_conn(cw_t *w, int i)
{
    if (w->node[i].c)
        return w->node[i].c;
    char host[CW_ADDR];
    snprintf(host, sizeof(host), "%s", w->node[i].addr);
    char *colon = strrchr(host, ':');
    if (!colon)
        return NULL;
    *colon = '\0';
    struct timeval tv = {w->timeout_ms / 1000, (w->timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(host, (int)strtol(colon + 1, NULL, 10), tv);
    if (!c || c->err) {
        if (c)
            redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (w->password[0]) {
        redisReply *r = redisCommand(c, "AUTH %s", w->password);
        int ok = r && r->type == REDIS_REPLY_STATUS;
        if (r)
            freeReplyObject(r);
        if (!ok) {
            redisFree(c);
            return NULL;
        }
    }
    w->node[i].c = c;
    return c;
}

/* Read the slot map from the first seed (or known node) that answers CLUSTER SLOTS.
 * Returns 0, or -1 when none does. */
static int cw_refresh(cw_t *w)
{
    char seeds[1024];
    snprintf(seeds, sizeof(seeds), "%s", w->seeds);
    for (char *s = seeds, *next; s && *s; s = next) {
        next = strchr(s, ',');
        if (next)
            *next++ = '\0';
        cw_node(w, s);
    }
    for (int i = 0; i < w->n; i++) {
        redisContext *c = cw_conn(w, i);
        redisReply *r = c ? redisCommand(c, "CLUSTER SLOTS") : NULL;
        if (!r || r->type != REDIS_REPLY_ARRAY) {
            if (r)
                freeReplyObject(r);
            cw_drop(w, i);
            continue;
        }
        for (int s = 0; s < CW_SLOTS; s++)
            w->slot[s] = -1;
        for (size_t k = 0; k < r->elements; k++) {
            redisReply *e = r->element[k];
            if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || e->element[2]->type != REDIS_REPLY_ARRAY ||
                e->element[2]->elements < 2)
                continue;
            char addr[CW_ADDR];
            snprintf(addr, sizeof(addr), "%s:%lld", e->element[2]->element[0]->str,
                     e->element[2]->element[1]->integer);
            int n = cw_node(w, addr);
            for (long long s = e->element[0]->integer; n >= 0 && s <= e->element[1]->integer && s < CW_SLOTS; s++)
                w->slot[s] = (short)n;
        }
        freeReplyObject(r);
        return 0;
    }
    return -1;
}

/* Send argv to the master of key's slot, following MOVED and ASK (at most 5 hops); with
 * wait_replicas > 0, WAIT on the node that took it. *reply gets the command's answer
 * (the caller frees it), *acks WAIT's integer, *addr the node. Returns 0, or -1 with err. */
static int cw_send(cw_t *w, const char *key, int argc, const char **argv, int wait_replicas, int wait_ms,
                   redisReply **reply, long long *acks, char *addr, char *err, size_t errlen)
{
    int n = w->slot[bench_key_slot(key)], asking = 0;
    *reply = NULL;
    *acks = 0;
    for (int hop = 0; hop < 5; hop++) {
        if (n < 0 && (cw_refresh(w) || (n = w->slot[bench_key_slot(key)]) < 0)) {
            snprintf(err, errlen, "no node serves slot %d", bench_key_slot(key));
            return -1;
        }
        redisContext *c = cw_conn(w, n);
        if (!c) {
            snprintf(err, errlen, "%s: cannot connect", w->node[n].addr);
            n = -1;
            continue;
        }
        if (asking) {
            redisReply *a = redisCommand(c, "ASKING");
            if (a)
                freeReplyObject(a);
        }
        redisReply *r = redisCommandArgv(c, argc, argv, NULL);
        if (!r) {
            snprintf(err, errlen, "%s: %s", w->node[n].addr, c->errstr);
            cw_drop(w, n);
            return -1;
        }
        if (r->type == REDIS_REPLY_ERROR && (!strncmp(r->str, "MOVED ", 6) || !strncmp(r->str, "ASK ", 4))) {
            asking = r->str[0] == 'A';
            const char *to = strrchr(r->str, ' ');
            n = to ? cw_node(w, to + 1) : -1;
            if (!asking)
                cw_refresh(w);
            freeReplyObject(r);
            continue;
        }
        snprintf(addr, CW_ADDR, "%s", w->node[n].addr);
        *reply = r;
        if (wait_replicas > 0 && r->type != REDIS_REPLY_ERROR) {
            redisReply *wr = redisCommand(c, "WAIT %d %d", wait_replicas, wait_ms);
            *acks = wr && wr->type == REDIS_REPLY_INTEGER ? wr->integer : -1;
            if (!wr)
                cw_drop(w, n);
            else
                freeReplyObject(wr);
        }
        return 0;
    }
    snprintf(err, errlen, "too many redirections for %s", key);
    return -1;
}

static void cw_event(FILE *ev, const char *name, const char *fmt, ...)
{
    if (!ev)
        return;
    fprintf(ev, "{\"t\":%" PRId64 ",\"ev\":\"%s\"", bench_now_ms(), name);
    if (fmt && *fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputc(',', ev);
        vfprintf(ev, fmt, ap);
        va_end(ap);
    }
    fputs("}\n", ev);
    fflush(ev);
}

/* Quotes and backslashes out of s (an error text going into JSON). */
static void cw_json_safe(char *s)
{
    for (; *s; s++)
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
            *s = ' ';
}

typedef struct {
    const char *acks, *events, *prefix;
    long rate, wait_ms, replicas, duration, count, value_bytes;
} cw_opts_t;

/* What a write run keeps between SETs. Two distributions, both in us: set, from the first
 * send of a key (after the previous accepted SET) to Redis accepting it, its refusals,
 * redirections and retry pauses included but not the rate's spacing (what one SET cost a
 * client); gap, from one accepted SET to the next (the pause a client saw, the spacing
 * included: 1000 / --rate ms at the least). */
typedef struct {
    FILE *acks, *ev;
    long long acked, failed, i;
    int failing, accepted;
    int64_t last_ack, last_ok_us, first_send_us;
    lh_t set, gap;
} cw_run_t;

#define CW_SLOW_MS 20 /* a SET waiting this long gets a "slow" event */

/* Once Redis accepted a SET (at addr): its wait and the gap since the previous one
 * counted; a slow one told in the events. */
static void cw_accepted(cw_run_t *run, const char *addr)
{
    int64_t now = bench_mono_us();
    if (now - run->first_send_us >= CW_SLOW_MS * 1000)
        cw_event(run->ev, "slow", "\"ms\":%.1f,\"addr\":\"%s\"", (double)(now - run->first_send_us) / 1000.0, addr);
    lh_add(&run->set, now - run->first_send_us);
    if (run->last_ok_us)
        lh_add(&run->gap, now - run->last_ok_us);
    run->last_ok_us = now;
    run->first_send_us = 0;
}

/* One SET (+ WAIT) of key i: acknowledged (logged, i advanced) or failed (the map read
 * again, a 20 ms pause, the same i next time). */
static void cw_write_one(cw_t *w, const cw_opts_t *o, cw_run_t *run)
{
    char key[96], val[32], addr[CW_ADDR] = "", err[256] = "";
    snprintf(key, sizeof(key), "%s%lld", o->prefix, run->i);
    snprintf(val, sizeof(val), "%lld", run->i);
    const char *argv[] = {"SET", key, val};
    redisReply *r = NULL;
    long long got = 0;
    if (!run->first_send_us)
        run->first_send_us = bench_mono_us();
    int rc = cw_send(w, key, 3, argv, (int)o->replicas, (int)o->wait_ms, &r, &got, addr, err, sizeof(err));
    int set_ok = rc == 0 && r && r->type == REDIS_REPLY_STATUS;
    if (!rc && !set_ok)
        snprintf(err, sizeof(err), "%s: %s", addr, r && r->str ? r->str : "no answer");
    else if (set_ok && got < o->replicas)
        snprintf(err, sizeof(err), "%s: WAIT %lld of %ld", addr, got, o->replicas);
    if (r)
        freeReplyObject(r);
    if (set_ok)
        cw_accepted(run, addr);
    if (set_ok && run->failing && !run->accepted) {
        run->accepted = 1;
        cw_event(run->ev, "accept", "\"addr\":\"%s\",\"i\":%lld", addr, run->i);
    }
    if (set_ok && got >= o->replicas) {
        fprintf(run->acks, "%s %s %s\n", key, val, addr);
        fflush(run->acks);
        if (run->failing)
            cw_event(run->ev, "ack", "\"addr\":\"%s\",\"i\":%lld", addr, run->i);
        run->failing = run->accepted = 0;
        run->last_ack = bench_now_ms();
        run->acked++;
        run->i++;
        return;
    }
    cw_json_safe(err);
    if (!run->failing)
        cw_event(run->ev, "fail", "\"addr\":\"%s\",\"err\":\"%s\",\"i\":%lld,\"last_ack\":%" PRId64, addr, err, run->i,
                 run->last_ack);
    run->failing = 1;
    run->failed++;
    cw_refresh(w);
    struct timespec pause = {0, 20 * 1000000};
    nanosleep(&pause, NULL);
}

/* Sleeps until the next SET is due at rate a second (none when rate is 0). */
static void cw_pace(struct timespec *next, long rate)
{
    if (rate <= 0)
        return;
    next->tv_nsec += 1000000000L / rate;
    while (next->tv_nsec >= 1000000000L) {
        next->tv_nsec -= 1000000000L;
        next->tv_sec++;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL);
}

/* " <name>_p50_ms=.. _p99_ms=.. _p999_ms=.. _max_ms=.. _over_10ms=N _over_50ms=N" of h. */
static void cw_hist_fields(FILE *out, const char *name, const lh_t *h)
{
    fprintf(out, " %s_p50_ms=%.2f %s_p99_ms=%.2f %s_p999_ms=%.2f %s_max_ms=%.2f %s_over_10ms=%lld %s_over_50ms=%lld",
            name, (double)lh_quantile(h, 0.5) / 1e3, name, (double)lh_quantile(h, 0.99) / 1e3, name,
            (double)lh_quantile(h, 0.999) / 1e3, name, (double)h->max_us / 1e3, name, h->over[0], name, h->over[1]);
}

static int cw_write(cw_t *w, const cw_opts_t *o)
{
    static cw_run_t run;
    run.acks = fopen(o->acks, "a");
    run.ev = fopen(o->events, "a");
    if (!run.acks || !run.ev) {
        fprintf(stderr, "clusterwriter: cannot open %s or %s: %s\n", o->acks, o->events, strerror(errno));
        return 2;
    }
    run.i = 1;
    cw_refresh(w);
    cw_event(run.ev, "start", NULL);
    int64_t end = o->duration > 0 ? bench_now_ms() + o->duration * 1000 : 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!bench_stop && (!end || bench_now_ms() < end) && (!o->count || run.acked < o->count)) {
        cw_write_one(w, o, &run);
        cw_pace(&next, o->rate);
    }
    int64_t gap = run.gap.max_us / 1000;
    cw_event(run.ev, "stop", "\"acked\":%lld,\"failed\":%lld,\"longest_gap_ms\":%" PRId64, run.acked, run.failed, gap);
    printf("acked=%lld failed=%lld longest_gap_ms=%" PRId64, run.acked, run.failed, gap);
    cw_hist_fields(stdout, "gap", &run.gap);
    cw_hist_fields(stdout, "set", &run.set);
    printf("\n");
    fclose(run.acks);
    fclose(run.ev);
    return 0;
}

/* The value fill writes for key i. */
static void cw_fill_value(long bytes, long long i, char *out, size_t len)
{
    if (bytes <= 0)
        snprintf(out, len, "%lld", i);
    else {
        size_t n = (size_t)bytes < len - 1 ? (size_t)bytes : len - 1;
        memset(out, 'x', n);
        out[n] = '\0';
    }
}

static int cw_fill(cw_t *w, const cw_opts_t *o)
{
    static char val[1 << 20];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long long done = 0;
    for (long long i = 1; i <= o->count && !bench_stop; i++) {
        char key[96], err[256], addr[CW_ADDR];
        snprintf(key, sizeof(key), "%s%lld", o->prefix, i);
        cw_fill_value(o->value_bytes, i, val, sizeof(val));
        const char *argv[] = {"SET", key, val};
        redisReply *r = NULL;
        long long acks;
        for (int tries = 0; tries < 50; tries++) {
            if (cw_send(w, key, 3, argv, 0, 0, &r, &acks, addr, err, sizeof(err)) == 0 && r &&
                r->type == REDIS_REPLY_STATUS)
                break;
            if (r)
                freeReplyObject(r);
            r = NULL;
            cw_refresh(w);
        }
        if (!r) {
            fprintf(stderr, "clusterwriter: fill %s: %s\n", key, err);
            return 2;
        }
        freeReplyObject(r);
        done++;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("filled=%lld seconds=%.3f\n", done, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    return 0;
}

/* GET key through the map: 1 present with want, 0 missing, -1 wrong (value into got). */
static int cw_check(cw_t *w, const char *key, const char *want)
{
    const char *argv[] = {"GET", key};
    redisReply *r = NULL;
    long long acks;
    char addr[CW_ADDR], err[256];
    for (int tries = 0; tries < 20; tries++) {
        if (cw_send(w, key, 2, argv, 0, 0, &r, &acks, addr, err, sizeof(err)) == 0 && r &&
            r->type != REDIS_REPLY_ERROR)
            break;
        if (r)
            freeReplyObject(r);
        r = NULL;
        cw_refresh(w);
    }
    int res = !r || r->type != REDIS_REPLY_STRING ? 0 : strcmp(r->str, want) ? -1 : 1;
    if (r)
        freeReplyObject(r);
    return res;
}

static int cw_verify(cw_t *w, const cw_opts_t *o)
{
    long long acked = 0, present = 0, missing = 0, wrong = 0;
    cw_refresh(w);
    static char val[1 << 20];
    if (o->acks) {
        FILE *f = fopen(o->acks, "r");
        char line[512];
        while (f && fgets(line, sizeof(line), f)) {
            /* "<key> <value> <addr>" */
            char *key = line, *value = strchr(line, ' '), *end = value ? strchr(value + 1, ' ') : NULL;
            if (!value || !end)
                continue;
            *value++ = '\0';
            *end = '\0';
            acked++;
            int r = cw_check(w, key, value);
            present += r == 1;
            missing += r == 0;
            wrong += r < 0;
            if (r != 1 && missing + wrong <= 5)
                fprintf(stderr, "clusterwriter: %s %s\n", r ? "wrong" : "missing", key);
        }
        if (f)
            fclose(f);
        if (!f || !acked) {
            fprintf(stderr, "clusterwriter: %s: no acknowledged write to verify\n", o->acks);
            return 2;
        }
    } else {
        for (long long i = 1; i <= o->count; i++) {
            char key[96];
            snprintf(key, sizeof(key), "%s%lld", o->prefix, i);
            cw_fill_value(o->value_bytes, i, val, sizeof(val));
            int r = cw_check(w, key, val);
            acked++;
            present += r == 1;
            missing += r == 0;
            wrong += r < 0;
        }
    }
    printf("acked=%lld present=%lld missing=%lld wrong=%lld\n", acked, present, missing, wrong);
    return missing || wrong ? 1 : 0;
}

static int cw_usage(void)
{
    fprintf(stderr, "usage: clusterwriter write|fill|verify --seeds H:P[,H:P..] [options] (see the source's header)\n");
    return 2;
}

/* Sets option a to its value v, in w (--seeds, --password-file: the file's first line) or
 * in o; -1 when a is no option or the password file cannot be read. */
static int cw_option(cw_t *w, cw_opts_t *o, const char *a, const char *v)
{
    const struct {
        const char *name;
        const char **to;
    } strs[] = {{"--acks", &o->acks}, {"--events", &o->events}, {"--prefix", &o->prefix}};
    const struct {
        const char *name;
        long *to;
    } nums[] = {{"--rate", &o->rate},         {"--wait-ms", &o->wait_ms}, {"--replicas", &o->replicas},
                {"--duration", &o->duration}, {"--count", &o->count},     {"--value-bytes", &o->value_bytes}};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
        if (!strcmp(a, strs[i].name)) {
            *strs[i].to = v;
            return 0;
        }
    for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
        if (!strcmp(a, nums[i].name)) {
            *nums[i].to = strtol(v, NULL, 10);
            return 0;
        }
    if (!strcmp(a, "--seeds")) {
        snprintf(w->seeds, sizeof(w->seeds), "%s", v);
        return 0;
    }
    if (strcmp(a, "--password-file"))
        return -1;
    FILE *f = fopen(v, "r");
    int ok = f && fgets(w->password, sizeof(w->password), f);
    if (f)
        fclose(f);
    w->password[strcspn(w->password, "\r\n")] = '\0';
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return cw_usage();
    static cw_t w;
    w.timeout_ms = 1000;
    cw_opts_t o = {.prefix = "k", .rate = 200, .wait_ms = 100, .replicas = 1};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return cw_usage();
        i++;
        if (cw_option(&w, &o, a, v))
            return cw_usage();
    }
    if (!w.seeds[0])
        return cw_usage();
    for (int s = 0; s < CW_SLOTS; s++)
        w.slot[s] = -1;
    signal(SIGTERM, bench_on_signal);
    signal(SIGINT, bench_on_signal);
    signal(SIGPIPE, SIG_IGN);
    if (!strcmp(argv[1], "write"))
        return o.acks && o.events ? cw_write(&w, &o) : cw_usage();
    if (!strcmp(argv[1], "fill"))
        return o.count > 0 ? cw_fill(&w, &o) : cw_usage();
    if (!strcmp(argv[1], "verify"))
        return o.acks || o.count > 0 ? cw_verify(&w, &o) : cw_usage();
    return cw_usage();
}
