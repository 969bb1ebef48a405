#include "proto.h"

#include "log.h"
#include "metrics.h"

void proto_error(const char *socket, const char *what)
{
    metric_family_t *f = metrics_counter(metrics_default(), "rdc_protocol_errors_total",
                                         "Messages dropped because they were unknown, "
                                         "malformed or too large, by socket",
                                         "socket");
    metric_counter_add(f, METRIC_LABELS(socket), 1);
    rlog_warn("protocol error; message dropped", "socket", socket, "error", what);
}
