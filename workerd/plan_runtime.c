/* plan_runtime: CONFIG SET of the run-time directives. See plan_runtime.h and plan.h
 * (RUNTIME CONFIG). */
#include "plan_runtime.h"

#include "plan_build.h"
#include "runtimecfg.h"

#include <stdio.h>
#include <stdlib.h>

/* The annotation patch that records x's runtime config on its pod. Returns the action's
 * index, or -1 when out of memory. */
static int plan_annotate(const plan_ctx_t *c, const runtimecfg_pod_t *x)
{
    const char *const kv[] = {RUNTIMECFG_ANNOTATION, x->record};
    char why[600];
    snprintf(why, sizeof(why), "pod %s/%s: record the runtime config applied", c->ns, x->pod);
    return plan_add_pod_annotations(c->plan, c->ns, x->pod, kv, 1, why);
}

int plan_runtime_config(const plan_ctx_t *c)
{
    plan_t *p = c->plan;
    const plan_observed_t *m = c->more;
    if (!m)
        return 0;
    runtimecfg_t *rt = calloc(1, sizeof(*rt));
    if (!rt)
        return -1;
    if (runtimecfg_compute(c->spec, c->name, c->spec->size, m->members, m->redis, rt)) {
        free(rt);
        return -1;
    }
    /* Room for the command and the annotation of each pod: a plan never overflows; what
     * does not fit now is the next reconcile's (the requeue). */
    size_t room = plan_room(p) / 2, n = rt->n_pods < room ? rt->n_pods : room;
    if (n < rt->n_pods && !plan_requeue_after_ns(p))
        plan_requeue_within(p, PLAN_REQUEUE_NOT_READY_NS);
    char why[600];
    buf_t pods;
    buf_init(&pods, PLAN_MESSAGE_CAP / 2);
    int last = -1;
    for (size_t i = 0; i < n && !*plan_oom(p); i++) {
        const runtimecfg_pod_t *x = &rt->pods[i];
        snprintf(why, sizeof(why), "pod %s/%s: runtime config %.16s is not applied (annotation %s is \"%.80s\")",
                 c->ns, x->pod, rt->hash, RUNTIMECFG_ANNOTATION, x->have);
        if (plan_add_redis_action(p, c->ns, x->pod, x->ip, rt->argc, rt->argv, why) < 0 ||
            (last = plan_annotate(c, x)) < 0)
            break;
        buf_printf(&pods, "%s%s", i ? ", " : "", x->pod);
    }
    if (last >= 0 && !*plan_oom(p))
        plan_add_event(p, "Normal", "ConfigApplied", last,
                       "Applied %d run-time directive(s) (spec.persistence, spec.config.extra) with CONFIG SET, "
                       "without a restart, to %s",
                       (rt->argc - 2) / 2, buf_str(&pods));
    buf_free(&pods);
    free(rt);
    return *plan_oom(p) ? -1 : 0;
}
