/* metrics_tls: metricsd's HTTPS listener with certificate reload. See metrics_tls.h. */
#include "metrics_tls.h"

#include "buf.h"
#include "clock.h"
#include "filesig.h"
#include "pem.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One daemon and the PEM it was started with (kept while it runs). */
typedef struct {
    struct MHD_Daemon *d;
    buf_t cert, key;
    int64_t since_ns; /* quiesced at (old daemon) */
} gen_t;

struct mtls {
    mtls_opts_t o;
    filesig_watch_t files;       /* empty (no paths): self-signed */
    gen_t cur, old;              /* old.d: quiesced, draining */
    unsigned port, loads;
};

/* ---- PEM ------------------------------------------------------------------------------ */

static int read_file(const char *path, buf_t *out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char chunk[4096];
    size_t n;
    int rc = 0;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (buf_append(out, chunk, n)) {
            snprintf(err, errlen, "%s: larger than %zu bytes", path, MTLS_MAX_PEM);
            rc = -1;
            break;
        }
    }
    fclose(f);
    return rc;
}

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

/* 0 when cert is a PEM certificate and key a PEM private key that belongs to it; else -1
 * with err saying which (before GnuTLS sees them: a daemon is only swapped for a pair
 * that will start). */
static int pair_ok(const buf_t *cert, const buf_t *key, const char *cert_path, const char *key_path, char *err,
                   size_t errlen)
{
    switch (pem_pair_check(buf_str(cert), cert->len, buf_str(key), key->len)) {
    case PEM_PAIR_NO_CERT:
        snprintf(err, errlen, "%s: not a PEM certificate", cert_path);
        return -1;
    case PEM_PAIR_NO_KEY:
        snprintf(err, errlen, "%s: not a PEM private key (or an encrypted one)", key_path);
        return -1;
    case PEM_PAIR_MISMATCH:
        snprintf(err, errlen, "%s: the private key does not match the certificate %s", key_path, cert_path);
        return -1;
    case PEM_PAIR_OK:
        break;
    }
    return 0;
}

/* Read the pair from the files into cert and key (emptied first). 0, or -1 with err. */
static int read_pair(const mtls_t *t, buf_t *cert, buf_t *key, char *err, size_t errlen)
{
    buf_reset(cert);
    buf_reset(key);
    const char *cert_path = t->files.cert_path, *key_path = t->files.key_path;
    if (read_file(cert_path, cert, err, errlen) || read_file(key_path, key, err, errlen))
        return -1;
    return pair_ok(cert, key, cert_path, key_path, err, errlen);
}

/* ---- daemons -------------------------------------------------------------------------- */

/* Start g->d with g's PEM, on listen_fd when it is not MHD_INVALID_SOCKET (else bind the
 * options' address). 0, or -1. */
static int gen_start(const mtls_t *t, gen_t *g, MHD_socket listen_fd)
{
    unsigned flags = MHD_USE_TLS | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC;
    const mtls_opts_t *o = &t->o;
    if (listen_fd != MHD_INVALID_SOCKET)
        g->d = MHD_start_daemon(flags, 0, NULL, NULL, o->handler, o->handler_cls, MHD_OPTION_LISTEN_SOCKET,
                                listen_fd, MHD_OPTION_HTTPS_MEM_CERT, buf_str(&g->cert), MHD_OPTION_HTTPS_MEM_KEY,
                                buf_str(&g->key), MHD_OPTION_CONNECTION_TIMEOUT, o->connection_timeout_s,
                                MHD_OPTION_CONNECTION_LIMIT, o->connection_limit,
                                MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->connection_memory_limit, MHD_OPTION_END);
    else
        g->d = MHD_start_daemon(flags, 0, NULL, NULL, o->handler, o->handler_cls, MHD_OPTION_SOCK_ADDR, o->addr,
                                MHD_OPTION_HTTPS_MEM_CERT, buf_str(&g->cert), MHD_OPTION_HTTPS_MEM_KEY,
                                buf_str(&g->key), MHD_OPTION_CONNECTION_TIMEOUT, o->connection_timeout_s,
                                MHD_OPTION_CONNECTION_LIMIT, o->connection_limit,
                                MHD_OPTION_CONNECTION_MEMORY_LIMIT, o->connection_memory_limit, MHD_OPTION_END);
    return g->d ? 0 : -1;
}

static void gen_free(gen_t *g)
{
    if (g->d)
        MHD_stop_daemon(g->d);
    g->d = NULL;
    buf_free(&g->cert);
    buf_free(&g->key);
}

static void gen_init(gen_t *g)
{
    memset(g, 0, sizeof(*g));
    buf_init(&g->cert, MTLS_MAX_PEM);
    buf_init(&g->key, MTLS_MAX_PEM);
}

/* Stop the old daemon once it has no connection left or has drained long enough. */
static void reap_old(mtls_t *t, int64_t now_ns, int force)
{
    if (!t->old.d)
        return;
    const union MHD_DaemonInfo *i = MHD_get_daemon_info(t->old.d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    if (force || !i || i->num_connections == 0 || now_ns - t->old.since_ns >= MTLS_DRAIN_NS)
        gen_free(&t->old);
}

int mtls_start(const mtls_opts_t *o, mtls_t **out, char *err, size_t errlen)
{
    *out = NULL;
    mtls_t *t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    t->o = *o;
    gen_init(&t->cur);
    gen_init(&t->old);
    if (o->cert_dir && *o->cert_dir) {
        if (filesig_watch_init(&t->files, o->cert_dir, o->cert_name, o->key_name)) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        if (read_pair(t, &t->cur.cert, &t->cur.key, err, errlen))
            goto fail;
    } else if (self_signed(&t->cur.cert, &t->cur.key, err, errlen)) {
        goto fail;
    }
    if (gen_start(t, &t->cur, MHD_INVALID_SOCKET)) {
        snprintf(err, errlen, "cannot serve HTTPS (address in use, or a certificate GnuTLS refuses)");
        goto fail;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(t->cur.d, MHD_DAEMON_INFO_BIND_PORT);
    t->port = info ? info->port : 0;
    t->loads = 1;
    *out = t;
    return 0;
fail:
    mtls_stop(&t);
    return -1;
}

/* g (started on the quiesced current daemon's socket) becomes current; that one drains. */
static void swap_in(mtls_t *t, gen_t *g, int64_t now_ns)
{
    t->old = t->cur;
    t->old.since_ns = now_ns;
    t->cur = *g;
}

int mtls_check(mtls_t *t, int64_t now_ns, char *err, size_t errlen)
{
    reap_old(t, now_ns, 0);
    filesig_pair_t now;
    if (!t->files.cert_path || !filesig_watch_changed(&t->files, &now))
        return 0;
    gen_t next;
    gen_init(&next);
    int ok = read_pair(t, &next.cert, &next.key, err, errlen) == 0;
    if (!filesig_watch_settle(&t->files, &now)) { /* swapped while read: maybe mixed */
        gen_free(&next);
        return 0;
    }
    if (!ok) {
        gen_free(&next);
        return -1;
    }
    /* The new daemon takes over the listening socket; the current one drains. */
    reap_old(t, now_ns, 1);
    MHD_socket fd = MHD_quiesce_daemon(t->cur.d);
    if (fd == MHD_INVALID_SOCKET) {
        snprintf(err, errlen, "cannot hand the listening socket over (MHD_quiesce_daemon)");
        gen_free(&next);
        return -1;
    }
    if (gen_start(t, &next, fd)) {
        /* GnuTLS refused what OpenSSL took: serve the old pair again on the socket. */
        gen_free(&next);
        gen_t again;
        gen_init(&again);
        if (buf_append(&again.cert, t->cur.cert.data, t->cur.cert.len) ||
            buf_append(&again.key, t->cur.key.data, t->cur.key.len) || gen_start(t, &again, fd)) {
            gen_free(&again);
            snprintf(err, errlen, "%s: the new certificate could not be served, nor the old one again: "
                                  "no new connections are accepted", t->files.cert_path);
            return -1;
        }
        swap_in(t, &again, now_ns);
        snprintf(err, errlen, "%s: GnuTLS refused the new certificate; serving the previous one", t->files.cert_path);
        return -1;
    }
    swap_in(t, &next, now_ns);
    t->loads++;
    return 1;
}

unsigned mtls_port(const mtls_t *t)
{
    return t->port;
}

unsigned mtls_loads(const mtls_t *t)
{
    return t->loads;
}

void mtls_stop(mtls_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    mtls_t *t = *self_p;
    /* The old (quiesced) daemon first: the socket it was given up is the current one's. */
    gen_free(&t->old);
    gen_free(&t->cur);
    filesig_watch_free(&t->files);
    free(t);
    *self_p = NULL;
}
