/* plan_children: the children of a RedisCluster, planned. See plan_children.h and
 * plan.h (decision 5, OWNERSHIP, REMOVED KNOBS, IMMUTABLE STATEFULSET FIELDS). */
#include "plan_children.h"

#include "jsonx.h"
#include "plan_build.h"
#include "plan_compare.h"
#include "plan_restore.h"
#include "plan_volume.h"
#include "render.h"

#include <stdio.h>
#include <string.h>

/* ---- Ownership ---------------------------------------------------------------------- */

/* Who controls an observed child. */
typedef enum {
    CTL_OURS,  /* a controller reference with our uid */
    CTL_NONE,  /* no controller reference at all */
    CTL_OTHER  /* another object's controller reference */
} controller_t;

/* Who controls obs; for CTL_OTHER, *kind and *name (either may stay NULL) say what. */
static controller_t controller_of(const plan_ctx_t *c, const json_object *obs, const char **kind, const char **name)
{
    const json_object *refs = JSONX_AT(obs, "metadata", "ownerReferences");
    for (size_t i = 0; i < jsonx_len(refs); i++) {
        const json_object *r = json_object_array_get_idx(refs, i);
        if (!jsonx_true(r, "controller"))
            continue;
        /* The API server allows one controller reference per object: the first decides. */
        const char *uid = jsonx_str_set(r, "uid");
        if (uid && !strcmp(uid, c->uid))
            return CTL_OURS;
        *kind = jsonx_str_set(r, "kind");
        *name = jsonx_str_set(r, "name");
        return CTL_OTHER;
    }
    return CTL_NONE;
}

/* Ownership (see plan.h): 1 when obs exists and is not ours; then the Degraded message
 * says whose it is. An object the operator did not create is never written. */
static int owner_conflict(const plan_ctx_t *c, plan_kids_t *k, const char *kind, const json_object *obs)
{
    const char *other_kind = NULL, *other_name = NULL;
    if (!obs)
        return 0;
    controller_t who = controller_of(c, obs, &other_kind, &other_name);
    if (who == CTL_OURS)
        return 0;
    k->owner_conflict = 1;
    if (who == CTL_OTHER)
        plan_degrade(c, "OwnerConflict",
                     "%s %s/%s is controlled by another %s%s%.*s%s; the operator leaves it alone (delete or rename "
                     "it, or rename the RedisCluster)",
                     kind, c->ns, c->name, other_kind ? other_kind : "object", other_name ? " \"" : "",
                     PLAN_VALUE_SHOWN, other_name ? other_name : "", other_name ? "\"" : "");
    else
        plan_degrade(c, "OwnerConflict",
                     "%s %s/%s exists and was not created by this RedisCluster (it has no controller owner "
                     "reference); the operator leaves it alone (delete or rename it to let the operator create its "
                     "own)",
                     kind, c->ns, c->name);
    return 1;
}

/* ---- Spec hash (REMOVED KNOBS in plan.h) -------------------------------------------- */

/* The part of a desired child the spec hash covers, serialised into b: a StatefulSet's
 * pod template, a Service's labels, annotations and spec. 1 when the resource carries a
 * hash, 0 when not (ConfigMap, PodDisruptionBudget), -1 when out of memory. */
static int spec_hash_of(const char *resource, const json_object *desired, char hex[65])
{
    buf_t b;
    buf_init(&b, 0);
    int rc = 0;
    if (!strcmp(resource, "statefulsets")) {
        const json_object *t = JSONX_AT(desired, "spec", "template");
        rc = buf_puts(&b, t ? json_object_to_json_string_ext((json_object *)t, JSON_C_TO_STRING_PLAIN) : "null");
    } else if (!strcmp(resource, "services")) {
        const json_object *meta = jsonx_get(desired, "metadata");
        const json_object *parts[3] = {jsonx_get(meta, "labels"), jsonx_get(meta, "annotations"),
                                       jsonx_get(desired, "spec")};
        for (int i = 0; i < 3 && !rc; i++)
            rc = buf_puts(&b, parts[i] ? json_object_to_json_string_ext((json_object *)parts[i],
                                                                        JSON_C_TO_STRING_PLAIN)
                                       : "null") ||
                 buf_puts(&b, "\n");
    } else {
        buf_free(&b);
        return 0;
    }
    rc = rc || render_sha256_hex(b.data, b.len, hex);
    buf_free(&b);
    return rc ? -1 : 1;
}

/* The spec hash an observed child records, or NULL when it has none (written by an older
 * operator). Borrowed from obs. */
static const char *spec_hash_observed(const json_object *obs)
{
    return JSONX_STR_AT(obs, "metadata", "annotations", PLAN_SPEC_HASH_ANNOTATION);
}

/* Record hex in desired's metadata.annotations. */
static void spec_hash_stamp(json_object *desired, const char *hex, int *oom)
{
    json_object *meta = (json_object *)jsonx_get(desired, "metadata");
    if (!meta || !json_object_is_type(meta, json_type_object)) {
        *oom = 1;
        return;
    }
    json_object *ann = (json_object *)jsonx_get(meta, "annotations");
    if (!ann || !json_object_is_type(ann, json_type_object)) {
        ann = jsonx_new_obj(oom);
        jsonx_put(meta, "annotations", ann, oom);
    }
    if (*oom)
        return;
    if (!strcmp(jsonx_str_set(desired, "kind") ? jsonx_str_set(desired, "kind") : "", "Service")) {
        /* What metadata the operator sets, for drop_unrendered on a later change. */
        buf_t keys;
        buf_init(&keys, 256);
        static const char *const fields[] = {"labels", "annotations"};
        for (int f = 0; f < 2; f++) {
            json_object *set = (json_object *)jsonx_get(meta, fields[f]);
            if (!set || !json_object_is_type(set, json_type_object))
                continue;
            json_object_object_foreach(set, k, v)
            {
                (void)v;
                buf_printf(&keys, "%s%s:%s", keys.len ? "," : "", fields[f], k);
            }
        }
        jsonx_put(ann, PLAN_RENDERED_KEYS_ANNOTATION, jsonx_new_str(buf_str(&keys), oom), oom);
        buf_free(&keys);
    }
    jsonx_put(ann, PLAN_SPEC_HASH_ANNOTATION, jsonx_new_str(hex, oom), oom);
}

/* 1 when the observed object's PLAN_RENDERED_KEYS_ANNOTATION lists "<field>:<key>". (The
 * informer cache drops managedFields, so the operator records what it set itself.) */
static int rendered_before(const json_object *obs, const char *field, const char *key)
{
    const char *list = JSONX_STR_AT(obs, "metadata", "annotations", PLAN_RENDERED_KEYS_ANNOTATION);
    size_t fl = strlen(field), kl = strlen(key);
    for (const char *s = list; s && *s;) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == fl + 1 + kl && !strncmp(s, field, fl) && s[fl] == ':' && !strncmp(s + fl + 1, key, kl))
            return 1;
        s = e ? e + 1 : s + n;
    }
    return 0;
}

/* In body's metadata.<field> (labels or annotations), drop each key the desired object no
 * longer sets that the operator set before (rendered_before): others' keys stay. */
static void drop_unrendered(json_object *body, const json_object *desired, const json_object *obs,
                            const char *field)
{
    json_object *have = (json_object *)JSONX_AT(body, "metadata", field);
    const json_object *want = JSONX_AT(desired, "metadata", field);
    if (!have || !json_object_is_type(have, json_type_object))
        return;
    const char *gone[64];
    size_t n = 0;
    json_object_object_foreach(have, key, val)
    {
        (void)val;
        if (n < sizeof(gone) / sizeof(gone[0]) && !jsonx_get(want, key) && rendered_before(obs, field, key))
            gone[n++] = key;
    }
    for (size_t i = 0; i < n; i++)
        json_object_object_del(have, gone[i]);
}

/* A copy of the observed volumeClaimTemplates without what the API server adds on its
 * own (status, creationTimestamp), to apply unchanged; NULL when out of memory. */
static json_object *observed_claim_templates(const json_object *obs_vct)
{
    json_object *copy = NULL;
    if (json_object_deep_copy((json_object *)obs_vct, &copy, NULL))
        return NULL;
    for (size_t i = 0; i < json_object_array_length(copy); i++) {
        json_object *e = json_object_array_get_idx(copy, i);
        if (!json_object_is_type(e, json_type_object))
            continue;
        json_object_object_del(e, "status");
        json_object *meta = NULL;
        if (json_object_object_get_ex(e, "metadata", &meta) && json_object_is_type(meta, json_type_object))
            json_object_object_del(meta, "creationTimestamp");
    }
    return copy;
}

/* In a replace's spec, the StatefulSet's pod template wholesale (the API server fills
 * its defaults in again), keeping an observed restartedAt (no extra roll), and its
 * claim templates as observed (immutable). */
static void replace_template(json_object *spec, const json_object *desired, const json_object *obs, int *oom)
{
    json_object *copy = NULL;
    if (json_object_deep_copy((json_object *)JSONX_AT(desired, "spec", "template"), &copy, NULL))
        *oom = 1;
    const char *restarted =
        JSONX_STR_AT(obs, "spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/restartedAt");
    json_object *tann = (json_object *)jsonx_typed(JSONX_AT(copy, "metadata", "annotations"), json_type_object);
    if (restarted && tann)
        jsonx_put(tann, "kubectl.kubernetes.io/restartedAt", jsonx_new_str(restarted, oom), oom);
    jsonx_put(spec, "template", copy, oom);
    const json_object *ovct = jsonx_typed(JSONX_AT(obs, "spec", "volumeClaimTemplates"), json_type_array);
    if (ovct)
        jsonx_put(spec, "volumeClaimTemplates", observed_claim_templates(ovct), oom);
}

/* DAY-2: a replaced NodePort or LoadBalancer Service keeps the node port the API server
 * allocated to each port (by name): the operator never chooses one, and a PUT without it
 * would move clients' port. */
static void keep_node_ports(json_object *ports, const json_object *desired, const json_object *obs)
{
    const char *type = JSONX_STR_AT(desired, "spec", "type");
    if (!type || (strcmp(type, "NodePort") && strcmp(type, "LoadBalancer")))
        return;
    const json_object *have = jsonx_typed(JSONX_AT(obs, "spec", "ports"), json_type_array);
    for (size_t i = 0; ports && i < json_object_array_length(ports); i++) {
        json_object *p = json_object_array_get_idx(ports, i);
        const char *name = jsonx_str_set(p, "name");
        for (size_t j = 0; name && j < jsonx_len(have); j++) {
            const json_object *o = json_object_array_get_idx(have, j);
            const json_object *np = jsonx_get(o, "nodePort");
            if (jsonx_str_is(o, "name", name) && np && json_object_is_type(np, json_type_int))
                json_object_object_add(p, "nodePort", json_object_new_int64(json_object_get_int64(np)));
        }
    }
}

/* In a replace's spec, the Service's selector and ports as desired, and the type-bound
 * fields it no longer renders dropped (DAY-2: what the API server would otherwise keep
 * from the observed object). */
static void replace_selector_ports(json_object *spec, const json_object *desired, const json_object *obs, int *oom)
{
    static const char *const keys[] = {"selector", "ports"};
    for (size_t i = 0; i < 2; i++) {
        const json_object *v = JSONX_AT(desired, "spec", keys[i]);
        json_object *copy = NULL;
        if (v && json_object_deep_copy((json_object *)v, &copy, NULL))
            *oom = 1;
        if (v)
            jsonx_put(spec, keys[i], copy, oom);
        if (copy && i == 1)
            keep_node_ports(copy, desired, obs);
    }
    static const char *const bound[] = {"externalTrafficPolicy", "loadBalancerSourceRanges"};
    for (size_t i = 0; i < 2; i++)
        if (!JSONX_AT(desired, "spec", bound[i]))
            json_object_object_del(spec, bound[i]);
    const char *type = JSONX_STR_AT(desired, "spec", "type");
    if (type && !strcmp(type, "ClusterIP"))
        json_object_object_del(spec, "healthCheckNodePort");
    if (type && strcmp(type, "LoadBalancer")) { /* the API server's own, allowed with LoadBalancer only */
        json_object_object_del(spec, "allocateLoadBalancerNodePorts");
        json_object_object_del(spec, "loadBalancerClass");
    }
}

/* The body that replaces obs by desired (REMOVED KNOBS in plan.h): desired merged over
 * obs without managedFields and status, the parts replace_template or
 * replace_selector_ports name, and the metadata the operator no longer sets dropped. Sets
 * *oom when out of memory (the body, if any, is still returned). */
static json_object *replace_body(const char *resource, const json_object *desired, const json_object *obs, int *oom)
{
    json_object *body = *oom ? NULL : plan_json_merge_over(desired, obs, oom);
    json_object *meta = (json_object *)jsonx_get(body, "metadata");
    json_object *spec = (json_object *)jsonx_get(body, "spec");
    if (!body || !meta || !spec) {
        *oom = 1;
        return body;
    }
    json_object_object_del(meta, "managedFields");
    json_object_object_del(body, "status");
    if (!strcmp(resource, "statefulsets"))
        replace_template(spec, desired, obs, oom);
    else
        replace_selector_ports(spec, desired, obs, oom);
    drop_unrendered(body, desired, obs, "labels");
    drop_unrendered(body, desired, obs, "annotations");
    return body;
}

/* The spec changed since the child was last written (its recorded hash is another):
 * PLAN_REPLACE it, so that what the operator no longer renders is gone (REMOVED KNOBS in
 * plan.h). Takes desired. Returns 0, or -1 when out of memory. */
static int plan_replace_changed(const plan_ctx_t *c, const char *kind, const char *gv, const char *resource,
                                json_object *desired, const json_object *obs, const char *hex)
{
    plan_t *p = c->plan;
    int *oom = plan_oom(p);
    const char *name = JSONX_STR_AT(desired, "metadata", "name");
    buf_t where, why;
    buf_init(&where, PLAN_MESSAGE_CAP);
    /* The first difference the comparison sees, when there is one (a removal has none). */
    int same = plan_json_subset(desired, obs, &where);
    spec_hash_stamp(desired, hex, oom);
    json_object *body = replace_body(resource, desired, obs, oom);
    buf_init(&why, 2 * PLAN_MESSAGE_CAP);
    buf_printf(&why, "%s %s/%s: the spec changed (%s %.12s, want %.12s)%s%s; replace it", kind, c->ns, name,
               PLAN_SPEC_HASH_ANNOTATION, spec_hash_observed(obs), hex, same ? "" : ": ",
               same ? "" : buf_str(&where));
    buf_free(&where);
    int i = plan_add_action(p, PLAN_REPLACE, gv, resource, c->ns, name, body, buf_str(&why));
    plan_add_event(p, "Normal", "Updated", i,
                   "Updated %s %s/%s: the spec changed; replaced it with the rendered state", kind, c->ns, name);
    buf_free(&why);
    json_object_put(desired);
    return *oom ? -1 : 0;
}

/* ---- One child ------------------------------------------------------------------------ */

/* Apply desired when it drifted from obs (the comparison of plan.h); else nothing. hex
 * (NULL: no hash) is stamped on what is applied. Takes desired. */
static void plan_drift(const plan_ctx_t *c, const char *kind, const char *gv, const char *resource,
                       const char *name, json_object *desired, const json_object *obs, const char *hex)
{
    plan_t *p = c->plan;
    buf_t where, why;
    buf_init(&where, PLAN_MESSAGE_CAP);
    if (plan_json_subset(desired, obs, &where)) {
        json_object_put(desired);
        buf_free(&where);
        return;
    }
    if (hex)
        spec_hash_stamp(desired, hex, plan_oom(p));
    buf_init(&why, 2 * PLAN_MESSAGE_CAP);
    buf_printf(&why, "%s %s/%s: %s", kind, c->ns, name, buf_str(&where));
    int i = plan_add_action(p, PLAN_APPLY, gv, resource, c->ns, name, desired, buf_str(&why));
    plan_add_event(p, "Normal", "Updated", i, "Updated %s %s/%s: %s", kind, c->ns, name, buf_str(&where));
    buf_free(&why);
    buf_free(&where);
}

/* Create desired, absent so far (never applied: a create fails with AlreadyExists instead
 * of taking over an object that appeared since it was observed absent). Takes desired. */
static void plan_create(const plan_ctx_t *c, const char *kind, const char *gv, const char *resource,
                        const char *name, json_object *desired)
{
    char why[600];
    snprintf(why, sizeof(why), "%s %s/%s is missing", kind, c->ns, name);
    int i = plan_add_action(c->plan, PLAN_CREATE, gv, resource, c->ns, name, desired, why);
    plan_add_event(c->plan, "Normal", "Created", i, "Created %s %s/%s", kind, c->ns, name);
}

/* Plan the create or update of one child named like the cluster, taking desired. obs is
 * the observed object or NULL. Returns 0, or -1 when out of memory. */
static int plan_child(const plan_ctx_t *c, plan_kids_t *k, const char *kind, const char *gv, const char *resource,
                      json_object *desired, const json_object *obs)
{
    plan_t *p = c->plan;
    char hex[65];
    int hashed = spec_hash_of(resource, desired, hex);
    const char *ohash = obs ? spec_hash_observed(obs) : NULL;
    if (hashed < 0) {
        *plan_oom(p) = 1;
        json_object_put(desired);
    } else if (!obs) {
        if (hashed)
            spec_hash_stamp(desired, hex, plan_oom(p));
        plan_create(c, kind, gv, resource, c->name, desired);
    } else if (owner_conflict(c, k, kind, obs)) {
        json_object_put(desired);
    } else if (hashed && ohash && strcmp(ohash, hex)) {
        plan_replace_changed(c, kind, gv, resource, desired, obs, hex);
    } else {
        plan_drift(c, kind, gv, resource, c->name, desired, obs, hashed ? hex : NULL);
    }
    return *plan_oom(p) ? -1 : 0;
}

/* Plan the Service <name>-primary or <name>-replicas (REPLICATION in plan.h) as the other
 * children: create when absent, apply on drift, nothing but OwnerConflict when it is not
 * ours. Returns 0, or -1 when out of memory. */
static int plan_role_service(const plan_ctx_t *c, plan_kids_t *k, const char *role, const json_object *obs)
{
    char name[300];
    render_role_service_name(c->name, role, name, sizeof(name));
    json_object *d = render_role_service(&c->in, role);
    if (!d)
        return -1;
    obs = jsonx_typed(obs, json_type_object);
    const char *ok = NULL, *on = NULL;
    char hex[65];
    if (spec_hash_of("services", d, hex) < 0) {
        json_object_put(d);
        return -1;
    }
    if (!obs) {
        spec_hash_stamp(d, hex, plan_oom(c->plan));
        plan_create(c, "Service", "v1", "services", name, d);
    } else if (controller_of(c, obs, &ok, &on) != CTL_OURS) {
        json_object_put(d);
        k->owner_conflict = 1;
        plan_degrade(c, "OwnerConflict",
                     "Service %s/%s exists and was not created by this RedisCluster; the operator leaves it alone "
                     "(delete or rename it)",
                     c->ns, name);
    } else {
        /* DAY-2: hashed as the headless Service is (REMOVED KNOBS), so that a type,
         * annotation or source range taken out of spec.service goes. */
        const char *ohash = spec_hash_observed(obs);
        if (ohash && strcmp(ohash, hex))
            return plan_replace_changed(c, "Service", "v1", "services", d, obs, hex);
        plan_drift(c, "Service", "v1", "services", name, d, obs, hex);
    }
    return *plan_oom(c->plan) ? -1 : 0;
}

/* ---- The StatefulSet ------------------------------------------------------------------ */

/* Compare every managed field of the StatefulSet but spec.replicas. */
static int sts_same_but_replicas(const json_object *d, const json_object *o, buf_t *where)
{
    json_object_object_foreach((json_object *)d, key, dv)
    {
        const json_object *ov = jsonx_get(o, key);
        if (strcmp(key, "spec")) {
            if (!plan_json_subset_at(dv, ov, key, where))
                return 0;
            continue;
        }
        json_object_object_foreach(dv, skey, sdv)
        {
            if (!strcmp(skey, "replicas"))
                continue;
            buf_t prefix;
            buf_init(&prefix, 256);
            buf_printf(&prefix, "spec.%s", skey);
            int ok = plan_json_subset_at(sdv, jsonx_get(ov, skey), buf_str(&prefix), where);
            buf_free(&prefix);
            if (!ok)
                return 0;
        }
    }
    return 1;
}

/* IMMUTABLE STATEFULSET FIELDS: 1 when the observed selector or serviceName differs from
 * the desired one (reported: nothing can be applied), else 0. */
static int sts_immutable_changed(const plan_ctx_t *c, const json_object *dspec, const json_object *ospec)
{
    buf_t where;
    buf_init(&where, PLAN_MESSAGE_CAP);
    int changed =
        !plan_json_subset_at(jsonx_get(dspec, "selector"), jsonx_get(ospec, "selector"), "spec.selector", &where) ||
        !plan_json_subset_at(jsonx_get(dspec, "serviceName"), jsonx_get(ospec, "serviceName"), "spec.serviceName",
                             &where);
    if (changed)
        plan_degrade(c, "ImmutableFieldChanged",
                     "StatefulSet %s/%s: %s; this field cannot change, delete the StatefulSet (its volumes are kept) "
                     "to let the operator recreate it",
                     c->ns, c->name, buf_str(&where));
    buf_free(&where);
    return changed;
}

/* IMMUTABLE STATEFULSET FIELDS: a StatefulSet's claim templates cannot change, so when
 * spec.storage no longer matches the observed ones, the apply carries those (the rest of
 * the object still converges) and the storage change is reported. Never advise
 * recreating the StatefulSet: its claims stay, and the new pods would get the new class
 * or size beside the old ones (a mixed set). Returns 0, or -1 when out of memory. */
static int sts_keep_claims(const plan_ctx_t *c, plan_kids_t *k, json_object *dspec, const json_object *ospec)
{
    const json_object *obs_vct = jsonx_typed(jsonx_get(ospec, "volumeClaimTemplates"), json_type_array);
    buf_t where;
    buf_init(&where, PLAN_MESSAGE_CAP);
    if (obs_vct &&
        !plan_json_subset_at(jsonx_get(dspec, "volumeClaimTemplates"), obs_vct, "spec.volumeClaimTemplates", &where)) {
        /* VOLUME EXPANSION: a larger request of the same class is plan_volume's (not in
         * Cluster mode, whose shards' StatefulSets it does not handle) */
        k->volume_grow = c->spec->mode != RDC_MODE_CLUSTER &&
                         plan_volume_grows(jsonx_get(dspec, "volumeClaimTemplates"), obs_vct);
        if (!k->volume_grow)
            plan_degrade(c, "ImmutableFieldChanged",
                         "spec.storage: not applied to StatefulSet %s/%s, whose volumeClaimTemplates cannot change "
                         "(%s); set spec.storage back to what the StatefulSet has. To move the data to other "
                         "storage, create a new RedisCluster with the new spec.storage and migrate the data to it",
                         c->ns, c->name, buf_str(&where));
        jsonx_put(dspec, "volumeClaimTemplates", observed_claim_templates(obs_vct), plan_oom(c->plan));
    }
    buf_free(&where);
    return *plan_oom(c->plan) ? -1 : 0;
}

/* Apply desired (stamped with hex) when its replicas (want, observed have) or anything
 * else drifted, with the events Scaled and Updated. Takes desired. Returns 0, or -1 when
 * out of memory. */
static int sts_apply(const plan_ctx_t *c, json_object *desired, const json_object *obs, const char *hex, int64_t want,
                     int64_t have)
{
    plan_t *p = c->plan;
    buf_t where, why;
    buf_init(&where, PLAN_MESSAGE_CAP);
    int others_same = sts_same_but_replicas(desired, obs, &where);
    if (others_same && want == have) {
        json_object_put(desired);
        buf_free(&where);
        return 0;
    }
    buf_init(&why, 2 * PLAN_MESSAGE_CAP);
    if (want != have)
        buf_printf(&why, "StatefulSet %s/%s: spec.replicas: want %lld, have %lld%s%s", c->ns, c->name,
                   (long long)want, (long long)have, others_same ? "" : "; ", others_same ? "" : buf_str(&where));
    else
        buf_printf(&why, "StatefulSet %s/%s: %s", c->ns, c->name, buf_str(&where));
    spec_hash_stamp(desired, hex, plan_oom(p));
    int i = plan_add_action(p, PLAN_APPLY, "apps/v1", "statefulsets", c->ns, c->name, desired, buf_str(&why));
    buf_free(&why);
    if (want != have)
        plan_add_event(p, "Normal", "Scaled", i, "Scaled StatefulSet %s/%s from %lld to %lld replicas", c->ns,
                       c->name, (long long)have, (long long)want);
    if (!others_same)
        plan_add_event(p, "Normal", "Updated", i, "Updated StatefulSet %s/%s: %s", c->ns, c->name, buf_str(&where));
    buf_free(&where);
    return *plan_oom(p) ? -1 : 0;
}

/* Plan the StatefulSet, taking desired: ownership and the immutable fields first, then
 * a changed spec hash (replace), then drift (apply). Returns 0, or -1 when out of memory. */
static int plan_statefulset(const plan_ctx_t *c, plan_kids_t *k, json_object *desired, const json_object *obs)
{
    if (!obs)
        return plan_child(c, k, "StatefulSet", "apps/v1", "statefulsets", desired, NULL);
    json_object *dspec = (json_object *)jsonx_get(desired, "spec");
    const json_object *ospec = jsonx_get(obs, "spec");
    char hex[65];
    if (owner_conflict(c, k, "StatefulSet", obs) || sts_immutable_changed(c, dspec, ospec)) {
        json_object_put(desired);
        return 0;
    }
    if (sts_keep_claims(c, k, dspec, ospec) || spec_hash_of("statefulsets", desired, hex) < 0) {
        json_object_put(desired);
        return -1;
    }
    int64_t want = jsonx_int_or(dspec, "replicas", 1), have = jsonx_int_or(ospec, "replicas", 1);
    k->sts_replicas_change = want != have;
    const char *ohash = spec_hash_observed(obs);
    if (ohash && strcmp(ohash, hex)) {
        /* REMOVED KNOBS: the template is replaced wholesale (replicas and the rest merged). */
        k->sts_template_change = 1;
        return plan_replace_changed(c, "StatefulSet", "apps/v1", "statefulsets", desired, obs, hex);
    }
    k->sts_template_change =
        !plan_json_subset_at(jsonx_get(dspec, "template"), jsonx_get(ospec, "template"), "", NULL);
    return sts_apply(c, desired, obs, hex, want, have);
}

/* ---- All of them ---------------------------------------------------------------------- */

/* The ConfigMap, and into hash the SHA-256 of what the pods read at start: the pods roll
 * when that changes, not for directives Redis takes at run time
 * (render_redis_conf_restart). Returns 0, or -1 when out of memory. */
static int plan_configmap(const plan_ctx_t *c, plan_kids_t *k, const json_object *cm, char hash[65])
{
    buf_t conf, restart;
    buf_init(&conf, 0);
    buf_init(&restart, 0);
    int bad = render_redis_conf(&c->in, &conf) || render_redis_conf_restart(&c->in, &restart) ||
              render_sha256_hex(restart.data, restart.len, hash);
    json_object *d = bad ? NULL : render_configmap(&c->in, buf_str(&conf));
    bad = !d || plan_child(c, k, "ConfigMap", "v1", "configmaps", d, cm);
    buf_free(&restart);
    buf_free(&conf);
    return bad ? -1 : 0;
}

/* The headless Service, then the role Services of spec.mode Replication. Returns 0, or
 * -1 when out of memory. */
static int plan_services(const plan_ctx_t *c, plan_kids_t *k, const json_object *svc)
{
    json_object *d = render_service(&c->in);
    if (!d || plan_child(c, k, "Service", "v1", "services", d, svc))
        return -1;
    if (c->spec->mode != RDC_MODE_REPLICATION)
        return 0;
    const plan_observed_t *m = c->more;
    if (plan_role_service(c, k, RENDER_ROLE_PRIMARY, m ? m->primary_service : NULL) ||
        plan_role_service(c, k, RENDER_ROLE_REPLICA, m ? m->replicas_service : NULL))
        return -1;
    return 0;
}

/* DAY-2: the NetworkPolicy <name> of spec.networkPolicy (render_network_policy): created
 * and kept like the other children while enabled; deleted (uid precondition) when it is
 * disabled and the one observed is ours. Returns 0, or -1 when out of memory. */
static int plan_network_policy(const plan_ctx_t *c, plan_kids_t *k)
{
    const plan_observed_t *m = c->more;
    const json_object *obs = jsonx_typed(m ? m->network_policy : NULL, json_type_object);
    if (c->spec->netpol.enabled) {
        json_object *d = render_network_policy(&c->in, m ? m->operator_namespace : NULL);
        return d ? plan_child(c, k, "NetworkPolicy", "networking.k8s.io/v1", "networkpolicies", d, obs) : -1;
    }
    const char *ok = NULL, *on = NULL;
    if (!obs || controller_of(c, obs, &ok, &on) != CTL_OURS)
        return 0;
    int *oom = plan_oom(c->plan);
    json_object *body = plan_delete_options(JSONX_STR_AT(obs, "metadata", "uid"), NULL, oom);
    if (!body)
        return -1;
    char why[400];
    snprintf(why, sizeof(why), "NetworkPolicy %s/%s: spec.networkPolicy.enabled is not true", c->ns, c->name);
    int i = plan_add_action(c->plan, PLAN_DELETE, "networking.k8s.io/v1", "networkpolicies", c->ns, c->name, body,
                            why);
    plan_add_event(c->plan, "Normal", "Deleted", i, "Deleted NetworkPolicy %s/%s (spec.networkPolicy disabled)", c->ns,
                   c->name);
    return *oom ? -1 : 0;
}

/* STORAGE CLASS (plan.h): not a reason to hold the StatefulSet back: claims of a class
 * with no StorageClass object still bind to PersistentVolumes created with that class
 * name (static provisioning). While the pods are not ready it is the likely cause, so
 * say it. */
static void storage_class_check(const plan_ctx_t *c)
{
    if (!c->spec->storage.storage_class || !c->more || !c->more->storage_class_missing)
        return;
    plan_degrade(c, "StorageClassNotFound",
                 "StorageClass \"%.*s\" (spec.storage.storageClass) does not exist: the claims of StatefulSet "
                 "%s/%s bind only to PersistentVolumes created with that storageClassName; create the StorageClass "
                 "(or such PersistentVolumes)",
                 PLAN_VALUE_SHOWN, c->spec->storage.storage_class, c->ns, c->name);
}

const json_object *plan_shard_object(const plan_ctx_t *c, const json_object *objs, int k)
{
    char name[300];
    if (render_shard_name(c->name, k, name, sizeof(name)))
        return NULL;
    return jsonx_typed(jsonx_find_named(objs, name), json_type_object);
}

/* CLUSTER: shard k's StatefulSet and PodDisruptionBudget, planned as the cluster's own
 * are (a context whose name is the shard's; the labels and owner stay the cluster's).
 * Returns 0, or -1 when out of memory. */
static int plan_shard(const plan_ctx_t *c, int k, const char *hash, plan_kids_t *out)
{
    plan_ctx_t s = *c;
    char name[300];
    if (render_shard_name(c->name, k, name, sizeof(name)))
        return -1;
    s.name = name;
    s.in.shard = k;
    s.in.shard_replicas = c->cluster ? c->cluster->replicas_of[k] : 0;
    const plan_observed_t *m = c->more;
    const json_object *sts = plan_shard_object(c, m ? m->shard_statefulsets : NULL, k);
    const json_object *pdb = plan_shard_object(c, m ? m->shard_budgets : NULL, k);
    const char *ok = NULL, *on = NULL;
    int ours = sts && controller_of(&s, sts, &ok, &on) == CTL_OURS;
    plan_kids_t kk;
    memset(&kk, 0, sizeof(kk));
    json_object *d = render_statefulset(&s.in, hash);
    if (!d || plan_statefulset(&s, &kk, d, sts))
        return -1;
    if (sts ? ours : !plan_critical_path_first(c)) {
        d = render_pdb(&s.in);
        if (!d || plan_child(&s, &kk, "PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", d, pdb))
            return -1;
    }
    out->owner_conflict |= kk.owner_conflict;
    out->sts_replicas_change |= kk.sts_replicas_change;
    out->sts_template_change |= kk.sts_template_change;
    out->sts_created |= !sts;
    out->shards_ours += ours && k < c->spec->cluster.shards;
    return 0;
}

/* CLUSTER: shard k left the layout (cluster_topo.h RETIRE: drained, its nodes forgotten
 * and reset): its StatefulSet and PodDisruptionBudget deleted when they are ours, each with
 * its uid as precondition. The claims go as the StatefulSet's retention policy says.
 * Returns 0, or -1 when out of memory. */
static int plan_shard_drop(const plan_ctx_t *c, int k)
{
    const plan_observed_t *m = c->more;
    static const struct {
        const char *gv, *resource, *kind;
        int sts;
    } kinds[] = {{"apps/v1", "statefulsets", "StatefulSet", 1},
                 {"policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", 0}};
    for (size_t x = 0; x < sizeof(kinds) / sizeof(kinds[0]); x++) {
        const json_object *list = m ? (kinds[x].sts ? m->shard_statefulsets : m->shard_budgets) : NULL;
        const json_object *o = plan_shard_object(c, list, k);
        const char *ok = NULL, *on = NULL;
        if (!o || controller_of(c, o, &ok, &on) != CTL_OURS)
            continue;
        const json_object *meta = jsonx_get(o, "metadata");
        const char *name = JSONX_STR_AT(o, "metadata", "name");
        int *oom = plan_oom(c->plan);
        json_object *body = plan_delete_options(jsonx_str_set(meta, "uid"), NULL, oom);
        if (!body)
            return -1;
        char why[400];
        snprintf(why, sizeof(why), "%s %s/%s: shard %d left the cluster (spec.cluster.shards is %d): its slots moved, "
                 "its nodes forgotten", kinds[x].kind, c->ns, name, k, c->spec->cluster.shards);
        int i = plan_add_action(c->plan, PLAN_DELETE, kinds[x].gv, kinds[x].resource, c->ns, name, body, why);
        if (kinds[x].sts)
            plan_add_event(c->plan, "Normal", "ShardRemoved", i, "%s", why);
        if (*oom)
            return -1;
    }
    return 0;
}

/* RESTORE FROM A REDISBACKUP (plan_restore.h): 1 when the StatefulSet and its budget are
 * held until the restore's source is recorded (no pod may start empty). A restore that
 * cannot be resolved is Degraded, and an observed StatefulSet (its record lost) is left
 * as it is, which the message says. */
static int restore_held(const plan_ctx_t *c, const json_object *sts, const plan_kids_t *k)
{
    if (!c->restore || !c->restore->hold)
        return 0;
    int left = sts && k->sts_ours;
    if (c->restore->state == PLAN_RESTORE_FAILED)
        plan_degrade(c, "RestoreFailed", "%s%s%s%s%s%s", c->restore->message,
                     left ? "; StatefulSet " : "", left ? c->ns : "", left ? "/" : "", left ? c->name : "",
                     left ? " is left as it is" : "");
    return 1;
}

int plan_children(const plan_ctx_t *c, const plan_children_t *kids, plan_kids_t *out)
{
    const json_object *sts = kids->statefulset;
    char hash[65];
    memset(out, 0, sizeof(*out));
    if (plan_configmap(c, out, kids->configmap, hash))
        goto fail;
    /* Only ours after its own check: the ConfigMap's conflict was just reported. */
    int cm_ours = !kids->configmap || !out->owner_conflict;
    if (plan_services(c, out, kids->service) || plan_network_policy(c, out))
        goto fail;
    const char *k = NULL, *n = NULL;
    out->sts_ours = sts && controller_of(c, sts, &k, &n) == CTL_OURS;
    if (!cm_ours && (!sts || out->sts_ours)) {
        /* Pods would mount the other object's redis.conf: hold the StatefulSet back. */
        plan_degrade(c, "OwnerConflict",
                     "StatefulSet %s/%s is not %s while the ConfigMap it mounts is not the operator's", c->ns,
                     c->name, sts ? "updated" : "created");
        return 0;
    }
    if (restore_held(c, sts, out))
        return 0;
    storage_class_check(c);
    if (c->spec->mode == RDC_MODE_CLUSTER) {
        int n = c->cluster ? c->cluster->nshards : c->spec->cluster.shards;
        for (int k = 0; k < n; k++)
            if (c->cluster && !c->cluster->keep_shard[k] ? plan_shard_drop(c, k) : plan_shard(c, k, hash, out))
                goto fail;
        return 0;
    }
    json_object *d = render_statefulset(&c->in, hash);
    if (!d || plan_statefulset(c, out, d, sts))
        goto fail;
    out->sts_created = !sts;
    /* The budget covers the pods of our StatefulSet only: none while another's is there.
     * CRITICAL PATH (plan.h): while the budget is short, none either in the plan that
     * creates the StatefulSet; the next reconcile creates it. */
    if (sts ? out->sts_ours : !plan_critical_path_first(c)) {
        d = render_pdb(&c->in);
        if (!d || plan_child(c, out, "PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", d, kids->pdb))
            goto fail;
    }
    return 0;
fail:
    *plan_oom(c->plan) = 1;
    return -1;
}
