/* clock: time sources and time formatting.
 *
 * Decisions (deadlines, expiry, backoff) use the monotonic clock so that a wall-clock
 * step cannot shorten or stretch them; the wall clock is used only for timestamps that
 * leave the process (logs, Kubernetes objects).
 */
#ifndef RDC_CLOCK_H
#define RDC_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#define NS_PER_MS INT64_C(1000000)
#define NS_PER_SEC INT64_C(1000000000)

/* Monotonic time in nanoseconds (CLOCK_MONOTONIC). */
int64_t clock_mono_ns(void);

/* Wall-clock time in nanoseconds since the Unix epoch (CLOCK_REALTIME). */
int64_t clock_wall_ns(void);

/* Format wall-clock ns as RFC 3339 in UTC: "2024-05-01T12:00:00Z" (frac_digits 0) or
 * with 1..9 fractional digits ("...:00.123456Z", as Kubernetes MicroTime uses 6).
 * Writes at most len bytes including the terminator; returns out. */
char *clock_format_rfc3339(int64_t wall_ns, int frac_digits, char *out, size_t len);

/* Parse an RFC 3339 timestamp (with 'Z' or a numeric offset, optional fraction) into
 * wall-clock ns. Returns 0, or -1 when s is not such a timestamp. */
int clock_parse_rfc3339(const char *s, int64_t *wall_ns);

#endif
