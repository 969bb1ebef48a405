/* plan_auth: AUTH of plan.h (spec.auth.secretRef): the record of the password Redis runs
 * with, and its rotation on every pod (workerd/plan*.c only). */
#ifndef RDC_WORKERD_PLAN_AUTH_H
#define RDC_WORKERD_PLAN_AUTH_H

#include "plan_internal.h"

/* Plan the record or the rotation that c->more->auth asks for (nothing without
 * spec.auth, or when the record is current or unknown); a pod without an IP yet holds
 * a rotation back (PasswordRotationWaiting, requeue). *rotating says whether this plan
 * rotates: no topology command goes with it (the observer cannot authenticate
 * meanwhile). Returns 0, or -1 when out of memory. */
int plan_auth(const plan_ctx_t *c, int *rotating);

#endif
