#include "lifecycle.h"

#define T(s, a) {CH_##s, CACT_##a}
#define NO(s) {CH_##s, CACT_IGNORE}

/* [state][event], for a child that is neither retired nor being shut down. */
static const child_transition_t running[CH_NSTATES][CEV_NEVENTS] = {
    /*              DUE                 SPAWN_FAILED             READY             EXITED                   STOP */
    [CH_DOWN] = {T(STARTING, SPAWN), NO(DOWN), NO(DOWN), NO(DOWN), T(DOWN, NONE)},
    [CH_STARTING] = {NO(STARTING), T(DOWN, RESTART_LATER), T(UP, READY), T(DOWN, RESTART_LATER),
                     T(STOPPING, SIGNAL)},
    [CH_UP] = {NO(UP), NO(UP), T(UP, NONE), T(DOWN, RESTART_LATER), T(STOPPING, SIGNAL)},
    [CH_STOPPING] = {NO(STOPPING), T(DOWN, STOPPED), T(STOPPING, NONE), T(DOWN, STOPPED),
                     T(STOPPING, SIGNAL)},
};

child_transition_t lifecycle_step(child_state_t state, child_event_t event, int stopping)
{
    if ((unsigned)state >= CH_NSTATES || (unsigned)event >= CEV_NEVENTS)
        return (child_transition_t){state, CACT_IGNORE};
    child_transition_t t = running[state][event];
    if (stopping) {
        if (t.action == CACT_SPAWN)
            t = (child_transition_t){CH_DOWN, CACT_NONE};
        else if (t.action == CACT_RESTART_LATER)
            t.action = CACT_STOPPED;
    }
    return t;
}

const char *lifecycle_state_name(child_state_t state)
{
    static const char *const names[] = {"down", "starting", "up", "stopping"};
    return (unsigned)state < CH_NSTATES ? names[state] : "unknown";
}

const char *lifecycle_event_name(child_event_t event)
{
    static const char *const names[] = {"due", "spawn-failed", "ready", "exited", "stop"};
    return (unsigned)event < CEV_NEVENTS ? names[event] : "unknown";
}

const char *lifecycle_action_name(child_action_t action)
{
    static const char *const names[] = {"none", "spawn", "restart-later", "ready", "stopped", "signal", "ignore"};
    return (unsigned)action <= CACT_IGNORE ? names[action] : "unknown";
}
