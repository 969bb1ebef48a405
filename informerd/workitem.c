#include "workitem.h"

#include "rdc_spec.h"

#include <stdio.h>
#include <string.h>

/* Append ,"<field>":[...] with the cached objects of kind at <key>-shard<k>, k from 0 to
 * RDC_SPEC_CLUSTER_SHARDS_MAX - 1 (Cluster mode's shards; a shard left behind by a
 * scale-in is listed too). Returns 0 or -1. */
static int shard_children(const cache_t *c, const char *key, const char *kind, const char *field, buf_t *out)
{
    if (buf_printf(out, ",\"%s\":[", field))
        return -1;
    int n = 0;
    for (int k = 0; k < RDC_SPEC_CLUSTER_SHARDS_MAX; k++) {
        char name[600];
        if ((size_t)snprintf(name, sizeof(name), "%s-shard%d", key, k) >= sizeof(name))
            return -1;
        const char *o = cache_get_json(c, kind, name);
        if (o && buf_printf(out, "%s%s", n++ ? "," : "", o))
            return -1;
    }
    return buf_puts(out, "]");
}

/* Append ,"<field>":[...] with the objects of kind that belong to key by label or field,
 * only when there is one (a cluster without backups: the work item as before). 0 or -1. */
static int label_children(const cache_t *c, const char *key, const char *kind, const char *field, buf_t *out)
{
    size_t mark = out->len;
    if (buf_printf(out, ",\"%s\":", field) || cache_label_children_json(c, kind, key, out))
        return -1;
    if (out->len >= 2 && !strcmp(out->data + out->len - 2, "[]")) {
        out->len = mark;
        out->data[mark] = '\0';
    }
    return 0;
}

int workitem_children(const cache_t *c, const char *key, const char *observation, size_t obslen, buf_t *out)
{
    static const char *const kinds[] = {"ConfigMap", "Service", "StatefulSet", "PodDisruptionBudget"};
    if (cache_children_json(c, key, kinds, sizeof(kinds) / sizeof(kinds[0]), out) || !out->len ||
        out->data[out->len - 1] != '}')
        return -1;
    out->data[--out->len] = '\0'; /* reopen the object */
    /* The role Services of a Replication cluster: <name>-primary, <name>-replicas. */
    static const char *const role[2][2] = {{"ServicePrimary", "-primary"}, {"ServiceReplicas", "-replicas"}};
    for (int i = 0; i < 2; i++) {
        char k[600];
        if ((size_t)snprintf(k, sizeof(k), "%s%s", key, role[i][1]) >= sizeof(k))
            return -1;
        const char *o = cache_get_json(c, "Service", k);
        if (buf_printf(out, ",\"%s\":%s", role[i][0], o ? o : "null"))
            return -1;
    }
    /* DAY-2: the NetworkPolicy <name> (spec.networkPolicy). */
    const char *np = cache_get_json(c, "NetworkPolicy", key);
    if (buf_printf(out, ",\"NetworkPolicy\":%s", np ? np : "null"))
        return -1;
    if (shard_children(c, key, "StatefulSet", "ShardStatefulSets", out) ||
        shard_children(c, key, "PodDisruptionBudget", "ShardBudgets", out))
        return -1;
    /* BACKUPS: the cluster's RedisBackups, their Jobs and the Jobs' pods. */
    static const char *const backups[][2] = {
        {"RedisBackup", "RedisBackups"}, {"Job", "Jobs"}, {"BackupPod", "BackupPods"}};
    for (size_t i = 0; i < sizeof(backups) / sizeof(backups[0]); i++)
        if (label_children(c, key, backups[i][0], backups[i][1], out))
            return -1;
    if (buf_puts(out, ",\"Pods\":") || cache_label_children_json(c, "Pod", key, out) ||
        buf_puts(out, ",\"Redis\":") ||
        (observation ? buf_append(out, observation, obslen) : buf_puts(out, "null")) || buf_puts(out, "}"))
        return -1;
    return 0;
}
