/* plan_runtime: RUNTIME CONFIG of plan.h: the spec.config.extra directives Redis changes
 * at run time, applied to the running pods with CONFIG SET and recorded on each pod
 * (workerd/plan*.c only). The choice of pods and commands is runtimecfg.h's. */
#ifndef RDC_WORKERD_PLAN_RUNTIME_H
#define RDC_WORKERD_PLAN_RUNTIME_H

#include "plan_internal.h"

/* Plan CONFIG SET and the annotation on each pod runtimecfg_compute names, as many as
 * the plan has room for (the rest after the requeue), with one ConfigApplied event. Call
 * it only while the StatefulSet is ours; nothing without c->more. Returns 0, or -1 when
 * out of memory. */
int plan_runtime_config(const plan_ctx_t *c);

#endif
