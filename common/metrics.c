#include "metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define METRICS_MAX_LABELS 8

typedef struct metric_series {
    char **label_values;     /* one per family label */
    double value;            /* counter/gauge value; histogram sum */
    unsigned long long count; /* histogram observation count */
    unsigned long long *bucket_counts; /* histogram: non-cumulative, one per bound */
    struct metric_series *next;
} metric_series_t;

struct metric_family {
    char *name;
    char *help;
    metric_type_t type;
    size_t nlabels;
    char *label_names[METRICS_MAX_LABELS];
    double *buckets;
    size_t nbuckets;
    metric_series_t *series;
    struct metric_family *next;
};

struct metrics_registry {
    metric_family_t *families;
};

static metrics_registry_t *g_default;

static const double default_buckets[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                         0.5,   1,    2.5,   5,    10};

metrics_registry_t *metrics_registry_new(void)
{
    return calloc(1, sizeof(metrics_registry_t));
}

static void series_free(metric_series_t *s, size_t nlabels)
{
    for (size_t i = 0; i < nlabels; i++)
        free(s->label_values[i]);
    free(s->label_values);
    free(s->bucket_counts);
    free(s);
}

static void family_free(metric_family_t *f)
{
    metric_series_t *s = f->series;
    while (s) {
        metric_series_t *next = s->next;
        series_free(s, f->nlabels);
        s = next;
    }
    for (size_t i = 0; i < f->nlabels; i++)
        free(f->label_names[i]);
    free(f->buckets);
    free(f->name);
    free(f->help);
    free(f);
}

void metrics_registry_destroy(metrics_registry_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    metric_family_t *f = (*self_p)->families;
    while (f) {
        metric_family_t *next = f->next;
        family_free(f);
        f = next;
    }
    free(*self_p);
    *self_p = NULL;
}

metrics_registry_t *metrics_default(void)
{
    if (!g_default)
        g_default = metrics_registry_new();
    return g_default;
}

void metrics_default_free(void)
{
    metrics_registry_destroy(&g_default);
}

/* Split "a,b,c" into f->label_names. Returns 0, or -1 on too many labels or no memory. */
static int family_set_labels(metric_family_t *f, const char *labels)
{
    if (!labels || !*labels)
        return 0;
    const char *p = labels;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (f->nlabels == METRICS_MAX_LABELS)
            return -1;
        char *name = strndup(p, n);
        if (!name)
            return -1;
        f->label_names[f->nlabels++] = name;
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

static metric_family_t *family_register(metrics_registry_t *reg, metric_type_t type,
                                        const char *name, const char *help,
                                        const char *labels, const double *buckets,
                                        size_t nbuckets)
{
    if (!reg)
        return NULL;
    for (metric_family_t *f = reg->families; f; f = f->next) {
        if (strcmp(f->name, name) == 0)
            return f->type == type ? f : NULL;
    }
    metric_family_t *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->type = type;
    f->name = strdup(name);
    f->help = strdup(help ? help : "");
    if (!f->name || !f->help || family_set_labels(f, labels))
        goto fail;
    if (type == METRIC_HISTOGRAM) {
        if (!buckets) {
            buckets = default_buckets;
            nbuckets = sizeof(default_buckets) / sizeof(default_buckets[0]);
        }
        f->buckets = malloc(nbuckets * sizeof(double));
        if (!f->buckets)
            goto fail;
        memcpy(f->buckets, buckets, nbuckets * sizeof(double));
        f->nbuckets = nbuckets;
    }
    /* Keep families sorted by name so exposition is stable. */
    metric_family_t **pp = &reg->families;
    while (*pp && strcmp((*pp)->name, name) < 0)
        pp = &(*pp)->next;
    f->next = *pp;
    *pp = f;
    return f;
fail:
    family_free(f);
    return NULL;
}

metric_family_t *metrics_counter(metrics_registry_t *reg, const char *name, const char *help,
                                 const char *labels)
{
    return family_register(reg, METRIC_COUNTER, name, help, labels, NULL, 0);
}

metric_family_t *metrics_gauge(metrics_registry_t *reg, const char *name, const char *help,
                               const char *labels)
{
    return family_register(reg, METRIC_GAUGE, name, help, labels, NULL, 0);
}

metric_family_t *metrics_histogram(metrics_registry_t *reg, const char *name,
                                   const char *help, const char *labels,
                                   const double *buckets, size_t nbuckets)
{
    return family_register(reg, METRIC_HISTOGRAM, name, help, labels, buckets, nbuckets);
}

static int labels_equal(const metric_family_t *f, const metric_series_t *s,
                        const char *const *labels)
{
    for (size_t i = 0; i < f->nlabels; i++) {
        const char *v = labels && labels[i] ? labels[i] : "";
        if (strcmp(s->label_values[i], v) != 0)
            return 0;
    }
    return 1;
}

static metric_series_t *series_find(metric_family_t *f, const char *const *labels)
{
    for (metric_series_t *s = f->series; s; s = s->next) {
        if (labels_equal(f, s, labels))
            return s;
    }
    return NULL;
}

/* Find the series, creating it when missing. NULL only when out of memory. */
static metric_series_t *series_get(metric_family_t *f, const char *const *labels)
{
    metric_series_t *s = series_find(f, labels);
    if (s)
        return s;
    s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->label_values = calloc(f->nlabels ? f->nlabels : 1, sizeof(char *));
    if (!s->label_values) {
        free(s);
        return NULL;
    }
    for (size_t i = 0; i < f->nlabels; i++) {
        s->label_values[i] = strdup(labels && labels[i] ? labels[i] : "");
        if (!s->label_values[i]) {
            series_free(s, f->nlabels);
            return NULL;
        }
    }
    if (f->type == METRIC_HISTOGRAM) {
        s->bucket_counts = calloc(f->nbuckets ? f->nbuckets : 1, sizeof(unsigned long long));
        if (!s->bucket_counts) {
            series_free(s, f->nlabels);
            return NULL;
        }
    }
    s->next = f->series;
    f->series = s;
    return s;
}

void metric_counter_add(metric_family_t *f, const char *const *labels, double v)
{
    if (!f || v < 0)
        return;
    metric_series_t *s = series_get(f, labels);
    if (s)
        s->value += v;
}

void metric_gauge_set(metric_family_t *f, const char *const *labels, double v)
{
    if (!f)
        return;
    metric_series_t *s = series_get(f, labels);
    if (s)
        s->value = v;
}

void metric_gauge_add(metric_family_t *f, const char *const *labels, double v)
{
    if (!f)
        return;
    metric_series_t *s = series_get(f, labels);
    if (s)
        s->value += v;
}

void metric_histogram_observe(metric_family_t *f, const char *const *labels, double v)
{
    if (!f || f->type != METRIC_HISTOGRAM)
        return;
    metric_series_t *s = series_get(f, labels);
    if (!s)
        return;
    s->value += v;
    s->count++;
    for (size_t i = 0; i < f->nbuckets; i++) {
        if (v <= f->buckets[i]) {
            s->bucket_counts[i]++;
            break;
        }
    }
}

double metric_value(metric_family_t *f, const char *const *labels)
{
    if (!f)
        return 0;
    metric_series_t *s = series_find(f, labels);
    if (!s)
        return 0;
    return f->type == METRIC_HISTOGRAM ? (double)s->count : s->value;
}

void metric_family_reset(metric_family_t *f)
{
    if (!f)
        return;
    metric_series_t *s = f->series;
    while (s) {
        metric_series_t *next = s->next;
        series_free(s, f->nlabels);
        s = next;
    }
    f->series = NULL;
}

/* Label values escape backslash, double quote and newline; HELP escapes \ and \n. */
static void put_escaped(buf_t *out, const char *s, int quote)
{
    for (; *s; s++) {
        if (*s == '\\')
            buf_puts(out, "\\\\");
        else if (*s == '\n')
            buf_puts(out, "\\n");
        else if (quote && *s == '"')
            buf_puts(out, "\\\"");
        else
            buf_append(out, s, 1);
    }
}

static void put_number(buf_t *out, double v)
{
    if (isnan(v))
        buf_puts(out, "NaN");
    else if (isinf(v))
        buf_puts(out, v > 0 ? "+Inf" : "-Inf");
    else if (v == (double)(long long)v && fabs(v) < 1e15)
        buf_printf(out, "%lld", (long long)v);
    else {
        /* The shortest text that reads back as the same double, as Go's 'g' -1 does. */
        char tmp[40];
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(tmp, sizeof(tmp), "%.*g", prec, v);
            if (strtod(tmp, NULL) == v)
                break;
        }
        buf_puts(out, tmp);
    }
}

/* {a="x",b="y"} plus an optional extra label (le for buckets). Nothing when empty. */
static void put_labels(buf_t *out, const metric_family_t *f, const metric_series_t *s,
                       const char *extra_name, const char *extra_value)
{
    if (f->nlabels == 0 && !extra_name)
        return;
    buf_puts(out, "{");
    for (size_t i = 0; i < f->nlabels; i++) {
        buf_printf(out, "%s%s=\"", i ? "," : "", f->label_names[i]);
        put_escaped(out, s->label_values[i], 1);
        buf_puts(out, "\"");
    }
    if (extra_name) {
        buf_printf(out, "%s%s=\"%s\"", f->nlabels ? "," : "", extra_name, extra_value);
    }
    buf_puts(out, "}");
}

static const char *type_name(metric_type_t t)
{
    switch (t) {
    case METRIC_COUNTER: return "counter";
    case METRIC_GAUGE: return "gauge";
    case METRIC_HISTOGRAM: return "histogram";
    }
    return "untyped";
}

static void expose_histogram(buf_t *out, const metric_family_t *f, const metric_series_t *s)
{
    unsigned long long cumulative = 0;
    char le[64];
    for (size_t i = 0; i < f->nbuckets; i++) {
        cumulative += s->bucket_counts[i];
        buf_t tmp;
        buf_init(&tmp, 64);
        put_number(&tmp, f->buckets[i]);
        snprintf(le, sizeof(le), "%s", buf_str(&tmp));
        buf_free(&tmp);
        buf_printf(out, "%s_bucket", f->name);
        put_labels(out, f, s, "le", le);
        buf_printf(out, " %llu\n", cumulative);
    }
    buf_printf(out, "%s_bucket", f->name);
    put_labels(out, f, s, "le", "+Inf");
    buf_printf(out, " %llu\n", s->count);
    buf_printf(out, "%s_sum", f->name);
    put_labels(out, f, s, NULL, NULL);
    buf_puts(out, " ");
    put_number(out, s->value);
    buf_puts(out, "\n");
    buf_printf(out, "%s_count", f->name);
    put_labels(out, f, s, NULL, NULL);
    buf_printf(out, " %llu\n", s->count);
}

int metrics_expose(metrics_registry_t *reg, buf_t *out)
{
    if (!reg)
        return 0;
    for (metric_family_t *f = reg->families; f; f = f->next) {
        buf_printf(out, "# HELP %s ", f->name);
        put_escaped(out, f->help, 0);
        buf_printf(out, "\n# TYPE %s %s\n", f->name, type_name(f->type));
        for (metric_series_t *s = f->series; s; s = s->next) {
            if (f->type == METRIC_HISTOGRAM) {
                expose_histogram(out, f, s);
                continue;
            }
            buf_puts(out, f->name);
            put_labels(out, f, s, NULL, NULL);
            buf_puts(out, " ");
            put_number(out, s->value);
            buf_puts(out, "\n");
        }
    }
    /* A buffer at its cap refuses appends silently above; report it once here. */
    return out->len + 1 >= out->cap ? -1 : 0;
}

void metrics_exponential_buckets(double start, double factor, size_t n, double *out)
{
    double v = start;
    for (size_t i = 0; i < n; i++) {
        out[i] = v;
        v *= factor;
    }
}
