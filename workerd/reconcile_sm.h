/* reconcile_sm: the states of one reconcile job and its transitions, as one table (the
 * shape of supervisor/lifecycle.h).
 *
 *   state x event -> next state, action
 *
 * A job (reconcile.c) has exactly one state. Its callbacks (reads ended, a run ended, a
 * timer) never change the job themselves: each turns what happened into one event and
 * hands it to reconcile.c's job_event, the one function that changes a job's state; it
 * asks rcsm_step for the transition, logs it at debug, and performs the action.
 *
 * States (the steps of reconcile.h):
 *   IDLE        made, not started
 *   READ        the children the cache lacks and the auth Secrets, read by name
 *   PLAN        plan_compute (no I/O; left in the same turn by the action's event)
 *   READ_MORE   what the plan asked for: the StorageClass, the diagnosis (pods, Events),
 *               the claims, the RedisBackup a restore names (plan_restore.h)
 *   RUN         the plan's writes and Redis commands (executor.h ASYNC)
 *   TAKE_BACK   a child the API refused to update, replaced or recreated
 *   READ_FRESH  the RedisCluster read again, to report a refused write in its status
 *   REPORT      that status write
 *   FINISH      the outcome is set; it is delivered on the next turn of the loop
 *   DONE        delivered or cancelled: the job is freed
 *
 * Events:
 *   START         reconcile_start
 *   READ_OK       a set of reads ended with what the next step needs (a read that
 *                 failed but is optional, such as a diagnosis LIST, is logged and
 *                 counted as absent)
 *   READ_FAILED   a read the plan cannot do without failed (a child by name)
 *   EXPLAIN       READ_MORE found the pod to explain: its Events are read too
 *   PLANNED       the plan is ready to run
 *   NEED_MORE     the plan asks for the StorageClass or the diagnosis
 *   SETTLED       planning decided the outcome: an object that cannot be reconciled, a
 *                 dry run, out of memory, a second plan (after 409) that failed
 *   RUN_OK        every action of the run done
 *   RUN_EXISTS    a create met 409 AlreadyExists for the first time: read and plan again
 *   RUN_REFUSED   an apply was refused with 422 (or, taking back, the replace was): take
 *                 the child back (again, by recreating it)
 *   RUN_FAILED    any other failure of a run: conflict, fenced, transient, out of memory
 *   RUN_REPORT    the API refused a write (4xx, not retryable): say it in the status
 *   TAKEN_BACK    the take-back's run succeeded
 *   REPORTED      the report ended (written, failed, or nothing to report)
 *   DEADLINE      the job's deadline passed (reconcile_set_deadline)
 *   DELIVER       FINISH's timer fired
 *   CANCEL        reconcile_cancel
 *
 *              | START  READ_OK   READ_FAILED EXPLAIN   PLANNED NEED_MORE SETTLED
 *   -----------+-----------------------------------------------------------------
 *   IDLE       | READ   -         -           -         -       -         -
 *   READ       | -      PLAN      FINISH      -         -       -         -
 *   PLAN       | -      -         -           -         RUN     READ_MORE FINISH
 *   READ_MORE  | -      PLAN      -           READ_MORE -       -         -
 *   READ_FRESH | -      REPORT    -           -         -       -         -
 *
 *              | RUN_OK RUN_EXISTS RUN_REFUSED RUN_FAILED RUN_REPORT TAKEN_BACK REPORTED
 *   -----------+---------------------------------------------------------------------
 *   RUN        | FINISH READ       TAKE_BACK   FINISH     READ_FRESH -          -
 *   TAKE_BACK  | -      -          TAKE_BACK   FINISH     READ_FRESH FINISH     -
 *   REPORT     | -      -          -           -          -          -          FINISH
 *
 *   DEADLINE: READ, READ_MORE, RUN, TAKE_BACK, READ_FRESH, REPORT -> FINISH (EXPIRE).
 *   CANCEL: every state but DONE -> DONE (FREE). DELIVER: FINISH -> DONE (DELIVER).
 *   Any other pair cannot happen: the state is kept and the action is IGNORE (the job
 *   logs it as a bug; the unit test drives every pair and checks this).
 *
 * Pure: no I/O, no clock.
 */
#ifndef RDC_WORKERD_RECONCILE_SM_H
#define RDC_WORKERD_RECONCILE_SM_H

typedef enum {
    RS_IDLE,
    RS_READ,
    RS_PLAN,
    RS_READ_MORE,
    RS_RUN,
    RS_TAKE_BACK,
    RS_READ_FRESH,
    RS_REPORT,
    RS_FINISH,
    RS_DONE
} reconcile_state_t;
#define RS_NSTATES 10

typedef enum {
    REV_START,
    REV_READ_OK,
    REV_READ_FAILED,
    REV_EXPLAIN,
    REV_PLANNED,
    REV_NEED_MORE,
    REV_SETTLED,
    REV_RUN_OK,
    REV_RUN_EXISTS,
    REV_RUN_REFUSED,
    REV_RUN_FAILED,
    REV_RUN_REPORT,
    REV_TAKEN_BACK,
    REV_REPORTED,
    REV_DEADLINE,
    REV_DELIVER,
    REV_CANCEL
} reconcile_event_t;
#define REV_NEVENTS 17

typedef enum {
    RA_NONE,          /* nothing more: the outcome is already set */
    RA_READ_FIRST,    /* start the first reads (children by name, auth) */
    RA_PLAN,          /* compute the plan (again only when an input changed) */
    RA_READ_MORE,     /* start the StorageClass and diagnosis reads */
    RA_READ_EXPLAIN,  /* start the reads of the pod to explain */
    RA_RUN,           /* start running the plan */
    RA_REPLAN,        /* keep the first plan, forget the inputs, read again */
    RA_TAKE_BACK,     /* replace the refused child */
    RA_RECREATE,      /* the replace was refused too: recreate it (a Service) */
    RA_READ_FRESH,    /* read the RedisCluster again for the report */
    RA_REPORT,        /* write the failure into the status */
    RA_FINISH_OK,     /* the outcome of a plan that ran: done or requeue after */
    RA_FINISH_FAILED, /* the outcome of a failed run (conflict, fenced, error) */
    RA_FINISH_TAKEN_BACK, /* requeue after RECONCILE_TAKE_BACK_REQUEUE_NS */
    RA_READ_FAILED,   /* the outcome of a failed read (or the first plan's, replanning) */
    RA_EXPIRE,        /* drop what is in flight; the outcome says the deadline passed */
    RA_DELIVER,       /* free the job and tell the caller */
    RA_FREE,          /* free the job without telling anyone (cancelled) */
    RA_IGNORE         /* the event cannot happen in this state: keep the state */
} reconcile_action_t;
#define RA_NACTIONS 19

typedef struct {
    reconcile_state_t next;
    reconcile_action_t action;
} reconcile_transition_t;

/* The transition for event in state (the table above). Out-of-range input: the state kept
 * and RA_IGNORE. */
reconcile_transition_t rcsm_step(reconcile_state_t state, reconcile_event_t event);

/* 1 when state waits for something outside the job (a read, a run, the finish timer): the
 * states a deadline applies to, and in which a job can be found between two turns. */
int rcsm_waiting(reconcile_state_t state);

/* "idle", "read", "plan", "read-more", "run", "take-back", "read-fresh", "report",
 * "finish", "done" / "start", "read-ok", ... / "none", "read-first", ... ("unknown" out
 * of range). */
const char *rcsm_state_name(reconcile_state_t state);
const char *rcsm_event_name(reconcile_event_t event);
const char *rcsm_action_name(reconcile_action_t action);

#endif
