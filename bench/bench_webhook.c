/* bench_webhook: what idle TLS connections cost webhookd, and whether it still answers.
 *
 *   bench_webhook [-n 2000] [--caps 4096,1024]   (caps separated by , or :) [--webhookd build/bin/webhookd]
 *                 [--certs DIR] [--posts 20]
 *
 * For each cap: start webhookd on 127.0.0.1 (an ephemeral port, --webhook-max-connections
 * = the cap, timeouts lengthened to 10 minutes so that the idle connections stay open for
 * the measurement: with the defaults each would be closed within 10 s), then
 *   1. open one keep-alive connection and POST a real AdmissionReview on it (the API
 *      server's pooled connection), and time POSTs on fresh connections: the baseline;
 *   2. read webhookd's RSS (VmRSS, and RssAnon: its heap);
 *   3. open n TLS connections, one after the other, each left idle right after its
 *      handshake (the slow-loris shape) — counting those refused at the cap;
 *   4. read the RSS again: the difference divided by the connections held is the cost of
 *      one idle connection;
 *   5. time POSTs while they are open: over the kept-alive connection and on fresh ones
 *      (at the cap a fresh one is refused, which is the point of the cap).
 * Prints one table row per cap. Needs deploy/gen-certs.sh (openssl) unless --certs names a
 * directory with ca.crt, tls.crt and tls.key. Linux only (/proc).
 */
#include "../tests/unit/tls_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VPATH "/validate-cache-example-com-v1alpha1-rediscluster"
#define REVIEW                                                                                                  \
    "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"bench-1\","   \
    "\"kind\":{\"group\":\"cache.example.com\",\"version\":\"v1\",\"kind\":\"RedisCluster\"},"             \
    "\"operation\":\"CREATE\",\"namespace\":\"default\",\"name\":\"cache\",\"object\":{\"apiVersion\":"          \
    "\"cache.example.com/v1\",\"kind\":\"RedisCluster\",\"metadata\":{\"name\":\"cache\",\"namespace\":"   \
    "\"default\"},\"spec\":{\"size\":3,\"image\":\"redis\",\"version\":\"7.2\",\"storage\":{\"size\":\"1Gi\"}}}}}"

typedef tls_client_t tls_conn_t;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* VmRSS and RssAnon of pid, in kB (0 when unknown). */
static void rss_of(pid_t pid, long *rss_kb, long *anon_kb)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    *rss_kb = *anon_kb = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof(line), f)) {
        if (!strncmp(line, "VmRSS:", 6))
            *rss_kb = strtol(line + 6, NULL, 10);
        else if (!strncmp(line, "RssAnon:", 8))
            *anon_kb = strtol(line + 8, NULL, 10);
    }
    fclose(f);
}

/* A TLS connection to 127.0.0.1:port (5 s timeouts, TCP_NODELAY). Returns 0, or -1 when
 * the connection or the handshake failed (refused at the cap: reset or end of stream). */
static int tls_open(SSL_CTX *ctx, int port, tls_conn_t *c)
{
    return tls_client_open(ctx, port, 1, c);
}

/* POST the review on c and read one answer (Content-Length framed). Returns the HTTP
 * status and whether it said allowed, or -1 on a transport failure. */
static int post_review(tls_conn_t *c, int *allowed)
{
    char req[2048];
    int n = snprintf(req, sizeof(req),
                     "POST " VPATH "?timeout=10s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     strlen(REVIEW), REVIEW);
    *allowed = 0;
    if (SSL_write(c->ssl, req, n) != n)
        return -1;
    char buf[16384];
    size_t have = 0;
    for (;;) {
        int r = SSL_read(c->ssl, buf + have, (int)(sizeof(buf) - 1 - have));
        if (r <= 0)
            return -1;
        have += (size_t)r;
        buf[have] = '\0';
        char *end = strstr(buf, "\r\n\r\n");
        char *cl = strcasestr(buf, "Content-Length:");
        if (end && cl && cl < end) {
            size_t body = (size_t)strtoul(cl + 15, NULL, 10);
            if (have >= (size_t)(end + 4 - buf) + body)
                break;
        }
        if (have >= sizeof(buf) - 1)
            return -1;
    }
    *allowed = strstr(buf, "\"allowed\":true") != NULL;
    return strncmp(buf, "HTTP/1.1 ", 9) ? -1 : (int)strtol(buf + 9, NULL, 10);
}

typedef struct {
    double median, max;
    int ok, n;
} lat_t;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* count POSTs, each on a fresh connection (fresh = 1) or all on *kept; times them. */
static lat_t time_posts(SSL_CTX *ctx, int port, int count, int fresh, tls_conn_t *kept)
{
    lat_t l = {0, 0, 0, count};
    double *t = calloc((size_t)count, sizeof(double));
    int m = 0;
    for (int i = 0; i < count && t; i++) {
        double t0 = now_ms();
        tls_conn_t c = {-1, NULL}, *use = kept;
        if (fresh) {
            if (tls_open(ctx, port, &c))
                continue;
            use = &c;
        }
        int allowed;
        int code = use->ssl ? post_review(use, &allowed) : -1;
        double dt = now_ms() - t0;
        if (fresh)
            tls_client_close(&c);
        if (code == 200 && allowed) {
            t[m++] = dt;
            l.ok++;
        }
    }
    if (m) {
        qsort(t, (size_t)m, sizeof(double), cmp_double);
        l.median = t[m / 2];
        l.max = t[m - 1];
    }
    free(t);
    return l;
}

/* Start webhookd with the cap; its log goes to logpath. Returns its pid and sets *port,
 * or -1. */
static pid_t start_webhookd(const char *bin, const char *certs, const char *rtdir, const char *logpath, int cap,
                            int *port)
{
    char capstr[16];
    snprintf(capstr, sizeof(capstr), "%d", cap);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl(bin, bin, "--webhook-bind-address", "127.0.0.1", "--webhook-port", "0", "--webhook-cert-dir", certs,
              "--runtime-dir", rtdir, "--webhook-max-connections", capstr, "--webhook-request-timeout", "10m",
              "--webhook-idle-timeout", "10m", (char *)NULL);
        _exit(127);
    }
    if (pid < 0)
        return -1;
    double deadline = now_ms() + 10000;
    while (now_ms() < deadline) {
        FILE *f = fopen(logpath, "r");
        char line[4096];
        while (f && fgets(line, sizeof(line), f)) {
            char *p = strstr(line, "\"msg\":\"webhook server listening\"");
            char *q = p ? strstr(p, "\"port\":\"") : NULL;
            if (q) {
                *port = (int)strtol(q + 8, NULL, 10);
                fclose(f);
                return pid;
            }
        }
        if (f)
            fclose(f);
        if (waitpid(pid, NULL, WNOHANG) == pid)
            return -1;
        poll(NULL, 0, 50);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

static int run_cap(const char *bin, const char *certs, const char *work, int cap, int n, int posts,
                   SSL_CTX *ctx)
{
    char rtdir[4096], logpath[4096];
    snprintf(rtdir, sizeof(rtdir), "%s/rt-%d", work, cap);
    snprintf(logpath, sizeof(logpath), "%s/webhookd-%d.log", work, cap);
    int port = 0;
    pid_t pid = start_webhookd(bin, certs, rtdir, logpath, cap, &port);
    if (pid < 0) {
        fprintf(stderr, "bench_webhook: webhookd did not start; see %s\n", logpath);
        return -1;
    }
    int rc = -1, opened = 0, refused = 0;
    tls_conn_t kept = {-1, NULL};
    tls_conn_t *conns = calloc((size_t)n, sizeof(*conns));
    if (!conns || tls_open(ctx, port, &kept))
        goto out;
    int allowed;
    if (post_review(&kept, &allowed) != 200 || !allowed) {
        fprintf(stderr, "bench_webhook: the first AdmissionReview was not admitted\n");
        goto out;
    }
    lat_t base_fresh = time_posts(ctx, port, posts, 1, NULL);
    long rss0, anon0, rss1, anon1;
    rss_of(pid, &rss0, &anon0);
    double t0 = now_ms();
    for (int i = 0; i < n; i++) {
        conns[i].fd = -1;
        if (tls_open(ctx, port, &conns[i]) == 0)
            opened++;
        else
            refused++;
    }
    double open_s = (now_ms() - t0) / 1000;
    poll(NULL, 0, 500); /* let webhookd settle (deferred frees of refused ones) */
    rss_of(pid, &rss1, &anon1);
    lat_t kept_l = time_posts(ctx, port, posts, 0, &kept);
    lat_t fresh_l = time_posts(ctx, port, posts, 1, NULL);
    int held = opened + 1; /* and the kept-alive one */
    printf(
        "| %5d | %5d | %5d | %5d | %6.1f | %6.1f MB | %6.1f MB | %5.1f kB (%4.1f) | %5.2f / %5.2f | %2d/%2d %5.2f / "
        "%5.2f | %2d/%2d %5.2f / %5.2f |\n",
        cap, n, opened, refused, open_s, rss0 / 1024.0, rss1 / 1024.0, opened ? (double)(rss1 - rss0) / opened : 0.0,
        opened ? (double)(anon1 - anon0) / opened : 0.0, base_fresh.median, base_fresh.max, kept_l.ok, kept_l.n,
        kept_l.median, kept_l.max, fresh_l.ok, fresh_l.n, fresh_l.median, fresh_l.max);
    (void)held;
    fflush(stdout);
    rc = 0;
out:
    for (int i = 0; conns && i < n; i++)
        if (conns[i].ssl)
            tls_client_close(&conns[i]);
    free(conns);
    tls_client_close(&kept);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    return rc;
}

int main(int argc, char **argv)
{
    const char *bin = "build/bin/webhookd", *certs = NULL, *caps = "4096,1000";
    int n = 2000, posts = 20;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-n") && v)
            n = (int)strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--caps") && v)
            caps = argv[++i];
        else if (!strcmp(a, "--webhookd") && v)
            bin = argv[++i];
        else if (!strcmp(a, "--certs") && v)
            certs = argv[++i];
        else if (!strcmp(a, "--posts") && v)
            posts = (int)strtol(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s [-n N] [--caps C1,C2] [--webhookd PATH] [--certs DIR] [--posts N]\n", argv[0]);
            return 2;
        }
    }
    if (n < 1 || posts < 1)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    /* Room for n connections here, and (inherited) in webhookd. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 256) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    char work[] = "/tmp/bench-webhook.XXXXXX";
    if (!mkdtemp(work)) {
        perror("mkdtemp");
        return 1;
    }
    char certdir[256], cmd[8192];
    if (!certs) {
        snprintf(certdir, sizeof(certdir), "%s/certs", work);
        snprintf(cmd, sizeof(cmd), "deploy/gen-certs.sh --certs-only --ip 127.0.0.1 --days 1 -o '%s' >/dev/null 2>&1",
                 certdir);
        if (system(cmd) != 0) {
            fprintf(stderr, "bench_webhook: %s failed\n", cmd);
            return 1;
        }
        certs = certdir;
    }
    char ca[4200];
    snprintf(ca, sizeof(ca), "%s/ca.crt", certs);
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx || SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
        fprintf(stderr, "bench_webhook: cannot load %s\n", ca);
        return 1;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);

    printf("webhookd %s: %d idle TLS connections (each left right after its handshake), %d timed POSTs of a "
           "real AdmissionReview per column\n\n",
           bin, n, posts);
    printf(
        "| cap | tried | held | refused | open s | RSS before | RSS after | per conn RSS (heap) | "
        "POST ms before: median / max | kept-alive POST: ok median / max ms | fresh POST: ok median / max ms |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    int rc = 0;
    char *list = strdup(caps);
    for (char *save = NULL, *tok = strtok_r(list, ",:", &save); tok; tok = strtok_r(NULL, ",:", &save))
        if (run_cap(bin, certs, work, (int)strtol(tok, NULL, 10), n, posts, ctx))
            rc = 1;
    free(list);
    SSL_CTX_free(ctx);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", work);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_webhook: could not remove %s\n", work);
    return rc;
}
