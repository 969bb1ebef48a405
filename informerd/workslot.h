/* workslot: the keys one worker holds (informerd's side of invariant 1).
 *
 * A worker says how many keys it reconciles at once (its capacity, READY's optional
 * frame; 1 when it does not say). informerd hands it keys while it holds fewer than that;
 * every key it holds came from workqueue_get (which never returns a key being processed),
 * so no key is held twice, here or by another worker. A DONE releases exactly the key it
 * names; a lost worker gives back every key it held (each counted as a crash of that
 * key: which one crashed it is unknown), so a key that has crashed a worker runs alone
 * from then on, and its next crashes count against it only. Pure: no sockets, no clock of its
 * own (times are the caller's).
 */
#ifndef RDC_WORKSLOT_H
#define RDC_WORKSLOT_H

#include <stddef.h>
#include <stdint.h>

#define WORKSLOT_MAX 16        /* keys one worker holds at most (a larger capacity is capped) */
#define WORKSLOT_KEY_MAX 512

typedef struct {
    int capacity;                           /* 1..WORKSLOT_MAX */
    int n;                                  /* keys held */
    char key[WORKSLOT_MAX][WORKSLOT_KEY_MAX];
    int64_t since_ns[WORKSLOT_MAX];         /* when each was handed out */
    int alone;                              /* it holds a key that must run alone */
} workslot_t;

/* An empty slot of capacity cap (clamped to 1..WORKSLOT_MAX). */
void workslot_init(workslot_t *s, int64_t cap);

/* Change the capacity (clamped); keys already held stay held, even past it. */
void workslot_set_capacity(workslot_t *s, int64_t cap);

/* How many more keys the worker takes now (0 when full, or while it holds a key alone). */
int workslot_room(const workslot_t *s);

/* Hold key from now_ns; alone: only into an empty slot, and nothing more is held beside
 * it until it is released (a key that crashed a worker: a crash of the worker it runs in
 * then counts against it alone). Returns 0, or -1 (slot unchanged) when there is no room
 * (for alone: the slot is not empty), when key is held already, or when it is too long. */
int workslot_hold(workslot_t *s, const char *key, int64_t now_ns, int alone);

/* Release key. Returns 0, or -1 (slot unchanged) when it is not held. */
int workslot_release(workslot_t *s, const char *key);

/* Is key held? 1 or 0. */
int workslot_holds(const workslot_t *s, const char *key);

/* The time the oldest held key was handed out; 0 when none is held. */
int64_t workslot_oldest(const workslot_t *s);

#endif
