/* redis_sync: the blocking face of redis_conn.h for synchronous callers (workerd's
 * executor, command-line modes such as --once): each call runs a private event loop
 * until its answer or its deadline, so the same transport (TLS, AUTH, timeouts, error
 * lines) serves them too. Not for a daemon's own loop: a handler that blocks stalls it
 * (docs/daemon-loop.md).
 *
 *   s = redis_sync_open(&opts, err, sizeof(err));               connected, TLS, AUTH done
 *   r = redis_sync_command(s, 2, (const char *[]){"INFO", "replication"}, NULL, timeout, err, sizeof(err));
 *   ... freeReplyObject(r); redis_sync_close(&s);
 */
#ifndef RDC_REDIS_SYNC_H
#define RDC_REDIS_SYNC_H

#include "redis_conn.h"

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <stdint.h>

typedef struct redis_sync redis_sync_t;

/* Connect as opts says (TCP, TLS, AUTH), blocking at most opts->connect_timeout_ns.
 * NULL with one line in err (redis_conn's failure line) when that failed, or memory ran
 * out. */
redis_sync_t *redis_sync_open(const redis_conn_opts_t *opts, char *err, size_t errlen);

/* Send argv (as redis_conn_command) and block until its reply, at most timeout_ns. The
 * reply is the caller's (freeReplyObject; an error reply is a reply), or NULL with one
 * line in err: the connection failed (it stays failed: later commands fail the same
 * way) or memory ran out. */
redisReply *redis_sync_command(redis_sync_t *s, int argc, const char *const *argv, const size_t *lens,
                               int64_t timeout_ns, char *err, size_t errlen);

/* Send n commands at once (pipelined: one round trip) and block until every reply, at
 * most timeout_ns in all: command i is argvs[i][0..argcs[i]) (lenss NULL or lenss[i]
 * NULL: C strings; else lenss[i][k] bytes each). replies[0..n)
 * get the replies, the caller's to free (an error reply is a reply). Returns 0, or -1
 * with one line in err when the connection failed before every reply came or memory ran
 * out (every replies[i] is then NULL: any that came are freed). */
int redis_sync_pipeline(redis_sync_t *s, size_t n, const int *argcs, const char *const *const *argvs,
                        const size_t *const *lenss, int64_t timeout_ns, redisReply **replies, char *err,
                        size_t errlen);

/* Close and free; *s_p = NULL. NULL is fine. */
void redis_sync_close(redis_sync_t **s_p);

/* open, one command, close. */
redisReply *redis_sync_once(const redis_conn_opts_t *opts, int argc, const char *const *argv, const size_t *lens,
                            int64_t timeout_ns, char *err, size_t errlen);

#endif
