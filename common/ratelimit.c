#include "ratelimit.h"

#include <math.h>

void ratelimit_init(ratelimit_t *rl, double qps, int burst)
{
    rl->qps = (qps > 0) ? qps : 0; /* NaN compares false: unlimited */
    rl->burst = burst < 1 ? 1 : burst;
    rl->tokens = rl->burst;
    rl->last_ns = 0;
    rl->started = 0;
}

int ratelimit_unlimited(const ratelimit_t *rl)
{
    return !(rl->qps > 0);
}

/* Tokens at now_ns given the state, and the time the state should move to. */
static double advance(const ratelimit_t *rl, int64_t now_ns, int64_t *new_last)
{
    if (!rl->started) {
        *new_last = now_ns;
        return rl->tokens;
    }
    int64_t last = rl->last_ns;
    if (now_ns < last) {
        /* Time went backwards (or callers disagree): keep the state. */
        *new_last = last;
        return rl->tokens;
    }
    double elapsed_s = (double)(now_ns - last) / 1e9;
    double t = rl->tokens + elapsed_s * rl->qps;
    if (t > rl->burst)
        t = rl->burst;
    *new_last = now_ns;
    return t;
}

/* Wait in ns until a debt of -tokens is paid off; rounded up so that the caller never
 * wakes a few ns early and finds the bucket still negative. */
static int64_t wait_for(double tokens, double qps)
{
    if (tokens >= 0)
        return 0;
    double ns = ceil(-tokens / qps * 1e9);
    if (ns >= 9.2e18)
        return INT64_MAX;
    return (int64_t)ns;
}

int ratelimit_try_reserve(ratelimit_t *rl, int64_t now_ns, int64_t max_wait_ns,
                          int64_t *wait_ns)
{
    *wait_ns = 0;
    if (ratelimit_unlimited(rl))
        return 0;
    int64_t new_last;
    double t = advance(rl, now_ns, &new_last) - 1.0;
    int64_t wait = wait_for(t, rl->qps);
    if (wait > max_wait_ns)
        return -1;
    rl->tokens = t;
    rl->last_ns = new_last;
    rl->started = 1;
    *wait_ns = wait;
    return 0;
}

int64_t ratelimit_reserve(ratelimit_t *rl, int64_t now_ns)
{
    int64_t wait = 0;
    ratelimit_try_reserve(rl, now_ns, INT64_MAX, &wait);
    return wait;
}

int64_t ratelimit_when(const ratelimit_t *rl, int64_t now_ns)
{
    if (ratelimit_unlimited(rl))
        return 0;
    int64_t new_last;
    return wait_for(advance(rl, now_ns, &new_last) - 1.0, rl->qps);
}

int ratelimit_allow(ratelimit_t *rl, int64_t now_ns)
{
    int64_t wait;
    return ratelimit_try_reserve(rl, now_ns, 0, &wait) == 0;
}

double ratelimit_tokens(const ratelimit_t *rl, int64_t now_ns)
{
    if (ratelimit_unlimited(rl))
        return INFINITY;
    int64_t new_last;
    return advance(rl, now_ns, &new_last);
}
