/*
 * bench/bench_redis_probe: observerd's probe (PING + INFO replication, every 5th probe
 * INFO with every default section, as --info-every 5) through the Redis transport
 * (common/redis_conn.h, observerd/redisnode.h) against a local redis-server, in plain
 * text and over TLS (certificates made here, as the unit tests make them).
 *
 *   bench_redis_probe [--nodes N] [--rounds R] [--password PW]
 *
 * For each mode it reports:
 *   - one node, R rounds on a kept connection: the probe's latency (p50, p99, max);
 *   - one node, R rounds on a fresh connection each (what a probe after a failure pays:
 *     connect, TLS handshake, AUTH, then the probe);
 *   - N nodes (default 300: 100 clusters of 3 pods, all on one server), R rounds: the
 *     round's latency (all N probes started together until the last answer) and this
 *     process's CPU time per round (getrusage: user + system).
 * One redis-server serves every connection, so N nodes measure our side's cost and the
 * server's serialisation, not a cluster of servers.
 */
#include "clock.h"
#include "loop.h"
#include "redis_tls.h"
#include "redisnode.h"

#include "../tests/unit/redis_servers.h"
#include "../tests/unit/redis_tls_certs.h"
#include "../tests/unit/tmpdir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define PROBE_TIMEOUT_NS (500 * NS_PER_MS)
/* The N-node rounds: the first one makes N TLS handshakes with ONE server, which does
 * them one after another (in a cluster each pod's server does its own): more than
 * observerd's 500 ms for N = 300. The timeout only bounds; it does not change latency. */
#define MANY_TIMEOUT_NS (10 * NS_PER_SEC)

typedef struct {
    int left;
    int failed;
    char error[256];
} round_t;

static void on_probe(redisnode_t *node, void *arg)
{
    round_t *r = arg;
    const redisnode_state_t *st = redisnode_state(node);
    if (!st->reachable) {
        r->failed++;
        snprintf(r->error, sizeof(r->error), "%s", st->error);
    }
    r->left--;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

typedef struct {
    int port;
    const redis_tls_t *tls;
    const char *password;
} target_t;

static redisnode_t *node_new(loop_t *loop, const target_t *t, int64_t timeout_ns, round_t *r)
{
    redisnode_t *n = redisnode_new(loop, "127.0.0.1", t->port, timeout_ns, on_probe, r);
    if (!n || redisnode_set_password(n, t->password) || redisnode_set_tls(n, t->tls, NULL)) {
        fprintf(stderr, "bench_redis_probe: out of memory\n");
        exit(2);
    }
    return n;
}

/* Probe every node once (the k-th round: full INFO every 5th) and run the loop until
 * all answered. Returns the round's wall time in ns; exits on a failed probe. */
static int64_t round_once(loop_t *loop, redisnode_t **nodes, int n, int k, round_t *r)
{
    int64_t t0 = clock_mono_ns();
    r->left = n;
    for (int i = 0; i < n; i++)
        redisnode_probe(nodes[i], k % 5 == 0);
    while (r->left > 0)
        if (loop_run_once(loop, MANY_TIMEOUT_NS) < 0)
            break;
    if (r->failed) {
        fprintf(stderr, "bench_redis_probe: a probe failed: %s\n", r->error);
        exit(2);
    }
    return clock_mono_ns() - t0;
}

static void report(const char *mode, const char *what, int64_t *ns, int rounds, double cpu)
{
    qsort(ns, (size_t)rounds, sizeof(ns[0]), cmp_i64);
    printf("| %s | %s | %.3f | %.3f | %.3f | %.3f |\n", mode, what, (double)ns[rounds / 2] / 1e6,
           (double)ns[rounds * 99 / 100] / 1e6, (double)ns[rounds - 1] / 1e6, cpu / rounds);
}

/* The three measurements of one mode. */
static void measure(const char *mode, const target_t *t, int nodes, int rounds)
{
    loop_t *loop = loop_new();
    round_t r = {0};
    int64_t *ns = calloc((size_t)rounds, sizeof(int64_t));
    redisnode_t **many = calloc((size_t)nodes, sizeof(*many));
    if (!loop || !ns || !many)
        exit(2);
    /* One node, kept connection (the first round connects: not counted). */
    redisnode_t *one = node_new(loop, t, PROBE_TIMEOUT_NS, &r);
    round_once(loop, &one, 1, 1, &r);
    double c0 = cpu_ms();
    for (int k = 0; k < rounds; k++)
        ns[k] = round_once(loop, &one, 1, k, &r);
    report(mode, "1 node, kept connection", ns, rounds, cpu_ms() - c0);
    redisnode_destroy(&one);
    /* One node, a fresh connection every probe. */
    c0 = cpu_ms();
    for (int k = 0; k < rounds; k++) {
        one = node_new(loop, t, PROBE_TIMEOUT_NS, &r);
        ns[k] = round_once(loop, &one, 1, 1, &r);
        redisnode_destroy(&one);
    }
    report(mode, "1 node, new connection each probe", ns, rounds, cpu_ms() - c0);
    /* N nodes, kept connections. */
    for (int i = 0; i < nodes; i++)
        many[i] = node_new(loop, t, MANY_TIMEOUT_NS, &r);
    c0 = cpu_ms();
    int64_t first = round_once(loop, many, nodes, 1, &r);
    double first_cpu = cpu_ms() - c0;
    char what[96];
    snprintf(what, sizeof(what), "%d nodes, first round (connects)", nodes);
    report(mode, what, &first, 1, first_cpu);
    c0 = cpu_ms();
    for (int k = 0; k < rounds; k++)
        ns[k] = round_once(loop, many, nodes, k, &r);
    snprintf(what, sizeof(what), "%d nodes, a round", nodes);
    report(mode, what, ns, rounds, cpu_ms() - c0);
    for (int i = 0; i < nodes; i++)
        redisnode_destroy(&many[i]);
    free(many);
    free(ns);
    loop_destroy(&loop);
}

/* The servers and the certificates' directory, gone at any exit (a failed probe exits
 * at once). */
static server_t plain, secure;
static char dir[64];

static void cleanup(void)
{
    server_stop(&plain);
    server_stop(&secure);
    if (dir[0])
        tmpdir_remove(dir);
    dir[0] = '\0';
}

int main(int argc, char **argv)
{
    int nodes = 300, rounds = 200;
    const char *password = "bench-pw";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--nodes"))
            nodes = (int)strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--rounds"))
            rounds = (int)strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--password"))
            password = argv[i + 1];
    }
    if (nodes < 1 || rounds < 1) {
        fprintf(stderr, "usage: bench_redis_probe [--nodes N] [--rounds R] [--password PW]\n");
        return 2;
    }
    snprintf(dir, sizeof(dir), "/tmp/rdc-bench-probe-XXXXXX");
    if (!mkdtemp(dir))
        return 2;
    atexit(cleanup);
    tc_pki_t pki;
    tc_pki_make(&pki);
    tc_pki_write(&pki, dir);
    char err[256];
    redis_tls_t *tls = redis_tls_new(
        &(redis_tls_config_t){.ca_pem = pki.ca.crt_pem, .ca_len = strlen(pki.ca.crt_pem)}, err, sizeof(err));
    const char *const extra[] = {"--requirepass", password, "--maxclients", "10000", NULL};
    int rc = 2;
    if (!tls || server_start(&plain, 0, extra) ||
        server_start_tls(&secure, dir, "server.crt", "server.key", 0, extra)) {
        fprintf(stderr, "bench_redis_probe: cannot start redis-server (%s)\n", tls ? "servers" : err);
        goto out;
    }
    printf("probe = [AUTH once per connection] PING + INFO replication (INFO every 5th); timeout 500 ms for one\n"
           "node, 10 s for %d nodes (their first round: %d handshakes with one server)\n\n",
           nodes, nodes);
    printf("| mode | what | p50 ms | p99 ms | max ms | CPU ms per round |\n|---|---|---|---|---|---|\n");
    measure("plain", &(target_t){plain.port, NULL, password}, nodes, rounds);
    measure("TLS 1.3", &(target_t){secure.port, tls, password}, nodes, rounds);
    rc = 0;
out:
    cleanup();
    redis_tls_destroy(&tls);
    tc_pki_free(&pki);
    return rc;
}
