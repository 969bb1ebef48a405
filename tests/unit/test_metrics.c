/* Unit tests of the metrics registry and its Prometheus text exposition. */
#include "cu_table.h"
#include "metrics.h"
#include "metrics_text.h"
#include "text_assert.h"

#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

static void test_counter_and_gauge_text(void)
{
    metrics_registry_t *r = metrics_registry_new();
    metric_family_t *c = metrics_counter(r, "rest_client_requests_total",
                                         "Number of HTTP requests, partitioned by status code, method, and host.",
                                         "code,method,host");
    metric_family_t *g = metrics_gauge(r, "workqueue_depth", "Current depth of workqueue", "name");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    metric_counter_add(c, METRIC_LABELS("200", "GET", "127.0.0.1:6443"), 1);
    metric_counter_add(c, METRIC_LABELS("200", "GET", "127.0.0.1:6443"), 2);
    metric_counter_add(c, METRIC_LABELS("404", "GET", "127.0.0.1:6443"), 1);
    metric_counter_add(c, METRIC_LABELS("404", "GET", "127.0.0.1:6443"), -5); /* ignored */
    metric_gauge_set(g, METRIC_LABELS("rediscluster"), 7);
    metric_gauge_add(g, METRIC_LABELS("rediscluster"), -2);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(c, METRIC_LABELS("200", "GET", "127.0.0.1:6443")), 3, 0);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(g, METRIC_LABELS("rediscluster")), 5, 0);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(g, METRIC_LABELS("other")), 0, 0);

    char *t = exposition_of(r);
    ASSERT_TEXT_HAS(t, "# TYPE rest_client_requests_total counter\n",
                    "rest_client_requests_total{code=\"200\",method=\"GET\",host=\"127.0.0.1:6443\"} 3\n",
                    "rest_client_requests_total{code=\"404\",method=\"GET\",host=\"127.0.0.1:6443\"} 1\n",
                    "# TYPE workqueue_depth gauge\nworkqueue_depth{name=\"rediscluster\"} 5\n");
    /* Families are sorted by name. */
    CU_ASSERT(t && strstr(t, "rest_client_requests_total") < strstr(t, "workqueue_depth"));
    free(t);
    metrics_registry_destroy(&r);
    CU_ASSERT_PTR_NULL(r);
}

static void test_histogram_text(void)
{
    metrics_registry_t *r = metrics_registry_new();
    const double b[] = {0.1, 1, 10};
    metric_family_t *h = metrics_histogram(r, "controller_runtime_reconcile_time_seconds",
                                           "Length of time per reconciliation per controller",
                                           "controller", b, 3);
    const char *const *l = METRIC_LABELS("rediscluster");
    metric_histogram_observe(h, l, 0.05);
    metric_histogram_observe(h, l, 0.5);
    metric_histogram_observe(h, l, 0.5);
    metric_histogram_observe(h, l, 100);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(h, l), 4, 0);
    char *t = exposition_of(r);
    ASSERT_TEXT_HAS(t, "controller_runtime_reconcile_time_seconds_bucket{controller=\"rediscluster\",le=\"0.1\"} 1\n",
                    "_bucket{controller=\"rediscluster\",le=\"1\"} 3\n",
                    "_bucket{controller=\"rediscluster\",le=\"10\"} 3\n",
                    "_bucket{controller=\"rediscluster\",le=\"+Inf\"} 4\n",
                    "_sum{controller=\"rediscluster\"} 101.05\n", "_count{controller=\"rediscluster\"} 4\n");
    free(t);
    metrics_registry_destroy(&r);
}

static void test_registration_rules_and_escaping(void)
{
    metrics_registry_t *r = metrics_registry_new();
    metric_family_t *a = metrics_counter(r, "x_total", "help with \\ and\nnewline", "k");
    CU_ASSERT_PTR_EQUAL(metrics_counter(r, "x_total", "again", "k"), a);
    CU_ASSERT_PTR_NULL(metrics_gauge(r, "x_total", "clash", "k"));
    metric_counter_add(a, METRIC_LABELS("quote\"back\\slash\nnl"), 1);
    metric_counter_add(NULL, METRIC_LABELS("ignored"), 1);
    char *t = exposition_of(r);
    ASSERT_TEXT_HAS(t, "# HELP x_total help with \\\\ and\\nnewline\n",
                    "x_total{k=\"quote\\\"back\\\\slash\\nnl\"} 1\n");
    free(t);
    /* A capped output buffer reports that it was cut. */
    buf_t out;
    buf_init(&out, 16);
    CU_ASSERT_EQUAL(metrics_expose(r, &out), -1);
    buf_free(&out);
    metric_family_reset(a);
    CU_ASSERT_DOUBLE_EQUAL(metric_value(a, METRIC_LABELS("quote\"back\\slash\nnl")), 0, 0);
    metrics_registry_destroy(&r);
}

static const cu_entry_t tests[] = {
    CU_SUITE("metrics"),
    {"counters and gauges", test_counter_and_gauge_text},
    {"histograms", test_histogram_text},
    {"registration and escaping", test_registration_rules_and_escaping},
};

CU_MAIN(tests)
