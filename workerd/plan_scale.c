/* plan_scale: SCALE-IN in Replication mode. See plan_scale.h. */
#include "plan_scale.h"

#include "jsonx.h"
#include "topology.h"

int plan_scale_in_hold(const plan_ctx_t *c, const json_object *sts)
{
    int size = c->spec->size;
    int64_t have = jsonx_int_or(jsonx_get(sts, "spec"), "replicas", 0);
    if (c->spec->mode != RDC_MODE_REPLICATION || !sts || have <= size || have > TOPO_MAX_NODES)
        return 0;
    const json_object *status = jsonx_get(c->rc, "status");
    /* The ordinals below have: those of the pods that still run. */
    int pord = topo_ordinal(c->name, (int)have, jsonx_str_set(status, "primary"));
    int from = topo_ordinal(c->name, (int)have, jsonx_str_set(status, "switchoverFrom"));
    return pord >= size || from >= size ? (int)have : 0;
}
