/* plan_diagnosis: DIAGNOSIS of plan.h: why fewer replicas than spec.size are ready, from
 * the pods and Events the caller read on the plan's request (workerd/plan*.c only; the
 * public plan_pod_to_explain and plan_diagnosis_reads are here too).
 *
 * It owns the cause it finds (plan_diag_t), which the status reads after it. */
#ifndef RDC_WORKERD_PLAN_DIAGNOSIS_H
#define RDC_WORKERD_PLAN_DIAGNOSIS_H

#include "buf.h"
#include "plan_internal.h"

/* The cause found. */
typedef struct {
    const char *reason; /* FailedCreate, a container's waiting reason, FailedScheduling, a
                           pod Event's reason; NULL: none found */
    buf_t message;      /* quoting the API's words */
} plan_diag_t;

/* An empty diagnosis; free it with plan_diag_free. */
void plan_diag_init(plan_diag_t *d);
void plan_diag_free(plan_diag_t *d);

/* Find the first cause, in plan.h's order, of the StatefulSet sts (ours) having fewer
 * ready replicas than spec.size, from c->more's pods and Events, into *out; a cause
 * found is also a Degraded finding (plan_degrade). Nothing without c->more or sts. */
void plan_diagnose(const plan_ctx_t *c, const json_object *sts, plan_diag_t *out);

#endif
