/* hothint: the probe cadence a finished reconcile asks of observerd. See hothint.h. */
#include "hothint.h"

#include <string.h>

hothint_t hothint_decide(rdc_mode_t mode, int acted, int64_t requeue_ns)
{
    if (mode != RDC_MODE_REPLICATION)
        return HOTHINT_NONE;
    if (acted || (requeue_ns > 0 && requeue_ns <= PLAN_REQUEUE_SWITCHOVER_NS))
        return HOTHINT_HOT;
    return HOTHINT_COLD;
}

hothint_t hothint_of(rdc_mode_t mode, const plan_t *plan)
{
    if (!plan)
        return HOTHINT_NONE;
    int acted = 0;
    for (size_t i = 0; i < plan_action_count(plan) && !acted; i++) {
        const plan_action_t *a = plan_action(plan, i);
        acted = a->kind == PLAN_REDIS || (a->kind == PLAN_DELETE && a->resource && !strcmp(a->resource, "pods"));
    }
    return hothint_decide(mode, acted, plan_requeue_after_ns(plan));
}
