/* take: rdc-backup take (take.h). */
#include "take.h"

#include "clock.h"
#include "jsonx.h"
#include "prune.h"
#include "redis_stream.h"
#include "redis_sync.h"
#include "redis_tls.h"
#include "replsync.h"
#include "retain.h"
#include "slots.h"

#include <arpa/inet.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define READ_CHUNK ((size_t)64 * 1024)
#define MAX_HANDSHAKE 4

typedef struct {
    redis_stream_t *stream;
    int timeout_ms;
    const backup_args_t *args;  /* --slots: checked again at the RDB's end (take_read) */
    const char *password;
    int slots_checked;
    replsync_t sync;
    char err[512];       /* the node's or the stream's failure, for the source error */
    char *out;           /* the sink's target: s3's buffer */
    size_t out_len, out_cap;
    char chunk[READ_CHUNK];
} node_t;

/* The time now in RFC 3339 into buf; returns it in Unix seconds. */
static int64_t iso_now(char *buf, size_t cap)
{
    int64_t sec = clock_wall_ns() / NS_PER_SEC;
    retain_time_str(sec, buf, cap);
    return sec;
}

/* Wait for events on fd at most timeout_ms: 0 ready, -1 with err. */
static int wait_fd(int fd, short events, int timeout_ms, const char *what, char *err, size_t errlen)
{
    struct pollfd p = {.fd = fd, .events = events};
    for (;;) {
        int n = poll(&p, 1, timeout_ms);
        if (n > 0)
            return 0;
        if (n == 0) {
            snprintf(err, errlen, "%s: no answer within %d ms", what, timeout_ms);
            return -1;
        }
        if (errno != EINTR) {
            snprintf(err, errlen, "%s: poll: %s", what, strerror(errno));
            return -1;
        }
    }
}

/* A connected non-blocking TCP socket to host:port, or -1 with err. */
static int connect_tcp(const char *host, int port, int timeout_ms, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    socklen_t sl;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        sl = sizeof *v4;
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        sl = sizeof *v6;
    } else {
        snprintf(err, errlen, "%s: not an IP address", host);
        return -1;
    }
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int soerr = 0;
    socklen_t el = sizeof soerr;
    if (fd < 0) {
        snprintf(err, errlen, "socket: %s", strerror(errno));
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&ss, sl) != 0 && errno != EINPROGRESS) {
        snprintf(err, errlen, "connect: %s", strerror(errno));
        goto fail;
    }
    if (wait_fd(fd, POLLOUT, timeout_ms, "connect", err, errlen) != 0)
        goto fail;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &el) != 0 || soerr != 0) {
        snprintf(err, errlen, "connect: %s", strerror(soerr ? soerr : errno));
        goto fail;
    }
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
fail:
    close(fd);
    return -1;
}

/* Wait as a WANT_* status asks: 0, or -1 with err. */
static int stream_wait(node_t *n, redis_stream_status_t st, const char *what)
{
    short ev = st == REDIS_STREAM_WANT_WRITE ? POLLOUT : POLLIN;
    return wait_fd(redis_stream_fd(n->stream), ev, n->timeout_ms, what, n->err, sizeof n->err);
}

/* The TLS settings of --tls-dir (ca.crt; tls.crt and tls.key when present). */
static redis_tls_t *tls_from_dir(const char *dir, char *err, size_t errlen)
{
    char ca[4200], probe[4200], e2[256];
    struct stat st;
    redis_tls_t *t = NULL;
    char *cert = NULL, *key = NULL;
    size_t clen = 0, klen = 0;
    snprintf(ca, sizeof ca, "%s/ca.crt", dir);
    snprintf(probe, sizeof probe, "%s/tls.crt", dir);
    if (stat(probe, &st) == 0) {
        cert = backup_read_small(dir, "tls.crt", &clen, err, errlen);
        key = cert ? backup_read_small(dir, "tls.key", &klen, err, errlen) : NULL;
        if (!key)
            goto out;
    }
    redis_tls_config_t cfg = {.ca_file = ca, .cert_pem = cert, .cert_len = clen, .key_pem = key, .key_len = klen};
    t = redis_tls_new(&cfg, e2, sizeof e2);
    if (!t)
        snprintf(err, errlen, "--tls-dir %s: %s", dir, e2);
out:
    backup_free_secret(cert, clen);
    backup_free_secret(key, klen);
    return t;
}

/* Connect, and for TLS shake hands: 0 with n->stream, -1 with n->err. */
static int node_open(node_t *n, const backup_args_t *a)
{
    redis_tls_t *tls = NULL;
    SSL *ssl = NULL;
    int rc = -1, fd = -1;
    if (a->tls_dir && !(tls = tls_from_dir(a->tls_dir, n->err, sizeof n->err)))
        return -1;
    fd = connect_tcp(a->host, a->port, n->timeout_ms, n->err, sizeof n->err);
    if (fd < 0)
        goto out;
    if (tls) {
        ssl = redis_tls_session(tls, a->tls_server_name, a->host, n->err, sizeof n->err);
        n->stream = ssl ? redis_stream_new_tls(ssl, fd) : NULL;
    } else {
        n->stream = redis_stream_new_plain(fd);
    }
    if (!n->stream) {
        if (ssl)
            SSL_free(ssl);
        close(fd);
        if (!n->err[0])
            snprintf(n->err, sizeof n->err, "out of memory");
        goto out;
    }
    for (;;) {
        redis_stream_status_t st = redis_stream_handshake(n->stream, n->err, sizeof n->err);
        if (st == REDIS_STREAM_OK)
            break;
        if (st == REDIS_STREAM_ERROR || stream_wait(n, st, "TLS handshake") != 0)
            goto out;
    }
    rc = 0;
out:
    redis_tls_destroy(&tls);
    return rc;
}

int take_check_slots(const backup_args_t *a, const char *password, int timeout_ms, char *err, size_t errlen)
{
    static const char *const cmd[] = {"CLUSTER", "NODES"};
    redis_tls_t *tls = NULL;
    redisReply *r = NULL;
    int64_t timeout_ns = (int64_t)timeout_ms * NS_PER_MS;
    int rc = -1;
    if (a->tls_dir && !(tls = tls_from_dir(a->tls_dir, err, errlen)))
        return -1;
    redis_conn_opts_t opts = {.host = a->host, .port = a->port, .connect_timeout_ns = timeout_ns, .tls = tls,
                              .tls_server_name = a->tls_server_name, .user = a->user, .password = password};
    r = redis_sync_once(&opts, 2, cmd, NULL, timeout_ns, err, errlen);
    if (r && r->type == REDIS_REPLY_ERROR)
        snprintf(err, errlen, "CLUSTER NODES: %s", r->str);
    else if (r && r->type != REDIS_REPLY_STRING)
        snprintf(err, errlen, "CLUSTER NODES: a reply of type %d, not a bulk string", r->type);
    else if (r)
        rc = slots_check(r->str, r->len, &a->want_slots, err, errlen);
    freeReplyObject(r);
    redis_tls_destroy(&tls);
    return rc;
}

/* take_check_slots for n, n->err saying when ("before the sync", "after the RDB"). */
static int node_check_slots(node_t *n, const char *when)
{
    char why[480];
    if (take_check_slots(n->args, n->password, n->timeout_ms, why, sizeof why) == 0)
        return 0;
    snprintf(n->err, sizeof n->err, "%s: %s", when, why);
    return -1;
}

/* Write len bytes of buf whole: 0, or -1 with n->err. */
static int node_write(node_t *n, const char *buf, size_t len)
{
    while (len) {
        size_t w = 0;
        redis_stream_status_t st = redis_stream_write(n->stream, buf, len, &w, n->err, sizeof n->err);
        if (st == REDIS_STREAM_OK) {
            buf += w;
            len -= w;
        } else if (st == REDIS_STREAM_CLOSED) {
            snprintf(n->err, sizeof n->err, "write: connection closed by the server");
            return -1;
        } else if (st == REDIS_STREAM_ERROR || stream_wait(n, st, "write") != 0) {
            return -1;
        }
    }
    return 0;
}

static int node_read_once(node_t *n, size_t cap);

/* Append one command to *wire (hiredis formats it). 0, or -1 out of memory. */
static int append_cmd(char **wire, size_t *len, int argc, const char **argv)
{
    char *cmd = NULL;
    long long clen = redisFormatCommandArgv(&cmd, argc, argv, NULL);
    if (clen < 0)
        return -1;
    char *grown = realloc(*wire, *len + (size_t)clen);
    if (!grown) {
        explicit_bzero(cmd, (size_t)clen);
        redisFreeCommand(cmd);
        return -1;
    }
    memcpy(grown + *len, cmd, (size_t)clen);
    explicit_bzero(cmd, (size_t)clen);
    redisFreeCommand(cmd);
    *wire = grown;
    *len += (size_t)clen;
    return 0;
}

/* Send the handshake (take.h) and set up n->sync for its replies: the commands before
 * PSYNC pipelined, their replies awaited (Redis refuses a PSYNC while replies to the same
 * client are still unsent: "SYNC and PSYNC are invalid with pending output"), then PSYNC.
 * 0, or -1 with n->err. */
static int node_handshake(node_t *n, const backup_args_t *a, const char *password)
{
    static const char *const names[] = {"AUTH", "REPLCONF capa eof", "REPLCONF rdb-only"};
    static const int optional[] = {0, 0, 1};
    const char *auth[] = {"AUTH", a->user ? a->user : password, password};
    const char *capa[] = {"REPLCONF", "capa", "eof"};
    const char *rdbonly[] = {"REPLCONF", "rdb-only", "1"};
    const char *psync[] = {"PSYNC", "?", "-1"};
    char *wire = NULL, *tail = NULL;
    size_t len = 0, tlen = 0;
    int skip = password ? 0 : 1, rc = -1;
    if ((password && append_cmd(&wire, &len, a->user ? 3 : 2, auth) != 0) ||
        append_cmd(&wire, &len, 3, capa) != 0 || append_cmd(&wire, &len, 3, rdbonly) != 0 ||
        append_cmd(&tail, &tlen, 3, psync) != 0) {
        snprintf(n->err, sizeof n->err, "out of memory");
        goto out;
    }
    replsync_init(&n->sync, 3 - (size_t)skip, names + skip, optional + skip);
    if (node_write(n, wire, len) != 0)
        goto out;
    n->out_cap = 0; /* no RDB byte comes before PSYNC */
    while (n->sync.state == REPLSYNC_PRE) {
        int r = node_read_once(n, READ_CHUNK);
        if (r == 1)
            replsync_closed(&n->sync);
        if (r < 0)
            goto out;
    }
    if (n->sync.state == REPLSYNC_FAILED) {
        snprintf(n->err, sizeof n->err, "%s", n->sync.err);
        goto out;
    }
    rc = node_write(n, tail, tlen);
out:
    if (wire)
        explicit_bzero(wire, len);
    free(wire);
    free(tail);
    return rc;
}

static int sink_to_out(void *ctx, const void *buf, size_t len)
{
    node_t *n = ctx;
    if (len > n->out_cap - n->out_len)
        return -1; /* cannot happen: replsync gives at most what it was fed */
    memcpy(n->out + n->out_len, buf, len);
    n->out_len += len;
    return 0;
}

/* One read from the node fed to the sync: 0 (go on), 1 (closed), -1 with n->err. */
static int node_read_once(node_t *n, size_t cap)
{
    size_t got = 0;
    redis_stream_status_t st = redis_stream_read(n->stream, n->chunk, cap, &got, n->err, sizeof n->err);
    if (st == REDIS_STREAM_CLOSED)
        return 1;
    if (st == REDIS_STREAM_ERROR)
        return -1;
    if (st != REDIS_STREAM_OK)
        return stream_wait(n, st, replsync_state_name(n->sync.state)) == 0 ? 0 : -1;
    replsync_feed(&n->sync, n->chunk, got, NULL, sink_to_out, n);
    return 0;
}

/* s3_read_fn: the RDB's next bytes, read from the node into buf. Its end (0) comes only
 * after --slots held once more: s3_put completes the object after it, so a shard whose
 * slots moved during the sync leaves no object. */
static ssize_t take_read(void *ctx, void *buf, size_t len)
{
    node_t *n = ctx;
    n->out = buf;
    n->out_len = 0;
    n->out_cap = len;
    while (n->out_len == 0 && n->sync.state != REPLSYNC_DONE) {
        int r = node_read_once(n, len < READ_CHUNK ? len : READ_CHUNK);
        if (r == 1)
            replsync_closed(&n->sync);
        if (n->sync.state == REPLSYNC_FAILED) {
            snprintf(n->err, sizeof n->err, "%s", n->sync.err);
            r = -1;
        }
        if (r < 0) {
            errno = EPROTO;
            return -1;
        }
    }
    if (n->out_len == 0 && n->args->slots && !n->slots_checked) {
        n->slots_checked = 1;
        if (node_check_slots(n, "after the RDB") != 0) {
            errno = EPROTO;
            return -1;
        }
    }
    return (ssize_t)n->out_len;
}

/* The result's JSON object (*oom set when memory ran out). */
static json_object *result_json(const backup_args_t *a, const char *key, const node_t *n,
                                const s3_put_result_t *res, const char *start, const char *end, int *oom_p)
{
    int oom = 0;
    json_object *o = jsonx_new_obj(&oom);
    jsonx_put(o, "result", jsonx_new_str("ok", &oom), &oom);
    jsonx_put(o, "source", jsonx_new_str(a->redis, &oom), &oom);
    jsonx_put(o, "bucket", jsonx_new_str(a->bucket, &oom), &oom);
    jsonx_put(o, "key", jsonx_new_str(key, &oom), &oom);
    jsonx_put(o, "size", jsonx_new_int((int64_t)res->size, &oom), &oom);
    jsonx_put(o, "sha256", jsonx_new_str(res->sha256, &oom), &oom);
    jsonx_put(o, "offset", jsonx_new_int(n->sync.offset, &oom), &oom);
    jsonx_put(o, "replid", jsonx_new_str(n->sync.replid, &oom), &oom);
    jsonx_put(o, "rdbForm", jsonx_new_str(n->sync.eof_form ? "eof-marker" : "length", &oom), &oom);
    jsonx_put(o, "parts", jsonx_new_int(res->parts, &oom), &oom);
    jsonx_put(o, "etag", jsonx_new_str(res->etag, &oom), &oom);
    jsonx_put(o, "startTime", jsonx_new_str(start, &oom), &oom);
    jsonx_put(o, "completionTime", jsonx_new_str(end, &oom), &oom);
    if (a->slots)
        jsonx_put(o, "slots", jsonx_new_str(a->slots, &oom), &oom);
    *oom_p |= oom;
    return o;
}

static int upload(node_t *n, const backup_args_t *a, const char *key, s3_t *s, s3_put_result_t *res, char *err,
                  size_t errlen)
{
    s3_error_t e;
    char line[1024];
    if (s3_put(s, a->bucket, key, take_read, n, res, &e) == 0)
        return 0;
    if (e.code == S3_ERR_SOURCE && n->err[0])
        snprintf(err, errlen, "%s: %s (upload aborted: no object written)", a->redis, n->err);
    else
        snprintf(err, errlen, "%s", s3_error_str(&e, line, sizeof line));
    return -1;
}

int take_run(const backup_args_t *a, s3_t *s, FILE *out, char *err, size_t errlen)
{
    char start[32], end[32], keybuf[1100];
    const char *key = a->key;
    char *password = NULL;
    size_t plen = 0;
    s3_put_result_t res;
    int rc = 1;
    node_t *n = calloc(1, sizeof *n);
    if (!n) {
        snprintf(err, errlen, "out of memory");
        return 1;
    }
    n->timeout_ms = (int)(a->timeout_s * 1000.0 > 2e9 ? 2e9 : a->timeout_s * 1000.0);
    n->args = a;
    int64_t t0 = iso_now(start, sizeof start);
    if (!key && retain_key_name(a->prefix, t0, keybuf, sizeof keybuf) != 0) {
        snprintf(err, errlen, "--prefix: no key for the time %lld", (long long)t0);
        goto out;
    }
    key = key ? key : keybuf;
    if (a->password_file && !(password = backup_read_small(NULL, a->password_file, &plen, err, errlen)))
        goto out;
    n->password = password;
    /* --slots before the sync: a shard whose slots moved costs the node no BGSAVE. */
    if ((a->slots && node_check_slots(n, "before the sync") != 0) || node_open(n, a) != 0 ||
        node_handshake(n, a, password) != 0) {
        snprintf(err, errlen, "%s: %s", a->redis, n->err);
        goto out;
    }
    memset(&res, 0, sizeof res);
    if (upload(n, a, key, s, &res, err, errlen) != 0)
        goto out;
    iso_now(end, sizeof end);
    int oom = 0;
    json_object *o = result_json(a, key, n, &res, start, end, &oom);
    if (a->keep > 0) {
        /* Only after this backup is whole: a failing schedule never deletes the good ones.
         * What retention could not do is said in the line; the backup stays a success. */
        json_object *r = jsonx_new_obj(&oom);
        (void)prune_apply(s, a->bucket, a->prefix, a->keep, key, r, &oom);
        jsonx_put(o, "retention", r, &oom);
    }
    backup_print_json(out, o, oom);
    rc = 0;
out:
    backup_free_secret(password, plen);
    redis_stream_destroy(&n->stream);
    free(n);
    return rc;
}
