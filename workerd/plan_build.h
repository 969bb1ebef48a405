/* plan_build: the plan object while plan_compute builds it (workerd/plan*.c only; plan.h
 * is the public contract and its accessors are here too).
 *
 * This module alone owns struct plan: the actions with their request paths, the events,
 * the computed status, the requeue, and what the caller is asked to read next. The other
 * pieces add to a plan through the functions below, never through its fields.
 *
 * Allocation failure is sticky, as with jsonx's builders (docs/errors.md): every function
 * here sets the plan's flag (plan_oom) instead of failing alone, those that return an
 * index return -1 then, and plan_compute checks the flag once and hands out NULL. */
#ifndef RDC_WORKERD_PLAN_BUILD_H
#define RDC_WORKERD_PLAN_BUILD_H

#include "plan.h"

#include <stdint.h>

/* A finalizer, five children, a label and a Redis command per pod (at most 10), a status. */
#define PLAN_MAX_ACTIONS 96
#define PLAN_MAX_EVENTS 64
#define PLAN_MESSAGE_CAP 2048 /* a condition or event message never grows past this */
#define PLAN_VALUE_SHOWN 64   /* bytes of a user's value quoted in a message */
#define PLAN_API_QUOTED 1024  /* bytes of the API's own message quoted in a message */

/* A new, empty plan (no action, no status, no requeue); NULL when out of memory. */
plan_t *plan_new(void);

/* The plan's allocation-failure flag, for jsonx's builders: set, never cleared. */
int *plan_oom(plan_t *p);

/* Add an action (plan.h, ACTIONS): kind on the object group_version/resource ns/name,
 * taking body (NULL only for PLAN_CLEANUP and PLAN_REDIS: a missing body of any other
 * kind counts as out of memory); the method, content type, field manager and request path
 * follow from kind. The strings are copied. Returns the action's index, or -1 when out of
 * memory (the slot is then still the plan's, and freed by plan_destroy). At most
 * PLAN_MAX_ACTIONS in a plan (an assert: plan_room says what is left). */
int plan_add_action(plan_t *p, plan_action_kind_t kind, const char *group_version, const char *resource,
                    const char *ns, const char *name, json_object *body, const char *why);

/* A DeleteOptions body with preconditions: the uid, and the resourceVersion when rv is
 * not NULL (a child recreated meanwhile under the same name is never deleted). A new
 * object; NULL with *oom set when out of memory. */
json_object *plan_delete_options(const char *uid, const char *rv, int *oom);

/* Add a PLAN_REDIS action: argv (1 <= argc <= PLAN_REDIS_MAX_ARGS, copied) to pod at ip.
 * Returns its index, or -1 when out of memory. */
int plan_add_redis_action(plan_t *p, const char *ns, const char *pod, const char *ip, int argc,
                          const char *const *argv, const char *why);

/* Add an event reporting the action at index action (-1: none), its message printf-style;
 * a message longer than PLAN_MESSAGE_CAP stays empty rather than failing. At most
 * PLAN_MAX_EVENTS (an assert). */
void plan_add_event(plan_t *p, const char *type, const char *reason, int action, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* The last event added is about involved (taken; plan_event_t.involved) instead of the
 * RedisCluster. NULL sets the plan's out-of-memory flag. */
void plan_event_about(plan_t *p, json_object *involved);

/* PLAN_REDIS i (an index plan_add_redis_action returned) carries body (taken: the plan
 * puts it), read by the executor: {"master": id, "candidates": [{"pod", "ip"}, ...]} for a
 * CLUSTER FAILOVER FORCE (executor.c's guard). NULL sets *oom (plan_oom) and leaves the action as it is. */
void plan_set_redis_body(plan_t *p, int i, json_object *body);

/* PLAN_REDIS i (an index plan_add_redis_action returned) is not sent after wall_ns
 * (plan.h, COMMAND RECORD: plan_action_t not_after_wall_ns). */
void plan_set_not_after(plan_t *p, int i, int64_t wall_ns);

/* Move the action at from to index to (to <= from): the actions from to on shift one
 * place on, and the events follow their actions. */
void plan_move_action(plan_t *p, size_t from, size_t to);

/* COMMAND RECORD (plan.h): the plan sends Redis commands that change roles, from index at
 * on (the labels that take the primary role come first there), none of them after
 * until_wall_ns; its status write then goes twice (plan_status.h). until_wall_ns 0: it
 * sends none, but closes a window an ended plan left open (one status write, recording
 * the time it is sent, with the resourceVersion precondition). */
void plan_set_command_window(plan_t *p, size_t at, int64_t until_wall_ns);

/* 1 with *at and *until_wall_ns (each may be NULL) when plan_set_command_window was
 * called; else 0. */
int plan_command_window(const plan_t *p, size_t *at, int64_t *until_wall_ns);

/* What an action of kind does, as a verb phrase for messages ("create", "add the
 * finalizer to", ...). */
const char *plan_action_verb(plan_action_kind_t kind);

/* Add a PLAN_DELETE of pod with its uid as precondition (a pod recreated meanwhile under
 * the same name is not deleted). Returns its index, or -1 when out of memory. */
int plan_add_pod_delete(plan_t *p, const char *ns, const char *pod, const char *uid, const char *why);

/* Add a PLAN_ANNOTATE_POD of pod: a merge patch setting its annotations kv[0]=kv[1],
 * kv[2]=kv[3], ... (n pairs, the values copied). Returns its index, or -1 when out of
 * memory. */
int plan_add_pod_annotations(plan_t *p, const char *ns, const char *pod, const char *const *kv, size_t n,
                             const char *why);

/* How many more actions the plan holds. */
size_t plan_room(const plan_t *p);

/* Requeue after ns at the latest: the sooner of ns and a requeue already set. */
void plan_requeue_within(plan_t *p, int64_t ns);

/* The computed status, taken: it becomes plan_status (a status already there is freed). */
void plan_take_status(plan_t *p, json_object *status);

/* STATUS WRITE POLICY: the changed status is held for ns (plan_status_held_ns), and the
 * requeue comes within it. */
void plan_hold_status(plan_t *p, int64_t ns);

/* Decision 1: nothing can be planned, and why (copied; plan_error). */
void plan_set_error(plan_t *p, const char *what);

/* What the caller reads next: plan_wants_diagnosis, plan_storage_class_to_check (NULL:
 * none) and plan_pod_selector ("" or NULL: none). The strings are copied. */
void plan_set_reads(plan_t *p, int wants_diagnosis, const char *storage_class, const char *selector);

/* VOLUME EXPANSION: the caller is to read the claims (plan_wants_claims). */
void plan_set_wants_claims(plan_t *p);

/* RESTORE FROM A REDISBACKUP: the caller is to read the RedisBackup backup (copied;
 * plan_restore_backup_to_read). */
void plan_set_restore_read(plan_t *p, const char *backup);

#endif
