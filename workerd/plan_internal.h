/* plan_internal: the context of one live reconcile's plan, which every piece reads
 * (workerd/plan*.c only; plan.h is the public contract).
 *
 * The context holds the reconcile's inputs: the RedisCluster, its metadata, the spec with
 * its defaults (decision 5), what the caller read on request, and the clock. plan.c sets
 * it up once (plan_ctx_init, then the spec) and the pieces only read it, with one
 * exception: the Degraded findings, which any piece may add to (plan_degrade) and
 * plan_status turns into the Degraded condition.
 *
 * What a piece decides is its own and lives behind its own header: the children's
 * outcome (plan_children.h, plan_kids_t), the diagnosis (plan_diagnosis.h, plan_diag_t),
 * the topology of Replication (plan_replication.h, topology.h's topo_t); plan.c hands
 * each to the pieces that come after it, in the order of plan.h's DECISIONS. */
#ifndef RDC_WORKERD_PLAN_INTERNAL_H
#define RDC_WORKERD_PLAN_INTERNAL_H

#include "buf.h"
#include "cluster_topo.h"
#include "plan.h"
#include "render.h"

#include <json-c/json.h>
#include <stdint.h>

/* The Degraded condition's findings so far: the first reason reported, and every message
 * joined by "; ". */
typedef struct {
    const char *reason; /* NULL: nothing degraded (Degraded=False AsExpected) */
    buf_t message;
} plan_degraded_t;

typedef struct {
    plan_t *plan;                /* what the pieces add to (plan_build.h) */
    const json_object *rc;       /* the RedisCluster, an object */
    const char *name, *ns, *uid; /* its metadata (uid NULL: decision 4, InvalidObject) */
    int64_t generation;          /* metadata.generation, -1 when absent */
    int64_t now;                 /* wall-clock time for new lastTransitionTimes */
    const rdc_spec_t *spec;      /* the typed spec, its DEFAULTS applied (rdc_spec.h); while the
                                    spec is invalid, the defaults alone (size 0) */
    render_input_t in;           /* name, namespace, uid and spec, for render.h */
    const plan_observed_t *more; /* what the caller read on the plan's request, or NULL */
    plan_degraded_t *degraded;   /* the Degraded findings (plan_degrade) */
    const ctopo_result_t *cluster; /* CLUSTER: the decisions (plan_cluster_decide), before the
                                      children: the layout they keep; NULL in other modes */
    const ctopo_input_t *cluster_in; /* CLUSTER: what they were decided from (BACKUP's sources) */
    const struct plan_restore *restore; /* RESTORE FROM A REDISBACKUP (plan_restore.h), before the
                                           children: whether they hold the StatefulSet; NULL: none */
} plan_ctx_t;

/* A context for planning p about rc (an object) at now, with degraded (emptied here) as
 * its findings: name, namespace, uid and generation from rc's metadata, in naming them,
 * spec the defaults alone; the spec and more are left for the caller. Free degraded
 * with plan_degraded_free. */
/* status.lastRedisCommandTime (COMMAND RECORD, plan.h) in wall-clock ns, 0 when none. */
int64_t plan_last_command_ns(const plan_ctx_t *c);

void plan_ctx_init(plan_ctx_t *c, plan_t *p, const json_object *rc, int64_t now, plan_degraded_t *degraded);

/* Free the findings' message. */
void plan_degraded_free(plan_degraded_t *d);

/* Add a finding to the Degraded condition: reason when it is the first, the message
 * (printf-style) after the others. */
void plan_degrade(const plan_ctx_t *c, const char *reason, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* CRITICAL PATH (plan.h): 1 when the caller says the client-side budget is short. */
int plan_critical_path_first(const plan_ctx_t *c);

#endif
