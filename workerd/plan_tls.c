/* plan_tls: the TLSReady condition and certificate rotation. See plan_tls.h and plan.h
 * (TLS). */
#include "plan_tls.h"

#include "buf.h"
#include "jsonx.h"
#include "plan_build.h"
#include "plan_observe.h"
#include "redisexec.h"
#include "render.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The pods' count of certificates served: the Secret's (*same) and others' (*other). */
typedef struct {
    int same, other, unknown;
} served_t;

/* The observed TLSReady kept as it is (nothing read: --once without a client). */
static void keep_observed(const plan_ctx_t *c, plan_tls_found_t *out)
{
    const json_object *was = plan_observed_cond(jsonx_get(c->rc, "status"), "TLSReady");
    const char *reason = jsonx_str_set(was, "reason"), *msg = jsonx_str_set(was, "message");
    if (!reason || !jsonx_str_set(was, "status"))
        return;
    out->has = 1;
    plan_cond_set(&out->cond, "TLSReady", jsonx_str_is(was, "status", "True"), reason, "%s", msg ? msg : "");
}

/* A False TLSReady for reason (static), its message printf-style; a Degraded finding too. */
static void broken(const plan_ctx_t *c, plan_tls_found_t *out, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void broken(const plan_ctx_t *c, plan_tls_found_t *out, const char *reason, const char *fmt, ...)
{
    char msg[PLAN_MESSAGE_CAP];
    BUF_FORMAT_VA(msg, sizeof(msg), fmt);
    out->has = 1;
    plan_cond_set(&out->cond, "TLSReady", 0, reason, "%s", msg);
    plan_degrade(c, reason, "%s", msg);
}

/* The reason of a failed check: "TLSCertificate<status name>" (static). */
static const char *check_reason(tlscert_status_t st)
{
    static const char *const reasons[] = {
        [TLSCERT_NO_CERT] = "TLSCertificateNoCertificate", [TLSCERT_NO_KEY] = "TLSCertificateNoKey",
        [TLSCERT_KEY_MISMATCH] = "TLSCertificateKeyMismatch", [TLSCERT_NO_CA] = "TLSCertificateNoCA",
        [TLSCERT_UNTRUSTED] = "TLSCertificateUntrusted",      [TLSCERT_NOT_YET_VALID] = "TLSCertificateNotYetValid",
        [TLSCERT_EXPIRED] = "TLSCertificateExpired",          [TLSCERT_NAME_MISMATCH] = "TLSCertificateNameMismatch",
    };
    return (size_t)st < sizeof(reasons) / sizeof(reasons[0]) && reasons[st] ? reasons[st] : "TLSCertificateInvalid";
}

/* The CONFIG SET that makes Redis read its TLS files again, whatever their paths. */
static const char *const reload[] = {"CONFIG",       "SET", "tls-cert-file",    REDISEXEC_CURRENT_TOKEN,
                                     "tls-key-file", REDISEXEC_CURRENT_TOKEN, "tls-ca-cert-file",
                                     REDISEXEC_CURRENT_TOKEN};

/* The reachable pods of the observation that served a certificate: the Secret's (want)
 * or another. fn(c, pod, ip, cert, arg) for each other one, when fn is set. */
typedef int node_fn(const plan_ctx_t *c, const char *pod, const char *ip, const char *cert, void *arg);
static int each_served(const plan_ctx_t *c, const char *want, served_t *n, node_fn *fn, void *arg)
{
    const json_object *nodes = jsonx_get(c->more ? c->more->redis : NULL, "nodes");
    for (size_t i = 0; i < jsonx_len(nodes); i++) {
        const json_object *x = json_object_array_get_idx(nodes, i);
        const char *pod = jsonx_str_set(x, "pod"), *ip = jsonx_str_set(x, "ip"), *cert = jsonx_str_set(x, "tlsCert");
        const json_object *r = jsonx_get(x, "reachable");
        int reachable = r && json_object_is_type(r, json_type_boolean) && json_object_get_boolean(r);
        if (!pod || !cert || !reachable)
            n->unknown++;
        else if (!strcmp(cert, want))
            n->same++;
        else if (++n->other && fn && ip && fn(c, pod, ip, cert, arg) < 0)
            return -1;
    }
    return 0;
}

typedef struct {
    const char *want;
    char pods[400];
    int asked, last;
} reload_t;

/* ROTATION: pod serves cert, not the Secret's: ask it to read its files again. */
static int reload_one(const plan_ctx_t *c, const char *pod, const char *ip, const char *cert, void *arg)
{
    reload_t *r = arg;
    char why[600];
    if (plan_room(c->plan) < 1)
        return 0;
    snprintf(why, sizeof(why),
             "pod %s/%s serves certificate %.12s, the Secret holds %.12s: read the TLS files again", c->ns, pod,
             cert, r->want);
    if ((r->last = plan_add_redis_action(c->plan, c->ns, pod, ip, 8, reload, why)) < 0)
        return -1;
    size_t at = strlen(r->pods);
    snprintf(r->pods + at, sizeof(r->pods) - at, "%s%s", r->asked++ ? ", " : "", pod);
    return 0;
}

/* 1 when sts's pod template says (RENDER_TLS_ANNOTATION) what want says ("on", or NULL:
 * plain text) and its controller has seen that template (observedGeneration). */
static int template_says(const json_object *sts, const char *want)
{
    const char *has = JSONX_STR_AT(sts, "spec", "template", "metadata", "annotations", RENDER_TLS_ANNOTATION);
    int64_t gen = jsonx_int_or(jsonx_get(sts, "metadata"), "generation", -1);
    int64_t seen = jsonx_int_or(jsonx_get(sts, "status"), "observedGeneration", -2);
    return sts && (want ? has && !strcmp(has, want) : !has) && seen >= gen;
}

/* Every StatefulSet of the cluster (the shards' in Cluster mode) runs the template the
 * spec says. */
static int templates_say(const plan_ctx_t *c, const json_object *sts, const char *want)
{
    if (c->spec->mode != RDC_MODE_CLUSTER)
        return template_says(sts, want);
    const json_object *shards = c->more->shard_statefulsets;
    size_t n = jsonx_len(shards);
    for (size_t i = 0; i < n; i++)
        if (!template_says(json_object_array_get_idx(shards, i), want))
            return 0;
    return n == (size_t)c->spec->cluster.shards;
}

int plan_tls_restart(const plan_ctx_t *c, const json_object *sts)
{
    const char *want = c->spec->tls.secret ? RENDER_TLS_ON : NULL;
    const json_object *pods = c->more ? c->more->members : NULL;
    if (!pods || !templates_say(c, sts, want))
        return 0;
    char why[600], names[400] = "";
    int last = -1, n = 0;
    for (size_t i = 0; i < jsonx_len(pods); i++) {
        const json_object *meta = jsonx_get(json_object_array_get_idx(pods, i), "metadata");
        const char *has = JSONX_STR_AT(meta, "annotations", RENDER_TLS_ANNOTATION), *pod = jsonx_str_set(meta, "name");
        const char *uid = jsonx_str_set(meta, "uid");
        if (!pod || !uid || jsonx_get(meta, "deletionTimestamp") || (want ? has && !strcmp(has, want) : !has) ||
            plan_room(c->plan) < 2)
            continue;
        snprintf(why, sizeof(why), "pod %s/%s speaks %s on 6379, spec.tls says %s: every pod restarts at once", c->ns,
                 pod, has ? "TLS" : "plain text", want ? "TLS" : "plain text");
        if ((last = plan_add_pod_delete(c->plan, c->ns, pod, uid, why)) < 0)
            return -1;
        size_t at = strlen(names);
        snprintf(names + at, sizeof(names) - at, "%s%s", n++ ? ", " : "", pod);
    }
    if (last >= 0)
        plan_add_event(c->plan, "Normal", "TLSRestart", last,
                       "spec.tls turns %s: restarting %s at once (a replica cannot follow a primary that speaks the "
                       "other protocol)",
                       want ? "TLS on" : "TLS off", names);
    return *plan_oom(c->plan) ? -1 : 0;
}

/* The Secret's certificate, when the pods may serve it (it passes the checks), else NULL. */
static const tlscert_check_t *servable(const plan_ctx_t *c)
{
    const plan_tls_t *t = c->more ? c->more->tls : NULL;
    if (!c->spec->tls.secret || !t || !t->read || !t->found || t->error[0])
        return NULL;
    return t->check.status == TLSCERT_OK || t->check.status == TLSCERT_EXPIRING ? &t->check : NULL;
}

int plan_tls_rotate(const plan_ctx_t *c)
{
    const tlscert_check_t *k = servable(c);
    if (!k || !c->more->redis)
        return 0;
    served_t n = {0, 0, 0};
    reload_t r = {k->sha256, "", 0, -1};
    if (each_served(c, k->sha256, &n, reload_one, &r))
        return -1;
    if (r.last >= 0) {
        plan_add_event(c->plan, "Normal", "TLSReloaded", r.last,
                       "Asked %s to read the certificate of Secret %s/%s again (serial %s): no restart", r.pods,
                       c->ns, c->spec->tls.secret, k->serial);
        plan_requeue_within(c->plan, PLAN_REQUEUE_NOT_READY_NS);
    }
    return *plan_oom(c->plan) ? -1 : 0;
}

void plan_tls(const plan_ctx_t *c, plan_tls_found_t *out)
{
    memset(out, 0, sizeof(*out));
    const plan_tls_t *t = c->more ? c->more->tls : NULL;
    const char *secret = c->spec->tls.secret;
    if (!secret)
        return;
    if (!t || !t->read) {
        keep_observed(c, out);
        return;
    }
    char ref[600];
    snprintf(ref, sizeof(ref), "%s/%s", c->ns, secret);
    if (t->error[0]) {
        broken(c, out, "TLSSecretUnreadable", "cannot read Secret %s (spec.tls.secretRef): %s", ref, t->error);
        return;
    }
    if (!t->found) {
        broken(c, out, "TLSSecretNotFound", "Secret %s (spec.tls.secretRef) not found", ref);
        return;
    }
    const tlscert_check_t *k = &t->check;
    if (k->status != TLSCERT_OK && k->status != TLSCERT_EXPIRING) {
        broken(c, out, check_reason(k->status), "Secret %s: %s", ref, k->detail);
        return;
    }
    served_t n = {0, 0, 0};
    (void)each_served(c, k->sha256, &n, NULL, NULL);
    char until[32];
    tlscert_time(k->not_after_s, until, sizeof(until));
    out->has = 1;
    if (k->status == TLSCERT_EXPIRING)
        plan_cond_set(&out->cond, "TLSReady", 1, "TLSCertificateExpiring",
                      "Secret %s: the certificate (serial %s) %s", ref, k->serial, k->detail);
    else if (n.other)
        plan_cond_set(&out->cond, "TLSReady", 1, "TLSCertificateRotating",
                      "%d of %d pods serve the certificate of Secret %s (serial %s, valid until %s); the others are "
                      "asked to read their files again",
                      n.same, n.same + n.other, ref, k->serial, until);
    else
        plan_cond_set(&out->cond, "TLSReady", 1, "TLSCertificateValid",
                      "Secret %s: serial %s, valid until %s", ref, k->serial, until);
}
