/* redis_stream: a plain socket or an OpenSSL session, non-blocking. See redis_stream.h. */
#include "redis_stream.h"

#include "tlscert.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct redis_stream {
    int fd;         /* -1: none (a TLS session over BIOs) */
    SSL *ssl;       /* NULL: plain text */
    int handshaken; /* the TLS handshake completed */
    int broken;     /* an error or the peer's close was seen: no close_notify */
    int heard;      /* a byte came from the peer */
};

static redis_stream_t *stream_new(SSL *ssl, int fd)
{
    redis_stream_t *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->fd = fd;
    s->ssl = ssl;
    return s;
}

redis_stream_t *redis_stream_new_plain(int fd)
{
    return stream_new(NULL, fd);
}

/* ---- the socket under a TLS session -------------------------------------------------- *
 * OpenSSL's socket BIO writes with write(2), which raises SIGPIPE on a connection the
 * server closed; this one sends with MSG_NOSIGNAL, so the transport is safe in a process
 * that does not ignore SIGPIPE (the --once modes). Its data is the stream (which outlives
 * the session), for the descriptor and to note that the peer spoke. */

static int sock_bio_fd(BIO *b)
{
    return ((redis_stream_t *)BIO_get_data(b))->fd;
}

static int sock_bio_write(BIO *b, const char *buf, int len)
{
    ssize_t r;
    do
        r = send(sock_bio_fd(b), buf, (size_t)len, MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    BIO_clear_retry_flags(b);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        BIO_set_retry_write(b);
    return (int)r;
}

static int sock_bio_read(BIO *b, char *buf, int len)
{
    ssize_t r;
    do
        r = recv(sock_bio_fd(b), buf, (size_t)len, 0);
    while (r < 0 && errno == EINTR);
    if (r > 0)
        ((redis_stream_t *)BIO_get_data(b))->heard = 1;
    BIO_clear_retry_flags(b);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        BIO_set_retry_read(b);
    return (int)r;
}

static long sock_bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)num;
    switch (cmd) {
    case BIO_C_GET_FD:
        if (ptr)
            *(int *)ptr = sock_bio_fd(b);
        return sock_bio_fd(b);
    case BIO_CTRL_FLUSH:
        return 1;
    default:
        return 0;
    }
}

static BIO_METHOD *sock_bio_method;

static void sock_bio_method_make(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "redis socket");
    if (m && BIO_meth_set_write(m, sock_bio_write) && BIO_meth_set_read(m, sock_bio_read) &&
        BIO_meth_set_ctrl(m, sock_bio_ctrl)) {
        sock_bio_method = m; /* for the life of the process */
        return;
    }
    BIO_meth_free(m);
}

/* A BIO over s's socket (not closed by it), or NULL when out of memory. */
static BIO *sock_bio_new(redis_stream_t *s)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, sock_bio_method_make);
    BIO *b = sock_bio_method ? BIO_new(sock_bio_method) : NULL;
    if (b) {
        BIO_set_data(b, s);
        BIO_set_init(b, 1);
    }
    return b;
}

redis_stream_t *redis_stream_new_tls(SSL *ssl, int fd)
{
    redis_stream_t *s = stream_new(ssl, fd);
    BIO *b = s && fd >= 0 ? sock_bio_new(s) : NULL;
    if (!s || (fd >= 0 && !b)) {
        ERR_clear_error();
        free(s);
        return NULL;
    }
    if (b)
        SSL_set_bio(ssl, b, b); /* ssl owns it now */
    SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    return s;
}

void redis_stream_destroy(redis_stream_t **s_p)
{
    if (!s_p || !*s_p)
        return;
    redis_stream_t *s = *s_p;
    if (s->ssl) {
        if (s->handshaken && !s->broken)
            (void)SSL_shutdown(s->ssl); /* close_notify if the socket takes it now; no wait */
        ERR_clear_error();
        SSL_free(s->ssl);
    }
    if (s->fd >= 0)
        close(s->fd);
    free(s);
    *s_p = NULL;
}

int redis_stream_fd(const redis_stream_t *s)
{
    return s->fd;
}

int redis_stream_is_tls(const redis_stream_t *s)
{
    return s->ssl != NULL;
}

const char *redis_stream_tls_version(const redis_stream_t *s)
{
    return s->ssl && s->handshaken ? SSL_get_version(s->ssl) : "";
}

int redis_stream_heard(const redis_stream_t *s)
{
    return s->heard || s->handshaken;
}

int redis_stream_peer_cert_sha256(const redis_stream_t *s, char hex[65])
{
    X509 *peer = s->ssl && s->handshaken ? SSL_get0_peer_certificate(s->ssl) : NULL;
    hex[0] = '\0';
    int rc = peer ? tlscert_sha256(peer, hex) : -1;
    ERR_clear_error();
    return rc;
}

/* ---- plain ------------------------------------------------------------------------- */

static redis_stream_status_t plain_errno(redis_stream_t *s, const char *what, redis_stream_status_t again,
                                         char *err, size_t errlen)
{
    if (errno == EAGAIN || errno == EWOULDBLOCK)
        return again;
    s->broken = 1;
    snprintf(err, errlen, "%s: %s", what, strerror(errno));
    return REDIS_STREAM_ERROR;
}

static redis_stream_status_t plain_read(redis_stream_t *s, void *buf, size_t cap, size_t *n, char *err,
                                        size_t errlen)
{
    ssize_t r;
    do
        r = recv(s->fd, buf, cap, 0);
    while (r < 0 && errno == EINTR);
    if (r > 0) {
        *n = (size_t)r;
        s->heard = 1;
        return REDIS_STREAM_OK;
    }
    if (r == 0) {
        s->broken = 1;
        return REDIS_STREAM_CLOSED;
    }
    if (errno == ECONNRESET) {
        s->broken = 1;
        snprintf(err, errlen, "read: connection closed by the server (%s)", strerror(errno));
        return REDIS_STREAM_ERROR;
    }
    return plain_errno(s, "read", REDIS_STREAM_WANT_READ, err, errlen);
}

static redis_stream_status_t plain_write(redis_stream_t *s, const void *buf, size_t len, size_t *n, char *err,
                                         size_t errlen)
{
    ssize_t r;
    do
        r = send(s->fd, buf, len, MSG_NOSIGNAL);
    while (r < 0 && errno == EINTR);
    if (r >= 0) {
        *n = (size_t)r;
        return r > 0 ? REDIS_STREAM_OK : REDIS_STREAM_WANT_WRITE;
    }
    if (errno == EPIPE || errno == ECONNRESET) {
        s->broken = 1;
        snprintf(err, errlen, "write: connection closed by the server (%s)", strerror(errno));
        return REDIS_STREAM_ERROR;
    }
    return plain_errno(s, "write", REDIS_STREAM_WANT_WRITE, err, errlen);
}

/* ---- TLS --------------------------------------------------------------------------- */

/* OpenSSL's reason for e ("certificate verify failed", "tlsv13 alert certificate
 * required"), without its numeric prefix. */
static void tls_reason(unsigned long e, char *out, size_t len)
{
    const char *r = ERR_reason_error_string(e);
    if (r)
        snprintf(out, len, "%s", r);
    else
        ERR_error_string_n(e, out, len);
}

/* The name or address the session checks the certificate against, for a mismatch. */
static void expected_name(SSL *ssl, char *out, size_t len)
{
    X509_VERIFY_PARAM *p = SSL_get0_param(ssl);
    const char *host = X509_VERIFY_PARAM_get0_host(p, 0);
    char *ip = X509_VERIFY_PARAM_get1_ip_asc(p);
    snprintf(out, len, "%s", host ? host : ip ? ip : "");
    OPENSSL_free(ip);
}

/* The line for a failed handshake: the verification result when that is what failed. */
static void handshake_error(SSL *ssl, unsigned long e, char *err, size_t errlen)
{
    long v = SSL_get_verify_result(ssl);
    if (v != X509_V_OK) {
        char want[256];
        expected_name(ssl, want, sizeof(want));
        int mismatch = v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH;
        snprintf(err, errlen, "TLS handshake: certificate verify failed: %s%s%s%s",
                 X509_verify_cert_error_string(v), mismatch ? " (the certificate is not for " : "",
                 mismatch ? want : "", mismatch ? ")" : "");
        return;
    }
    char reason[200];
    tls_reason(e, reason, sizeof(reason));
    snprintf(err, errlen, "TLS handshake: %s", reason);
}

/* Map SSL_get_error's answer for an operation that returned r. what names the operation
 * in err ("TLS handshake", "TLS read", "TLS write"). */
static redis_stream_status_t tls_status(redis_stream_t *s, int r, const char *what, char *err, size_t errlen)
{
    int handshake = !s->handshaken, saved_errno = errno;
    int code = SSL_get_error(s->ssl, r);
    unsigned long e = ERR_peek_last_error();
    switch (code) {
    case SSL_ERROR_WANT_READ:
        return REDIS_STREAM_WANT_READ;
    case SSL_ERROR_WANT_WRITE:
        return REDIS_STREAM_WANT_WRITE;
    default:
        break;
    }
    s->broken = 1;
    /* The peer closed: close_notify (ZERO_RETURN), or an EOF without it (OpenSSL 3 says
     * "unexpected eof", older ones a syscall error with errno 0), as Redis closes a
     * connection it kills. */
    int eof = code == SSL_ERROR_ZERO_RETURN || (code == SSL_ERROR_SYSCALL && !e && saved_errno == 0) ||
              (code == SSL_ERROR_SSL && ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING);
    if (eof && !handshake) {
        ERR_clear_error();
        return REDIS_STREAM_CLOSED;
    }
    if (eof)
        snprintf(err, errlen, "%s: connection closed by the server", what);
    else if (code == SSL_ERROR_SYSCALL && !e && (saved_errno == EPIPE || saved_errno == ECONNRESET))
        snprintf(err, errlen, "%s: connection closed by the server (%s)", what, strerror(saved_errno));
    else if (code == SSL_ERROR_SYSCALL && !e)
        snprintf(err, errlen, "%s: %s", what, strerror(saved_errno));
    else if (handshake)
        handshake_error(s->ssl, e, err, errlen);
    else {
        char reason[200];
        tls_reason(e, reason, sizeof(reason));
        snprintf(err, errlen, "%s: %s", what, reason);
    }
    ERR_clear_error();
    return REDIS_STREAM_ERROR;
}

static int clamp_int(size_t n)
{
    return n > INT_MAX ? INT_MAX : (int)n;
}

redis_stream_status_t redis_stream_handshake(redis_stream_t *s, char *err, size_t errlen)
{
    if (!s->ssl || s->handshaken)
        return REDIS_STREAM_OK;
    ERR_clear_error();
    errno = 0;
    int r = SSL_connect(s->ssl);
    if (r == 1) {
        s->handshaken = 1;
        return REDIS_STREAM_OK;
    }
    return tls_status(s, r, "TLS handshake", err, errlen);
}

/* After a write the socket refused (the server reset the connection), the reason the
 * server gave may still wait in front of the reset: a server that refuses our
 * certificate after a TLS 1.3 handshake (Redis's tls-auth-clients) says so with an alert
 * and closes. When one is there, its reason replaces the socket's in err. */
static void pending_alert(redis_stream_t *s, char *err, size_t errlen)
{
    char tmp[256];
    ERR_clear_error();
    int r = SSL_read(s->ssl, tmp, sizeof(tmp));
    unsigned long e = ERR_peek_last_error();
    if (r <= 0 && SSL_get_error(s->ssl, r) == SSL_ERROR_SSL && ERR_GET_REASON(e) >= SSL_AD_REASON_OFFSET) {
        char reason[200];
        tls_reason(e, reason, sizeof(reason));
        snprintf(err, errlen, "TLS write: %s", reason);
    }
    ERR_clear_error();
}

/* One SSL_read (writing 0) or SSL_write (writing 1) of up to len bytes. */
static redis_stream_status_t tls_io(redis_stream_t *s, int writing, void *buf, size_t len, size_t *n, char *err,
                                    size_t errlen)
{
    ERR_clear_error();
    errno = 0;
    int r = writing ? SSL_write(s->ssl, buf, clamp_int(len)) : SSL_read(s->ssl, buf, clamp_int(len));
    if (r > 0) {
        *n = (size_t)r;
        s->heard |= !writing;
        return REDIS_STREAM_OK;
    }
    const char *what = !s->handshaken ? "TLS handshake" : writing ? "TLS write" : "TLS read";
    redis_stream_status_t st = tls_status(s, r, what, err, errlen);
    if (writing && st == REDIS_STREAM_ERROR && s->handshaken)
        pending_alert(s, err, errlen);
    return st;
}

redis_stream_status_t redis_stream_read(redis_stream_t *s, void *buf, size_t cap, size_t *n, char *err,
                                        size_t errlen)
{
    *n = 0;
    return s->ssl ? tls_io(s, 0, buf, cap, n, err, errlen) : plain_read(s, buf, cap, n, err, errlen);
}

redis_stream_status_t redis_stream_write(redis_stream_t *s, const void *buf, size_t len, size_t *n, char *err,
                                         size_t errlen)
{
    *n = 0;
    /* SSL_write only reads buf: tls_io's one pointer type serves both directions. */
    return s->ssl ? tls_io(s, 1, (void *)(uintptr_t)buf, len, n, err, errlen)
                  : plain_write(s, buf, len, n, err, errlen);
}
