#include "obsdiff.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a normalized CLUSTER NODES text may grow to (redis_conn's reply cap). */
#define NODES_TEXT_MAX ((size_t)64 << 20)

static const obs_node_t *find_pod(const obs_node_t *nodes, size_t n, const char *pod)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(nodes[i].pod, pod) == 0)
            return &nodes[i];
    return NULL;
}

static const char *state_name(int state_ok)
{
    return state_ok < 0 ? "unknown" : state_ok ? "ok" : "fail";
}

static int text_differs(const char *a, const char *b)
{
    return (a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0);
}

/* The first difference that is news between the cluster objects of a and b (same pod),
 * or NULL; *what says which. */
static const char *cluster_news(const obs_cluster_t *a, const obs_cluster_t *b, char *what, size_t cap)
{
    int had = a->on && a->known, has = b->on && b->known;
    if (had != has) {
        snprintf(what, cap, "cluster %s", has ? "known" : "gone");
        return what;
    }
    if (!has)
        return NULL;
    if (text_differs(a->nodes, b->nodes) || strcmp(a->error, b->error) != 0) {
        snprintf(what, cap, "cluster nodes changed%s%.200s", b->nodes ? "" : ": ", b->nodes ? "" : b->error);
        return what;
    }
    if (a->info.state_ok != b->info.state_ok) {
        snprintf(what, cap, "cluster state %s->%s", state_name(a->info.state_ok), state_name(b->info.state_ok));
        return what;
    }
    const struct {
        const char *name;
        int a, b;
    } counts[] = {{"slotsAssigned", a->info.slots_assigned, b->info.slots_assigned},
                  {"slotsOk", a->info.slots_ok, b->info.slots_ok},
                  {"slotsPfail", a->info.slots_pfail, b->info.slots_pfail},
                  {"slotsFail", a->info.slots_fail, b->info.slots_fail}};
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        if (counts[i].a != counts[i].b) {
            snprintf(what, cap, "cluster %s %d->%d", counts[i].name, counts[i].a, counts[i].b);
            return what;
        }
    }
    return NULL;
}

/* The first difference that is news between a and b (same pod), or NULL; *what gets the
 * field's name and the two values. */
static const char *node_news(const obs_node_t *a, const obs_node_t *b, char *what, size_t cap)
{
    if (strcmp(a->ip, b->ip) != 0) {
        snprintf(what, cap, "ip %s->%s", a->ip, b->ip);
        return what;
    }
    if (a->reachable != b->reachable) {
        snprintf(what, cap, "reachable %s->%s", a->reachable ? "true" : "false", b->reachable ? "true" : "false");
        return what;
    }
    if (a->role != b->role) {
        snprintf(what, cap, "role %s->%s", redisinfo_role_name(a->role), redisinfo_role_name(b->role));
        return what;
    }
    if (strcmp(a->master_host, b->master_host) != 0 || a->master_port != b->master_port) {
        snprintf(what, cap, "master %s:%d->%s:%d", a->master_host, a->master_port, b->master_host, b->master_port);
        return what;
    }
    if (a->link_up != b->link_up) {
        snprintf(what, cap, "linkUp %s->%s", a->link_up ? "true" : "false", b->link_up ? "true" : "false");
        return what;
    }
    if (strcmp(a->tls_cert, b->tls_cert)) {
        snprintf(what, cap, "tlsCert %.12s->%.12s", a->tls_cert, b->tls_cert);
        return what;
    }
    return cluster_news(&a->cluster, &b->cluster, what, cap);
}

/* The first piece of news, described in out; 1 when there is one. */
static int first_news(const obs_node_t *prev, size_t nprev, const obs_node_t *cur, size_t ncur, char *out,
                      size_t cap)
{
    char what[600];
    if (nprev != ncur) {
        snprintf(out, cap, "nodes: %zu->%zu", nprev, ncur);
        return 1;
    }
    for (size_t i = 0; i < ncur; i++) {
        const obs_node_t *p = find_pod(prev, nprev, cur[i].pod);
        if (!p) {
            snprintf(out, cap, "%s: new node", cur[i].pod);
            return 1;
        }
        if (node_news(p, &cur[i], what, sizeof(what))) {
            snprintf(out, cap, "%s: %s", cur[i].pod, what);
            return 1;
        }
    }
    return 0;
}

/* A node plan waits on: unreachable, with an IP, not (last known as) a replica. */
static int still_down(const obs_node_t *x)
{
    return !x->reachable && x->ip[0] && x->role != REDISINFO_ROLE_SLAVE;
}

/* 1 when some node of cur is a replica of ip with its link up. */
static int followed(const obs_node_t *cur, size_t ncur, const char *ip)
{
    for (size_t i = 0; i < ncur; i++)
        if (cur[i].role == REDISINFO_ROLE_SLAVE && cur[i].link_up && !strcmp(cur[i].master_host, ip))
            return 1;
    return 0;
}

int obsdiff_still_down_due(const obs_node_t *cur, size_t ncur, int64_t down_after_ms, int64_t since_sent_ms)
{
    if (down_after_ms < 0)
        return 0; /* no failover: nobody waits for downAfter */
    if (down_after_ms == 0)
        down_after_ms = OBSDIFF_DEFAULT_DOWN_AFTER_MS;
    int any = 0, young = 0;
    for (size_t i = 0; i < ncur; i++) {
        if (!still_down(&cur[i]))
            continue;
        any = 1;
        int64_t down = cur[i].last_ok_ago_ms > cur[i].down_since_ms ? cur[i].last_ok_ago_ms : cur[i].down_since_ms;
        if (down < down_after_ms + OBSDIFF_STILL_DOWN_MARGIN_MS || followed(cur, ncur, cur[i].ip))
            young = 1;
    }
    if (!any)
        return 0;
    return since_sent_ms >= (young ? OBSDIFF_STILL_DOWN_EVERY_MS : OBSDIFF_STILL_DOWN_SLOW_MS);
}

obsdiff_t obsdiff_compare(const obs_node_t *prev, size_t nprev, const obs_node_t *cur, size_t ncur)
{
    char why[8];
    if (first_news(prev, nprev, cur, ncur, why, sizeof(why)))
        return OBSDIFF_CHANGED;
    for (size_t i = 0; i < ncur; i++)
        if (still_down(&cur[i]))
            return OBSDIFF_STILL_DOWN;
    return OBSDIFF_SAME;
}

void obsdiff_explain(const obs_node_t *prev, size_t nprev, const obs_node_t *cur, size_t ncur, char *out,
                     size_t cap)
{
    if (!cap)
        return;
    out[0] = '\0';
    (void)first_news(prev, nprev, cur, ncur, out, cap);
}

/* Add node x's "cluster" object to e when it has one. Returns non-zero when memory ran out. */
static int cluster_json(const obs_cluster_t *x, json_object *e)
{
    if (!x->on || !x->known)
        return 0;
    json_object *o = json_object_new_object();
    if (!o || json_object_object_add(e, "cluster", o)) {
        json_object_put(o);
        return 1;
    }
    int bad = 0;
    if (x->nodes)
        bad |= json_object_object_add(o, "nodes", json_object_new_string(x->nodes));
    else
        bad |= json_object_object_add(o, "error", json_object_new_string(x->error));
    if (x->info.state_ok >= 0)
        bad |= json_object_object_add(o, "state", json_object_new_string(state_name(x->info.state_ok)));
    const struct {
        const char *name;
        int64_t v;
    } figs[] = {{"slotsAssigned", x->info.slots_assigned}, {"slotsOk", x->info.slots_ok},
                {"slotsPfail", x->info.slots_pfail},       {"slotsFail", x->info.slots_fail},
                {"knownNodes", x->info.known_nodes},       {"currentEpoch", x->info.current_epoch}};
    for (size_t i = 0; i < sizeof(figs) / sizeof(figs[0]); i++)
        bad |= json_object_object_add(o, figs[i].name, json_object_new_int64(figs[i].v < 0 ? -1 : figs[i].v));
    return bad;
}

int obsdiff_json(const obs_node_t *nodes, size_t n, const char *observed_at, buf_t *out)
{
    json_object *o = json_object_new_object(), *arr = json_object_new_array();
    int bad = !o || !arr;
    if (!bad && json_object_object_add(o, "nodes", arr)) {
        json_object_put(arr);
        bad = 1;
    } else if (bad) {
        json_object_put(arr);
    }
    if (!bad)
        bad |= json_object_object_add(o, "observedAt", json_object_new_string(observed_at ? observed_at : ""));
    for (size_t i = 0; !bad && i < n; i++) {
        const obs_node_t *x = &nodes[i];
        json_object *e = json_object_new_object();
        if (!e || json_object_array_add(arr, e)) {
            json_object_put(e);
            bad = 1;
            break;
        }
        bad |= json_object_object_add(e, "pod", json_object_new_string(x->pod));
        bad |= json_object_object_add(e, "ip", json_object_new_string(x->ip));
        bad |= json_object_object_add(e, "reachable", json_object_new_boolean(x->reachable));
        bad |= json_object_object_add(e, "role", json_object_new_string(redisinfo_role_name(x->role)));
        bad |= json_object_object_add(e, "masterHost", json_object_new_string(x->master_host));
        bad |= json_object_object_add(e, "masterPort", json_object_new_int(x->master_port));
        bad |= json_object_object_add(e, "linkUp", json_object_new_boolean(x->link_up));
        bad |= json_object_object_add(e, "offset", json_object_new_int64(x->offset));
        bad |= json_object_object_add(e, "lastOkAgoMs", json_object_new_int64(x->last_ok_ago_ms));
        bad |= json_object_object_add(e, "downSinceMs", json_object_new_int64(x->down_since_ms));
        bad |= json_object_object_add(e, "linkDownSinceMs", json_object_new_int64(x->link_down_ms));
        if (x->tls_cert[0])
            bad |= json_object_object_add(e, "tlsCert", json_object_new_string(x->tls_cert));
        bad |= json_object_object_add(e, "probedAgoMs", json_object_new_int64(x->probed_ago_ms));
        bad |= json_object_object_add(e, "masterIoAgoMs", json_object_new_int64(x->master_io_ms));
        bad |= json_object_object_add(e, "keys", json_object_new_int64(x->keys));
        bad |= cluster_json(&x->cluster, e);
    }
    const char *text =
        bad ? NULL : json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
    int rc = text ? buf_puts(out, text) : -1;
    json_object_put(o);
    return rc ? -1 : 0;
}

int obsdiff_copy(const obs_node_t *nodes, size_t n, obs_node_t **out)
{
    *out = NULL;
    if (!n)
        return 0;
    obs_node_t *copy = malloc(n * sizeof(*copy));
    if (!copy)
        return -1;
    memcpy(copy, nodes, n * sizeof(*copy));
    for (size_t i = 0; i < n; i++)
        copy[i].cluster.nodes = NULL;
    for (size_t i = 0; i < n; i++) {
        if (nodes[i].cluster.nodes && !(copy[i].cluster.nodes = strdup(nodes[i].cluster.nodes))) {
            obsdiff_free(&copy, n);
            return -1;
        }
    }
    *out = copy;
    return 0;
}

void obsdiff_free(obs_node_t **nodes_p, size_t n)
{
    if (!nodes_p || !*nodes_p)
        return;
    for (size_t i = 0; i < n; i++)
        free((char *)(*nodes_p)[i].cluster.nodes);
    free(*nodes_p);
    *nodes_p = NULL;
}

int obsdiff_normalize_nodes(const char *text, size_t len, char **out, char *err, size_t errlen)
{
    *out = NULL;
    cn_view_t *view = NULL;
    if (cn_parse(text, len, &view, err, errlen))
        return -1;
    /* The normalized text is about as long as the answer (ping and pong shrink to 0); a
     * few lines may grow ("noflags" for a flags field cn_parse knows nothing of). */
    char *buf = NULL;
    int rc = -1;
    for (size_t cap = len + 256; cap <= NODES_TEXT_MAX && rc; cap *= 2) {
        free(buf);
        if (!(buf = malloc(cap)))
            break;
        rc = cn_format(view, buf, cap);
    }
    cn_view_destroy(&view);
    if (rc) {
        free(buf);
        snprintf(err, errlen, "out of memory normalizing CLUSTER NODES");
        return -1;
    }
    *out = buf;
    return 0;
}
