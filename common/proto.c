#include "proto.h"

#include "log.h"
#include "metrics.h"

#include <string.h>

void proto_error(const char *socket, const char *what)
{
    metric_family_t *f = metrics_counter(metrics_default(), "rdc_protocol_errors_total",
                                         "Messages dropped because they were unknown, "
                                         "malformed or too large, by socket",
                                         "socket");
    metric_counter_add(f, METRIC_LABELS(socket), 1);
    rlog_warn("protocol error; message dropped", "socket", socket, "error", what);
}

rmsg_t *proto_hot_new(const char *key, int64_t for_ms)
{
    rmsg_t *m = rmsg_new();
    rmsg_addstr(m, PROTO_HOT);
    rmsg_addstr(m, key);
    rmsg_addf(m, "%lld", (long long)(for_ms > 0 ? for_ms : 0));
    return m;
}

int proto_hot_parse(const rmsg_t *m, char key[PROTO_HOT_KEY_MAX], int64_t *for_ms, const char **why)
{
    size_t len = 0;
    const char *k = rmsg_frame(m, 1, &len);
    int64_t ms = 0;
    if (rmsg_size(m) != 3 || !rmsg_frame_is(m, 0, PROTO_HOT))
        *why = "not HOT key for_ms";
    else if (!k || !len || len >= PROTO_HOT_KEY_MAX || !memchr(k, '/', len) || memchr(k, '\0', len))
        *why = "HOT: the key is not namespace/name";
    else if (rmsg_frame_int64(m, 2, &ms) || ms < 0)
        *why = "HOT: for_ms is not a number of milliseconds";
    else {
        memcpy(key, k, len);
        key[len] = '\0';
        *for_ms = ms < PROTO_HOT_MAX_MS ? ms : PROTO_HOT_MAX_MS;
        return 0;
    }
    return -1;
}
