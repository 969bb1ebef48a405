/* loop: the one event loop every daemon runs (in the spirit of CZMQ's zloop and Redis's ae).
 *
 * A loop holds READERS (a ZeroMQ socket or a file descriptor, with the events wanted) and
 * TIMERS (a deadline on the monotonic clock, once or repeating). loop_run() polls them all
 * with zmq_poll(), the timeout taken from the earliest timer, and calls each handler whose
 * reader is ready or whose deadline has passed, until a handler returns -1 or loop_stop()
 * is called.
 *
 * Flag vocabulary: handlers and registrations speak LOOP_IN / LOOP_OUT / LOOP_ERR only.
 * The loop translates them to zmq_poll's ZMQ_POLLIN / ZMQ_POLLOUT / ZMQ_POLLERR, so nobody
 * hands poll(2)'s POLLOUT (4, which zmq_poll reads as ZMQ_POLLERR) to zmq_poll again.
 *
 * Re-entrancy (as Redis's ae): handlers may add and remove readers and timers, their own
 * included, while the loop dispatches. A reader or timer removed during a turn is not
 * called again, not even later in the same turn; one added during a turn is first
 * considered on the next turn (so a timer that re-arms itself for "now" cannot starve the
 * readers). Removing a reader from inside its own handler is safe.
 *
 * Each turn, in order: the prepare hooks (work that must run every turn and may shorten
 * the wait, e.g. dispatching a queue), poll, ready readers in registration order, then
 * expired timers in deadline order.
 *
 * Failures: registration returns -1 only when out of memory (the loop is unchanged).
 * A zmq_poll() failure other than EINTR ends loop_run() with -1 and an error line in
 * loop_error(): it never spins.
 */
#ifndef RDC_LOOP_H
#define RDC_LOOP_H

#include <stdint.h>

#define LOOP_IN 1
#define LOOP_OUT 2
#define LOOP_ERR 4

typedef struct loop loop_t;

/* A reader's handler: revents is what happened (LOOP_IN | LOOP_OUT | LOOP_ERR). Return 0
 * to go on, -1 to end loop_run() with -1. */
typedef int loop_reader_fn(loop_t *loop, void *socket, int fd, int revents, void *arg);

/* A timer's handler. Return 0 to go on, -1 to end loop_run() with -1. */
typedef int loop_timer_fn(loop_t *loop, int timer_id, void *arg);

/* A prepare hook, called at the start of every turn with the loop's clock reading. It may
 * lower *wait_ns (the time the loop will sleep at most; never raise it). Return 0 to go on,
 * -1 to end loop_run() with -1. */
typedef int loop_prepare_fn(loop_t *loop, int64_t now_ns, int64_t *wait_ns, void *arg);

/* A clock for tests: returns monotonic nanoseconds. */
typedef int64_t loop_clock_fn(void *arg);

/* A new, empty loop on the monotonic clock, or NULL when out of memory. */
loop_t *loop_new(void);

/* Free the loop (not the sockets and fds it watched) and set *loop_p to NULL. NULL is
 * fine. Must not be called from a handler. */
void loop_destroy(loop_t **loop_p);

/* Replace the clock (tests). clock NULL restores the monotonic clock. */
void loop_set_clock(loop_t *loop, loop_clock_fn *clock, void *arg);

/* The loop's clock reading. */
int64_t loop_now(const loop_t *loop);

/* Watch a ZeroMQ socket for events (LOOP_IN and/or LOOP_OUT). A socket is watched at most
 * once: registering it again replaces its events, handler and argument. Returns 0, or -1
 * when out of memory. */
int loop_add_socket(loop_t *loop, void *socket, int events, loop_reader_fn *fn, void *arg);

/* Watch a file descriptor, as loop_add_socket. */
int loop_add_fd(loop_t *loop, int fd, int events, loop_reader_fn *fn, void *arg);

/* Change the events wanted for a watched fd (e.g. curl switching between reading and
 * writing). Returns 0, or -1 when the fd is not watched. */
int loop_set_fd_events(loop_t *loop, int fd, int events);

/* Stop watching a socket / fd. Nothing happens when it is not watched. */
void loop_remove_socket(loop_t *loop, void *socket);
void loop_remove_fd(loop_t *loop, int fd);

/* A timer that fires delay_ns from now (0 = on the next turn), then every interval_ns if
 * interval_ns > 0, else once. Returns a timer id > 0, or -1 when out of memory. */
int loop_add_timer(loop_t *loop, int64_t delay_ns, int64_t interval_ns, loop_timer_fn *fn,
                   void *arg);

/* Move a timer's next deadline to delay_ns from now. Returns 0, or -1 for an unknown id. */
int loop_timer_reset(loop_t *loop, int timer_id, int64_t delay_ns);

/* Cancel a timer. An unknown id (or one that fired once already) is ignored. */
void loop_cancel_timer(loop_t *loop, int timer_id);

/* Call fn at the start of every turn. Returns 0, or -1 when out of memory. */
int loop_add_prepare(loop_t *loop, loop_prepare_fn *fn, void *arg);

/* Run turns until a handler returns -1 (returns -1), loop_stop() (returns 0), or a poll
 * failure (returns -1, loop_error() says why). max_wait_ns caps every sleep (e.g. 1 s). */
int loop_run(loop_t *loop, int64_t max_wait_ns);

/* Run one turn, sleeping at most max_wait_ns (0: only what is ready now). Returns as
 * loop_run; 0 also when the turn simply ended. */
int loop_run_once(loop_t *loop, int64_t max_wait_ns);

/* Ask loop_run() to return 0 after the current turn. */
void loop_stop(loop_t *loop);

/* The last poll failure ("zmq_poll: Bad file descriptor"), or "" */
const char *loop_error(const loop_t *loop);

/* How many readers and timers are registered (for tests and metrics). */
int loop_reader_count(const loop_t *loop);
int loop_timer_count(const loop_t *loop);

#endif
