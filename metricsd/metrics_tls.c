/* metrics_tls: metricsd's HTTPS listener on the loop, with certificate reload. See
 * metrics_tls.h. */
#include "metrics_tls.h"

#include "buf.h"
#include "certwatch.h"
#include "clock.h"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IDLE_RUN_NS NS_PER_SEC /* run the daemons at least this often */

/* One daemon, its epoll descriptor (a reader of the loop) and the PEM it was started with
 * (kept while it runs: libmicrohttpd borrows it). */
typedef struct {
    struct MHD_Daemon *d;
    int fd;
    buf_t cert, key;
    int64_t since_ns; /* quiesced at (the old daemon) */
} gen_t;

struct mtls {
    mtls_opts_t o;
    loop_t *loop;
    int timer;           /* libmicrohttpd's next deadline */
    certwatch_t *watch;  /* NULL: self-signed */
    gen_t cur, old;      /* old.d: quiesced, draining */
    int64_t check_ns;    /* the clock of the check in progress */
    unsigned port;
};

/* ---- PEM ------------------------------------------------------------------------------ */

static int pem_of(int (*write)(BIO *, void *), void *obj, buf_t *out)
{
    BIO *b = BIO_new(BIO_s_mem());
    char *p = NULL;
    int rc = -1;
    if (b && write(b, obj) == 1) {
        long n = BIO_get_mem_data(b, &p);
        rc = n > 0 ? buf_append(out, p, (size_t)n) : -1;
    }
    BIO_free(b);
    return rc;
}
static int write_cert(BIO *b, void *x) { return PEM_write_bio_X509(b, x); }
static int write_key(BIO *b, void *k) { return PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL); }

/* A self-signed certificate for localhost and 127.0.0.1, valid a year, with a fresh
 * P-256 key (controller-runtime's GenerateSelfSignedCertKey("localhost")), as PEM. */
static int self_signed(buf_t *cert, buf_t *key, char *err, size_t errlen)
{
    EVP_PKEY *pk = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_EXTENSION *san = NULL;
    int rc = -1;
    if (!pk || !x)
        goto out;
    ASN1_INTEGER_set(X509_get_serialNumber(x), (long)(clock_wall_ns() / 1000000000));
    X509_set_version(x, 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 365L * 24 * 3600);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"localhost@rdc-operator", -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509_set_pubkey(x, pk);
    san = X509V3_EXT_conf_nid(NULL, NULL, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1");
    if (!san || !X509_add_ext(x, san, -1) || !X509_sign(x, pk, EVP_sha256()))
        goto out;
    if (pem_of(write_cert, x, cert) || pem_of(write_key, pk, key))
        goto out;
    rc = 0;
out:
    if (rc)
        snprintf(err, errlen, "cannot make a self-signed certificate (OpenSSL)");
    X509_EXTENSION_free(san);
    X509_free(x);
    EVP_PKEY_free(pk);
    return rc;
}

/* ---- daemons on the loop ------------------------------------------------------------- */

/* Run every daemon's pending work, then set the timer to the earliest deadline they have. */
static void run_daemons(mtls_t *t)
{
    int64_t next = IDLE_RUN_NS;
    gen_t *gens[] = {&t->cur, &t->old};
    for (size_t i = 0; i < 2; i++) {
        MHD_UNSIGNED_LONG_LONG ms;
        if (!gens[i]->d)
            continue;
        MHD_run(gens[i]->d);
        if (MHD_get_timeout(gens[i]->d, &ms) == MHD_YES && (int64_t)ms * NS_PER_MS < next)
            next = (int64_t)ms * NS_PER_MS;
    }
    loop_timer_reset(t->loop, t->timer, next);
}

static int on_ready(loop_t *loop, void *socket, int fd, int revents, void *arg)
{
    (void)loop, (void)socket, (void)fd, (void)revents;
    run_daemons(arg);
    return 0;
}

static int on_deadline(loop_t *loop, int timer_id, void *arg)
{
    (void)loop, (void)timer_id;
    run_daemons(arg);
    return 0;
}

/* Start g->d with g's PEM, on listen_fd when it is not MHD_INVALID_SOCKET (else bind the
 * options' address), and watch its descriptor. 0, or -1 (g->d NULL). */
static int gen_start(mtls_t *t, gen_t *g, MHD_socket listen_fd)
{
    unsigned flags = MHD_USE_TLS | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
    const mtls_opts_t *o = &t->o;
    /* The listening socket: the options' address at start, the quiesced daemon's after. */
#define START(where, what)                                                                                          \
    MHD_start_daemon(flags, 0, NULL, NULL, o->handler, o->handler_cls, where, what, MHD_OPTION_HTTPS_MEM_CERT,      \
                     buf_str(&g->cert), MHD_OPTION_HTTPS_MEM_KEY, buf_str(&g->key), MHD_OPTION_CONNECTION_TIMEOUT, \
                     o->connection_timeout_s, MHD_OPTION_CONNECTION_LIMIT, o->connection_limit,                    \
                     MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->connection_memory_limit, MHD_OPTION_NOTIFY_COMPLETED,  \
                     o->completed, o->handler_cls, MHD_OPTION_END)
    g->d = listen_fd != MHD_INVALID_SOCKET ? START(MHD_OPTION_LISTEN_SOCKET, listen_fd)
                                           : START(MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)o->addr);
#undef START
    if (!g->d)
        return -1;
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(g->d, MHD_DAEMON_INFO_EPOLL_FD);
    g->fd = i ? i->epoll_fd : -1;
    if (g->fd < 0 || loop_add_fd(t->loop, g->fd, LOOP_IN, on_ready, t)) {
        MHD_stop_daemon(g->d);
        g->d = NULL;
        return -1;
    }
    return 0;
}

/* Stop g's daemon (its suspended connections released first) and free its PEM. */
static void gen_free(mtls_t *t, gen_t *g)
{
    if (g->d) {
        loop_remove_fd(t->loop, g->fd);
        if (t->o.release)
            t->o.release(g->d, t->o.handler_cls);
        MHD_stop_daemon(g->d);
    }
    g->d = NULL;
    buf_free(&g->cert);
    buf_free(&g->key);
}

static void gen_init(gen_t *g)
{
    memset(g, 0, sizeof(*g));
    g->fd = -1;
    buf_init(&g->cert, CERTWATCH_MAX_PEM);
    buf_init(&g->key, CERTWATCH_MAX_PEM);
}

/* A generation holding a copy of the pair. 0, or -1 when out of memory. */
static int gen_with(gen_t *g, const char *cert, size_t cert_len, const char *key, size_t key_len)
{
    gen_init(g);
    return buf_append(&g->cert, cert, cert_len) || buf_append(&g->key, key, key_len) ? -1 : 0;
}

/* Stop the old daemon once it has no connection left or has drained long enough. */
static void reap_old(mtls_t *t, int64_t now_ns, int force)
{
    if (!t->old.d)
        return;
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(t->old.d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    if (force || !i || i->num_connections == 0 || now_ns - t->old.since_ns >= MTLS_DRAIN_NS)
        gen_free(t, &t->old);
}

/* g (started on the quiesced current daemon's socket) becomes current; that one drains. */
static void swap_in(mtls_t *t, gen_t *g)
{
    t->old = t->cur;
    t->old.since_ns = t->check_ns;
    t->cur = *g;
}

/* Serve the pair from a new daemon on the current one's socket, which drains. 0, or -1
 * with err (the current daemon serves on, or, when even it cannot start again, nothing). */
static int rotate(mtls_t *t, gen_t *next, char *err, size_t errlen)
{
    reap_old(t, t->check_ns, 1);
    MHD_socket fd = MHD_quiesce_daemon(t->cur.d);
    if (fd == MHD_INVALID_SOCKET) {
        snprintf(err, errlen, "cannot hand the listening socket over (MHD_quiesce_daemon)");
        gen_free(t, next);
        return -1;
    }
    if (gen_start(t, next, fd) == 0) {
        swap_in(t, next);
        return 0;
    }
    /* GnuTLS refused what OpenSSL took: serve the current pair again on the socket. */
    gen_free(t, next);
    gen_t again;
    if (gen_with(&again, t->cur.cert.data, t->cur.cert.len, t->cur.key.data, t->cur.key.len) ||
        gen_start(t, &again, fd)) {
        gen_free(t, &again);
        snprintf(err, errlen, "the new certificate could not be served, nor the old one again: "
                              "no new connections are accepted");
        return -1;
    }
    swap_in(t, &again);
    snprintf(err, errlen, "GnuTLS refused the new certificate; serving the previous one");
    return -1;
}

/* certwatch's use (and the self-signed pair's): the first pair starts the listener on the
 * options' address, a later one rotates. */
static int serve_pair(const char *cert, size_t cert_len, const char *key, size_t key_len, void *arg, char *err,
                      size_t errlen)
{
    mtls_t *t = arg;
    gen_t next;
    if (gen_with(&next, cert, cert_len, key, key_len)) {
        gen_free(t, &next);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (t->cur.d)
        return rotate(t, &next, err, errlen);
    if (gen_start(t, &next, MHD_INVALID_SOCKET)) {
        gen_free(t, &next);
        snprintf(err, errlen, "cannot serve HTTPS (address in use, or a certificate GnuTLS refuses)");
        return -1;
    }
    t->cur = next;
    return 0;
}

/* The first pair: from the files, or a self-signed one. 0, or -1 with err. */
static int serve_first(mtls_t *t, char *err, size_t errlen)
{
    const mtls_opts_t *o = &t->o;
    if (o->cert_dir && *o->cert_dir)
        return certwatch_new(o->cert_dir, o->cert_name, o->key_name, serve_pair, t, &t->watch, err, errlen);
    buf_t cert, key;
    buf_init(&cert, CERTWATCH_MAX_PEM);
    buf_init(&key, CERTWATCH_MAX_PEM);
    int rc = self_signed(&cert, &key, err, errlen) ||
             serve_pair(buf_str(&cert), cert.len, buf_str(&key), key.len, t, err, errlen);
    buf_free(&cert);
    buf_free(&key);
    return rc ? -1 : 0;
}

int mtls_start(loop_t *loop, const mtls_opts_t *o, mtls_t **out, char *err, size_t errlen)
{
    *out = NULL;
    mtls_t *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    t->o = *o;
    t->loop = loop;
    t->check_ns = clock_mono_ns();
    gen_init(&t->cur);
    gen_init(&t->old);
    if ((t->timer = loop_add_timer(loop, 0, IDLE_RUN_NS, on_deadline, t)) < 0) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (serve_first(t, err, errlen))
        goto fail;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(t->cur.d, MHD_DAEMON_INFO_BIND_PORT);
    t->port = info ? info->port : 0;
    *out = t;
    return 0;
fail:
    mtls_stop(&t);
    return -1;
}

int mtls_check(mtls_t *t, int64_t now_ns, char *err, size_t errlen)
{
    t->check_ns = now_ns;
    reap_old(t, now_ns, 0);
    return t->watch ? certwatch_check(t->watch, err, errlen) : 0;
}

void mtls_wake(mtls_t *t)
{
    loop_timer_reset(t->loop, t->timer, 0);
}

unsigned mtls_port(const mtls_t *t)
{
    return t->port;
}

unsigned mtls_loads(const mtls_t *t)
{
    return t->watch ? certwatch_loads(t->watch) : 1;
}

void mtls_stop(mtls_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    mtls_t *t = *self_p;
    /* The old (quiesced) daemon first: the socket it was given up is the current one's. */
    gen_free(t, &t->old);
    gen_free(t, &t->cur);
    if (t->timer > 0)
        loop_cancel_timer(t->loop, t->timer);
    certwatch_destroy(&t->watch);
    free(t);
    *self_p = NULL;
}
