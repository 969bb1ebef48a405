/* policy: the supervisor's decisions, as pure functions over explicit time.
 *
 * Restart throttling follows s6 and runit: a child that exits is not respawned before a
 * deadline. The delay starts at 1 s and doubles with each exit in a row up to 60 s; a
 * child that stayed up for 10 minutes has proven itself, and its next exit starts over
 * at 1 s. The supervisor's event loop turns the delay into a deadline; nothing sleeps.
 */
#ifndef RDC_SUPERVISOR_POLICY_H
#define RDC_SUPERVISOR_POLICY_H

#include <stdint.h>

#define POLICY_RESTART_BASE_NS (INT64_C(1) * 1000000000)
#define POLICY_RESTART_CAP_NS (INT64_C(60) * 1000000000)
#define POLICY_STABLE_NS (INT64_C(600) * 1000000000)
/* A child that exits this many times in a row without staying up counts as crash-looping,
 * which makes readiness false for the daemons the operator cannot act without. */
#define POLICY_CRASHLOOP_EXITS 3

typedef struct {
    unsigned exits_in_a_row; /* exits since the child last stayed up POLICY_STABLE_NS */
    uint64_t restarts_total; /* every respawn after the first start */
} policy_restart_t;

/* Record an exit of a child that started at started_ns and exited at now_ns, and return
 * the delay before it may be started again. An uptime of POLICY_STABLE_NS or more resets
 * the streak first, so that delay is POLICY_RESTART_BASE_NS again. */
int64_t policy_on_exit(policy_restart_t *p, int64_t started_ns, int64_t now_ns);

/* 1 when the child is crash-looping: POLICY_CRASHLOOP_EXITS or more exits in a row. */
int policy_crashlooping(const policy_restart_t *p);

/* Describe a wait(2) status in one short phrase: "exited with code 3", "killed by signal
 * 9 (SIGKILL)", "killed by signal 11 (SIGSEGV), core dumped". Returns out. */
char *policy_describe_status(int status, char *out, unsigned long len);

#endif
