/* plan_status: STATUS of plan.h: the phase and the conditions Ready, Progressing,
 * Degraded (and ReplicationHealthy), computed from what the other pieces found, and the
 * status write with its events under the STATUS WRITE POLICY (workerd/plan*.c only).
 *
 * It owns the conditions; a failed write's report (plan_failed.c) builds its Degraded
 * condition with the same functions. */
#ifndef RDC_WORKERD_PLAN_STATUS_H
#define RDC_WORKERD_PLAN_STATUS_H

#include "plan_build.h"
#include "plan_children.h"
#include "plan_cluster.h"
#include "plan_diagnosis.h"
#include "plan_internal.h"
#include "plan_volume.h"
#include "topology.h"

/* What the status is computed from, besides the context and the StatefulSet. */
typedef struct {
    const char *failed_reason;  /* decision 4: InvalidSpec / InvalidObject, or NULL */
    const char *invalid;        /* its message */
    const plan_kids_t *kids;    /* plan_children's findings, or NULL (none planned) */
    const plan_diag_t *diag;    /* plan_diagnose's cause, or NULL */
    const topo_t *topo;         /* REPLICATION's decisions, or NULL (Standalone) */
    const plan_cluster_t *cluster; /* CLUSTER's findings, or NULL (the other modes) */
    const struct plan_tls_found *tls; /* TLS's condition (plan_tls.h), or NULL */
    const plan_volume_t *volume; /* VOLUME EXPANSION (plan_volume.h), or NULL */
    const char *last_schedule;  /* BACKUP: status.backup.lastScheduleTime; NULL or "": none */
    const struct plan_restore *restore; /* RESTORE FROM A REDISBACKUP (plan_restore.h): the record
                                   to write and why the StatefulSet is held; NULL when it did not
                                   run (an invalid spec: the observed status.restore is kept) */
} plan_findings_t;

/* Compute the status from sts (the observed StatefulSet when ours and the spec valid,
 * else NULL) and the findings, make it the plan's (plan_status), and plan its write with
 * its events unless the observed status already says it, CRITICAL PATH leaves it for
 * the next reconcile, or the STATUS WRITE POLICY holds it. Returns 0, or -1 when out of
 * memory. */
int plan_status_compute(const plan_ctx_t *c, const json_object *sts, const plan_findings_t *f);

/* One condition of the status. */
typedef struct {
    const char *type;
    const char *status; /* "True" / "False" */
    const char *reason;
    char message[PLAN_MESSAGE_CAP];
} plan_cond_t;

/* Set *k: type, status (1 True, 0 False), reason and the message, printf-style (cut to
 * PLAN_MESSAGE_CAP). */
void plan_cond_set(plan_cond_t *k, const char *type, int status, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* k as JSON for status.conditions, with the observed condition of its type in ostatus
 * deciding the times: lastTransitionTime kept unless the status flips, lastUpdateTime
 * kept unless status, reason or message change (now otherwise, from c). A new object, or
 * NULL with *oom set. */
json_object *plan_cond_json(const plan_ctx_t *c, const plan_cond_t *k, const json_object *ostatus, int *oom);

/* Plan the write of the computed status st (taken: it becomes the plan's status) unless
 * the observed one already says it, with the events of an election or a switchover
 * (f->topo) and the Warning event of a True Degraded condition that says something new.
 * A plan that sends Redis commands (plan_command_window) writes it in any case, and a
 * first time before them (plan.h, COMMAND RECORD). why is the action's log line.
 * Returns 0, or -1 when out of memory. */
int plan_status_write(const plan_ctx_t *c, json_object *st, const char *why, const plan_findings_t *f);

#endif
