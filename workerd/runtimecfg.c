/* runtimecfg: the run-time directives to CONFIG SET, and on which pods. See runtimecfg.h. */
#include "runtimecfg.h"

#include "buf.h"
#include "jsonx.h"
#include "projection.h"
#include "redisexec.h"
#include "render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 when s ends with suffix. */
static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* 1 when the pod's Ready condition is True. */
static int ready(const json_object *pod)
{
    const json_object *k = jsonx_find(JSONX_AT(pod, "status", "conditions"), "type", "Ready");
    return k && jsonx_str_is(k, "status", "True");
}

/* The restartCount of the pod's redis container, 0 when not reported. */
static long long restarts(const json_object *pod)
{
    const json_object *c = jsonx_find(JSONX_AT(pod, "status", "containerStatuses"), "name", "redis");
    return (long long)jsonx_int_or(c, "restartCount", 0);
}


typedef struct {
    const char *name, *value;
} directive_t;

static int by_directive(const void *a, const void *b)
{
    return strcmp(((const directive_t *)a)->name, ((const directive_t *)b)->name);
}

/* The run-time directives of spec (NULL: a default spec), sorted by name, into d (at most
 * RUNTIMECFG_MAX_DIRECTIVES); returns how many. spec.persistence's (render.h
 * PERSISTENCE) always, then spec.config.extra's run-time ones. */
static size_t directives_of(const rdc_spec_t *spec, directive_t d[RUNTIMECFG_MAX_DIRECTIVES])
{
    render_directive_t p[RENDER_PERSISTENCE_MAX];
    size_t n = render_persistence(spec, p);
    for (size_t i = 0; i < n; i++)
        d[i] = (directive_t){p[i].name, p[i].value};
    for (size_t i = 0; spec && i < spec->config.n_extra && n < RUNTIMECFG_MAX_DIRECTIVES; i++) {
        const rdc_directive_t *x = &spec->config.extra[i];
        if (redisconf_runtime_settable(x->name) && !ends_with(x->value, REDISEXEC_PASSWORD_TOKEN) &&
            !ends_with(x->value, REDISEXEC_OLD_PASSWORD_TOKEN))
            d[n++] = (directive_t){x->name, x->value};
    }
    qsort(d, n, sizeof(d[0]), by_directive);
    return n;
}

/* The hash of the "name value\n" lines of d[0..n) into hex. Returns 0 or -1. */
static int hash_of(const directive_t *d, size_t n, char hex[65])
{
    buf_t lines;
    buf_init(&lines, 0);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++)
        rc = buf_printf(&lines, "%s %s\n", d[i].name, d[i].value);
    if (!rc)
        rc = render_sha256_hex(lines.data, lines.len, hex);
    buf_free(&lines);
    return rc;
}

/* The directives to send into out->argv ("CONFIG", "SET", then the pairs), their hash into
 * out->hash, and the hash of a default spec's (what a pod without the annotation runs)
 * into baseline. Returns 0, or -1 when hashing failed. */
static int directives(const rdc_spec_t *spec, runtimecfg_t *out, char baseline[65])
{
    directive_t d[RUNTIMECFG_MAX_DIRECTIVES], base[RUNTIMECFG_MAX_DIRECTIVES];
    size_t n = directives_of(spec, d), nb = directives_of(NULL, base);
    if (hash_of(d, n, out->hash) || hash_of(base, nb, baseline))
        return -1;
    out->argv[0] = "CONFIG";
    out->argv[1] = "SET";
    int argc = 2;
    for (size_t i = 0; i < n; i++) {
        out->argv[argc++] = d[i].name;
        out->argv[argc++] = d[i].value;
    }
    out->argc = argc;
    return 0;
}

size_t runtimecfg_pods(const rdc_spec_t *spec, const char *name, int size, const json_object *pods,
                       const json_object *observation, const char *annotation, const char *hash, int none_current,
                       runtimecfg_pod_t *out, size_t cap)
{
    size_t len = jsonx_len(pods), n = 0;
    for (int i = 0; i < size && i < RDC_SPEC_CLUSTER_SIZE_MAX && n < cap; i++) {
        char want[300];
        if ((spec && render_pod_name(spec, name, i, want, sizeof(want))) ||
            (!spec && (size_t)snprintf(want, sizeof(want), "%s-%d", name, i) >= sizeof(want)))
            continue;
        for (size_t k = 0; k < len; k++) {
            const json_object *pod = json_object_array_get_idx(pods, k);
            const json_object *meta = jsonx_get(pod, "metadata");
            const char *pn = JSONX_STR_AT(meta, "name"), *ip = JSONX_STR_AT(pod, "status", "podIP");
            if (!pn || strcmp(pn, want))
                continue;
            if (!ip || !*ip || !ready(pod) || jsonx_get(meta, "deletionTimestamp") ||
                projection_observed_unreachable(observation, pn) /* OBSERVATIONS */)
                break;
            runtimecfg_pod_t *p = &out[n];
            snprintf(p->record, sizeof(p->record), "%s/%lld", hash, restarts(pod));
            const char *have = JSONX_STR_AT(meta, "annotations", annotation);
            p->have = have ? have : "";
            if (!strcmp(p->have, p->record) || (!have && none_current))
                break;
            snprintf(p->pod, sizeof(p->pod), "%s", pn);
            p->ip = ip;
            p->meta = meta;
            n++;
            break;
        }
    }
    return n;
}

int runtimecfg_compute(const rdc_spec_t *spec, const char *name, int size, const json_object *pods,
                       const json_object *observation, runtimecfg_t *out)
{
    memset(out, 0, sizeof(*out));
    char baseline[65];
    if (directives(spec, out, baseline)) {
        memset(out, 0, sizeof(*out));
        return -1;
    }
    if (!name)
        return 0;
    /* no record: the pod runs what its redis.conf said when it started, the default
     * directives unless it was given others (runtimecfg.h) */
    out->n_pods = runtimecfg_pods(spec, name, size, pods, observation, RUNTIMECFG_ANNOTATION, out->hash,
                                  !strcmp(out->hash, baseline), out->pods, RDC_SPEC_CLUSTER_SIZE_MAX);
    return 0;
}
