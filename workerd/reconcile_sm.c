/* reconcile_sm: the reconcile job's transition table. See reconcile_sm.h. */
#include "reconcile_sm.h"

#define T(s, a) {RS_##s, RA_##a}

/* [state][event] for the pairs that can happen; every other pair is zero, i.e. {RS_IDLE,
 * RA_NONE}, which rcsm_step reads as "cannot happen" (no transition leads to IDLE). */
static const reconcile_transition_t table[RS_NSTATES][REV_NEVENTS] = {
    [RS_IDLE] = {[REV_START] = T(READ, READ_FIRST)},
    [RS_READ] = {[REV_READ_OK] = T(PLAN, PLAN), [REV_READ_FAILED] = T(FINISH, READ_FAILED)},
    [RS_PLAN] = {[REV_PLANNED] = T(RUN, RUN), [REV_NEED_MORE] = T(READ_MORE, READ_MORE),
                 [REV_SETTLED] = T(FINISH, NONE)},
    [RS_READ_MORE] = {[REV_READ_OK] = T(PLAN, PLAN), [REV_EXPLAIN] = T(READ_MORE, READ_EXPLAIN)},
    [RS_RUN] = {[REV_RUN_OK] = T(FINISH, FINISH_OK), [REV_RUN_EXISTS] = T(READ, REPLAN),
                [REV_RUN_REFUSED] = T(TAKE_BACK, TAKE_BACK), [REV_RUN_FAILED] = T(FINISH, FINISH_FAILED),
                [REV_RUN_REPORT] = T(READ_FRESH, READ_FRESH)},
    [RS_TAKE_BACK] = {[REV_RUN_REFUSED] = T(TAKE_BACK, RECREATE), [REV_RUN_FAILED] = T(FINISH, FINISH_FAILED),
                      [REV_RUN_REPORT] = T(READ_FRESH, READ_FRESH), [REV_TAKEN_BACK] = T(FINISH, FINISH_TAKEN_BACK)},
    [RS_READ_FRESH] = {[REV_READ_OK] = T(REPORT, REPORT)},
    [RS_REPORT] = {[REV_REPORTED] = T(FINISH, NONE)},
    [RS_FINISH] = {[REV_DELIVER] = T(DONE, DELIVER)},
};

int rcsm_waiting(reconcile_state_t state)
{
    return state == RS_READ || state == RS_READ_MORE || state == RS_RUN || state == RS_TAKE_BACK ||
           state == RS_READ_FRESH || state == RS_REPORT;
}

reconcile_transition_t rcsm_step(reconcile_state_t state, reconcile_event_t event)
{
    reconcile_transition_t keep = {state, RA_IGNORE};
    if ((unsigned)state >= RS_NSTATES || (unsigned)event >= REV_NEVENTS || state == RS_DONE)
        return keep;
    if (event == REV_CANCEL)
        return (reconcile_transition_t){RS_DONE, RA_FREE};
    if (event == REV_DEADLINE)
        return rcsm_waiting(state) ? (reconcile_transition_t){RS_FINISH, RA_EXPIRE} : keep;
    reconcile_transition_t t = table[state][event];
    return t.next == RS_IDLE ? keep : t;
}

/* names[i] of a table of n names, or "unknown" out of range (a corrupt value logged). */
static const char *name_in(const char *const *names, unsigned n, unsigned i)
{
    return i < n ? names[i] : "unknown";
}

const char *rcsm_state_name(reconcile_state_t state)
{
    static const char *const names[RS_NSTATES] = {"idle",       "read",   "plan",   "read-more", "run",
                                                  "take-back",  "read-fresh", "report", "finish", "done"};
    return name_in(names, RS_NSTATES, (unsigned)state);
}

const char *rcsm_event_name(reconcile_event_t event)
{
    static const char *const names[REV_NEVENTS] = {
        "start",      "read-ok",    "read-failed", "explain",    "planned",    "need-more",
        "settled",    "run-ok",     "run-exists",  "run-refused", "run-failed", "run-report",
        "taken-back", "reported",   "deadline",    "deliver",    "cancel"};
    return name_in(names, REV_NEVENTS, (unsigned)event);
}

const char *rcsm_action_name(reconcile_action_t action)
{
    static const char *const names[RA_NACTIONS] = {
        "none",        "read-first",  "plan",     "read-more",    "read-explain", "run",
        "replan",      "take-back",   "recreate", "read-fresh",   "report",       "finish-ok",
        "finish-failed", "finish-taken-back", "read-failed", "expire", "deliver", "free", "ignore"};
    return name_in(names, RA_NACTIONS, (unsigned)action);
}
