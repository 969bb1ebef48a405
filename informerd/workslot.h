/* workslot: the keys one worker holds (informerd's side of invariant 1).
 *
 * A worker says how many keys it reconciles at once (its capacity, READY's optional
 * frame; 1 when it does not say). informerd hands it keys while it holds fewer than that;
 * every key it holds came from workqueue_get (which never returns a key being processed),
 * so no key is held twice, here or by another worker. A DONE releases exactly the key it
 * names; a lost worker gives back every key it held. Pure: no sockets, no clock of its
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
} workslot_t;

/* An empty slot of capacity cap (clamped to 1..WORKSLOT_MAX). */
void workslot_init(workslot_t *s, int64_t cap);

/* Change the capacity (clamped); keys already held stay held, even past it. */
void workslot_set_capacity(workslot_t *s, int64_t cap);

/* How many more keys the worker takes now (0 when full). */
int workslot_room(const workslot_t *s);

/* Hold key from now_ns. Returns 0, or -1 (slot unchanged) when full, when key is held
 * already, or when it is too long. */
int workslot_hold(workslot_t *s, const char *key, int64_t now_ns);

/* Release key. Returns 0, or -1 (slot unchanged) when it is not held. */
int workslot_release(workslot_t *s, const char *key);

/* Is key held? 1 or 0. */
int workslot_holds(const workslot_t *s, const char *key);

/* The time the oldest held key was handed out; 0 when none is held. */
int64_t workslot_oldest(const workslot_t *s);

#endif
