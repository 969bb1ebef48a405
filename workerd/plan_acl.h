/* plan_acl: ACL of plan.h (spec.acl.users): the ACL file the pods load, in the Secret
 * <name>-redis-acl, and the users applied to the running pods with ACL SETUSER and ACL
 * DELUSER, recorded on each pod (workerd/plan*.c only). */
#ifndef RDC_WORKERD_PLAN_ACL_H
#define RDC_WORKERD_PLAN_ACL_H

#include "plan_internal.h"

#define PLAN_ACL_ANNOTATION "cache.example.com/acl"             /* "<users digest>/<restarts>" */
#define PLAN_ACL_USERS_ANNOTATION "cache.example.com/acl-users" /* the users applied, by name */

/* The file: PLAN_ACL_FILE when the observed Secret's digest is not the file's (nothing
 * without users, or while the passwords are not all known: then, before_children, a
 * Degraded finding). Called twice: before the children (before_children 1: a Secret
 * that does not exist yet, which the pods mount), and after plan_acl_pods (0: a change,
 * once the running pods took it: a rule Redis refuses fails their ACL SETUSER first, and
 * no pod restarts with a file it cannot load). Returns 0, or -1 when out of memory. */
int plan_acl_file(const plan_ctx_t *c, int before_children);

/* The pods: the users applied to each pod whose record is not current, as many as the
 * plan has room for (requeue for the rest); nothing while rotating (a password rotation
 * is in this plan) or the passwords are not known. Returns 0, or -1 when out of memory. */
int plan_acl_pods(const plan_ctx_t *c, int rotating);

#endif
