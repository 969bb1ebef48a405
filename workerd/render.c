/* render: the desired ConfigMap, Service and StatefulSet of a RedisCluster. See render.h. */
#include "render.h"

#include "jsonx.h"
#include "rdc_spec.h"
#include "redisconf.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An array of strings, terminated by STR_END (a typed null pointer, which va_arg may read
 * as a const char *; a bare NULL may be a plain 0). */
#define STR_END ((const char *)0)
static json_object *str_array(int *oom, const char *first, ...)
{
    json_object *a = jsonx_new_arr(oom);
    va_list ap;
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *))
        jsonx_push(a, jsonx_new_str(s, oom), oom);
    va_end(ap);
    return a;
}

/* Push the strings (STR_END-terminated) onto arr. */
static void push_strs(json_object *arr, int *oom, const char *first, ...)
{
    va_list ap;
    va_start(ap, first);
    for (const char *s = first; s; s = va_arg(ap, const char *))
        jsonx_push(arr, jsonx_new_str(s, oom), oom);
    va_end(ap);
}

/* ---- Image, config, hash, selector -------------------------------------------------- */

int render_image_ref(const char *image, const char *version, buf_t *out)
{
    if (buf_puts(out, image))
        return -1;
    if (!version || !*version || rdc_spec_image_has_tag_or_digest(image))
        return 0;
    return buf_printf(out, ":%s", version);
}

/* spec.mode Cluster (CLUSTER in render.h). */
static int cluster_mode(const render_input_t *in)
{
    return in->spec->mode == RDC_MODE_CLUSTER;
}

/* spec.tls with allowPlaintext: plain text on a second port (render.h TLS). */
static int plaintext_too(const rdc_spec_t *spec)
{
    return spec->tls.secret && spec->tls.allow_plaintext;
}

/* A mode whose nodes replicate (Replication, Cluster): the pods announce their IP, roll
 * OnDelete and hold their shutdown while a replica follows them. */
static int replicating(const rdc_spec_t *spec)
{
    return spec->mode == RDC_MODE_REPLICATION || spec->mode == RDC_MODE_CLUSTER;
}

/* Append spec.config.extra as "name value" lines (sorted by name: rdc_spec_t), leaving out
 * the runtime-settable ones when restart_only. */
static int extra_conf(const rdc_spec_t *spec, int restart_only, buf_t *out)
{
    int rc = 0;
    for (size_t i = 0; i < spec->config.n_extra && !rc; i++) {
        const rdc_directive_t *d = &spec->config.extra[i];
        if (restart_only && redisconf_runtime_settable(d->name))
            continue;
        rc = buf_printf(out, "%s %s\n", d->name, d->value);
    }
    return rc;
}

static int redis_conf(const render_input_t *in, int restart_only, buf_t *out);

int render_redis_conf(const render_input_t *in, buf_t *out)
{
    return redis_conf(in, 0, out);
}

int render_redis_conf_restart(const render_input_t *in, buf_t *out)
{
    return redis_conf(in, 1, out);
}

/* The value spec.config.extra gives name, or NULL. */
static const char *extra_value(const rdc_spec_t *spec, const char *name)
{
    for (size_t i = 0; i < spec->config.n_extra; i++)
        if (!strcmp(spec->config.extra[i].name, name))
            return spec->config.extra[i].value;
    return NULL;
}

size_t render_persistence(const rdc_spec_t *spec, render_directive_t out[RENDER_PERSISTENCE_MAX])
{
    rdc_persistence_t mode = spec ? spec->persistence : RDC_PERSISTENCE_AOF;
    int none = mode == RDC_PERSISTENCE_NONE, aof = mode == RDC_PERSISTENCE_AOF;
    const render_directive_t all[] = {{"appendonly", aof ? "yes" : "no"},
                                      {"appendfsync", aof ? "everysec" : NULL},
                                      {"save", none ? "" : RENDER_SAVE_POINTS}};
    size_t n = 0;
    /* What extra sets is extra's (rdc_spec refuses what the mode owns) */
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i].value && !(spec && extra_value(spec, all[i].name)))
            out[n++] = all[i];
    return n;
}

/* Append d as redis.conf lines: save points one pair a line (as every Redis version reads
 * them), an empty save as `save ""`. */
static int persistence_line(const render_directive_t *d, buf_t *out)
{
    if (strcmp(d->name, "save"))
        return buf_printf(out, "%s %s\n", d->name, d->value);
    if (!*d->value)
        return buf_puts(out, "save \"\"\n");
    const char *p = d->value;
    while (*p) {
        size_t a = strcspn(p, " "), b;
        const char *q = p + a + (p[a] == ' ');
        b = strcspn(q, " ");
        if (buf_printf(out, "save %.*s %.*s\n", (int)a, p, (int)b, q))
            return -1;
        p = q + b + (q[b] == ' ');
    }
    return 0;
}

/* The ports Redis listens on: 6379 in plain text; with spec.tls TLS on 6379 (the port
 * every client, probe and replica uses) and plain text on RENDER_PLAINTEXT_PORT only while
 * allowPlaintext, the TLS files and switches (render.h TLS). */
static int listen_conf(const rdc_spec_t *spec, buf_t *out)
{
    if (!spec->tls.secret)
        return buf_puts(out, "port 6379\n");
    return buf_printf(out,
                      "port %d\ntls-port %d\ntls-cert-file " RENDER_TLS_CERT "\ntls-key-file " RENDER_TLS_KEY
                      "\ntls-ca-cert-file " RENDER_TLS_CA "\ntls-auth-clients %s\ntls-replication yes\n"
                      "unixsocket " RENDER_PROBE_SOCKET "\nunixsocketperm 700\n%s",
                      spec->tls.allow_plaintext ? RENDER_PLAINTEXT_PORT : 0, RENDER_REDIS_PORT,
                      spec->tls.client_auth ? "yes" : "no",
                      spec->mode == RDC_MODE_CLUSTER ? "tls-cluster yes\n" : "");
}

/* REPLICATION SYNC (render.h): a replicating mode's replica that needs a full sync gets
 * it at once, unless spec.config.extra tunes Redis's batching itself. */
static int repl_sync_conf(const rdc_spec_t *spec, buf_t *out)
{
    if (!replicating(spec) || extra_value(spec, "repl-diskless-sync-delay") ||
        extra_value(spec, "repl-diskless-sync-max-replicas"))
        return 0;
    return buf_puts(out, "repl-diskless-sync-delay " RENDER_REPL_SYNC_DELAY "\n");
}

static int redis_conf(const render_input_t *in, int restart_only, buf_t *out)
{
    /* No bind directive: the container is reached through the headless Service, so Redis
     * listens on every interface of the pod; no protected mode (the pod network is the
     * boundary). Persistence goes into the PVC at /data. */
    static const char header[] = "# redis.conf rendered by rediscluster-operator; edits are overwritten.\n";
    static const char defaults[] = "protected-mode no\n"
                                   "dir /data\n";
    if (buf_puts(out, header) || listen_conf(in->spec, out) || buf_puts(out, defaults) ||
        (in->spec->acl.n_users && buf_puts(out, "aclfile " RENDER_ACL_FILE "\n")))
        return -1;
    render_directive_t d[RENDER_PERSISTENCE_MAX];
    /* the restart hash: the default lines whatever the mode (render.h) */
    const rdc_spec_t *spec = in->spec;
    size_t n = render_persistence(restart_only ? NULL : spec, d);
    for (size_t i = 0; i < n; i++)
        if (persistence_line(&d[i], out))
            return -1;
    /* CLUSTER (render.h): cluster-node-timeout is spec.failover.downAfter. */
    if (spec->mode == RDC_MODE_CLUSTER &&
        buf_printf(out,
                   "cluster-enabled yes\ncluster-config-file " RENDER_NODES_CONF "\ncluster-node-timeout %lld\n"
                   "cluster-allow-replica-migration no\n",
                   (long long)(spec->failover.down_after_ns / 1000000)))
        return -1;
    if (spec->config.maxmemory && buf_printf(out, "maxmemory %s\n", spec->config.maxmemory))
        return -1;
    if (spec->config.maxmemory_policy && buf_printf(out, "maxmemory-policy %s\n", spec->config.maxmemory_policy))
        return -1;
    /* FAILOVER (docs/failover.md): a primary without a linked replica refuses writes, so
     * one cut off from its replicas (or frozen, then thawed after a failover) stops taking
     * writes by itself. Redis changes both at run time, so they stay out of the hash that
     * rolls the pods. */
    if (spec->mode == RDC_MODE_REPLICATION && !restart_only &&
        buf_printf(out, "min-replicas-to-write %d\nmin-replicas-max-lag %d\n", spec->failover.min_replicas_to_write,
                   spec->failover.min_replicas_max_lag))
        return -1;
    if (!restart_only && repl_sync_conf(spec, out))
        return -1;
    return extra_conf(spec, restart_only, out);
}

int render_sha256_hex(const char *data, size_t len, char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    hex[0] = '\0';
    if (!EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) || n != 32)
        return -1;
    static const char digits[] = "0123456789abcdef";
    for (unsigned int i = 0; i < n; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
    return 0;
}

int render_selector_string(const char *name, buf_t *out)
{
    return buf_printf(out, RENDER_LABEL_NAME "=" RENDER_APP_NAME "," RENDER_LABEL_INSTANCE "=%s", name);
}

/* ---- Knobs (render.h, KNOBS) ------------------------------------------------------------ */

static void append_all(json_object *to, const json_object *from, int *oom);

/* A deep copy of v (NULL gives NULL). */
static json_object *copy_of(const json_object *v, int *oom)
{
    json_object *c = NULL;
    if (v && json_object_deep_copy((json_object *)v, &c, NULL))
        *oom = 1;
    return c;
}

/* dst[key] = a copy of v, when v is set. */
static void put_knob(json_object *dst, const char *key, const json_object *v, int *oom)
{
    if (v)
        jsonx_put(dst, key, copy_of(v, oom), oom);
}

/* Each member of the object over (when it is one) copied into dst, replacing dst's. */
static void merge_into(json_object *dst, const json_object *over, int *oom)
{
    if (!over || !json_object_is_type(over, json_type_object))
        return;
    json_object_object_foreach((json_object *)over, k, v)
    {
        jsonx_put(dst, k, copy_of(v, oom), oom);
    }
}

/* The user's spec.resources, integer quantities as strings (the API server returns them
 * so, and the plan compares strings as quantities). */
static json_object *user_resources(const json_object *res, int *oom)
{
    json_object *out = jsonx_new_obj(oom);
    static const char *const parts[] = {"requests", "limits"};
    for (size_t i = 0; i < 2; i++) {
        const json_object *l = jsonx_get(res, parts[i]);
        if (!l || !json_object_is_type(l, json_type_object))
            continue;
        json_object *o = jsonx_new_obj(oom);
        json_object_object_foreach((json_object *)l, k, v)
        {
            jsonx_put(o, k, jsonx_new_str(json_object_get_string(v), oom), oom);
        }
        jsonx_put(out, parts[i], o, oom);
    }
    return out;
}

/* Extra labels and annotations (spec.podMetadata or spec.serviceMetadata: m) into meta. */
static void extra_metadata(json_object *meta, const json_object *m, int *oom)
{
    static const char *const parts[] = {"labels", "annotations"};
    for (size_t i = 0; m && i < 2; i++) {
        const json_object *extra = jsonx_get(m, parts[i]);
        if (!extra || !json_object_is_type(extra, json_type_object) || !json_object_object_length(extra))
            continue;
        json_object *dst = (json_object *)jsonx_get(meta, parts[i]);
        if (!dst) {
            dst = jsonx_new_obj(oom);
            jsonx_put(meta, parts[i], dst, oom);
        }
        /* The operator's own keys win (rdc_spec refuses them anyway). */
        json_object_object_foreach((json_object *)extra, k, v)
        {
            if (dst && !jsonx_get(dst, k))
                jsonx_put(dst, k, copy_of(v, oom), oom);
        }
    }
}

static json_object *labels(const render_input_t *in, int full, int *oom);

/* The default affinity: spread the cluster's pods over nodes when the scheduler can. */
static json_object *default_affinity(const render_input_t *in, int *oom)
{
    json_object *sel = jsonx_new_obj(oom);
    jsonx_put(sel, "matchLabels", labels(in, 0, oom), oom);
    json_object *term = jsonx_new_obj(oom);
    jsonx_put(term, "labelSelector", sel, oom);
    jsonx_put(term, "topologyKey", jsonx_new_str("kubernetes.io/hostname", oom), oom);
    json_object *pref = jsonx_new_obj(oom);
    jsonx_put(pref, "weight", jsonx_new_int(100, oom), oom);
    jsonx_put(pref, "podAffinityTerm", term, oom);
    json_object *list = jsonx_new_arr(oom);
    jsonx_push(list, pref, oom);
    json_object *anti = jsonx_new_obj(oom);
    jsonx_put(anti, "preferredDuringSchedulingIgnoredDuringExecution", list, oom);
    json_object *aff = jsonx_new_obj(oom);
    jsonx_put(aff, "podAntiAffinity", anti, oom);
    return aff;
}

/* The scheduling and lifecycle knobs of the pod spec. */
static void pod_knobs(json_object *spec, const render_input_t *in, int *oom)
{
    const rdc_spec_t *s = in->spec;
    jsonx_put(spec, "affinity", s->pod.affinity ? copy_of(s->pod.affinity, oom) : default_affinity(in, oom), oom);
    put_knob(spec, "tolerations", s->pod.tolerations, oom);
    put_knob(spec, "nodeSelector", s->pod.node_selector, oom);
    put_knob(spec, "topologySpreadConstraints", s->pod.topology_spread_constraints, oom);
    if (s->pod.priority_class_name)
        jsonx_put(spec, "priorityClassName", jsonx_new_str(s->pod.priority_class_name, oom), oom);
    put_knob(spec, "imagePullSecrets", s->pod.image_pull_secrets, oom);
    if (s->pod.termination_grace_period_seconds >= 0)
        jsonx_put(spec, "terminationGracePeriodSeconds", jsonx_new_int(s->pod.termination_grace_period_seconds, oom),
                  oom);
    /* DAY-2 (render.h) */
    if (s->extras.service_account_name)
        jsonx_put(spec, "serviceAccountName", jsonx_new_str(s->extras.service_account_name, oom), oom);
}

/* A copy of each element of the array from (NULL: none) pushed onto to. */
static void append_all(json_object *to, const json_object *from, int *oom)
{
    for (size_t i = 0; from && i < json_object_array_length(from); i++)
        jsonx_push(to, copy_of(json_object_array_get_idx(from, i), oom), oom);
}

/* ---- Object builders ----------------------------------------------------------------- */

/* The selector labels (name, instance), or all four operator labels when full. */
static json_object *labels(const render_input_t *in, int full, int *oom)
{
    json_object *l = jsonx_new_obj(oom);
    jsonx_put(l, RENDER_LABEL_NAME, jsonx_new_str(RENDER_APP_NAME, oom), oom);
    jsonx_put(l, RENDER_LABEL_INSTANCE, jsonx_new_str(in->name, oom), oom);
    if (cluster_mode(in) && in->shard >= 0) {
        char k[16];
        snprintf(k, sizeof(k), "%d", in->shard);
        jsonx_put(l, RENDER_LABEL_SHARD, jsonx_new_str(k, oom), oom);
    }
    if (full) {
        jsonx_put(l, RENDER_LABEL_MANAGED_BY, jsonx_new_str(RENDER_FIELD_MANAGER, oom), oom);
        jsonx_put(l, RENDER_LABEL_PART_OF, jsonx_new_str(RENDER_PART_OF, oom), oom);
    }
    return l;
}

json_object *render_controller_refs(const char *kind, const char *name, const char *uid, int *oom)
{
    json_object *ref = jsonx_new_obj(oom), *refs = jsonx_new_arr(oom);
    jsonx_put(ref, "apiVersion", jsonx_new_str(RENDER_GROUP_VERSION, oom), oom);
    jsonx_put(ref, "kind", jsonx_new_str(kind, oom), oom);
    jsonx_put(ref, "name", jsonx_new_str(name, oom), oom);
    jsonx_put(ref, "uid", jsonx_new_str(uid, oom), oom);
    jsonx_put(ref, "controller", json_object_new_boolean(1), oom);
    jsonx_put(ref, "blockOwnerDeletion", json_object_new_boolean(1), oom);
    jsonx_push(refs, ref, oom);
    return refs;
}

/* metadata of a child named name: name, namespace, labels, and the controller owner
 * reference. */
static json_object *child_metadata(const render_input_t *in, const char *name, int *oom)
{
    json_object *m = jsonx_new_obj(oom);
    jsonx_put(m, "name", jsonx_new_str(name, oom), oom);
    if (in->ns)
        jsonx_put(m, "namespace", jsonx_new_str(in->ns, oom), oom);
    jsonx_put(m, "labels", labels(in, 1, oom), oom);
    jsonx_put(m, "ownerReferences", render_controller_refs(RENDER_KIND, in->name, in->uid, oom), oom);
    return m;
}

/* A new top-level object with apiVersion, kind and the metadata of a child named name. */
static json_object *child_object(const render_input_t *in, const char *name, const char *api_version,
                                 const char *kind, int *oom)
{
    json_object *o = jsonx_new_obj(oom);
    jsonx_put(o, "apiVersion", jsonx_new_str(api_version, oom), oom);
    jsonx_put(o, "kind", jsonx_new_str(kind, oom), oom);
    jsonx_put(o, "metadata", child_metadata(in, name, oom), oom);
    return o;
}

json_object *render_configmap(const render_input_t *in, const char *redis_conf)
{
    int oom = 0;
    json_object *cm = child_object(in, in->name, "v1", "ConfigMap", &oom);
    json_object *data = jsonx_new_obj(&oom);
    jsonx_put(data, RENDER_CONFIG_KEY, jsonx_new_str(redis_conf, &oom), &oom);
    jsonx_put(cm, "data", data, &oom);
    return jsonx_done(cm, oom);
}

/* A Service named name that sends the Redis port to the pods of selector (taken):
 * headless (clusterIP None, one DNS name per pod) when headless, else a ClusterIP. */
static json_object *service(const render_input_t *in, const char *name, int headless, json_object *selector,
                            int *oom)
{
    json_object *svc = child_object(in, name, "v1", "Service", oom);
    json_object *spec = jsonx_new_obj(oom);
    if (headless)
        jsonx_put(spec, "clusterIP", jsonx_new_str("None", oom), oom);
    else
        jsonx_put(spec, "type", jsonx_new_str("ClusterIP", oom), oom);
    jsonx_put(spec, "selector", selector, oom);
    json_object *port = jsonx_new_obj(oom);
    jsonx_put(port, "name", jsonx_new_str("redis", oom), oom);
    jsonx_put(port, "port", jsonx_new_int(RENDER_REDIS_PORT, oom), oom);
    jsonx_put(port, "targetPort", jsonx_new_int(RENDER_REDIS_PORT, oom), oom);
    jsonx_put(port, "protocol", jsonx_new_str("TCP", oom), oom);
    json_object *ports = jsonx_new_arr(oom);
    jsonx_push(ports, port, oom);
    if (plaintext_too(in->spec)) {
        json_object *plain = jsonx_new_obj(oom);
        jsonx_put(plain, "name", jsonx_new_str(RENDER_PLAINTEXT_PORT_NAME, oom), oom);
        jsonx_put(plain, "port", jsonx_new_int(RENDER_PLAINTEXT_PORT, oom), oom);
        jsonx_put(plain, "targetPort", jsonx_new_int(RENDER_PLAINTEXT_PORT, oom), oom);
        jsonx_put(plain, "protocol", jsonx_new_str("TCP", oom), oom);
        jsonx_push(ports, plain, oom);
    }
    jsonx_put(spec, "ports", ports, oom);
    jsonx_put(svc, "spec", spec, oom);
    return svc;
}

json_object *render_service(const render_input_t *in)
{
    int oom = 0;
    json_object *svc = service(in, in->name, 1, labels(in, 0, &oom), &oom);
    extra_metadata((json_object *)jsonx_get(svc, "metadata"), in->spec->pod.service_metadata, &oom);
    return jsonx_done(svc, oom);
}

void render_role_service_name(const char *name, const char *role, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s-%s", name, strcmp(role, RENDER_ROLE_PRIMARY) ? "replicas" : "primary");
}

/* spec.service's type and traffic settings (render.h DAY-2) into a role Service's spec. */
static void role_service_spec(json_object *spec, const rdc_spec_t *s, int *oom)
{
    jsonx_put(spec, "type", jsonx_new_str(rdc_spec_service_type_name(s->service.type), oom), oom);
    if (s->service.type == RDC_SVC_CLUSTER_IP)
        return;
    /* Always said, so that taking it out of the spec puts the API's default back. */
    const char *etp = s->service.external_traffic_policy;
    jsonx_put(spec, "externalTrafficPolicy", jsonx_new_str(etp ? etp : "Cluster", oom), oom);
    if (s->service.type == RDC_SVC_LOAD_BALANCER)
        put_knob(spec, "loadBalancerSourceRanges", s->service.source_ranges, oom);
}

json_object *render_role_service(const render_input_t *in, const char *role)
{
    int oom = 0;
    char name[300];
    render_role_service_name(in->name, role, name, sizeof(name));
    json_object *sel = labels(in, 0, &oom);
    jsonx_put(sel, RENDER_LABEL_ROLE, jsonx_new_str(role, &oom), &oom);
    json_object *svc = service(in, name, 0, sel, &oom);
    role_service_spec((json_object *)jsonx_get(svc, "spec"), in->spec, &oom);
    /* spec.service's metadata first: it wins over serviceMetadata's for the same key. */
    json_object *meta = (json_object *)jsonx_get(svc, "metadata");
    json_object *own = jsonx_new_obj(&oom);
    put_knob(own, "labels", in->spec->service.labels, &oom);
    put_knob(own, "annotations", in->spec->service.annotations, &oom);
    extra_metadata(meta, own, &oom);
    json_object_put(own);
    extra_metadata(meta, in->spec->pod.service_metadata, &oom);
    return jsonx_done(svc, oom);
}

/* ---- NetworkPolicy (render.h DAY-2) ------------------------------------------------------ */

/* {"port": port, "protocol": "TCP"} */
static json_object *np_port(int port, int *oom)
{
    json_object *p = jsonx_new_obj(oom);
    jsonx_put(p, "port", jsonx_new_int(port, oom), oom);
    jsonx_put(p, "protocol", jsonx_new_str("TCP", oom), oom);
    return p;
}

/* A peer of the pods with labels (taken), in the namespace ns (NULL: the policy's own). */
static json_object *np_peer(json_object *labels, const char *ns, int *oom)
{
    json_object *peer = jsonx_new_obj(oom), *pods = jsonx_new_obj(oom);
    jsonx_put(pods, "matchLabels", labels, oom);
    jsonx_put(peer, "podSelector", pods, oom);
    if (ns) {
        json_object *nsl = jsonx_new_obj(oom), *nss = jsonx_new_obj(oom);
        jsonx_put(nsl, "kubernetes.io/metadata.name", jsonx_new_str(ns, oom), oom);
        jsonx_put(nss, "matchLabels", nsl, oom);
        jsonx_put(peer, "namespaceSelector", nss, oom);
    }
    return peer;
}

/* An ingress rule: from (taken) to ports (taken). */
static json_object *np_rule(json_object *from, json_object *ports, int *oom)
{
    json_object *r = jsonx_new_obj(oom);
    jsonx_put(r, "from", from, oom);
    jsonx_put(r, "ports", ports, oom);
    return r;
}

json_object *render_network_policy(const render_input_t *cluster_in, const char *operator_ns)
{
    int oom = 0;
    render_input_t all = *cluster_in;
    all.shard = -1; /* every pod of the cluster, whatever shard the caller's context names */
    const render_input_t *in = &all;
    const rdc_spec_t *s = in->spec;
    json_object *np = child_object(in, in->name, "networking.k8s.io/v1", "NetworkPolicy", &oom);
    json_object *from = jsonx_new_arr(&oom), *ports = jsonx_new_arr(&oom), *op = jsonx_new_obj(&oom);
    jsonx_push(from, np_peer(labels(in, 0, &oom), NULL, &oom), &oom);
    jsonx_put(op, RENDER_LABEL_NAME, jsonx_new_str(RENDER_OPERATOR_LABEL_VALUE, &oom), &oom);
    jsonx_push(from, np_peer(op, operator_ns ? operator_ns : RENDER_OPERATOR_NAMESPACE, &oom), &oom);
    /* BACKUP: the cluster's backup Jobs' pods (render_backup_job), in its namespace */
    json_object *bk = jsonx_new_obj(&oom);
    jsonx_put(bk, RENDER_LABEL_BACKUP_CLUSTER, jsonx_new_str(in->name, &oom), &oom);
    jsonx_push(from, np_peer(bk, NULL, &oom), &oom);
    append_all(from, s->netpol.allowed_peers, &oom);
    jsonx_push(ports, np_port(RENDER_REDIS_PORT, &oom), &oom);
    if (plaintext_too(s))
        jsonx_push(ports, np_port(RENDER_PLAINTEXT_PORT, &oom), &oom);
    json_object *ingress = jsonx_new_arr(&oom);
    jsonx_push(ingress, np_rule(from, ports, &oom), &oom);
    if (cluster_mode(in)) {
        json_object *bus_from = jsonx_new_arr(&oom), *bus_ports = jsonx_new_arr(&oom);
        jsonx_push(bus_from, np_peer(labels(in, 0, &oom), NULL, &oom), &oom);
        jsonx_push(bus_ports, np_port(RENDER_CLUSTER_BUS_PORT, &oom), &oom);
        jsonx_push(ingress, np_rule(bus_from, bus_ports, &oom), &oom);
    }
    json_object *spec = jsonx_new_obj(&oom), *sel = jsonx_new_obj(&oom);
    jsonx_put(sel, "matchLabels", labels(in, 0, &oom), &oom);
    jsonx_put(spec, "podSelector", sel, &oom);
    jsonx_put(spec, "policyTypes", str_array(&oom, "Ingress", STR_END), &oom);
    jsonx_put(spec, "ingress", ingress, &oom);
    jsonx_put(np, "spec", spec, &oom);
    return jsonx_done(np, oom);
}

json_object *render_auth_record(const render_input_t *in, const char *password_token)
{
    int oom = 0;
    char name[300];
    snprintf(name, sizeof(name), "%s" RENDER_AUTH_RECORD_SUFFIX, in->name);
    json_object *s = child_object(in, name, "v1", "Secret", &oom);
    jsonx_put(s, "type", jsonx_new_str("Opaque", &oom), &oom);
    json_object *data = jsonx_new_obj(&oom);
    jsonx_put(data, RENDER_AUTH_DEFAULT_KEY, jsonx_new_str(password_token, &oom), &oom);
    jsonx_put(s, "stringData", data, &oom);
    return jsonx_done(s, oom);
}

int render_acl_hash_token(const char *user, char *out, size_t len)
{
    int n = snprintf(out, len, RENDER_ACL_HASH_TOKEN_PREFIX "%s}", user);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int render_acl_file(const rdc_spec_t *spec, buf_t *out)
{
    char tok[128];
    int rc = render_acl_hash_token("default", tok, sizeof(tok)) ||
             buf_printf(out, "user default on #%s " RENDER_ACL_DEFAULT_RULES "\n", tok);
    for (size_t i = 0; i < spec->acl.n_users && !rc; i++) {
        const rdc_acl_user_t *u = &spec->acl.users[i];
        rdc_acl_token_t t[RDC_SPEC_ACL_TOKENS_MAX];
        const char *why = NULL;
        int n = rdc_spec_acl_rules_split(u->rules, t, RDC_SPEC_ACL_TOKENS_MAX, &why);
        rc = n < 0 || render_acl_hash_token(u->name, tok, sizeof(tok)) ||
             buf_printf(out, "user %s on #%s", u->name, tok);
        for (int k = 0; k < n && !rc; k++)
            rc = buf_printf(out, " %.*s", (int)t[k].len, t[k].s);
        rc = rc || buf_puts(out, "\n");
    }
    return rc ? -1 : 0;
}

json_object *render_acl_secret(const render_input_t *in, const char *file, const char *digest, const char *users)
{
    int oom = 0;
    char name[300];
    snprintf(name, sizeof(name), "%s" RENDER_ACL_SUFFIX, in->name);
    json_object *s = child_object(in, name, "v1", "Secret", &oom);
    json_object *meta = (json_object *)jsonx_get(s, "metadata"), *ann = jsonx_new_obj(&oom);
    jsonx_put(ann, RENDER_ACL_DIGEST_ANNOTATION, jsonx_new_str(digest, &oom), &oom);
    jsonx_put(ann, RENDER_ACL_USERS_ANNOTATION, jsonx_new_str(users, &oom), &oom);
    jsonx_put(meta, "annotations", ann, &oom);
    jsonx_put(s, "type", jsonx_new_str("Opaque", &oom), &oom);
    json_object *data = jsonx_new_obj(&oom);
    jsonx_put(data, RENDER_ACL_KEY, jsonx_new_str(file, &oom), &oom);
    jsonx_put(s, "stringData", data, &oom);
    return jsonx_done(s, oom);
}

/* An env var taken from the auth Secret. */
static json_object *secret_env(const render_input_t *in, const char *var, int *oom)
{
    json_object *ref = jsonx_new_obj(oom);
    jsonx_put(ref, "name", jsonx_new_str(in->spec->auth.secret, oom), oom);
    jsonx_put(ref, "key", jsonx_new_str(in->spec->auth.key, oom), oom);
    json_object *from = jsonx_new_obj(oom);
    jsonx_put(from, "secretKeyRef", ref, oom);
    json_object *e = jsonx_new_obj(oom);
    jsonx_put(e, "name", jsonx_new_str(var, oom), oom);
    jsonx_put(e, "valueFrom", from, oom);
    return e;
}

/* An exec probe running `redis-cli ping` (with spec.tls over RENDER_PROBE_SOCKET: the
 * probe's health must not depend on the Secret's certificate). */
static json_object *ping_probe(const rdc_spec_t *spec, int initial_delay, int period, int *oom)
{
    json_object *exec = jsonx_new_obj(oom), *cmd = str_array(oom, "redis-cli", STR_END);
    if (spec->tls.secret) {
        jsonx_push(cmd, jsonx_new_str("-s", oom), oom);
        jsonx_push(cmd, jsonx_new_str(RENDER_PROBE_SOCKET, oom), oom);
    }
    jsonx_push(cmd, jsonx_new_str("ping", oom), oom);
    jsonx_put(exec, "command", cmd, oom);
    json_object *probe = jsonx_new_obj(oom);
    jsonx_put(probe, "exec", exec, oom);
    jsonx_put(probe, "initialDelaySeconds", jsonx_new_int(initial_delay, oom), oom);
    jsonx_put(probe, "periodSeconds", jsonx_new_int(period, oom), oom);
    return probe;
}

/* {"cpu": cpu, "memory": memory} */
static json_object *resource_list(const char *cpu, const char *memory, int *oom)
{
    json_object *l = jsonx_new_obj(oom);
    jsonx_put(l, "cpu", jsonx_new_str(cpu, oom), oom);
    jsonx_put(l, "memory", jsonx_new_str(memory, oom), oom);
    return l;
}

/* {"name": name, "mountPath": path} */
static json_object *mount(const char *name, const char *path, int *oom)
{
    json_object *m = jsonx_new_obj(oom);
    jsonx_put(m, "name", jsonx_new_str(name, oom), oom);
    jsonx_put(m, "mountPath", jsonx_new_str(path, oom), oom);
    return m;
}

/* The redis container's command and environment: redis-server with its redis.conf, the
 * password from the Secret (spec.auth), the pod IP it announces (Replication). */
static void container_command(json_object *c, const rdc_spec_t *spec, const render_input_t *in, int *oom)
{
    json_object *cmd = str_array(oom, "redis-server", "/etc/redis/redis.conf", STR_END), *env = jsonx_new_arr(oom);
    if (spec->auth.secret) {
        /* The password reaches Redis through the environment, expanded by the kubelet:
         * neither the ConfigMap nor the pod spec holds it. */
        const char *const pw[] = {"--requirepass", "$(" RENDER_PASSWORD_ENV ")", "--masterauth",
                                  "$(" RENDER_PASSWORD_ENV ")"};
        for (size_t i = 0; i < sizeof(pw) / sizeof(pw[0]); i++)
            jsonx_push(cmd, jsonx_new_str(pw[i], oom), oom);
        jsonx_push(env, secret_env(in, RENDER_PASSWORD_ENV, oom), oom);
        jsonx_push(env, secret_env(in, "REDISCLI_AUTH", oom), oom);
    }
    if (replicating(spec)) {
        /* A replica names itself by its pod IP (behind NAT or a node-local proxy its
         * connection's source address is another): the primary's INFO lists it so, and
         * FAILOVER TO <pod ip> finds it (SWITCHOVER). A cluster node announces it to the
         * other nodes and to clients (CLUSTER SHARDS). */
        json_object *e = jsonx_new_obj(oom), *from = jsonx_new_obj(oom), *ref = jsonx_new_obj(oom);
        jsonx_put(ref, "fieldPath", jsonx_new_str("status.podIP", oom), oom);
        jsonx_put(from, "fieldRef", ref, oom);
        jsonx_put(e, "name", jsonx_new_str(RENDER_POD_IP_ENV, oom), oom);
        jsonx_put(e, "valueFrom", from, oom);
        jsonx_push(env, e, oom);
        jsonx_push(cmd, jsonx_new_str("--replica-announce-ip", oom), oom);
        jsonx_push(cmd, jsonx_new_str("$(" RENDER_POD_IP_ENV ")", oom), oom);
        if (cluster_mode(in)) {
            jsonx_push(cmd, jsonx_new_str("--cluster-announce-ip", oom), oom);
            jsonx_push(cmd, jsonx_new_str("$(" RENDER_POD_IP_ENV ")", oom), oom);
        }
    }
    if (spec->tls.secret) {
        json_object *e = jsonx_new_obj(oom);
        jsonx_put(e, "name", jsonx_new_str(RENDER_TLS_DIR_ENV, oom), oom);
        jsonx_put(e, "value", jsonx_new_str(RENDER_TLS_DIR, oom), oom);
        jsonx_push(env, e, oom);
    }
    jsonx_put(c, "command", cmd, oom);
    append_all(env, spec->extras.env, oom); /* DAY-2: the user's, after the operator's */
    if (json_object_array_length(env))
        jsonx_put(c, "env", env, oom);
    else
        json_object_put(env);
}

/* The container's securityContext. Pod Security "restricted": no privilege escalation,
 * every capability dropped, a read-only root (Redis writes only to /data: AOF, RDB, and
 * nothing under /tmp since it runs without the image's entrypoint, which would chown);
 * spec.securityContext merged over it. */
static json_object *container_security_context(const rdc_spec_t *spec, int *oom)
{
    json_object *sc = jsonx_new_obj(oom);
    jsonx_put(sc, "allowPrivilegeEscalation", json_object_new_boolean(0), oom);
    json_object *caps = jsonx_new_obj(oom);
    jsonx_put(caps, "drop", str_array(oom, "ALL", STR_END), oom);
    jsonx_put(sc, "capabilities", caps, oom);
    jsonx_put(sc, "readOnlyRootFilesystem", json_object_new_boolean(1), oom);
    merge_into(sc, spec->pod.security_context, oom);
    return sc;
}

/* redis-cli's TLS arguments in a shell script: the files through RENDER_TLS_DIR_ENV (the
 * container's environment holds their directory), so that a runtime that keeps the
 * volumes elsewhere can say where. */
#define CLI_TLS_SCRIPT_ARGS                                                                                          \
    "--tls --cacert \"$" RENDER_TLS_DIR_ENV "/ca.crt\" --cert \"$" RENDER_TLS_DIR_ENV "/tls.crt\" --key \"$"         \
    RENDER_TLS_DIR_ENV "/tls.key\" "

/* script with every "redis-cli " speaking TLS when spec.tls is set (the preStop hook's
 * shell: render.h TLS). */
static json_object *cli_script(const rdc_spec_t *spec, const char *script, int *oom)
{
    if (!spec->tls.secret)
        return jsonx_new_str(script, oom);
    buf_t b;
    buf_init(&b, 0);
    for (const char *p = script, *q; *p; p = q + strlen("redis-cli ")) {
        if (!(q = strstr(p, "redis-cli "))) {
            buf_puts(&b, p);
            break;
        }
        buf_printf(&b, "%.*sredis-cli " CLI_TLS_SCRIPT_ARGS, (int)(q - p), p);
    }
    json_object *s = b.data ? jsonx_new_str(buf_str(&b), oom) : NULL;
    if (!s)
        *oom = 1;
    buf_free(&b);
    return s;
}

/* The TLS Secret's and the ACL file's volumes' mounts, when spec has them. */
static void secret_mounts(json_object *mounts, const rdc_spec_t *spec, int *oom)
{
    if (spec->tls.secret) {
        json_object *m = mount(RENDER_TLS_VOLUME, RENDER_TLS_DIR, oom);
        jsonx_put(m, "readOnly", json_object_new_boolean(1), oom);
        jsonx_push(mounts, m, oom);
    }
    if (spec->acl.n_users) {
        json_object *m = mount(RENDER_ACL_VOLUME, RENDER_ACL_DIR, oom);
        jsonx_put(m, "readOnly", json_object_new_boolean(1), oom);
        jsonx_push(mounts, m, oom);
    }
}

static json_object *redis_container(const render_input_t *in, int *oom)
{
    const rdc_spec_t *spec = in->spec;
    json_object *c = jsonx_new_obj(oom);
    jsonx_put(c, "name", jsonx_new_str("redis", oom), oom);
    buf_t image;
    buf_init(&image, 0);
    if (render_image_ref(spec->image, spec->tag, &image))
        *oom = 1;
    jsonx_put(c, "image", jsonx_new_str(buf_str(&image), oom), oom);
    buf_free(&image);
    container_command(c, spec, in, oom);
    json_object *port = jsonx_new_obj(oom);
    jsonx_put(port, "name", jsonx_new_str("redis", oom), oom);
    jsonx_put(port, "containerPort", jsonx_new_int(RENDER_REDIS_PORT, oom), oom);
    jsonx_put(port, "protocol", jsonx_new_str("TCP", oom), oom);
    json_object *ports = jsonx_new_arr(oom);
    jsonx_push(ports, port, oom);
    if (plaintext_too(spec)) {
        json_object *plain = jsonx_new_obj(oom);
        jsonx_put(plain, "name", jsonx_new_str(RENDER_PLAINTEXT_PORT_NAME, oom), oom);
        jsonx_put(plain, "containerPort", jsonx_new_int(RENDER_PLAINTEXT_PORT, oom), oom);
        jsonx_put(plain, "protocol", jsonx_new_str("TCP", oom), oom);
        jsonx_push(ports, plain, oom);
    }
    jsonx_put(c, "ports", ports, oom);
    json_object *res = spec->pod.resources ? user_resources(spec->pod.resources, oom) : jsonx_new_obj(oom);
    if (!spec->pod.resources) {
        jsonx_put(res, "requests", resource_list(RENDER_CPU_REQUEST, RENDER_MEMORY_REQUEST, oom), oom);
        jsonx_put(res, "limits", resource_list(RENDER_CPU_LIMIT, RENDER_MEMORY_LIMIT, oom), oom);
    }
    jsonx_put(c, "resources", res, oom);
    /* Probes as the design document has them: liveness after 10 s every 10 s; readiness
     * earlier and more often, so a pod joins the Service as soon as it answers. */
    jsonx_put(c, "livenessProbe", ping_probe(spec, 10, 10, oom), oom);
    /* Ready a second after the start: a rollout waits for each restarted pod's Ready, and
     * redis-server answers PING within milliseconds (it loads its AOF first, answering
     * -LOADING, which fails the probe until it is done); the period stays 5 s */
    jsonx_put(c, "readinessProbe", ping_probe(spec, 1, 5, oom), oom);
    if (replicating(spec)) {
        /* SWITCHOVER: a primary's pod being deleted waits for its role to move. */
        json_object *exec = jsonx_new_obj(oom), *pre = jsonx_new_obj(oom), *life = jsonx_new_obj(oom);
        jsonx_put(exec, "command", str_array(oom, "sh", "-c", STR_END), oom);
        jsonx_push((json_object *)jsonx_get(exec, "command"), cli_script(spec, RENDER_PRESTOP_SCRIPT, oom), oom);
        jsonx_put(pre, "exec", exec, oom);
        jsonx_put(life, "preStop", pre, oom);
        jsonx_put(c, "lifecycle", life, oom);
    }
    json_object *mounts = jsonx_new_arr(oom);
    jsonx_push(mounts, mount("data", "/data", oom), oom);
    jsonx_push(mounts, mount("config", "/etc/redis", oom), oom);
    secret_mounts(mounts, spec, oom);
    append_all(mounts, spec->extras.volume_mounts, oom);
    jsonx_put(c, "volumeMounts", mounts, oom);
    if (spec->extras.image_pull_policy)
        jsonx_put(c, "imagePullPolicy", jsonx_new_str(spec->extras.image_pull_policy, oom), oom);
    jsonx_put(c, "securityContext", container_security_context(spec, oom), oom);
    return c;
}

/* The pod's securityContext: not root (the redis images' uid and gid 999), the volumes
 * group-owned by 999 so /data is writable, the runtime's default seccomp profile. */
static json_object *pod_security_context(const render_input_t *in, int *oom)
{
    json_object *sc = jsonx_new_obj(oom);
    jsonx_put(sc, "runAsNonRoot", json_object_new_boolean(1), oom);
    jsonx_put(sc, "runAsUser", jsonx_new_int(RENDER_REDIS_UID, oom), oom);
    jsonx_put(sc, "runAsGroup", jsonx_new_int(RENDER_REDIS_UID, oom), oom);
    jsonx_put(sc, "fsGroup", jsonx_new_int(RENDER_REDIS_UID, oom), oom);
    json_object *seccomp = jsonx_new_obj(oom);
    jsonx_put(seccomp, "type", jsonx_new_str("RuntimeDefault", oom), oom);
    jsonx_put(sc, "seccompProfile", seccomp, oom);
    merge_into(sc, in->spec->pod.pod_security_context, oom);
    return sc;
}

/* A Secret volume named name of secret's items (NULL-terminated), mode 0440 (the pod's
 * fsGroup reads it). */
static json_object *secret_volume(const char *name, const char *secret, const char *const *items, int *oom)
{
    json_object *sv = jsonx_new_obj(oom), *list = jsonx_new_arr(oom), *vol = jsonx_new_obj(oom);
    jsonx_put(sv, "secretName", jsonx_new_str(secret, oom), oom);
    for (size_t i = 0; items[i]; i++) {
        json_object *it = jsonx_new_obj(oom);
        jsonx_put(it, "key", jsonx_new_str(items[i], oom), oom);
        jsonx_put(it, "path", jsonx_new_str(items[i], oom), oom);
        jsonx_push(list, it, oom);
    }
    jsonx_put(sv, "items", list, oom);
    jsonx_put(sv, "defaultMode", jsonx_new_int(0440, oom), oom);
    jsonx_put(vol, "name", jsonx_new_str(name, oom), oom);
    jsonx_put(vol, "secret", sv, oom);
    return vol;
}

/* The TLS Secret's and the ACL file's volumes, when the spec has them (render.h TLS, ACL). */
static void secret_volumes(json_object *volumes, const render_input_t *in, int *oom)
{
    static const char *const tls_items[] = {"tls.crt", "tls.key", "ca.crt", NULL};
    static const char *const acl_items[] = {RENDER_ACL_KEY, NULL};
    if (in->spec->tls.secret)
        jsonx_push(volumes, secret_volume(RENDER_TLS_VOLUME, in->spec->tls.secret, tls_items, oom), oom);
    if (in->spec->acl.n_users) {
        char name[300];
        snprintf(name, sizeof(name), "%s" RENDER_ACL_SUFFIX, in->name);
        jsonx_push(volumes, secret_volume(RENDER_ACL_VOLUME, name, acl_items, oom), oom);
    }
}

/* ---- RESTORE (render.h) ------------------------------------------------------------- */

/* 1 when the pods run with appendonly yes: spec.config.extra's when it sets it, else
 * spec.persistence aof. */
static int appendonly(const rdc_spec_t *spec)
{
    const char *v = extra_value(spec, "appendonly");
    return v ? !strcasecmp(v, "yes") : spec->persistence == RDC_PERSISTENCE_AOF;
}

/* {"name": name, "mountPath": path, "readOnly": true} */
static json_object *read_only_mount(const char *name, const char *path, int *oom)
{
    json_object *m = mount(name, path, oom);
    jsonx_put(m, "readOnly", json_object_new_boolean(1), oom);
    return m;
}

static const char *own_name(const render_input_t *in, char *buf, size_t len);

/* The object in's pods restore (RESTORE): its key and sha256 (NULL: none); in Cluster mode
 * the shard's (spec.restore's shard[in->shard]), restored by the shard's first pod only
 * (*only: "<its StatefulSet>-0", the others start empty and replicate from it). Returns 0
 * when in's pods restore nothing (no restore, or a shard past the backup's). */
static int restore_object(const render_input_t *in, const char **key, const char **sha256, char *only, size_t len)
{
    const rdc_spec_t *spec = in->spec;
    only[0] = '\0';
    if (!spec->restore.endpoint)
        return 0;
    *key = spec->restore.key;
    *sha256 = spec->restore.sha256;
    if (!spec->restore.nshards)
        return 1;
    if (!cluster_mode(in) || in->shard < 0 || in->shard >= spec->restore.nshards)
        return 0;
    char sts[300];
    *key = spec->restore.shard[in->shard].key;
    *sha256 = spec->restore.shard[in->shard].sha256;
    snprintf(only, len, "%s-0", own_name(in, sts, sizeof(sts)));
    return 1;
}

/* The restore init container of spec.restore.from. */
static json_object *restore_container(const render_input_t *in, int *oom)
{
    const rdc_spec_t *spec = in->spec;
    const char *key = NULL, *sha256 = NULL;
    char only[320];
    restore_object(in, &key, &sha256, only, sizeof(only));
    json_object *c = jsonx_new_obj(oom), *mounts = jsonx_new_arr(oom);
    json_object *cmd = str_array(oom, RENDER_RESTORE_BIN, "restore", "--to", RENDER_RESTORE_DATA_DIR "/dump.rdb",
                                 "--endpoint", spec->restore.endpoint, "--bucket", spec->restore.bucket, "--key",
                                 key, "--region", spec->restore.region, "--credentials-dir",
                                 RENDER_RESTORE_CREDENTIALS_DIR, STR_END);
    if (only[0])
        push_strs(cmd, oom, "--only-pod", only, STR_END);
    jsonx_push(mounts, mount("data", RENDER_RESTORE_DATA_DIR, oom), oom);
    jsonx_push(mounts, read_only_mount(RENDER_RESTORE_CREDENTIALS_VOLUME, RENDER_RESTORE_CREDENTIALS_DIR, oom), oom);
    if (appendonly(spec))
        jsonx_push(cmd, jsonx_new_str("--aof", oom), oom);
    if (spec->restore.ca_secret) {
        jsonx_push(cmd, jsonx_new_str("--s3-ca-file", oom), oom);
        jsonx_push(cmd, jsonx_new_str(RENDER_RESTORE_CA_DIR "/ca.crt", oom), oom);
        jsonx_push(mounts, read_only_mount(RENDER_RESTORE_CA_VOLUME, RENDER_RESTORE_CA_DIR, oom), oom);
    }
    if (sha256)
        push_strs(cmd, oom, "--expect-sha256", sha256, STR_END);
    jsonx_put(c, "name", jsonx_new_str(RENDER_RESTORE_CONTAINER, oom), oom);
    jsonx_put(c, "image", jsonx_new_str(in->operator_image ? in->operator_image : RENDER_OPERATOR_IMAGE_DEFAULT, oom),
              oom);
    jsonx_put(c, "command", cmd, oom);
    jsonx_put(c, "volumeMounts", mounts, oom);
    jsonx_put(c, "terminationMessagePolicy", jsonx_new_str("FallbackToLogsOnError", oom), oom);
    jsonx_put(c, "securityContext", container_security_context(spec, oom), oom);
    return c;
}

/* 1 when in's pods restore (RESTORE). */
static int restores(const render_input_t *in)
{
    const char *key, *sha256;
    char only[320];
    return restore_object(in, &key, &sha256, only, sizeof(only));
}

/* The restore container's Secret volumes. */
static void restore_volumes(json_object *volumes, const rdc_spec_t *spec, int *oom)
{
    static const char *const credentials[] = {"access-key-id", "secret-access-key", NULL};
    static const char *const ca[] = {"ca.crt", NULL};
    const char *secret = spec->restore.credentials_secret;
    jsonx_push(volumes, secret_volume(RENDER_RESTORE_CREDENTIALS_VOLUME, secret, credentials, oom), oom);
    if (spec->restore.ca_secret)
        jsonx_push(volumes, secret_volume(RENDER_RESTORE_CA_VOLUME, spec->restore.ca_secret, ca, oom), oom);
}

/* The pod's initContainers: restore's first (RESTORE), then the spec's; nothing when
 * there is neither. */
static void init_containers(json_object *spec, const render_input_t *in, int *oom)
{
    if (!restores(in)) {
        put_knob(spec, "initContainers", in->spec->extras.init_containers, oom);
        return;
    }
    json_object *list = jsonx_new_arr(oom);
    jsonx_push(list, restore_container(in, oom), oom);
    append_all(list, in->spec->extras.init_containers, oom);
    jsonx_put(spec, "initContainers", list, oom);
}

static json_object *pod_template(const render_input_t *in, const char *config_hash, int *oom)
{
    json_object *meta = jsonx_new_obj(oom);
    jsonx_put(meta, "labels", labels(in, 1, oom), oom);
    json_object *ann = jsonx_new_obj(oom);
    jsonx_put(ann, RENDER_CONFIG_HASH_ANNOTATION, jsonx_new_str(config_hash, oom), oom);
    if (in->spec->tls.secret)
        jsonx_put(ann, RENDER_TLS_ANNOTATION, jsonx_new_str(RENDER_TLS_ON, oom), oom);
    jsonx_put(meta, "annotations", ann, oom);
    extra_metadata(meta, in->spec->pod.pod_metadata, oom);

    json_object *containers = jsonx_new_arr(oom);
    jsonx_push(containers, redis_container(in, oom), oom);
    append_all(containers, in->spec->extras.containers, oom); /* DAY-2: sidecars after redis */
    json_object *cm = jsonx_new_obj(oom);
    jsonx_put(cm, "name", jsonx_new_str(in->name, oom), oom);
    json_object *vol = jsonx_new_obj(oom);
    jsonx_put(vol, "name", jsonx_new_str("config", oom), oom);
    jsonx_put(vol, "configMap", cm, oom);
    json_object *volumes = jsonx_new_arr(oom);
    jsonx_push(volumes, vol, oom);
    secret_volumes(volumes, in, oom);
    if (restores(in))
        restore_volumes(volumes, in->spec, oom);
    append_all(volumes, in->spec->extras.volumes, oom);

    json_object *spec = jsonx_new_obj(oom);
    jsonx_put(spec, "securityContext", pod_security_context(in, oom), oom);
    jsonx_put(spec, "containers", containers, oom);
    jsonx_put(spec, "volumes", volumes, oom);
    pod_knobs(spec, in, oom);
    init_containers(spec, in, oom);
    json_object *t = jsonx_new_obj(oom);
    jsonx_put(t, "metadata", meta, oom);
    jsonx_put(t, "spec", spec, oom);
    return t;
}

/* The PersistentVolumeClaim template "data": ReadWriteOnce, the requested size, and a
 * storageClassName only when the spec names one (absent = the cluster's default class). */
static json_object *data_claim_template(const render_input_t *in, int *oom)
{
    json_object *req = jsonx_new_obj(oom);
    jsonx_put(req, "storage", jsonx_new_str(in->spec->storage.size, oom), oom);
    json_object *res = jsonx_new_obj(oom);
    jsonx_put(res, "requests", req, oom);
    json_object *spec = jsonx_new_obj(oom);
    jsonx_put(spec, "accessModes", str_array(oom, "ReadWriteOnce", STR_END), oom);
    jsonx_put(spec, "resources", res, oom);
    if (in->spec->storage.storage_class)
        jsonx_put(spec, "storageClassName", jsonx_new_str(in->spec->storage.storage_class, oom), oom);
    json_object *meta = jsonx_new_obj(oom);
    jsonx_put(meta, "name", jsonx_new_str("data", oom), oom);
    json_object *pvc = jsonx_new_obj(oom);
    jsonx_put(pvc, "metadata", meta, oom);
    jsonx_put(pvc, "spec", spec, oom);
    return pvc;
}

int render_shard_name(const char *name, int k, char *out, size_t len)
{
    int n = snprintf(out, len, "%s-shard%d", name, k);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int render_pod_name(const rdc_spec_t *spec, const char *name, int i, char *out, size_t len)
{
    int per = 1 + spec->cluster.replicas_per_shard, n;
    if (spec->mode == RDC_MODE_CLUSTER)
        n = snprintf(out, len, "%s-shard%d-%d", name, i / per, i % per);
    else
        n = snprintf(out, len, "%s-%d", name, i);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The name of in's StatefulSet and PDB: the cluster's, or its shard's (CLUSTER). */
static const char *own_name(const render_input_t *in, char *buf, size_t len)
{
    if (!cluster_mode(in) || in->shard < 0 || render_shard_name(in->name, in->shard, buf, len))
        return in->name;
    return buf;
}

json_object *render_statefulset(const render_input_t *in, const char *config_hash)
{
    int oom = 0;
    char shard_name[300];
    json_object *sts = child_object(in, own_name(in, shard_name, sizeof(shard_name)), "apps/v1", "StatefulSet", &oom);
    json_object *selector = jsonx_new_obj(&oom);
    jsonx_put(selector, "matchLabels", labels(in, 0, &oom), &oom);
    json_object *vcts = jsonx_new_arr(&oom);
    jsonx_push(vcts, data_claim_template(in, &oom), &oom);

    json_object *spec = jsonx_new_obj(&oom);
    int replicas = in->shard_replicas > 0 ? in->shard_replicas
                   : !cluster_mode(in)      ? in->spec->size
                                            : 1 + in->spec->cluster.replicas_per_shard;
    jsonx_put(spec, "replicas", jsonx_new_int(replicas, &oom), &oom);
    jsonx_put(spec, "serviceName", jsonx_new_str(in->name, &oom), &oom);
    if (cluster_mode(in))
        jsonx_put(spec, "podManagementPolicy", jsonx_new_str("Parallel", &oom), &oom);
    jsonx_put(spec, "selector", selector, &oom);
    jsonx_put(spec, "template", pod_template(in, config_hash, &oom), &oom);
    jsonx_put(spec, "volumeClaimTemplates", vcts, &oom);
    if (replicating(in->spec)) {
        /* SWITCHOVER (plan.h): the operator chooses the order in which pods restart. */
        json_object *us = jsonx_new_obj(&oom);
        jsonx_put(us, "type", jsonx_new_str("OnDelete", &oom), &oom);
        jsonx_put(spec, "updateStrategy", us, &oom);
    }
    if (in->spec->storage.retention_set) {
        json_object *policy = jsonx_new_obj(&oom);
        jsonx_put(policy, "whenDeleted", jsonx_new_str(rdc_spec_retention_name(in->spec->storage.when_deleted), &oom),
                  &oom);
        jsonx_put(policy, "whenScaled", jsonx_new_str(rdc_spec_retention_name(in->spec->storage.when_scaled), &oom),
                  &oom);
        jsonx_put(spec, "persistentVolumeClaimRetentionPolicy", policy, &oom);
    }
    jsonx_put(sts, "spec", spec, &oom);
    return jsonx_done(sts, oom);
}

json_object *render_pdb(const render_input_t *in)
{
    int oom = 0;
    char shard_name[300];
    json_object *pdb =
        child_object(in, own_name(in, shard_name, sizeof(shard_name)), "policy/v1", "PodDisruptionBudget", &oom);
    json_object *selector = jsonx_new_obj(&oom);
    jsonx_put(selector, "matchLabels", labels(in, 0, &oom), &oom);
    const char *percent = in->spec->pdb.max_unavailable_percent;
    json_object *spec = jsonx_new_obj(&oom);
    jsonx_put(spec, "maxUnavailable",
              percent ? jsonx_new_str(percent, &oom) : jsonx_new_int(in->spec->pdb.max_unavailable, &oom), &oom);
    jsonx_put(spec, "selector", selector, &oom);
    jsonx_put(pdb, "spec", spec, &oom);
    return jsonx_done(pdb, oom);
}

/* ---- Quantities ---------------------------------------------------------------------- */

/* Values are kept below 2^126 so that no step can overflow a signed 128-bit integer. */
#define QUANTITY_MAX ((unsigned __int128)1 << 126)

/* The suffix's powers of 2 and 10. Returns 0, or -1 when it is not a suffix. */
static int quantity_suffix(const char *s, int *e2, int *e10)
{
    static const struct {
        const char *s;
        int e2, e10;
    } table[] = {{"", 0, 0},   {"Ki", 10, 0}, {"Mi", 20, 0}, {"Gi", 30, 0}, {"Ti", 40, 0},
                 {"Pi", 50, 0}, {"Ei", 60, 0}, {"n", 0, -9},  {"u", 0, -6},  {"m", 0, -3},
                 {"k", 0, 3},   {"M", 0, 6},   {"G", 0, 9},   {"T", 0, 12},  {"P", 0, 15},
                 {"E", 0, 18}};
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (!strcmp(s, table[i].s)) {
            *e2 = table[i].e2;
            *e10 = table[i].e10;
            return 0;
        }
    }
    /* Decimal exponent: e or E, an optional sign, digits ("1e3", "5E-2"). */
    if (*s != 'e' && *s != 'E')
        return -1;
    s++;
    int neg = (*s == '-');
    if (*s == '+' || *s == '-')
        s++;
    if (!*s)
        return -1;
    int v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > 100)
            return -1;
        v = v * 10 + (*s - '0');
    }
    *e2 = 0;
    *e10 = neg ? -v : v;
    return 0;
}

int render_quantity_nano(const char *s, __int128 *nano)
{
    if (!s || !*s)
        return -1;
    const char *p = s;
    int neg = (*p == '-');
    if (*p == '+' || *p == '-')
        p++;
    unsigned __int128 m = 0;
    int digits = 0, significant = 0, frac = 0, dot = 0;
    for (;; p++) {
        if (*p >= '0' && *p <= '9') {
            digits++;
            if (dot)
                frac++;
            if (m == 0 && *p == '0')
                continue;
            if (++significant > 30)
                return -1;
            m = m * 10 + (unsigned)(*p - '0');
        } else if (*p == '.' && !dot) {
            dot = 1;
        } else {
            break;
        }
    }
    int e2 = 0, e10 = 0;
    if (!digits || quantity_suffix(p, &e2, &e10))
        return -1;
    for (int i = 0; i < e2; i++) {
        if (m >= QUANTITY_MAX / 2)
            return -1;
        m *= 2;
    }
    int scale = e10 + 9 - frac; /* value = m * 10^scale nano-units */
    for (; scale > 0 && m; scale--) {
        if (m >= QUANTITY_MAX / 10)
            return -1;
        m *= 10;
    }
    int inexact = 0;
    for (; scale < 0 && m; scale++) {
        inexact |= (m % 10) != 0;
        m /= 10;
    }
    if (inexact)
        m++; /* the API server rounds a fraction of a nano-unit up */
    *nano = neg ? -(__int128)m : (__int128)m;
    return 0;
}

int render_quantity_equal(const char *a, const char *b)
{
    if (!strcmp(a, b))
        return 1;
    __int128 x, y;
    if (render_quantity_nano(a, &x) || render_quantity_nano(b, &y))
        return 0;
    return x == y;
}

/* ---- BACKUP (render.h) --------------------------------------------------------------- */

/* The take command of b: the source, the destination, the Secrets' files. */
static json_object *backup_command(const render_input_t *in, const render_backup_t *b,
                                   const render_backup_take_t *t, int *oom)
{
    const rdc_spec_t *spec = in->spec;
    char redis[80], keep[16], pw[300];
    snprintf(redis, sizeof(redis), strchr(t->ip, ':') ? "[%s]:%d" : "%s:%d", t->ip, RENDER_REDIS_PORT);
    json_object *cmd = str_array(oom, RENDER_RESTORE_BIN, "take", "--redis", redis, STR_END);
    if (spec->auth.secret) {
        snprintf(pw, sizeof(pw), RENDER_BACKUP_DIR "/auth/%s", spec->auth.key);
        push_strs(cmd, oom, "--password-file", pw, STR_END);
    }
    if (spec->tls.secret)
        push_strs(cmd, oom, "--tls-dir", RENDER_BACKUP_DIR "/tls", STR_END);
    push_strs(cmd, oom, "--endpoint", b->endpoint, "--bucket", b->bucket, STR_END);
    if (b->region)
        push_strs(cmd, oom, "--region", b->region, STR_END);
    snprintf(keep, sizeof(keep), "%d", b->keep);
    if (t->key)
        push_strs(cmd, oom, "--key", t->key, STR_END);
    else
        push_strs(cmd, oom, "--prefix", t->prefix, "--keep", keep, STR_END);
    if (t->slots)
        push_strs(cmd, oom, "--slots", t->slots, STR_END);
    push_strs(cmd, oom, "--credentials-dir", RENDER_BACKUP_DIR "/s3", STR_END);
    if (b->ca_secret)
        push_strs(cmd, oom, "--s3-ca-file", RENDER_BACKUP_DIR "/s3-ca/ca.crt", STR_END);
    push_strs(cmd, oom, "--termination-log", "/dev/termination-log", STR_END);
    return cmd;
}

/* The Secret volumes of the Job's pod (vols) and their read-only mounts (mounts). */
static void backup_volumes(const render_input_t *in, const render_backup_t *b, json_object *vols,
                           json_object *mounts, int *oom)
{
    static const char *const tls_items[] = {"tls.crt", "tls.key", "ca.crt", NULL};
    static const char *const credentials[] = {"access-key-id", "secret-access-key", NULL};
    static const char *const ca[] = {"ca.crt", NULL};
    const char *auth_items[] = {in->spec->auth.key, NULL};
    const struct {
        const char *volume, *secret, *const *items, *path;
    } v[] = {
        {"backup-auth", in->spec->auth.secret, auth_items, RENDER_BACKUP_DIR "/auth"},
        {"backup-tls", in->spec->tls.secret, tls_items, RENDER_BACKUP_DIR "/tls"},
        {"backup-s3", b->credentials_secret, credentials, RENDER_BACKUP_DIR "/s3"},
        {"backup-s3-ca", b->ca_secret, ca, RENDER_BACKUP_DIR "/s3-ca"},
    };
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        if (!v[i].secret)
            continue;
        jsonx_push(vols, secret_volume(v[i].volume, v[i].secret, v[i].items, oom), oom);
        jsonx_push(mounts, read_only_mount(v[i].volume, v[i].path, oom), oom);
    }
}

/* The container of take k of b (its mounts: mounts, copied). */
static json_object *backup_container(const render_input_t *in, const render_backup_t *b, int k,
                                     const json_object *mounts, int *oom)
{
    json_object *c = jsonx_new_obj(oom), *m = NULL;
    char name[32];
    if (b->sharded)
        snprintf(name, sizeof(name), RENDER_BACKUP_SHARD_PREFIX "%d", k);
    else
        snprintf(name, sizeof(name), RENDER_BACKUP_CONTAINER);
    if (json_object_deep_copy((json_object *)mounts, &m, NULL))
        *oom = 1;
    jsonx_put(c, "name", jsonx_new_str(name, oom), oom);
    jsonx_put(c, "image", jsonx_new_str(in->operator_image ? in->operator_image : RENDER_OPERATOR_IMAGE_DEFAULT, oom),
              oom);
    jsonx_put(c, "command", backup_command(in, b, &b->take[k], oom), oom);
    jsonx_put(c, "volumeMounts", m, oom);
    jsonx_put(c, "terminationMessagePolicy", jsonx_new_str("FallbackToLogsOnError", oom), oom);
    jsonx_put(c, "securityContext", container_security_context(in->spec, oom), oom);
    return c;
}

/* The Job's pod template. */
static json_object *backup_template(const render_input_t *in, const render_backup_t *b, int *oom)
{
    json_object *vols = jsonx_new_arr(oom), *mounts = jsonx_new_arr(oom);
    backup_volumes(in, b, vols, mounts, oom);
    json_object *spec = jsonx_new_obj(oom), *containers = jsonx_new_arr(oom), *meta = jsonx_new_obj(oom);
    json_object *l = jsonx_new_obj(oom), *t = jsonx_new_obj(oom);
    for (int k = 0; k < b->ntakes && mounts; k++)
        jsonx_push(containers, backup_container(in, b, k, mounts, oom), oom);
    json_object_put(mounts);
    jsonx_put(spec, "restartPolicy", jsonx_new_str("Never", oom), oom);
    jsonx_put(spec, "securityContext", pod_security_context(in, oom), oom);
    jsonx_put(spec, "containers", containers, oom);
    jsonx_put(spec, "volumes", vols, oom);
    jsonx_put(l, RENDER_LABEL_BACKUP_CLUSTER, jsonx_new_str(in->name, oom), oom);
    jsonx_put(l, RENDER_LABEL_BACKUP, jsonx_new_str(b->name, oom), oom);
    jsonx_put(meta, "labels", l, oom);
    jsonx_put(t, "metadata", meta, oom);
    jsonx_put(t, "spec", spec, oom);
    return t;
}

json_object *render_backup_job(const render_input_t *in, const render_backup_t *b)
{
    int oom = 0;
    json_object *job = jsonx_new_obj(&oom), *m = jsonx_new_obj(&oom), *l = jsonx_new_obj(&oom);
    jsonx_put(job, "apiVersion", jsonx_new_str("batch/v1", &oom), &oom);
    jsonx_put(job, "kind", jsonx_new_str("Job", &oom), &oom);
    jsonx_put(m, "name", jsonx_new_str(b->name, &oom), &oom);
    jsonx_put(m, "namespace", jsonx_new_str(b->ns, &oom), &oom);
    jsonx_put(l, RENDER_LABEL_MANAGED_BY, jsonx_new_str(RENDER_FIELD_MANAGER, &oom), &oom);
    jsonx_put(l, RENDER_LABEL_INSTANCE, jsonx_new_str(in->name, &oom), &oom);
    jsonx_put(l, RENDER_LABEL_BACKUP, jsonx_new_str(b->name, &oom), &oom);
    jsonx_put(m, "labels", l, &oom);
    jsonx_put(m, "ownerReferences", render_controller_refs("RedisBackup", b->name, b->uid, &oom), &oom);
    jsonx_put(job, "metadata", m, &oom);
    json_object *spec = jsonx_new_obj(&oom);
    jsonx_put(spec, "backoffLimit", jsonx_new_int(0, &oom), &oom);
    jsonx_put(spec, "activeDeadlineSeconds", jsonx_new_int(RENDER_BACKUP_DEADLINE_S, &oom), &oom);
    jsonx_put(spec, "template", backup_template(in, b, &oom), &oom);
    jsonx_put(job, "spec", spec, &oom);
    return jsonx_done(job, oom);
}
