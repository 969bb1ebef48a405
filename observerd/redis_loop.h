/* redis_loop: hiredis's asynchronous API on our loop (common/loop.h), as hiredis's own
 * adapters (adapters/libevent.h, ae.h) put it on theirs.
 *
 * hiredis says when it wants to read or write its socket (ev.addRead/delRead/addWrite/
 * delWrite) and when the context goes (ev.cleanup); this adapter turns that into
 * loop_add_fd / loop_set_fd_events / loop_remove_fd, and hands readiness back with
 * redisAsyncHandleRead/Write. hiredis 0.14 (Debian 12) has no timers of its own: the
 * caller bounds connects and replies with loop timers and frees the context when one
 * fires (redisnode.h does).
 *
 * Freeing: hiredis frees a context itself when the connection fails or closes inside
 * redisAsyncHandleRead/Write (then calling ev.cleanup). The adapter notices that it
 * happened under its own handler and frees its state only after the handler returned,
 * so neither hiredis nor the loop ever touches freed memory.
 */
#ifndef RDC_OBSERVERD_REDIS_LOOP_H
#define RDC_OBSERVERD_REDIS_LOOP_H

#include "loop.h"

#include <hiredis/async.h>

/* Attach ac (just made by redisAsyncConnect, without error) to loop: from now on the
 * loop drives it. Returns 0, or -1 when ac is already attached to something or memory
 * ran out (ac is then untouched). The attachment ends with ac (redisAsyncFree, or
 * hiredis freeing it after a disconnect). */
int redis_loop_attach(redisAsyncContext *ac, loop_t *loop);

#endif
