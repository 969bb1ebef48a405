/* Unit tests of the supervisor's child lifecycle table. */
#include "cu_table.h"
#include "lifecycle.h"

#include <CUnit/CUnit.h>
#include <stdio.h>

typedef struct {
    child_state_t state;
    child_event_t event;
    int stopping;
    child_state_t next;
    child_action_t action;
} row_t;

/* Every cell of the table in lifecycle.h, both with and without stopping. */
static const row_t rows[] = {
    {CH_DOWN, CEV_DUE, 0, CH_STARTING, CACT_SPAWN},
    {CH_DOWN, CEV_DUE, 1, CH_DOWN, CACT_NONE},
    {CH_DOWN, CEV_SPAWN_FAILED, 0, CH_DOWN, CACT_IGNORE},
    {CH_DOWN, CEV_READY, 0, CH_DOWN, CACT_IGNORE},
    {CH_DOWN, CEV_EXITED, 0, CH_DOWN, CACT_IGNORE},
    {CH_DOWN, CEV_STOP, 0, CH_DOWN, CACT_NONE},
    {CH_DOWN, CEV_STOP, 1, CH_DOWN, CACT_NONE},
    {CH_STARTING, CEV_DUE, 0, CH_STARTING, CACT_IGNORE},
    {CH_STARTING, CEV_SPAWN_FAILED, 0, CH_DOWN, CACT_RESTART_LATER},
    {CH_STARTING, CEV_SPAWN_FAILED, 1, CH_DOWN, CACT_STOPPED},
    {CH_STARTING, CEV_READY, 0, CH_UP, CACT_READY},
    {CH_STARTING, CEV_READY, 1, CH_UP, CACT_READY},
    {CH_STARTING, CEV_EXITED, 0, CH_DOWN, CACT_RESTART_LATER},
    {CH_STARTING, CEV_EXITED, 1, CH_DOWN, CACT_STOPPED},
    {CH_STARTING, CEV_STOP, 0, CH_STOPPING, CACT_SIGNAL},
    {CH_UP, CEV_DUE, 0, CH_UP, CACT_IGNORE},
    {CH_UP, CEV_SPAWN_FAILED, 0, CH_UP, CACT_IGNORE},
    {CH_UP, CEV_READY, 0, CH_UP, CACT_NONE},
    {CH_UP, CEV_EXITED, 0, CH_DOWN, CACT_RESTART_LATER},
    {CH_UP, CEV_EXITED, 1, CH_DOWN, CACT_STOPPED},
    {CH_UP, CEV_STOP, 0, CH_STOPPING, CACT_SIGNAL},
    {CH_UP, CEV_STOP, 1, CH_STOPPING, CACT_SIGNAL},
    {CH_STOPPING, CEV_DUE, 0, CH_STOPPING, CACT_IGNORE},
    {CH_STOPPING, CEV_SPAWN_FAILED, 0, CH_DOWN, CACT_STOPPED},
    {CH_STOPPING, CEV_READY, 0, CH_STOPPING, CACT_NONE},
    {CH_STOPPING, CEV_EXITED, 0, CH_DOWN, CACT_STOPPED},
    {CH_STOPPING, CEV_EXITED, 1, CH_DOWN, CACT_STOPPED},
    {CH_STOPPING, CEV_STOP, 0, CH_STOPPING, CACT_SIGNAL},
};

static void test_table(void)
{
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const row_t *r = &rows[i];
        child_transition_t t = lifecycle_step(r->state, r->event, r->stopping);
        if (t.next != r->next || t.action != r->action) {
            char msg[160];
            snprintf(msg, sizeof(msg), "%s x %s (stopping %d): got %s %s, want %s %s",
                     lifecycle_state_name(r->state), lifecycle_event_name(r->event), r->stopping,
                     lifecycle_state_name(t.next), lifecycle_action_name(t.action),
                     lifecycle_state_name(r->next), lifecycle_action_name(r->action));
            CU_FAIL(msg);
        }
    }
}

/* The properties the supervisor relies on, over every cell. */
static void test_properties(void)
{
    for (int st = 0; st < CH_NSTATES; st++)
        for (int ev = 0; ev < CEV_NEVENTS; ev++)
            for (int stopping = 0; stopping <= 1; stopping++) {
                child_transition_t t = lifecycle_step((child_state_t)st, (child_event_t)ev, stopping);
                /* While stopping nothing is spawned or scheduled for a restart. */
                if (stopping)
                    CU_ASSERT(t.action != CACT_SPAWN && t.action != CACT_RESTART_LATER);
                /* An exit always ends in DOWN, and an ignored event keeps the state. */
                if (ev == CEV_EXITED && st != CH_DOWN)
                    CU_ASSERT_EQUAL(t.next, CH_DOWN);
                if (t.action == CACT_IGNORE)
                    CU_ASSERT_EQUAL(t.next, (child_state_t)st);
                /* Only a spawn leaves DOWN. */
                if (st == CH_DOWN && t.next != CH_DOWN)
                    CU_ASSERT_EQUAL(t.action, CACT_SPAWN);
            }
    /* Out of range: ignored, state kept. */
    child_transition_t t = lifecycle_step(CH_UP, (child_event_t)99, 0);
    CU_ASSERT_EQUAL(t.next, CH_UP);
    CU_ASSERT_EQUAL(t.action, CACT_IGNORE);
    CU_ASSERT_STRING_EQUAL(lifecycle_state_name((child_state_t)9), "unknown");
}

static const cu_entry_t tests[] = {
    CU_SUITE("lifecycle"),
    {"every cell of the table", test_table},
    {"properties over every cell", test_properties},
};

CU_MAIN(tests)
