/* lifecycle: a supervised child's states and transitions, as one table (s6's way).
 *
 *   state × event (× stopping) -> next state, action
 *
 * States: DOWN (no process; a respawn deadline may be set), STARTING (forked, not yet
 * ready), UP (said READY), STOPPING (sent a stop signal, waiting for the exit).
 * Events: DUE (its respawn deadline passed), SPAWN_FAILED (fork or pipe failed),
 * READY (READY on its readiness pipe), EXITED (reaped), STOP (the supervisor stops it:
 * shutdown phase, pool shrink; again to escalate).
 * stopping: the supervisor is shutting down or the child is retired; then nothing
 * respawns and an exit is the end, not a crash.
 *
 *            | DUE            SPAWN_FAILED         READY            EXITED                STOP
 *   ---------+--------------------------------------------------------------------------------------
 *   DOWN     | STARTING SPAWN    -                 -                -                     DOWN -
 *            | (stopping: DOWN -)
 *   STARTING | -              DOWN RESTART_LATER   UP READY         DOWN RESTART_LATER    STOPPING SIGNAL
 *   UP       | -              -                    UP -             DOWN RESTART_LATER    STOPPING SIGNAL
 *   STOPPING | -              DOWN STOPPED         STOPPING -       DOWN STOPPED          STOPPING SIGNAL
 *
 *   With stopping, RESTART_LATER becomes STOPPED. "-" in a cell without a state: the
 *   event cannot happen there; the state is kept and the action is IGNORE.
 *
 * Pure: no I/O, no clock. The supervisor performs the action (supervisor.c child_event).
 */
#ifndef RDC_SUPERVISOR_LIFECYCLE_H
#define RDC_SUPERVISOR_LIFECYCLE_H

typedef enum { CH_DOWN, CH_STARTING, CH_UP, CH_STOPPING } child_state_t;
#define CH_NSTATES 4

typedef enum { CEV_DUE, CEV_SPAWN_FAILED, CEV_READY, CEV_EXITED, CEV_STOP } child_event_t;
#define CEV_NEVENTS 5

typedef enum {
    CACT_NONE,          /* nothing to do */
    CACT_SPAWN,         /* fork and exec it now */
    CACT_RESTART_LATER, /* it ended unexpectedly: log, count a restart, set the deadline */
    CACT_READY,         /* mark it ready */
    CACT_STOPPED,       /* it ended as asked (or while stopping): log it */
    CACT_SIGNAL,        /* send it the stop signal */
    CACT_IGNORE,        /* the event cannot happen in this state: keep the state */
} child_action_t;

typedef struct {
    child_state_t next;
    child_action_t action;
} child_transition_t;

/* The transition for event in state. stopping: shutting down or retired (see above). */
child_transition_t lifecycle_step(child_state_t state, child_event_t event, int stopping);

/* "down", "starting", "up", "stopping" / "due", "spawn-failed", "ready", "exited",
 * "stop" / "none", "spawn", ... */
const char *lifecycle_state_name(child_state_t state);
const char *lifecycle_event_name(child_event_t event);
const char *lifecycle_action_name(child_action_t action);

#endif
