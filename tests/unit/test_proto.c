/* Unit tests of the protocol-error counter that proto.h promises. */
#include "cu_table.h"
#include "proto.h"

#include "log.h"
#include "metrics.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

static void test_protocol_errors_counted(void)
{
    metrics_registry_t *reg = metrics_default();
    proto_error("work", "unknown message \"HELLO\"");
    proto_error("work", "WORK without an epoch");
    proto_error("leader", "LEADER with 2 frames");
    metric_family_t *f = metrics_counter(reg, "rdc_protocol_errors_total", "", "socket");
    CU_ASSERT_DOUBLE_EQUAL(metric_value(f, METRIC_LABELS("work")), 2, 0.001);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(f, METRIC_LABELS("leader")), 1, 0.001);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(f, METRIC_LABELS("events")), 0, 0.001);
}

static const cu_entry_t tests[] = {
    CU_SUITE("proto"),
    {"protocol errors are counted by socket", test_protocol_errors_counted},
};

CU_MAIN(tests)
