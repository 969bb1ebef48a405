/* rmsg: multipart ZeroMQ messages, in the manner of CZMQ's zmsg (named apart so it is never
 * mistaken for it).
 *
 * A message is a list of frames. Sending takes ownership of the message; receiving
 * returns a new one. Frames are byte strings; helpers read them as strings or integers
 * with bounds checks, so a malformed peer message is an error, never an overread.
 *
 * Out of memory is not an error here but the end of the process (as in CZMQ): every
 * allocation that fails aborts with "rmsg: out of memory", so no caller handles a NULL
 * message or a failed append, and the supervisor restarts the daemon.
 */
#ifndef RDC_RMSG_H
#define RDC_RMSG_H

#include <stddef.h>
#include <stdint.h>

typedef struct rmsg rmsg_t;

/* A new, empty message. Never NULL. */
rmsg_t *rmsg_new(void);

/* Free the message and set *self_p to NULL. Safe with NULL. */
void rmsg_destroy(rmsg_t **self_p);

/* Number of frames. */
size_t rmsg_size(const rmsg_t *m);

/* Append a frame (copied). Returns 0 (kept for call sites that check it). */
int rmsg_addmem(rmsg_t *m, const void *data, size_t len);
int rmsg_addstr(rmsg_t *m, const char *s);
int rmsg_addf(rmsg_t *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Insert a frame (copied) before the first. Same contract as rmsg_addmem. */
int rmsg_pushmem(rmsg_t *m, const void *data, size_t len);
int rmsg_pushstr(rmsg_t *m, const char *s);

/* Frame i (0-based): its bytes and length, or NULL when i is out of range. The bytes are
 * owned by the message; they are followed by a NUL that is not part of the frame. */
const char *rmsg_frame(const rmsg_t *m, size_t i, size_t *len);

/* Frame i as a new string (caller frees), or NULL when out of range. */
char *rmsg_strdup(const rmsg_t *m, size_t i);

/* 1 when frame i exists and equals s byte for byte. */
int rmsg_frame_is(const rmsg_t *m, size_t i, const char *s);

/* Frame i parsed as a decimal integer. Returns 0, or -1 when missing or not a number. */
int rmsg_frame_int64(const rmsg_t *m, size_t i, int64_t *out);

/* Remove frame 0 and return it as a new string (caller frees); NULL when empty. */
char *rmsg_popstr(rmsg_t *m);

/* Remove frame 0 into a new message (used to split a ROUTER envelope). NULL when m is
 * empty. */
rmsg_t *rmsg_pop_frame_msg(rmsg_t *m);

/* Send every frame on socket and destroy the message, also on error (ZeroMQ's own
 * semantics for a partly sent message). flags may add ZMQ_DONTWAIT. Returns 0, or -1
 * with errno set by ZeroMQ. */
int rmsg_send(rmsg_t **self_p, void *socket, int flags);

/* Receive one whole multipart message. Returns it, or NULL with errno set by ZeroMQ
 * (EAGAIN with ZMQ_DONTWAIT when nothing is waiting, EINTR on a signal). Messages with more than
 * max_frames frames or more than max_bytes bytes in all are received and dropped: NULL
 * with errno EMSGSIZE. */
rmsg_t *rmsg_recv(void *socket, int flags, size_t max_frames, size_t max_bytes);

#endif
