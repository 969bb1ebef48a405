/* plan_volume: VOLUME EXPANSION (plan.h; docs/knobs.md "Growing the volumes")
 * (workerd/plan*.c only).
 *
 * spec.storage.size may grow. A StatefulSet's claim templates cannot change, so the
 * operator does what users do by hand: patch every claim data-<name>-<i> to the new
 * request, delete the StatefulSet with its pods orphaned, and create it again (plan.c's
 * next reconcile: it is absent) with the new template; the new StatefulSet adopts the
 * running pods (same selector and template: no pod restarts). The status says
 * VolumeResizing until every claim reports the new capacity. */
#ifndef RDC_WORKERD_PLAN_VOLUME_H
#define RDC_WORKERD_PLAN_VOLUME_H

#include "plan_internal.h"

typedef struct {
    int active;        /* a resize is under way: Progressing=True VolumeResizing */
    char message[2300]; /* its message: "1/3 claims at 2Gi; ..." */
} plan_volume_t;

/* 1 when the observed claim templates ovct (an array, or NULL) differ from the desired
 * dvct only by a larger request of the template "data", its class the same: a growth
 * this module carries out (plan_children then keeps the observed templates and reports
 * no ImmutableFieldChanged). Else 0. */
int plan_volume_grows(const json_object *dvct, const json_object *ovct);

/* Plan the resize of c's claims when grow (plan_volume_grows said so for the observed
 * StatefulSet sts, ours) or while the observed status says VolumeResizing: the claims'
 * patches and the StatefulSet's orphaning delete (grow only), or the request to read the
 * claims first (plan_set_wants_claims). Fills *out (cleared first). Returns 0, or -1
 * when out of memory. */
int plan_volume(const plan_ctx_t *c, int grow, const json_object *sts, plan_volume_t *out);

#endif
