/* cadence: the hot and cold probe cadence of a cluster. See cadence.h. */
#include "cadence.h"

#include "clock.h"
#include "proto.h"

int64_t cadence_hint(int64_t now_ns, int64_t for_ms)
{
    if (for_ms <= 0)
        return 0;
    if (for_ms > PROTO_HOT_MAX_MS)
        for_ms = PROTO_HOT_MAX_MS;
    return now_ns + for_ms * NS_PER_MS;
}

int cadence_hot(int64_t hot_until_ns, int64_t now_ns)
{
    return hot_until_ns > 0 && now_ns < hot_until_ns;
}

int cadence_due(int64_t hot_until_ns, int64_t now_ns, int busy, int64_t last_probe_ns)
{
    if (!cadence_hot(hot_until_ns, now_ns) || busy)
        return 0;
    /* half an interval: the timer that asks fires every interval, a little before the
     * probe it started then began, so a whole one would skip every other turn */
    return last_probe_ns <= 0 || now_ns - last_probe_ns >= OBSERVE_HOT_INTERVAL_MS * NS_PER_MS / 2;
}
