/*
 * bench/ackwriter: the acknowledged-writes client of the failover benchmark
 * (bench/failover.sh) and of the failover tests (tests/e2e/lib_failover.sh).
 *
 *   ackwriter write  TARGET-OPTIONS --acks FILE --events FILE [--rate N] [--prefix P]
 *                    [--wait-ms 100] [--replicas 1] [--duration S] [--password-file F]
 *       Sends `SET <P><i> <i>` then `WAIT <replicas> <wait-ms>` to the current primary,
 *       i = 1, 2, ... A write is ACKNOWLEDGED only when SET answered +OK and WAIT answered
 *       an integer >= --replicas (that many replicas have it; --replicas 0 sends no WAIT:
 *       for a server without replicas whose `appendfsync always` makes +OK durable); each
 *       acknowledged key is appended to --acks as
 *       "<key> <value> <addr>" (flushed per line: a SIGKILLed writer loses nothing it
 *       counted). Any other outcome (connection error, timeout, -READONLY, WAIT 0) is a
 *       failure: the writer resolves the primary again and retries the SAME i (so keys are
 *       dense). --events gets one JSON line per state change, with epoch milliseconds:
 *         {"t":..,"ev":"start"}
 *         {"t":..,"ev":"fail","addr":"h:p","err":"...","i":N,"last_ack":T}
 *                                                      first failure after a success; T is
 *                                                      the time of the last acknowledged write
 *         {"t":..,"ev":"accept","addr":"h:p","i":N}    first SET +OK after a failure
 *         {"t":..,"ev":"ack","addr":"h:p","i":N}       first acknowledged write after a failure
 *         {"t":..,"ev":"target","addr":"h:p"}          the resolved primary changed
 *         {"t":..,"ev":"stop","acked":N,"failed":N}
 *       Runs until SIGTERM/SIGINT or --duration seconds; --rate writes per second at most
 *       (default 200: 5 ms resolution on every time measured).
 *
 *   TARGET-OPTIONS (exactly one), consulted at start and after every failure:
 *       --addr H:P                   a fixed address
 *       --sentinels H:P[,H:P..] --master NAME
 *                                    SENTINEL get-master-addr-by-name NAME, first answer wins
 *       --candidates H:P[,H:P..]     the one that answers ROLE with "master" (if several do,
 *                                    the first in the list, and a "two-masters" event)
 *       --resolve-cmd CMD            `sh -c CMD` prints H:P on its first line
 *       --resolve-file F             F's first line is H:P (rewritten by someone else)
 *
 *   ackwriter verify --addr H:P --acks FILE [--password-file F] [--show N]
 *       Reads back every key of FILE from H:P (GET, pipelined by 1000) and prints
 *       "acked=<n> present=<n> missing=<n> wrong=<n>" plus up to --show missing keys.
 *       Exit 0 when none is missing or wrong, 1 when some are, 2 on a usage or I/O error
 *       (an empty or absent FILE is an error: nothing verified proves nothing).
 *
 *   ackwriter roles --candidates H:P[,..] --out FILE [--interval-ms 100] [--duration S]
 *       Every interval asks each candidate ROLE (50 ms timeout) and appends a line
 *       "<t> <masters> <addr>=<role>..." to FILE when the answer set changes; at the end
 *       prints "samples=<n> max_masters=<n> two_master_ms=<n>" (time during which two or
 *       more candidates answered master).
 *
 * Exit codes: 0 OK, 1 verify found missing keys, 2 usage or setup error.
 */
#include "bench_util.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define AW_MAX_ADDRS 16
#define AW_ADDR_LEN 128

typedef struct {
    char host[AW_ADDR_LEN];
    int port;
} aw_addr_t;

typedef enum { AW_T_NONE, AW_T_ADDR, AW_T_SENTINELS, AW_T_CANDIDATES, AW_T_CMD, AW_T_FILE } aw_target_kind_t;

typedef struct {
    aw_target_kind_t kind;
    aw_addr_t addrs[AW_MAX_ADDRS];
    size_t naddrs;
    const char *master;
    const char *cmd;
    const char *file;
    char password[256];
} aw_target_t;

/* aw_parse_int: a whole decimal integer in [min, max]; 0 OK, -1 otherwise. */
static int aw_parse_int(const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* aw_parse_addr: "host:port" (the last colon splits) into a; 0 OK, -1 malformed. */
static int aw_parse_addr(const char *s, aw_addr_t *a)
{
    const char *colon = strrchr(s, ':');
    long port;
    if (!colon || colon == s || (size_t)(colon - s) >= sizeof(a->host))
        return -1;
    if (aw_parse_int(colon + 1, 1, 65535, &port))
        return -1;
    memcpy(a->host, s, (size_t)(colon - s));
    a->host[colon - s] = '\0';
    a->port = (int)port;
    return 0;
}

/* aw_parse_list: a comma-separated list of host:port into t->addrs; 0 OK, -1 malformed
 * or more than AW_MAX_ADDRS. */
static int aw_parse_list(const char *s, aw_target_t *t)
{
    char item[AW_ADDR_LEN + 8];
    t->naddrs = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        if (n == 0 || n >= sizeof(item) || t->naddrs == AW_MAX_ADDRS)
            return -1;
        memcpy(item, s, n);
        item[n] = '\0';
        if (aw_parse_addr(item, &t->addrs[t->naddrs++]))
            return -1;
        s += n;
        if (*s == ',')
            s++;
    }
    return t->naddrs ? 0 : -1;
}

/* aw_read_first_line: the first line of a stream, trimmed, into out; 0 OK, -1 empty. */
static int aw_first_line(FILE *f, char *out, size_t cap)
{
    if (!fgets(out, (int)cap, f))
        return -1;
    out[strcspn(out, "\r\n")] = '\0';
    size_t n = strlen(out);
    while (n && (out[n - 1] == ' ' || out[n - 1] == '\t'))
        out[--n] = '\0';
    return n ? 0 : -1;
}

/* aw_connect: a connection to a with connect and command timeouts of timeout_ms,
 * authenticated when password is not empty. Returns NULL on any failure and puts one
 * line saying why into err. The caller frees the context. */
static redisContext *aw_connect(const aw_addr_t *a, const char *password, int timeout_ms, char *err, size_t errcap)
{
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    redisContext *c = redisConnectWithTimeout(a->host, a->port, tv);
    if (!c || c->err) {
        snprintf(err, errcap, "connect %s:%d: %s", a->host, a->port, c ? c->errstr : "out of memory");
        goto fail;
    }
    if (redisSetTimeout(c, tv) != REDIS_OK) {
        snprintf(err, errcap, "set timeout %s:%d", a->host, a->port);
        goto fail;
    }
    if (password[0]) {
        redisReply *r = redisCommand(c, "AUTH %s", password);
        int ok = r && r->type == REDIS_REPLY_STATUS;
        if (!ok)
            snprintf(err, errcap, "AUTH %s:%d: %s", a->host, a->port,
                     r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
        freeReplyObject(r);
        if (!ok)
            goto fail;
    }
    return c;
fail:
    if (c)
        redisFree(c);
    return NULL;
}

/* aw_role: asks a for ROLE; 1 master, 0 anything else (replica, sentinel), -1 no answer. */
static int aw_role(const aw_addr_t *a, const char *password, int timeout_ms)
{
    char err[256];
    redisContext *c = aw_connect(a, password, timeout_ms, err, sizeof(err));
    int role = -1;
    if (!c)
        return -1;
    redisReply *r = redisCommand(c, "ROLE");
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 && r->element[0]->type == REDIS_REPLY_STRING)
        role = strcmp(r->element[0]->str, "master") == 0;
    freeReplyObject(r);
    redisFree(c);
    return role;
}

/* aw_resolve: the current primary according to t, into out. 0 found, -1 not now (err
 * says why). *masters is set to the number of candidates answering master (candidates
 * mode), 1 otherwise. */
static int aw_resolve(const aw_target_t *t, aw_addr_t *out, int *masters, char *err, size_t errcap)
{
    char line[AW_ADDR_LEN + 8];
    *masters = 1;
    switch (t->kind) {
    case AW_T_ADDR:
        *out = t->addrs[0];
        return 0;
    case AW_T_SENTINELS:
        for (size_t i = 0; i < t->naddrs; i++) {
            redisContext *c = aw_connect(&t->addrs[i], "", 200, err, errcap);
            if (!c)
                continue;
            redisReply *r = redisCommand(c, "SENTINEL get-master-addr-by-name %s", t->master);
            int ok = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                     r->element[0]->type == REDIS_REPLY_STRING && r->element[1]->type == REDIS_REPLY_STRING &&
                     r->element[0]->len < sizeof(out->host);
            long port = 0;
            if (ok && aw_parse_int(r->element[1]->str, 1, 65535, &port) == 0) {
                snprintf(out->host, sizeof(out->host), "%s", r->element[0]->str);
                out->port = (int)port;
            } else {
                ok = 0;
                snprintf(err, errcap, "sentinel %s:%d has no address for %s", t->addrs[i].host, t->addrs[i].port,
                         t->master);
            }
            freeReplyObject(r);
            redisFree(c);
            if (ok)
                return 0;
        }
        return -1;
    case AW_T_CANDIDATES: {
        int found = -1;
        *masters = 0;
        for (size_t i = 0; i < t->naddrs; i++) {
            if (aw_role(&t->addrs[i], t->password, 100) == 1) {
                if (found < 0)
                    found = (int)i;
                (*masters)++;
            }
        }
        if (found < 0) {
            snprintf(err, errcap, "no candidate answers ROLE master");
            return -1;
        }
        *out = t->addrs[found];
        return 0;
    }
    case AW_T_CMD: {
        FILE *p = popen(t->cmd, "r");
        int rc = -1;
        if (!p) {
            snprintf(err, errcap, "popen: %s", strerror(errno));
            return -1;
        }
        if (aw_first_line(p, line, sizeof(line)) == 0 && aw_parse_addr(line, out) == 0)
            rc = 0;
        else
            snprintf(err, errcap, "resolve command printed no host:port");
        pclose(p);
        return rc;
    }
    case AW_T_FILE: {
        FILE *f = fopen(t->file, "r");
        int rc = -1;
        if (!f) {
            snprintf(err, errcap, "%s: %s", t->file, strerror(errno));
            return -1;
        }
        if (aw_first_line(f, line, sizeof(line)) == 0 && aw_parse_addr(line, out) == 0)
            rc = 0;
        else
            snprintf(err, errcap, "%s holds no host:port", t->file);
        fclose(f);
        return rc;
    }
    case AW_T_NONE:
        break;
    }
    snprintf(err, errcap, "no target");
    return -1;
}

/* aw_event: one JSON line into the events file, flushed. fields is a preformatted
 * ',"k":v' tail (may be empty). */
static void aw_event(FILE *ev, const char *name, const char *fmt, ...)
{
    char tail[512] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(tail, sizeof(tail), fmt, ap);
        va_end(ap);
    }
    fprintf(ev, "{\"t\":%" PRId64 ",\"ev\":\"%s\"%s}\n", bench_now_ms(), name, tail);
    fflush(ev);
}

/* aw_json_safe: err with the characters JSON strings cannot carry raw replaced by '_'. */
static void aw_json_safe(char *s)
{
    for (; *s; s++)
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
            *s = '_';
}

/* aw_pace: waits until the absolute monotonic deadline *next (a bounded wait: the rate
 * limiter of a client tool, not an event loop), then moves it one period on; when late by
 * more than one period the schedule restarts from now (no burst after an outage). */
static void aw_pace(struct timespec *next, long period_ns)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int64_t late = ((int64_t)now.tv_sec - next->tv_sec) * 1000000000 + (now.tv_nsec - next->tv_nsec);
    if (late > period_ns)
        *next = now;
    else
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL) == EINTR && !bench_stop)
            ;
    next->tv_nsec += period_ns;
    while (next->tv_nsec >= 1000000000) {
        next->tv_nsec -= 1000000000;
        next->tv_sec++;
    }
}

typedef struct {
    aw_target_t target;
    const char *acks_path;
    const char *events_path;
    const char *prefix;
    long rate;
    long wait_ms;
    long replicas;
    long duration_s;
} aw_write_opts_t;

/* aw_write_run: the writer loop (see the file comment). Returns 0 when stopped by a signal
 * or the duration, 2 when a file cannot be opened. */
static int aw_write_run(const aw_write_opts_t *o)
{
    FILE *acks = fopen(o->acks_path, "a");
    FILE *ev = fopen(o->events_path, "a");
    redisContext *c = NULL;
    aw_addr_t cur = {"", 0};
    char err[384], last_err[384] = "";
    uint64_t i = 1, acked = 0, failed = 0;
    int64_t last_ack = 0;
    int failing = 0, accepted_since_fail = 0, rc = 2;
    struct timespec next;
    long period_ns = 1000000000L / o->rate;
    int64_t end = o->duration_s ? bench_now_ms() + o->duration_s * 1000 : 0;

    if (!acks || !ev) {
        fprintf(stderr, "ackwriter: cannot open %s: %s\n", !acks ? o->acks_path : o->events_path, strerror(errno));
        goto out;
    }
    aw_event(ev, "start", ",\"rate\":%ld,\"wait_ms\":%ld", o->rate, o->wait_ms);
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!bench_stop && (!end || bench_now_ms() < end)) {
        aw_pace(&next, period_ns);
        if (bench_stop)
            break;
        if (!c) {
            aw_addr_t a;
            int masters = 1;
            if (aw_resolve(&o->target, &a, &masters, err, sizeof(err)) == 0) {
                if (masters > 1)
                    aw_event(ev, "two-masters", ",\"masters\":%d", masters);
                if (strcmp(a.host, cur.host) != 0 || a.port != cur.port) {
                    cur = a;
                    aw_event(ev, "target", ",\"addr\":\"%s:%d\"", cur.host, cur.port);
                }
                c = aw_connect(&cur, o->target.password, 300, err, sizeof(err));
            }
        }
        if (c) {
            char key[96], val[32];
            snprintf(key, sizeof(key), "%s%" PRIu64, o->prefix, i);
            snprintf(val, sizeof(val), "%" PRIu64, i);
            redisReply *r = redisCommand(c, "SET %s %s", key, val);
            int set_ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;
            if (!set_ok)
                snprintf(err, sizeof(err), "SET: %s", r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
            freeReplyObject(r);
            long long replicas = -1;
            if (set_ok) {
                if (failing && !accepted_since_fail) {
                    accepted_since_fail = 1;
                    aw_event(ev, "accept", ",\"addr\":\"%s:%d\",\"i\":%" PRIu64, cur.host, cur.port, i);
                }
                r = o->replicas ? redisCommand(c, "WAIT %ld %ld", o->replicas, o->wait_ms) : NULL;
                if (!o->replicas)
                    replicas = 0;
                else if (r && r->type == REDIS_REPLY_INTEGER)
                    replicas = r->integer;
                else
                    snprintf(err, sizeof(err), "WAIT: %s", r && r->type == REDIS_REPLY_ERROR ? r->str : c->errstr);
                if (o->replicas && replicas >= 0 && replicas < o->replicas)
                    snprintf(err, sizeof(err), "WAIT: %lld of %ld replicas acknowledged within %ld ms", replicas,
                             o->replicas, o->wait_ms);
                freeReplyObject(r);
            }
            if (set_ok && replicas >= o->replicas) {
                fprintf(acks, "%s %s %s:%d\n", key, val, cur.host, cur.port);
                fflush(acks);
                acked++;
                i++;
                last_ack = bench_now_ms();
                if (failing) {
                    aw_event(ev, "ack", ",\"addr\":\"%s:%d\",\"i\":%" PRIu64, cur.host, cur.port, i - 1);
                    failing = 0;
                }
                continue;
            }
            /* A connection error poisons the context; a Redis error or WAIT 0 does not,
             * but the primary may have changed: resolve again either way. */
            redisFree(c);
            c = NULL;
        }
        failed++;
        aw_json_safe(err);
        if (!failing) {
            failing = 1;
            accepted_since_fail = 0;
            aw_event(ev, "fail", ",\"addr\":\"%s:%d\",\"err\":\"%s\",\"i\":%" PRIu64 ",\"last_ack\":%" PRId64,
                     cur.host, cur.port, err, i, last_ack);
            snprintf(last_err, sizeof(last_err), "%s", err);
        } else if (strcmp(err, last_err) != 0) {
            aw_event(ev, "error", ",\"addr\":\"%s:%d\",\"err\":\"%s\"", cur.host, cur.port, err);
            snprintf(last_err, sizeof(last_err), "%s", err);
        }
    }
    aw_event(ev, "stop", ",\"acked\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"next\":%" PRIu64, acked, failed, i);
    rc = 0;
out:
    if (c)
        redisFree(c);
    if (acks)
        fclose(acks);
    if (ev)
        fclose(ev);
    return rc;
}

/* aw_verify_batch: GETs keys[0..n) on c pipelined and compares with vals; adds to the
 * counters and prints up to *show missing keys. 0 OK, -1 connection error. */
static int aw_verify_batch(redisContext *c, char (*keys)[96], char (*vals)[32], size_t n, uint64_t *present,
                           uint64_t *missing, uint64_t *wrong, long *show)
{
    for (size_t k = 0; k < n; k++)
        if (redisAppendCommand(c, "GET %s", keys[k]) != REDIS_OK)
            return -1;
    for (size_t k = 0; k < n; k++) {
        void *v = NULL;
        if (redisGetReply(c, &v) != REDIS_OK)
            return -1;
        redisReply *r = v;
        if (r->type == REDIS_REPLY_STRING && strcmp(r->str, vals[k]) == 0) {
            (*present)++;
        } else if (r->type == REDIS_REPLY_NIL) {
            (*missing)++;
            if ((*show)-- > 0)
                printf("missing %s\n", keys[k]);
        } else {
            (*wrong)++;
            if ((*show)-- > 0)
                printf("wrong %s (want %s)\n", keys[k], vals[k]);
        }
        freeReplyObject(r);
    }
    return 0;
}

/* aw_verify_run: see the file comment. Returns 0 all present, 1 some missing/wrong, 2 error. */
static int aw_verify_run(const aw_addr_t *a, const char *password, const char *acks_path, long show)
{
    enum { BATCH = 1000 };
    static char keys[BATCH][96], vals[BATCH][32];
    char line[512], err[256];
    uint64_t acked = 0, present = 0, missing = 0, wrong = 0;
    size_t n = 0;
    int rc = 2;
    FILE *f = fopen(acks_path, "r");
    redisContext *c = aw_connect(a, password, 5000, err, sizeof(err));
    if (!f) {
        fprintf(stderr, "ackwriter verify: %s: %s\n", acks_path, strerror(errno));
        goto out;
    }
    if (!c) {
        fprintf(stderr, "ackwriter verify: %s\n", err);
        goto out;
    }
    while (fgets(line, sizeof(line), f)) {
        size_t kl = strcspn(line, " \n");
        char *v = line + kl;
        if (*v != ' ' || kl == 0 || kl >= sizeof(keys[0]))
            continue; /* a torn last line of a killed writer: never counted as acked */
        v++;
        size_t vl = strcspn(v, " \n");
        if (vl == 0 || vl >= sizeof(vals[0]))
            continue;
        memcpy(keys[n], line, kl);
        keys[n][kl] = '\0';
        memcpy(vals[n], v, vl);
        vals[n][vl] = '\0';
        acked++;
        if (++n == BATCH) {
            if (aw_verify_batch(c, keys, vals, n, &present, &missing, &wrong, &show)) {
                fprintf(stderr, "ackwriter verify: %s\n", c->errstr);
                goto out;
            }
            n = 0;
        }
    }
    if (n && aw_verify_batch(c, keys, vals, n, &present, &missing, &wrong, &show)) {
        fprintf(stderr, "ackwriter verify: %s\n", c->errstr);
        goto out;
    }
    printf("acked=%" PRIu64 " present=%" PRIu64 " missing=%" PRIu64 " wrong=%" PRIu64 "\n", acked, present, missing,
           wrong);
    if (acked == 0) {
        fprintf(stderr, "ackwriter verify: %s holds no acknowledged key: nothing verified\n", acks_path);
        goto out;
    }
    rc = missing || wrong ? 1 : 0;
out:
    if (f)
        fclose(f);
    if (c)
        redisFree(c);
    return rc;
}

/* aw_roles_run: the ROLE sampler (see the file comment). 0 OK, 2 when out cannot be opened. */
static int aw_roles_run(const aw_target_t *t, const char *out_path, long interval_ms, long duration_s)
{
    FILE *out = fopen(out_path, "a");
    char prev[AW_MAX_ADDRS * (AW_ADDR_LEN + 16)] = "";
    uint64_t samples = 0;
    int max_masters = 0;
    int64_t two_ms = 0, last = 0, end = duration_s ? bench_now_ms() + duration_s * 1000 : 0;
    int last_two = 0;
    struct timespec next;
    if (!out) {
        fprintf(stderr, "ackwriter roles: %s: %s\n", out_path, strerror(errno));
        return 2;
    }
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (!bench_stop && (!end || bench_now_ms() < end)) {
        aw_pace(&next, interval_ms * 1000000L);
        char cur[sizeof(prev)] = "";
        size_t used = 0;
        int masters = 0;
        for (size_t i = 0; i < t->naddrs; i++) {
            int r = aw_role(&t->addrs[i], t->password, 50);
            masters += r == 1;
            int w = snprintf(cur + used, sizeof(cur) - used, " %s:%d=%s", t->addrs[i].host, t->addrs[i].port,
                             r == 1 ? "master" : r == 0 ? "replica" : "down");
            if (w > 0 && (size_t)w < sizeof(cur) - used)
                used += (size_t)w;
        }
        int64_t now = bench_now_ms();
        if (last_two && last)
            two_ms += now - last;
        last = now;
        last_two = masters >= 2;
        samples++;
        if (masters > max_masters)
            max_masters = masters;
        if (strcmp(cur, prev) != 0) {
            fprintf(out, "%" PRId64 " %d%s\n", now, masters, cur);
            fflush(out);
            memcpy(prev, cur, sizeof(prev));
        }
    }
    printf("samples=%" PRIu64 " max_masters=%d two_master_ms=%" PRId64 "\n", samples, max_masters, two_ms);
    fclose(out);
    return 0;
}

static int aw_usage(void)
{
    fputs("usage: ackwriter write (--addr H:P | --sentinels H:P,.. --master NAME | --candidates H:P,.. |\n"
          "                        --resolve-cmd CMD | --resolve-file F) --acks FILE --events FILE\n"
          "                        [--rate N] [--wait-ms MS] [--replicas N] [--prefix P] [--duration S]\n"
          "                        [--password-file F]\n"
          "       ackwriter verify --addr H:P --acks FILE [--password-file F] [--show N]\n"
          "       ackwriter roles --candidates H:P,.. --out FILE [--interval-ms MS] [--duration S]\n"
          "                        [--password-file F]\n",
          stderr);
    return 2;
}

/* An option that takes a word (to) or a whole number in [min, max] (num). */
typedef struct {
    const char *name;
    const char **to;
    long *num, min, max;
} aw_opt_t;

/* opt's value v into its row of opts[n]: 1 when it is one of them and v fits, -1 when v
 * does not, 0 when it is none of them. */
static int aw_take_opt(const aw_opt_t *opts, size_t n, const char *opt, const char *v)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(opt, opts[i].name))
            continue;
        if (opts[i].to)
            *opts[i].to = v;
        return opts[i].to || !aw_parse_int(v, opts[i].min, opts[i].max, opts[i].num) ? 1 : -1;
    }
    return 0;
}

/* An option of the target (where to write, its password) into t: 1 taken, -1 a bad value,
 * 0 none of them, 2 the password file unreadable (said on stderr). */
static int aw_take_target(aw_target_t *t, const char *opt, const char *v)
{
    if (strcmp(opt, "--addr") == 0) {
        t->kind = AW_T_ADDR;
        return aw_parse_list(v, t) || t->naddrs != 1 ? -1 : 1;
    }
    if (strcmp(opt, "--sentinels") == 0 || strcmp(opt, "--candidates") == 0) {
        t->kind = opt[2] == 's' ? AW_T_SENTINELS : AW_T_CANDIDATES;
        return aw_parse_list(v, t) ? -1 : 1;
    }
    if (strcmp(opt, "--master") == 0) {
        t->master = v;
    } else if (strcmp(opt, "--resolve-cmd") == 0) {
        t->kind = AW_T_CMD;
        t->cmd = v;
    } else if (strcmp(opt, "--resolve-file") == 0) {
        t->kind = AW_T_FILE;
        t->file = v;
    } else if (strcmp(opt, "--password-file") == 0) {
        FILE *f = fopen(v, "r");
        int bad = !f || aw_first_line(f, t->password, sizeof(t->password));
        if (f)
            fclose(f);
        if (bad) {
            fprintf(stderr, "ackwriter: cannot read a password from %s\n", v);
            return 2;
        }
    } else {
        return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    aw_write_opts_t o = {.prefix = "k_", .rate = 200, .wait_ms = 100, .replicas = 1};
    const char *out = NULL;
    long show = 10, interval = 100;
    const aw_opt_t opts[] = {
        {"--acks", &o.acks_path, NULL, 0, 0},         {"--events", &o.events_path, NULL, 0, 0},
        {"--out", &out, NULL, 0, 0},                  {"--prefix", &o.prefix, NULL, 0, 0},
        {"--rate", NULL, &o.rate, 1, 100000},         {"--wait-ms", NULL, &o.wait_ms, 0, 60000},
        {"--replicas", NULL, &o.replicas, 0, 16},     {"--duration", NULL, &o.duration_s, 0, 86400},
        {"--show", NULL, &show, 0, LONG_MAX},         {"--interval-ms", NULL, &interval, 1, 60000},
    };
    if (argc < 2)
        return aw_usage();
    const char *mode = argv[1];
    for (int k = 2; k < argc; k++) {
        const char *opt = argv[k];
        if (k + 1 >= argc)
            return aw_usage();
        const char *v = argv[++k];
        int r = aw_take_target(&o.target, opt, v);
        if (r == 2)
            return 2;
        if (r == 0)
            r = aw_take_opt(opts, sizeof(opts) / sizeof(opts[0]), opt, v);
        if (r <= 0)
            return aw_usage();
    }
    struct sigaction sa = {.sa_handler = bench_on_signal};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);

    if (strcmp(mode, "write") == 0) {
        if (o.target.kind == AW_T_NONE || !o.acks_path || !o.events_path ||
            (o.target.kind == AW_T_SENTINELS && !o.target.master))
            return aw_usage();
        return aw_write_run(&o);
    }
    if (strcmp(mode, "verify") == 0) {
        if (o.target.kind != AW_T_ADDR || !o.acks_path)
            return aw_usage();
        return aw_verify_run(&o.target.addrs[0], o.target.password, o.acks_path, show);
    }
    if (strcmp(mode, "roles") == 0) {
        if (o.target.kind != AW_T_CANDIDATES || !out)
            return aw_usage();
        return aw_roles_run(&o.target, out, interval, o.duration_s);
    }
    return aw_usage();
}
