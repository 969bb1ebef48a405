/* plan_auth: the password's record and rotation. See plan_auth.h and plan.h (AUTH). */
#include "plan_auth.h"

#include "jsonx.h"
#include "plan_build.h"
#include "rdc_spec.h"
#include "redisexec.h"
#include "render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The IP of each pod <name>-<i>, i < n, from the work item's pods; 0 when every one has
 * an IP (ips[i] point into pods), -1 when one is missing or has none yet. */
static int member_ips(const plan_ctx_t *c, const json_object *pods, const char *ips[], int n)
{
    for (int i = 0; i < n; i++)
        ips[i] = NULL;
    size_t nl = strlen(c->name);
    for (size_t k = 0; k < jsonx_len(pods); k++) {
        const json_object *p = json_object_array_get_idx(pods, k);
        const char *pn = JSONX_STR_AT(p, "metadata", "name"), *ip = JSONX_STR_AT(p, "status", "podIP");
        if (!pn || strncmp(pn, c->name, nl) || pn[nl] != '-' || !ip || !*ip)
            continue;
        char *end = NULL;
        long o = strtol(pn + nl + 1, &end, 10);
        if (*end || end == pn + nl + 1 || o < 0 || o >= n)
            continue;
        ips[o] = ip;
    }
    for (int i = 0; i < n; i++)
        if (!ips[i])
            return -1;
    return 0;
}

/* The Redis commands of a rotation, pass by pass: every pod of pass 0 accepts the new
 * password (and uses it towards its primary) before any pod of pass 1 drops the old one. */
static const char *const acl_add[] = {"ACL", "SETUSER", "default", "on", REDISEXEC_ACL_ADD_PASSWORD};
static const char *const masterauth[] = {"CONFIG", "SET", "masterauth", REDISEXEC_PASSWORD_TOKEN};
static const char *const acl_drop[] = {"ACL", "SETUSER", "default", REDISEXEC_ACL_DROP_OLD_PASSWORD};
static const struct {
    int pass, argc;
    const char *const *argv;
    const char *why; /* of the pod */
} rotation[] = {
    {0, 5, acl_add, "password rotation: %s accepts the new password too"},
    {0, 4, masterauth, "password rotation: %s authenticates to its primary with the new password"},
    {1, 4, acl_drop, "password rotation: every pod accepts the new password; %s drops the old one"},
};

/* The commands of a rotation on the n pods at ips. Returns 0, or -1 when out of memory. */
static int plan_rotation(const plan_ctx_t *c, const char *const ips[], int n)
{
    char why[600], pod[320];
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            snprintf(pod, sizeof(pod), "%s-%d", c->name, i);
            for (size_t s = 0; s < sizeof(rotation) / sizeof(rotation[0]); s++) {
                if (rotation[s].pass != pass)
                    continue;
                snprintf(why, sizeof(why), rotation[s].why, pod);
                if (plan_add_redis_action(c->plan, c->ns, pod, ips[i], rotation[s].argc, rotation[s].argv, why) < 0)
                    return -1;
            }
        }
    }
    return 0;
}

int plan_auth(const plan_ctx_t *c, int *rotating)
{
    plan_t *p = c->plan;
    plan_auth_t st = c->more ? c->more->auth : PLAN_AUTH_UNKNOWN;
    *rotating = 0;
    if (!c->spec->auth.secret || st == PLAN_AUTH_UNKNOWN || st == PLAN_AUTH_CURRENT)
        return 0;
    char rec[300], why[600];
    snprintf(rec, sizeof(rec), "%s" RENDER_AUTH_RECORD_SUFFIX, c->name);
    if (st == PLAN_AUTH_UNRECORDED) {
        snprintf(why, sizeof(why), "Secret %s/%s: no record of the password Redis runs with yet", c->ns, rec);
        return plan_add_action(p, PLAN_AUTH_RECORD, "v1", "secrets", c->ns, rec,
                               render_auth_record(&c->in, REDISEXEC_PASSWORD_TOKEN), why) < 0
                   ? -1
                   : 0;
    }
    const char *ips[RDC_SPEC_SIZE_MAX];
    int n = c->spec->size < RDC_SPEC_SIZE_MAX ? c->spec->size : RDC_SPEC_SIZE_MAX;
    if (member_ips(c, c->more->members, ips, n)) {
        plan_degrade(c, "PasswordRotationWaiting",
                     "the password in Secret %s/%s changed; it is rotated once every pod has an IP", c->ns,
                     c->spec->auth.secret);
        plan_requeue_within(p, PLAN_REQUEUE_NOT_READY_NS);
        return 0;
    }
    *rotating = 1;
    if (plan_rotation(c, ips, n))
        return -1;
    snprintf(why, sizeof(why), "Secret %s/%s: the password rotated on %d pods", c->ns, rec, n);
    int k = plan_add_action(p, PLAN_AUTH_RECORD, "v1", "secrets", c->ns, rec,
                            render_auth_record(&c->in, REDISEXEC_PASSWORD_TOKEN), why);
    plan_add_event(p, "Normal", "PasswordRotated", k, "Rotated the password of %d pods to the one in Secret %s/%s",
                   n, c->ns, c->spec->auth.secret);
    return *plan_oom(p) ? -1 : 0;
}
