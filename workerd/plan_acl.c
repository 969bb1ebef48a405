/* plan_acl: the ACL file and the users on the running pods. See plan_acl.h and plan.h
 * (ACL). */
#include "plan_acl.h"

#include "jsonx.h"
#include "plan_build.h"
#include "render.h"
#include "runtimecfg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIGEST_SHOWN 16 /* hex digits of a digest in a record */

/* The users' passwords are known: the file and the records can be made. */
static const plan_acl_t *known(const plan_ctx_t *c)
{
    const plan_acl_t *a = c->more ? c->more->acl : NULL;
    return c->spec->acl.n_users && a && a->known ? a : NULL;
}

/* The file's text into text, its digest (the Secret's) into file_hex and the users'
 * (the pods' records: not the default user's, which a password rotation changes) into
 * users_hex. Returns 0, or -1 when out of memory. */
static int digests(const plan_ctx_t *c, const plan_acl_t *a, buf_t *text, char file_hex[65], char users_hex[65])
{
    buf_t b;
    buf_init(&b, 0);
    int rc = render_acl_file(c->spec, text) ||
             buf_printf(&b, "%s\n%s\n%s", buf_str(text), a->users_fp, a->default_fp) ||
             render_sha256_hex(b.data, b.len, file_hex);
    const char *users = rc ? NULL : strchr(buf_str(text), '\n'); /* past the default user's line */
    buf_reset(&b);
    rc = rc || buf_printf(&b, "%s\n%s", users ? users + 1 : "", a->users_fp) ||
         render_sha256_hex(b.data, b.len, users_hex);
    buf_free(&b);
    return rc ? -1 : 0;
}

/* The spec's users by name, comma-separated, into out. */
static void user_list(const rdc_spec_t *spec, char *out, size_t len)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; i < spec->acl.n_users && at < len; i++) {
        int n = snprintf(out + at, len - at, "%s%s", i ? "," : "", spec->acl.users[i].name);
        at += n > 0 ? (size_t)n : 0;
    }
}

int plan_acl_file(const plan_ctx_t *c, int before_children)
{
    const plan_acl_t *a = c->more ? c->more->acl : NULL;
    if (!c->spec->acl.n_users || !a)
        return 0;
    if (!a->known) {
        if (before_children)
            plan_degrade(c, "ACLPasswordMissing", "the ACL users cannot be written: %s", a->missing);
        return 0;
    }
    /* A new file goes before the pods that mount it; a change after the running pods
     * took the users (a rule Redis refuses then stops it before any pod could restart
     * with a file it cannot load). */
    if (before_children != !a->secret)
        return 0;
    buf_t text;
    buf_init(&text, 0);
    char file_hex[65], users_hex[65], users[RDC_SPEC_ACL_USERS_MAX * (RDC_SPEC_ACL_NAME_MAX + 1) + 1], why[600];
    int rc = digests(c, a, &text, file_hex, users_hex);
    const char *have = JSONX_STR_AT(a->secret, "metadata", "annotations", RENDER_ACL_DIGEST_ANNOTATION);
    if (!rc && !(have && !strcmp(have, file_hex))) {
        user_list(c->spec, users, sizeof(users));
        snprintf(why, sizeof(why), "Secret %s/%s" RENDER_ACL_SUFFIX ": the ACL file (%zu users) is %s", c->ns, c->name,
                 c->spec->acl.n_users, a->secret ? "not the spec's" : "missing");
        char name[300];
        snprintf(name, sizeof(name), "%s" RENDER_ACL_SUFFIX, c->name);
        int k = plan_add_action(c->plan, PLAN_ACL_FILE, "v1", "secrets", c->ns, name,
                                render_acl_secret(&c->in, buf_str(&text), file_hex, users), why);
        plan_add_event(c->plan, "Normal", "ACLFileWritten", k, "Wrote the ACL file of users %s to Secret %s/%s", users,
                       c->ns, name);
    }
    buf_free(&text);
    return rc || *plan_oom(c->plan) ? -1 : 0;
}

/* 1 when name is in the comma-separated list. */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
            return 1;
    return 0;
}

/* The users of list (comma-separated, may be NULL) the spec no longer has, appended to
 * argv from *argc (at most max), copied into store. */
static void stale_users(const rdc_spec_t *spec, const char *list, const char **argv, int *argc, int max,
                        char store[][RDC_SPEC_ACL_NAME_MAX + 1])
{
    for (const char *p = list; p && *p && *argc < max; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        size_t n = strcspn(p, ",");
        if (!n || n > RDC_SPEC_ACL_NAME_MAX)
            continue;
        char *name = store[*argc];
        snprintf(name, RDC_SPEC_ACL_NAME_MAX + 1, "%.*s", (int)n, p);
        int keep = !strcmp(name, "default");
        for (size_t i = 0; i < spec->acl.n_users && !keep; i++)
            keep = !strcmp(spec->acl.users[i].name, name);
        for (int k = 2; k < *argc && !keep; k++)
            keep = !strcmp(argv[k], name);
        if (!keep)
            argv[(*argc)++] = name;
    }
}

/* ACL SETUSER of user u, as the file has it (tokens for the hash). Returns the action's
 * index, or -1 when out of memory. */
static int setuser(const plan_ctx_t *c, const runtimecfg_pod_t *x, const rdc_acl_user_t *u)
{
    char rules[RDC_SPEC_ACL_RULES_MAX + 1], tok[128], why[600];
    const char *argv[6 + RDC_SPEC_ACL_TOKENS_MAX] = {"ACL", "SETUSER", u->name, "reset", "on", tok};
    rdc_acl_token_t t[RDC_SPEC_ACL_TOKENS_MAX];
    const char *bad = NULL;
    snprintf(rules, sizeof(rules), "%s", u->rules);
    int n = rdc_spec_acl_rules_split(rules, t, RDC_SPEC_ACL_TOKENS_MAX, &bad);
    snprintf(tok, sizeof(tok), "#" RENDER_ACL_HASH_TOKEN_PREFIX "%s}", u->name);
    for (int k = 0; k < n; k++) {
        ((char *)t[k].s)[t[k].len] = '\0'; /* the blank after it (a copy of the rules) */
        argv[6 + k] = t[k].s;
    }
    snprintf(why, sizeof(why), "pod %s/%s: ACL user %s as spec.acl has it", c->ns, x->pod, u->name);
    return plan_add_redis_action(c->plan, c->ns, x->pod, x->ip, 6 + (n > 0 ? n : 0), argv, why);
}

/* The record on pod x: both annotations. Returns the action's index, or -1. */
static int record(const plan_ctx_t *c, const runtimecfg_pod_t *x, const char *users)
{
    const char *const kv[] = {PLAN_ACL_ANNOTATION, x->record, PLAN_ACL_USERS_ANNOTATION, users};
    char why[600];
    snprintf(why, sizeof(why), "pod %s/%s: record the ACL users applied", c->ns, x->pod);
    return plan_add_pod_annotations(c->plan, c->ns, x->pod, kv, 2, why);
}

/* The users on pod x: each SETUSER, DELUSER of the stale ones, the record. Returns the
 * record's index, or -1 when out of memory. */
static int apply_pod(const plan_ctx_t *c, const runtimecfg_pod_t *x, const char *users, char *removed, size_t rlen)
{
    char store[2 + 2 * RDC_SPEC_ACL_USERS_MAX][RDC_SPEC_ACL_NAME_MAX + 1], why[600];
    const char *del[2 + 2 * RDC_SPEC_ACL_USERS_MAX] = {"ACL", "DELUSER"};
    int argc = 2;
    for (size_t i = 0; i < c->spec->acl.n_users; i++)
        if (setuser(c, x, &c->spec->acl.users[i]) < 0)
            return -1;
    stale_users(c->spec, JSONX_STR_AT(x->meta, "annotations", PLAN_ACL_USERS_ANNOTATION), del, &argc,
                (int)(sizeof(del) / sizeof(del[0])), store);
    stale_users(c->spec, JSONX_STR_AT(c->more->acl->secret, "metadata", "annotations", RENDER_ACL_USERS_ANNOTATION),
                del, &argc, (int)(sizeof(del) / sizeof(del[0])), store);
    for (int k = 2; k < argc; k++) {
        size_t at = strlen(removed);
        if (!listed(removed, del[k]))
            snprintf(removed + at, rlen - at, "%s%s", at ? "," : "", del[k]);
    }
    snprintf(why, sizeof(why), "pod %s/%s: ACL users no longer in spec.acl", c->ns, x->pod);
    if (argc > 2 && plan_add_redis_action(c->plan, c->ns, x->pod, x->ip, argc, del, why) < 0)
        return -1;
    return record(c, x, users);
}

int plan_acl_pods(const plan_ctx_t *c, int rotating)
{
    const plan_acl_t *a = known(c);
    if (!a || rotating || !c->more->members)
        return 0;
    buf_t text;
    buf_init(&text, 0);
    char file_hex[65], users_hex[65], users[RDC_SPEC_ACL_USERS_MAX * (RDC_SPEC_ACL_NAME_MAX + 1) + 1];
    char removed[RDC_SPEC_ACL_USERS_MAX * 2 * (RDC_SPEC_ACL_NAME_MAX + 1) + 1] = "", applied[400] = "";
    runtimecfg_pod_t *pods = calloc(RDC_SPEC_CLUSTER_SIZE_MAX, sizeof(*pods));
    int rc = !pods || digests(c, a, &text, file_hex, users_hex), last = -1;
    users_hex[DIGEST_SHOWN] = '\0';
    size_t n = rc ? 0
                  : runtimecfg_pods(c->spec, c->name, c->spec->size, c->more->members, c->more->redis,
                                    PLAN_ACL_ANNOTATION, users_hex, 0, pods, RDC_SPEC_CLUSTER_SIZE_MAX);
    size_t per = c->spec->acl.n_users + 2, fit = plan_room(c->plan) / per;
    if (n > fit)
        plan_requeue_within(c->plan, PLAN_REQUEUE_NOT_READY_NS);
    user_list(c->spec, users, sizeof(users));
    for (size_t i = 0; i < n && i < fit && !rc; i++) {
        rc = (last = apply_pod(c, &pods[i], users, removed, sizeof(removed))) < 0;
        size_t at = strlen(applied);
        snprintf(applied + at, sizeof(applied) - at, "%s%s", i ? ", " : "", pods[i].pod);
    }
    if (last >= 0)
        plan_add_event(c->plan, "Normal", "ACLApplied", last, "Applied ACL users %s to %s without a restart%s%s",
                       users, applied, *removed ? "; removed " : "", removed);
    free(pods);
    buf_free(&text);
    return rc || *plan_oom(c->plan) ? -1 : 0;
}
