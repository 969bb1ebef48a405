#include "syncgate.h"

syncgate_state_t syncgate_check(const syncgate_kind_t *kinds, size_t n, int64_t started_ns,
                                int64_t now_ns, int64_t timeout_ns, buf_t *names, buf_t *why)
{
    size_t waiting = 0;
    for (size_t i = 0; i < n; i++) {
        const syncgate_kind_t *k = &kinds[i];
        if (k->synced)
            continue;
        waiting++;
        /* Best effort: what does not fit a buffer is left out. */
        if (names)
            (void)buf_printf(names, "%s%s", waiting > 1 ? "," : "", k->kind);
        if (why)
            (void)buf_printf(why, "%s%s (%s)", waiting > 1 ? "; " : "", k->kind,
                             k->last_error && *k->last_error ? k->last_error
                             : k->listing                    ? "LIST in progress"
                                                             : "LIST not started");
    }
    if (!waiting)
        return SYNCGATE_OPEN;
    return timeout_ns > 0 && now_ns - started_ns >= timeout_ns ? SYNCGATE_TIMED_OUT : SYNCGATE_WAIT;
}
