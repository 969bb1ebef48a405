/* ratelimit_shared: one client-side QPS/burst budget for the whole operator.
 *
 * `--kube-api-qps/--kube-api-burst` are the budget of the operator, as they are of a
 * controller-runtime manager, not of each of its processes (before this, 2 workers meant
 * twice the QPS). The supervisor creates one bucket in a file of its runtime directory
 * (ratelimit_shared_create) and names it to its children in the environment
 * (RATELIMIT_SHARED_ENV); every child's kube client reserves its tokens there
 * (ratelimit_shared_open, ratelimit_shared_try_reserve). A daemon run alone keeps its own
 * in-process bucket (ratelimit.h).
 *
 * The bucket is GCRA, the token bucket of golang.org/x/time/rate (as ratelimit.h) kept in
 * one 64-bit word: `empty_ns`, the time at which the bucket was (or will be) empty.
 * tokens(now) = min(burst, (now - empty_ns) * qps); a reservation moves empty_ns by one
 * interval (1/qps), from max(empty_ns, now - burst/qps), and waits until the new value has
 * passed. It is updated with a compare-and-swap, so no lock is ever held and a process
 * killed in the middle leaves the bucket consistent. Times are CLOCK_MONOTONIC, which is
 * one clock for every process of the machine.
 */
#ifndef RDC_RATELIMIT_SHARED_H
#define RDC_RATELIMIT_SHARED_H

#include <stddef.h>
#include <stdint.h>

/* The environment variable that names the bucket file to the supervisor's children. */
#define RATELIMIT_SHARED_ENV "RDC_KUBE_API_BUCKET"
/* Its file name in the supervisor's runtime directory. */
#define RATELIMIT_SHARED_FILE "kube-api-bucket"
/* The workers' Events have a bucket of their own, of the same rate and size (the
 * recorder of a controller-runtime manager sends through a client, and a limiter, of its
 * own): workerd/recorder.h. */
#define RATELIMIT_SHARED_EVENTS_ENV "RDC_KUBE_API_EVENTS_BUCKET"
#define RATELIMIT_SHARED_EVENTS_FILE "kube-api-events-bucket"

typedef struct ratelimit_shared ratelimit_shared_t;

/* Create (or replace) the bucket file at path with qps tokens per second and burst tokens,
 * full at now_ns, and map it. qps must be > 0 (an unlimited budget needs no bucket);
 * burst < 1 is taken as 1. The file is written to path.new and renamed into place, so a
 * reader never maps a half-written bucket. Returns 0 and *out (caller destroys), or -1
 * with err naming the file and the failing call (nothing left behind). */
int ratelimit_shared_create(const char *path, double qps, int burst, int64_t now_ns,
                            ratelimit_shared_t **out, char *err, size_t errlen);

/* Map an existing bucket file. Returns 0 and *out (caller destroys), or -1 with err
 * (missing file, wrong size or magic: not a bucket of this version). */
int ratelimit_shared_open(const char *path, ratelimit_shared_t **out, char *err,
                          size_t errlen);

/* Unmap; sets *self_p to NULL. The file stays (its creator removes it). */
void ratelimit_shared_destroy(ratelimit_shared_t **self_p);

/* Reserve one token at now_ns when the wait would be at most max_wait_ns: returns 0 with
 * the wait (ns, >= 0) in *wait_ns, or -1 with nothing consumed. Safe to call from any
 * number of processes at once. */
int ratelimit_shared_try_reserve(ratelimit_shared_t *rl, int64_t now_ns,
                                 int64_t max_wait_ns, int64_t *wait_ns);

/* The bucket's rate and size, as created. */
double ratelimit_shared_qps(const ratelimit_shared_t *rl);
int ratelimit_shared_burst(const ratelimit_shared_t *rl);

/* Tokens available at now_ns (negative while reservations are queued); for tests. */
double ratelimit_shared_tokens(const ratelimit_shared_t *rl, int64_t now_ns);

#endif
