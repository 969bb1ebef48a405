/* redis_conn: one connection to one Redis server on the daemon's event loop: the one
 * client layer everything that talks to Redis goes through (ARCHITECTURE.md, "One
 * transport"; docs/tls-and-acl.md).
 *
 * Layers: a non-blocking TCP socket (host is an IP literal, v4 or v6: nothing is
 * resolved here, so nothing blocks), optionally a TLS session (redis_tls.h), both behind
 * redis_stream.h; commands formatted by hiredis's redisFormatCommandArgv; replies parsed
 * by hiredis's reader (redisReaderCreate/Feed/GetReply). No RESP is parsed here.
 *
 * States, in order (redis_conn_state), each entered once:
 *   CONNECTING -> HANDSHAKE (TLS only) -> AUTH (with a password only) -> READY
 * and from any of them FAILED, for good. A connection is never re-opened: its owner
 * makes a new one. The whole way to READY is bounded by connect_timeout_ns.
 *   AUTH: the first command on the wire is AUTH [user] password; nothing else is sent
 *   before it is accepted. Refused, it is tried once with password_fallback when one is
 *   set (a rotation in progress); refused again, the connection FAILS with Redis's
 *   words ("AUTH: WRONGPASS invalid username-password pair ...").
 *
 * Commands may be queued in any state: they are sent, pipelined, once READY, and each
 * ends in exactly one call of its callback, in queue order: with Redis's reply (an
 * error reply such as -NOAUTH or -READONLY is a reply, not a failure), or with reply
 * NULL and err when the connection failed first. Each command has its own timeout,
 * counted from when it was queued: one that passes without its reply FAILS the
 * connection (the replies of a pipeline cannot be matched again after a gap), and with
 * it every command still queued.
 *
 * A failure is one line in redis_conn_error(), prefixed by the address ("10.0.0.5:6379:
 * TLS handshake: certificate verify failed: certificate has expired", "127.0.0.1:6379:
 * connect: Connection refused", "...: PING: no answer within 500 ms", "...: connection
 * closed by the server", "...: protocol error: ..."). No password is ever part of it.
 * Replies are bounded: a reply that needs more than max_reply_bytes buffered fails the
 * connection.
 *
 * Callbacks never run inside redis_conn_new or redis_conn_command: only from the loop
 * (and a command queued on a FAILED connection is failed on the loop's next turn). A
 * callback may queue commands and may destroy the connection.
 *
 * Secrets: the password, user and fallback are copied and wiped on destroy; the AUTH
 * command's bytes are wiped once it is answered, and the command buffers when the
 * connection fails or goes (an ACL SETUSER carries a password too). A buffer that grew
 * may have left an earlier copy in memory the allocator took back.
 */
#ifndef RDC_REDIS_CONN_H
#define RDC_REDIS_CONN_H

#include "loop.h"
#include "redis_stream.h"
#include "redis_tls.h"

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

#define REDIS_CONN_DEFAULT_MAX_REPLY ((size_t)64 << 20)
#define REDIS_CONN_MAX_ARGS 1024

typedef struct {
    const char *host;              /* IP literal (10.0.0.5, fd00::5) */
    int port;
    int64_t connect_timeout_ns;    /* TCP connect + TLS handshake + AUTH; <= 0: 2 s */
    const redis_tls_t *tls;        /* NULL: plain text. May go once redis_conn_new returned */
    const char *tls_server_name;   /* the name to verify (and SNI); NULL: verify host as an IP SAN */
    const char *user;              /* ACL user for AUTH; NULL: AUTH password alone (the default user) */
    const char *password;          /* NULL or "": no AUTH */
    const char *password_fallback; /* AUTH with this when password is refused; NULL: none */
    size_t max_reply_bytes;        /* 0: REDIS_CONN_DEFAULT_MAX_REPLY */
} redis_conn_opts_t;

typedef enum {
    REDIS_CONN_CONNECTING,
    REDIS_CONN_HANDSHAKE,
    REDIS_CONN_AUTH,
    REDIS_CONN_READY,
    REDIS_CONN_FAILED,
} redis_conn_state_t;

typedef struct redis_conn redis_conn_t;

/* A command ended. reply is the callback's to free (freeReplyObject), or NULL when the
 * connection failed: err is then its failure line (borrowed), else NULL. */
typedef void redis_conn_reply_fn(redis_conn_t *conn, redisReply *reply, const char *err, void *arg);

/* Start connecting to opts->host:port on loop (opts and its strings are copied). NULL only
 * when out of memory; anything the world does (a host that is not an IP literal, a
 * refused connection, an unusable TLS session) is a connection that FAILED, said by its
 * commands' callbacks and redis_conn_error. */
redis_conn_t *redis_conn_new(loop_t *loop, const redis_conn_opts_t *opts);

/* As redis_conn_new, over stream, a connection opened elsewhere (a socketpair's end in
 * the tests of the protocol half), which it takes; it must have a socket
 * (redis_stream_fd >= 0). It starts at HANDSHAKE; opts->host and port only name it;
 * opts->tls and tls_server_name are unused (the stream has its session). NULL when out
 * of memory (the stream is then destroyed). */
redis_conn_t *redis_conn_new_stream(loop_t *loop, redis_stream_t *stream, const redis_conn_opts_t *opts);

/* Close the connection and free it, wiping its secrets; *conn_p = NULL. Commands still
 * queued end WITHOUT a callback. NULL is fine. Safe from inside its own callbacks. */
void redis_conn_destroy(redis_conn_t **conn_p);

/* Queue argv[0..argc) (lens NULL: each a C string; else lens[i] bytes), to be answered
 * within timeout_ns (> 0) of now; fn(conn, reply, err, arg) ends it (fn NULL: the reply
 * is dropped). Returns 0, or -1 (nothing queued, no callback) when argc is not
 * 1..REDIS_CONN_MAX_ARGS or memory ran out. */
int redis_conn_command(redis_conn_t *conn, int argc, const char *const *argv, const size_t *lens,
                       int64_t timeout_ns, redis_conn_reply_fn *fn, void *arg);

redis_conn_state_t redis_conn_state(const redis_conn_t *conn);

/* The failure line, or "" while the connection has not failed. */
const char *redis_conn_error(const redis_conn_t *conn);

/* "host:port" ("[fd00::5]:6379" for IPv6). */
const char *redis_conn_addr(const redis_conn_t *conn);

/* Commands queued and not yet ended. */
size_t redis_conn_pending(const redis_conn_t *conn);

/* The TLS protocol in use ("TLSv1.3"), or "" (plain text, or before the handshake). */
const char *redis_conn_tls_version(const redis_conn_t *conn);

/* The SHA-256 (64 lower-case hex digits) of the certificate the server presented in the
 * TLS handshake, kept after the connection failed or closed; "" for plain text or before
 * the handshake completed. Certificate rotation compares it with the one expected. */
const char *redis_conn_peer_cert(const redis_conn_t *conn);

/* 1 once the server sent anything at all: a reply, an AUTH refusal, a TLS handshake
 * message (even one whose certificate verification refused), kept after a failure. A
 * server that accepts the connection and says nothing (SIGSTOPped) has not. */
int redis_conn_heard(const redis_conn_t *conn);

/* A state's name ("connect", "TLS handshake", "AUTH", "ready", "failed"). */
const char *redis_conn_state_name(redis_conn_state_t state);

#endif
