#include "workitem.h"

int workitem_children(const cache_t *c, const char *key, const char *observation, size_t obslen, buf_t *out)
{
    static const char *const kinds[] = {"ConfigMap", "Service", "StatefulSet", "PodDisruptionBudget"};
    if (cache_children_json(c, key, kinds, sizeof(kinds) / sizeof(kinds[0]), out) || !out->len || out->data[out->len - 1] != '}')
        return -1;
    out->data[--out->len] = '\0'; /* reopen the object */
    if (buf_puts(out, ",\"Pods\":") || cache_label_children_json(c, "Pod", key, out) ||
        buf_puts(out, ",\"Redis\":") ||
        (observation ? buf_append(out, observation, obslen) : buf_puts(out, "null")) || buf_puts(out, "}"))
        return -1;
    return 0;
}
