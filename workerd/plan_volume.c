/* plan_volume: VOLUME EXPANSION. See plan_volume.h and plan.h. */
#include "plan_volume.h"

#include "jsonx.h"
#include "plan_build.h"
#include "plan_observe.h"
#include "render.h"

#include <stdio.h>
#include <string.h>

#define CLAIM_TEMPLATE "data" /* render.c's data_claim_template */

/* The element of a named "data" in the array a, or NULL. */
static const json_object *data_template(const json_object *a)
{
    return jsonx_find_named(a, CLAIM_TEMPLATE);
}

/* The quantity at spec.resources.requests.storage (request) or status.capacity.storage
 * of a claim or claim template, in nano units; -1 when absent or not a quantity. */
static __int128 storage_of(const json_object *claim, int capacity)
{
    const char *q = capacity ? JSONX_STR_AT(claim, "status", "capacity", "storage")
                             : JSONX_STR_AT(claim, "spec", "resources", "requests", "storage");
    __int128 v = -1;
    return q && !render_quantity_nano(q, &v) ? v : -1;
}

int plan_volume_grows(const json_object *dvct, const json_object *ovct)
{
    const json_object *d = data_template(dvct), *o = data_template(ovct);
    if (!d || !o || jsonx_len(dvct) != jsonx_len(ovct))
        return 0;
    const char *dc = JSONX_STR_AT(d, "spec", "storageClassName"), *oc = JSONX_STR_AT(o, "spec", "storageClassName");
    if (!dc != !oc || (dc && strcmp(dc, oc)))
        return 0;
    __int128 want = storage_of(d, 0), have = storage_of(o, 0);
    return want > 0 && have > 0 && want > have;
}

/* The claims of the list answer or array given (NULL: not read). */
static const json_object *claim_items(const json_object *claims)
{
    return json_object_is_type(claims, json_type_array) ? claims : jsonx_get(claims, "items");
}

/* PLAN_RESIZE_CLAIM of claim name to spec.storage.size. Returns the action's index. */
static int resize_claim(const plan_ctx_t *c, const char *name, const char *have)
{
    int *oom = plan_oom(c->plan);
    json_object *body = jsonx_new_obj(oom), *spec = jsonx_new_obj(oom), *res = jsonx_new_obj(oom),
                *req = jsonx_new_obj(oom);
    jsonx_put(req, "storage", jsonx_new_str(c->spec->storage.size, oom), oom);
    jsonx_put(res, "requests", req, oom);
    jsonx_put(spec, "resources", res, oom);
    jsonx_put(body, "spec", spec, oom);
    char why[600];
    snprintf(why, sizeof(why), "PersistentVolumeClaim %s/%s: spec.resources.requests.storage: want %s, have %s",
             c->ns, name, c->spec->storage.size, have ? have : "(none)");
    if (*oom) {
        json_object_put(body);
        return -1;
    }
    return plan_add_action(c->plan, PLAN_RESIZE_CLAIM, "v1", "persistentvolumeclaims", c->ns, name, body, why);
}

/* PLAN_DELETE of the StatefulSet with its pods orphaned, preconditions its uid and
 * resourceVersion (a StatefulSet changed since it was observed is planned again). */
static int orphan_statefulset(const plan_ctx_t *c, const json_object *sts, const char *patched)
{
    int *oom = plan_oom(c->plan);
    const json_object *meta = jsonx_get(sts, "metadata");
    json_object *body = jsonx_new_obj(oom), *pre = jsonx_new_obj(oom);
    jsonx_put(body, "apiVersion", jsonx_new_str("v1", oom), oom);
    jsonx_put(body, "kind", jsonx_new_str("DeleteOptions", oom), oom);
    jsonx_put(body, "propagationPolicy", jsonx_new_str("Orphan", oom), oom);
    const char *uid = jsonx_str_set(meta, "uid"), *rv = jsonx_str_set(meta, "resourceVersion");
    if (uid)
        jsonx_put(pre, "uid", jsonx_new_str(uid, oom), oom);
    if (rv)
        jsonx_put(pre, "resourceVersion", jsonx_new_str(rv, oom), oom);
    jsonx_put(body, "preconditions", pre, oom);
    if (*oom) {
        json_object_put(body);
        return -1;
    }
    char why[700];
    snprintf(why, sizeof(why),
             "StatefulSet %s/%s: volumeClaimTemplates cannot change: deleted with its pods orphaned, to be created "
             "again with storage %s",
             c->ns, c->name, c->spec->storage.size);
    int i = plan_add_action(c->plan, PLAN_DELETE, "apps/v1", "statefulsets", c->ns, c->name, body, why);
    plan_add_event(c->plan, "Normal", "ResizingVolumes", i,
                   "Resizing the volumes of %s/%s to %s: claims patched (%s); StatefulSet deleted with its pods "
                   "orphaned, to be created again with the new claim template (no pod restarts)",
                   c->ns, c->name, c->spec->storage.size, *patched ? patched : "none needed");
    return *oom ? -1 : 0;
}

/* Patch the claims of 0..n-1 that ask less than want (grow), and count those whose
 * capacity is below it into *short_n, their names into waiting. Returns 0, or -1 when
 * out of memory. */
static int claims_step(const plan_ctx_t *c, const json_object *items, int n, int grow, __int128 want,
                       int *short_n, char *patched, size_t pcap, char *waiting, size_t wcap)
{
    for (int i = 0; i < n; i++) {
        char name[254];
        snprintf(name, sizeof(name), CLAIM_TEMPLATE "-%s-%d", c->name, i);
        const json_object *claim = jsonx_find_named(items, name);
        if (!claim)
            continue; /* its pod is not created yet: the new template gives it the size */
        if (grow && storage_of(claim, 0) < want) {
            if (resize_claim(c, name, JSONX_STR_AT(claim, "spec", "resources", "requests", "storage")) < 0)
                return -1;
            size_t l = strlen(patched);
            snprintf(patched + l, pcap - l, "%s%s", l ? ", " : "", name);
        }
        if (storage_of(claim, 1) < want) {
            size_t l = strlen(waiting);
            snprintf(waiting + l, wcap - l, "%s%s", l ? ", " : "", name);
            (*short_n)++;
        }
    }
    return *plan_oom(c->plan) ? -1 : 0;
}

int plan_volume(const plan_ctx_t *c, int grow, const json_object *sts, plan_volume_t *out)
{
    memset(out, 0, sizeof(*out));
    const json_object *prog = plan_observed_cond(jsonx_get(c->rc, "status"), "Progressing");
    int was = jsonx_str_is(prog, "status", "True") && jsonx_str_is(prog, "reason", "VolumeResizing");
    __int128 want = -1;
    if ((!grow && !was) || render_quantity_nano(c->spec->storage.size, &want))
        return 0;
    if (!sts) { /* orphaned: plan_children creates it again in this plan */
        out->active = 1;
        plan_requeue_within(c->plan, PLAN_REQUEUE_NOT_READY_NS);
        snprintf(out->message, sizeof(out->message),
                 "creating StatefulSet %s/%s again with the claim template at %s (its pods keep running)", c->ns,
                 c->name, c->spec->storage.size);
        return 0;
    }
    const json_object *items = c->more ? claim_items(c->more->claims) : NULL;
    int n = (int)jsonx_int_or(jsonx_get(sts, "spec"), "replicas", 0);
    out->active = 1;
    plan_requeue_within(c->plan, PLAN_REQUEUE_NOT_READY_NS);
    if (!items) {
        plan_set_wants_claims(c->plan);
        snprintf(out->message, sizeof(out->message), "resizing the claims to %s", c->spec->storage.size);
        return 0;
    }
    int short_n = 0;
    char patched[1024] = "", waiting[1024] = "";
    if (claims_step(c, items, n, grow, want, &short_n, patched, sizeof(patched), waiting, sizeof(waiting)))
        return -1;
    /* A StatefulSet being deleted (the orphaning) is waited for: the next plan creates it. */
    if (grow && !JSONX_AT(sts, "metadata", "deletionTimestamp") && orphan_statefulset(c, sts, patched))
        return -1;
    out->active = grow || short_n > 0;
    snprintf(out->message, sizeof(out->message), "%d/%d claims at %s%s%s%s", n - short_n, n, c->spec->storage.size,
             *waiting ? "; waiting for the capacity of " : "", waiting,
             grow ? "; the StatefulSet is recreated with the new claim template" : "");
    return 0;
}
