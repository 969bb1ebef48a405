/* redis_stream: the bytes under a Redis connection, without the protocol: a plain socket
 * or an OpenSSL session (over a socket, or over any BIO: a BIO pair in the tests), read
 * and written without ever blocking.
 *
 * It is the transport half of the one Redis client layer (ARCHITECTURE.md, "One
 * transport"); redis_conn.h puts hiredis's reader and the event loop on top. Nothing here
 * knows RESP, the loop or a clock, so it is tested against canned byte streams.
 *
 * Every operation answers one of:
 *   REDIS_STREAM_OK          done (a read or write moved *n > 0 bytes)
 *   REDIS_STREAM_WANT_READ   nothing moved: call it again once the socket is readable
 *   REDIS_STREAM_WANT_WRITE  nothing moved: call it again once the socket is writable
 *                            (TLS can need either direction for either operation)
 *   REDIS_STREAM_CLOSED      the peer ended the stream (EOF; TLS close_notify, or a TLS
 *                            peer that closed without one)
 *   REDIS_STREAM_ERROR       err holds one line naming the phase and the reason
 *                            ("TLS handshake: certificate verify failed: certificate has
 *                            expired", "read: Connection reset by peer")
 * A retried operation must be given the same bytes again (a write may be given more:
 * partial writes are on, and the buffer may move between calls).
 *
 * Writes never raise SIGPIPE, plain or TLS (the socket under a session is a BIO of ours
 * that sends with MSG_NOSIGNAL, not OpenSSL's socket BIO, which uses write(2)): a
 * process need not ignore SIGPIPE to use the transport. Errors never contain data that
 * went through the stream.
 */
#ifndef RDC_REDIS_STREAM_H
#define RDC_REDIS_STREAM_H

#include <openssl/ssl.h>
#include <stddef.h>

typedef enum {
    REDIS_STREAM_OK = 0,
    REDIS_STREAM_WANT_READ,
    REDIS_STREAM_WANT_WRITE,
    REDIS_STREAM_CLOSED,
    REDIS_STREAM_ERROR,
} redis_stream_status_t;

typedef struct redis_stream redis_stream_t;

/* A plain stream over the connected (or connecting) non-blocking socket fd, which it
 * takes: redis_stream_destroy closes it. NULL when out of memory (fd then still the
 * caller's). */
redis_stream_t *redis_stream_new_plain(int fd);

/* A TLS stream over ssl, a client session in connect state (redis_tls_session), which it
 * takes. fd >= 0: the session runs over that socket (through a BIO of ours), taken as
 * above; fd -1: the caller has given ssl its BIOs already (SSL_set_bio). Partial writes
 * and a moving write buffer are allowed on ssl. NULL when out of memory (ssl and fd then
 * still the caller's). */
redis_stream_t *redis_stream_new_tls(SSL *ssl, int fd);

/* Close the socket and free the session (a TLS session whose handshake completed and
 * that saw no error first sends close_notify, without waiting); *s_p = NULL. NULL is
 * fine. */
void redis_stream_destroy(redis_stream_t **s_p);

/* Advance the TLS handshake (certificate and name verification are the session's:
 * redis_tls.h). A plain stream answers OK at once. OK once done; a WANT_* to wait;
 * CLOSED is reported as ERROR here ("TLS handshake: connection closed by the server"). */
redis_stream_status_t redis_stream_handshake(redis_stream_t *s, char *err, size_t errlen);

/* Read up to cap (> 0) bytes into buf; *n the count on OK. */
redis_stream_status_t redis_stream_read(redis_stream_t *s, void *buf, size_t cap, size_t *n, char *err,
                                        size_t errlen);

/* Write up to len (> 0) bytes of buf; *n the count written on OK (maybe fewer than len). */
redis_stream_status_t redis_stream_write(redis_stream_t *s, const void *buf, size_t len, size_t *n, char *err,
                                         size_t errlen);

/* The socket (-1 for a TLS stream over BIOs only). */
int redis_stream_fd(const redis_stream_t *s);

/* 1 for a TLS stream. */
int redis_stream_is_tls(const redis_stream_t *s);

/* The negotiated protocol ("TLSv1.3"), or "" before the handshake and for plain text. */
const char *redis_stream_tls_version(const redis_stream_t *s);

/* 1 once anything came from the peer: a byte read, or a TLS handshake message (one whose
 * certificate verification then refused counts: the server answered). */
int redis_stream_heard(const redis_stream_t *s);

/* The SHA-256 of the certificate the server presented (DER), 64 lower-case hex digits,
 * into hex[65] after a completed TLS handshake: 0, or -1 with hex "" (plain text, or
 * no handshake yet). */
int redis_stream_peer_cert_sha256(const redis_stream_t *s, char hex[65]);

#endif
