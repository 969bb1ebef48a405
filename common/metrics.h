/* metrics: counters, gauges and histograms with labels, and the Prometheus text
 * exposition format (version 0.0.4).
 *
 * Names and labels follow controller-runtime and client-go so that existing dashboards
 * work. A registry belongs to one thread (every daemon is a single-threaded event loop).
 * Label values are given as an array whose length is the family's label count.
 */
#ifndef RDC_METRICS_H
#define RDC_METRICS_H

#include "buf.h"

#include <stddef.h>

typedef struct metrics_registry metrics_registry_t;
typedef struct metric_family metric_family_t;

typedef enum { METRIC_COUNTER, METRIC_GAUGE, METRIC_HISTOGRAM } metric_type_t;

/* Convenience for label value arrays: METRIC_LABELS("GET", "200"). */
#define METRIC_LABELS(...) ((const char *const[]){__VA_ARGS__})

/* A new, empty registry; NULL when out of memory. */
metrics_registry_t *metrics_registry_new(void);

/* Free the registry and every family in it; sets *self_p to NULL. */
void metrics_registry_destroy(metrics_registry_t **self_p);

/* The process-wide registry every module registers into (created on first use). */
metrics_registry_t *metrics_default(void);

/* Free the process-wide registry (at exit, so leak checkers stay quiet). */
void metrics_default_free(void);

/* Register (or find, when a family of that name and type exists) a family. labels is a
 * comma-separated list of label names ("code,method,host"), or NULL/"" for none. For
 * histograms, buckets are the upper bounds in increasing order (NULL = Prometheus'
 * default buckets). Returns the family (owned by the registry), or NULL when the name is
 * taken by another type or out of memory. */
metric_family_t *metrics_counter(metrics_registry_t *reg, const char *name, const char *help,
                                 const char *labels);
metric_family_t *metrics_gauge(metrics_registry_t *reg, const char *name, const char *help,
                               const char *labels);
metric_family_t *metrics_histogram(metrics_registry_t *reg, const char *name,
                                   const char *help, const char *labels,
                                   const double *buckets, size_t nbuckets);

/* Add v (>= 0) to a counter series. NULL family is ignored. */
void metric_counter_add(metric_family_t *f, const char *const *labels, double v);

/* Set or add to a gauge series. NULL family is ignored. */
void metric_gauge_set(metric_family_t *f, const char *const *labels, double v);
void metric_gauge_add(metric_family_t *f, const char *const *labels, double v);

/* Record an observation in a histogram series. NULL family is ignored. */
void metric_histogram_observe(metric_family_t *f, const char *const *labels, double v);

/* Current value of a counter or gauge series (0 when the series does not exist); for a
 * histogram, its observation count. For tests and for the supervisor's health logic. */
double metric_value(metric_family_t *f, const char *const *labels);

/* Remove every series of a family (e.g. gauges describing objects that went away). */
void metric_family_reset(metric_family_t *f);

/* Append the exposition text of every family, sorted by name, to out. Returns 0, or -1
 * when out's cap was reached. */
int metrics_expose(metrics_registry_t *reg, buf_t *out);

/* Fill out[0..n) with exponential bucket bounds start, start*factor, ... */
void metrics_exponential_buckets(double start, double factor, size_t n, double *out);

#endif
