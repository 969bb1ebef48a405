/* plan_tls: TLS of plan.h (spec.tls): the TLSReady condition from what workerd read of
 * the Secret, and certificate rotation on the running pods (workerd/plan*.c only). */
#ifndef RDC_WORKERD_PLAN_TLS_H
#define RDC_WORKERD_PLAN_TLS_H

#include "plan_internal.h"
#include "plan_status.h"

/* The condition plan_status adds, and whether there is one. */
typedef struct plan_tls_found {
    int has;          /* spec.tls is set and something is known (else no TLSReady) */
    plan_cond_t cond; /* TLSReady */
} plan_tls_found_t;

/* TLS for c (nothing without spec.tls): *out's TLSReady (a False one a Degraded finding
 * too). Before the status. */
void plan_tls(const plan_ctx_t *c, plan_tls_found_t *out);

/* TURNING TLS ON OR OFF: once the StatefulSet (every shard's in Cluster mode) runs the
 * template spec.tls says (RENDER_TLS_ANNOTATION) and its controller saw it, every pod
 * of the work item's that speaks the other protocol (its annotation) is deleted at once
 * (uid preconditions; Normal event TLSRestart): replication, a switchover and the
 * cluster bus cannot cross protocols, so no pod is rolled alone. sts is the cluster's
 * StatefulSet as observed (ours). Returns 0, or -1 when out of memory. */
int plan_tls_restart(const plan_ctx_t *c, const json_object *sts);

/* ROTATION: the CONFIG SET that makes each pod that serves another certificate than the
 * Secret's read its files again, with the TLSReloaded event and the requeue. After the
 * status (a pod that refuses fails the reconcile, not the status). Returns 0, or -1 when
 * out of memory. */
int plan_tls_rotate(const plan_ctx_t *c);

#endif
