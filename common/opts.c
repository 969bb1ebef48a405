#include "opts.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void opts_common_defaults(rdc_common_opts_t *c)
{
    memset(c, 0, sizeof(*c));
    c->metrics_bind_address = ":8080";
    c->health_probe_bind_address = ":8081";
    c->leader_elect = 0;
    c->leader_election_id = "rediscluster-operator.cache.example.com";
    c->leader_election_namespace = NULL;
    c->lease_duration = 15;
    c->renew_deadline = 10;
    c->retry_period = 2;
    c->workers = 2;
    c->max_concurrent_reconciles = 4;
    c->log_level = "info";
    c->log_format = "json";
    c->kube_api_qps = 20;
    c->kube_api_burst = 30;
    c->sync_period = 10 * 3600;
    c->graceful_shutdown_timeout = 30;
    c->runtime_dir = NULL;
}

char *opts_default_runtime_dir(char *out, size_t outlen)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && *xdg)
        snprintf(out, outlen, "%s/rdc-operator", xdg);
    else
        snprintf(out, outlen, "/tmp/rdc-operator-%u", (unsigned)getuid());
    return out;
}

void opts_common_fill(rdc_common_opts_t *c, opt_t *t)
{
    /* The help of --runtime-dir names the default this process would really use. */
    static char rtdir_help[4300];
    char def[4096];
    snprintf(rtdir_help, sizeof(rtdir_help),
             "directory of the ipc:// endpoints, metrics and state files, a directory of "
             "ours with mode 0700 (default $XDG_RUNTIME_DIR/rdc-operator, else "
             "/tmp/rdc-operator-$UID: here \"%s\")",
             opts_default_runtime_dir(def, sizeof(def)));
    const opt_t table[OPTS_COMMON_COUNT] = {
        {"kubeconfig", OPT_STRING, &c->kubeconfig,
         "path to a kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)"},
        {"context", OPT_STRING, &c->context, "kubeconfig context to use"},
        {"metrics-bind-address", OPT_STRING, &c->metrics_bind_address,
         "address the metrics endpoint binds to; \"0\" disables it"},
        {"health-probe-bind-address", OPT_STRING, &c->health_probe_bind_address,
         "address the /healthz and /readyz endpoints bind to; \"0\" disables them"},
        {"leader-elect", OPT_BOOL, &c->leader_elect,
         "hold a Lease so that only one replica acts at a time"},
        {"leader-election-id", OPT_STRING, &c->leader_election_id, "name of the Lease"},
        {"leader-election-namespace", OPT_STRING, &c->leader_election_namespace,
         "namespace of the Lease (default: the pod's namespace, else \"default\")"},
        {"leader-election-lease-duration", OPT_DURATION, &c->lease_duration,
         "how long a Lease is valid without renewal"},
        {"leader-election-renew-deadline", OPT_DURATION, &c->renew_deadline,
         "how long the leader keeps trying to renew before it steps down"},
        {"leader-election-retry-period", OPT_DURATION, &c->retry_period,
         "time between election attempts"},
        {"workers", OPT_INT, &c->workers, "number of reconcile workers"},
        {"max-concurrent-reconciles", OPT_INT, &c->max_concurrent_reconciles,
         "keys each worker process reconciles at once (1 to 16; controller-runtime's "
         "MaxConcurrentReconciles, per worker process: the operator holds up to "
         "--workers times this many)"},
        {"namespace", OPT_STRLIST, &c->namespaces,
         "watch only this namespace (repeatable; default: all namespaces)"},
        {"log-level", OPT_STRING, &c->log_level, "debug, info, warn or error"},
        {"log-format", OPT_STRING, &c->log_format, "json or text"},
        {"kube-api-qps", OPT_DOUBLE, &c->kube_api_qps,
         "client-side requests per second to the API server, the budget of the whole operator "
         "(the supervisor's children share one bucket); -1 (any value <= 0) lifts the limit"},
        {"kube-api-burst", OPT_INT, &c->kube_api_burst,
         "client-side burst above the QPS, shared like --kube-api-qps"},
        {"sync-period", OPT_DURATION, &c->sync_period,
         "how often every RedisCluster is reconciled even without changes"},
        {"graceful-shutdown-timeout", OPT_DURATION, &c->graceful_shutdown_timeout,
         "time in-flight reconciles get to finish on SIGTERM"},
        {"runtime-dir", OPT_STRING, &c->runtime_dir, rtdir_help},
        {"help", OPT_BOOL, &c->help, "print this help and exit"},
        {"version", OPT_BOOL, &c->version, "print the version and exit"},
    };
    memcpy(t, table, sizeof(table));
}

void opts_common_join(rdc_common_opts_t *c, const opt_t *own, opt_t *table)
{
    opts_common_fill(c, table);
    size_t i = 0;
    do
        table[OPTS_COMMON_COUNT + i] = own[i];
    while (own[i++].type != OPT_END);
}

void opts_common_select(opt_t *table, const char *used)
{
    static const char *const shared[] = {
        "kubeconfig", "context", "metrics-bind-address", "health-probe-bind-address",
        "leader-elect", "leader-election-id", "leader-election-namespace",
        "leader-election-lease-duration", "leader-election-renew-deadline",
        "leader-election-retry-period", "workers", "max-concurrent-reconciles", "namespace", "log-level", "log-format",
        "kube-api-qps", "kube-api-burst", "sync-period", "graceful-shutdown-timeout",
        "runtime-dir"};
    size_t nshared = sizeof(shared) / sizeof(shared[0]);
    /* Every name in used must be a shared flag: a typo would silently unlist one. */
    for (const char *p = used; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int known = 0;
        for (size_t k = 0; k < nshared; k++)
            known |= strlen(shared[k]) == len && strncmp(shared[k], p, len) == 0;
        assert(known && "opts_common_select: not a shared flag");
        (void)known;
        p = comma ? comma + 1 : p + len;
    }
    for (opt_t *o = table; o->type != OPT_END; o++) {
        int is_shared = 0;
        for (size_t k = 0; k < nshared; k++)
            is_shared |= strcmp(shared[k], o->name) == 0;
        if (!is_shared)
            continue;
        int listed = 0;
        size_t nlen = strlen(o->name);
        for (const char *p = used; p && *p;) {
            const char *comma = strchr(p, ',');
            size_t len = comma ? (size_t)(comma - p) : strlen(p);
            listed |= len == nlen && strncmp(o->name, p, len) == 0;
            p = comma ? comma + 1 : p + len;
        }
        if (!listed)
            o->help = NULL;
    }
}

/* Append "<whole>[.<frac without trailing zeros>]<unit>" to out; frac has digits
 * digits. Returns the characters written (or that would have been). */
static int fmt_frac(char *out, size_t outlen, uint64_t whole, uint64_t frac, int digits,
                    const char *unit)
{
    char fs[16] = "";
    if (frac) {
        snprintf(fs, sizeof(fs), ".%0*" PRIu64, digits, frac);
        size_t n = strlen(fs);
        while (n > 1 && fs[n - 1] == '0')
            fs[--n] = '\0';
    }
    return snprintf(out, outlen, "%" PRIu64 "%s%s", whole, fs, unit);
}

char *opts_format_duration(double seconds, char *out, size_t outlen)
{
    if (outlen == 0)
        return out;
    const char *sign = "";
    if (seconds < 0) {
        sign = "-";
        seconds = -seconds;
    }
    /* Go's Duration is an int64 of nanoseconds: clamp to its range. */
    double ns = round(seconds * 1e9);
    uint64_t u = ns >= 9.2e18 ? UINT64_C(9223372036854775807) : (uint64_t)ns;
    int n = snprintf(out, outlen, "%s", sign);
    if (n < 0 || (size_t)n >= outlen)
        return out;
    char *p = out + n;
    size_t left = outlen - (size_t)n;
    if (u == 0) {
        snprintf(out, outlen, "0s");
    } else if (u < 1000) {
        snprintf(p, left, "%" PRIu64 "ns", u);
    } else if (u < 1000000) {
        fmt_frac(p, left, u / 1000, u % 1000, 3, "\u00b5s");
    } else if (u < 1000000000) {
        fmt_frac(p, left, u / 1000000, u % 1000000, 6, "ms");
    } else {
        uint64_t s = u / 1000000000, frac = u % 1000000000;
        uint64_t h = s / 3600, m = s / 60 % 60;
        s %= 60;
        int k = 0;
        if (h)
            k = snprintf(p, left, "%" PRIu64 "h%" PRIu64 "m", h, m);
        else if (m)
            k = snprintf(p, left, "%" PRIu64 "m", m);
        if (k >= 0 && (size_t)k < left)
            fmt_frac(p + k, left - (size_t)k, s, frac, 9, "s");
    }
    return out;
}

int opts_parse_duration(const char *s, double *seconds)
{
    if (!s || !*s)
        return -1;
    char *end = NULL;
    double total = 0;
    const char *p = s;
    /* Plain number: seconds. */
    errno = 0;
    double plain = strtod(p, &end);
    if (errno == 0 && end != p && *end == '\0' && isfinite(plain) && plain >= 0) {
        *seconds = plain;
        return 0;
    }
    while (*p) {
        errno = 0;
        double v = strtod(p, &end);
        if (errno || end == p || !isfinite(v) || v < 0)
            return -1;
        p = end;
        double unit;
        if (strncmp(p, "ms", 2) == 0) {
            unit = 1e-3;
            p += 2;
        } else if (strncmp(p, "us", 2) == 0) {
            unit = 1e-6;
            p += 2;
        } else if (strncmp(p, "ns", 2) == 0) {
            unit = 1e-9;
            p += 2;
        } else if (*p == 'h') {
            unit = 3600;
            p++;
        } else if (*p == 'm') {
            unit = 60;
            p++;
        } else if (*p == 's') {
            unit = 1;
            p++;
        } else {
            return -1;
        }
        total += v * unit;
    }
    *seconds = total;
    return 0;
}

static const opt_t *opt_find(const opt_t *table, const char *name, size_t len)
{
    for (const opt_t *o = table; o->type != OPT_END; o++) {
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            return o;
    }
    return NULL;
}

/* Store value into o's target. Returns 0, or -1 with err set. */
static int opt_set(const opt_t *o, const char *value, char *err, size_t errlen)
{
    char *end = NULL;
    switch (o->type) {
    case OPT_STRING:
        *(const char **)o->target = value;
        return 0;
    case OPT_STRLIST: {
        opt_strlist_t *l = o->target;
        if (l->n == OPT_STRLIST_MAX) {
            snprintf(err, errlen, "--%s: at most %d values", o->name, OPT_STRLIST_MAX);
            return -1;
        }
        l->items[l->n++] = value;
        return 0;
    }
    case OPT_INT: {
        errno = 0;
        long v = strtol(value, &end, 10);
        if (errno || end == value || *end || v < -2147483647L || v > 2147483647L) {
            snprintf(err, errlen, "--%s: \"%s\" is not an integer", o->name, value);
            return -1;
        }
        *(int *)o->target = (int)v;
        return 0;
    }
    case OPT_DOUBLE: {
        errno = 0;
        double v = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(v)) {
            snprintf(err, errlen, "--%s: \"%s\" is not a number", o->name, value);
            return -1;
        }
        *(double *)o->target = v;
        return 0;
    }
    case OPT_BOOL:
        if (strcmp(value, "true") == 0 || strcmp(value, "1") == 0) {
            *(int *)o->target = 1;
        } else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0) {
            *(int *)o->target = 0;
        } else {
            snprintf(err, errlen, "--%s: \"%s\" is not true or false", o->name, value);
            return -1;
        }
        return 0;
    case OPT_DURATION:
        if (opts_parse_duration(value, (double *)o->target)) {
            snprintf(err, errlen, "--%s: \"%s\" is not a duration (e.g. 15s, 10m, 1h)",
                     o->name, value);
            return -1;
        }
        return 0;
    case OPT_END:
        break;
    }
    snprintf(err, errlen, "--%s: unsupported flag type", o->name);
    return -1;
}

int opts_parse(const opt_t *table, int argc, char **argv, const char **positional,
               size_t max_positional, size_t *npositional, char *err, size_t errlen)
{
    size_t npos = 0;
    int only_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (only_positional || arg[0] != '-' || arg[1] == '\0') {
            if (!positional || npos == max_positional) {
                snprintf(err, errlen, "unexpected argument \"%s\"", arg);
                return -1;
            }
            positional[npos++] = arg;
            continue;
        }
        if (strcmp(arg, "--") == 0) {
            only_positional = 1;
            continue;
        }
        const char *name = arg + (arg[1] == '-' ? 2 : 1);
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const opt_t *o = opt_find(table, name, nlen);
        if (!o && strncmp(name, "h", nlen) == 0 && nlen == 1)
            o = opt_find(table, "help", 4);
        if (!o) {
            snprintf(err, errlen, "unknown flag \"%.*s\" (see --help)", (int)nlen + 2,
                     arg[1] == '-' ? arg : name - 1);
            return -1;
        }
        const char *value;
        if (eq) {
            value = eq + 1;
        } else if (o->type == OPT_BOOL) {
            value = "true";
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            snprintf(err, errlen, "--%s needs a value", o->name);
            return -1;
        }
        if (opt_set(o, value, err, errlen))
            return -1;
    }
    if (npositional)
        *npositional = npos;
    return 0;
}

static void print_default(FILE *out, const opt_t *o)
{
    switch (o->type) {
    case OPT_STRING: {
        const char *v = *(const char **)o->target;
        if (v)
            fprintf(out, " (default \"%s\")", v);
        break;
    }
    case OPT_INT:
        fprintf(out, " (default %d)", *(int *)o->target);
        break;
    case OPT_DOUBLE:
        fprintf(out, " (default %g)", *(double *)o->target);
        break;
    case OPT_DURATION: {
        char d[64];
        fprintf(out, " (default %s)", opts_format_duration(*(double *)o->target, d, sizeof(d)));
        break;
    }
    case OPT_BOOL:
        if (*(int *)o->target)
            fprintf(out, " (default true)");
        break;
    case OPT_STRLIST:
    case OPT_END:
        break;
    }
}

void opts_usage(FILE *out, const char *prog, const char *summary, const opt_t *table)
{
    fprintf(out, "usage: %s [flags]\n\n%s\n\nflags:\n", prog, summary);
    for (const opt_t *o = table; o->type != OPT_END; o++) {
        if (!o->help)
            continue; /* accepted, not listed (opts_common_select) */
        const char *arg = "";
        switch (o->type) {
        case OPT_STRING:
        case OPT_STRLIST: arg = " string"; break;
        case OPT_INT: arg = " int"; break;
        case OPT_DOUBLE: arg = " float"; break;
        case OPT_DURATION: arg = " duration"; break;
        case OPT_BOOL:
        case OPT_END: break;
        }
        fprintf(out, "  --%s%s\n        %s", o->name, arg, o->help);
        print_default(out, o);
        fputc('\n', out);
    }
}

int opts_apply_logging(const rdc_common_opts_t *c, const char *component, char *err,
                       size_t errlen)
{
    rlog_level_t level;
    rlog_format_t format;
    if (rlog_parse_level(c->log_level, &level)) {
        snprintf(err, errlen, "--log-level: \"%s\" is not debug, info, warn or error",
                 c->log_level);
        return -1;
    }
    if (rlog_parse_format(c->log_format, &format)) {
        snprintf(err, errlen, "--log-format: \"%s\" is not json or text", c->log_format);
        return -1;
    }
    rlog_init(component, level, format, NULL);
    return 0;
}

int opts_daemon_main(const char *prog, const char *summary, rdc_common_opts_t *c, const opt_t *own,
                     int argc, char **argv, const char *used)
{
    size_t n = 0;
    while (own[n].type != OPT_END)
        n++;
    opt_t table[OPTS_COMMON_COUNT + n + 1];
    opts_common_join(c, own, table);
    opts_common_select(table, used);
    return opts_main(prog, summary, table, c, argc, argv, NULL, 0, NULL);
}

int opts_main(const char *prog, const char *summary, const opt_t *table, const rdc_common_opts_t *c,
              int argc, char **argv, const char **positional, size_t max_positional, size_t *npositional)
{
    char err[1024];
    /* The usage shows the defaults, i.e. the targets before parsing: render it now (a
     * parsed --help would otherwise print "(default true)" for itself). */
    char *usage = NULL;
    size_t usage_len = 0;
    FILE *mem = open_memstream(&usage, &usage_len);
    if (mem) {
        opts_usage(mem, prog, summary, table);
        fclose(mem);
    }
    if (opts_parse(table, argc, argv, positional, max_positional, npositional, err, sizeof(err))) {
        fprintf(stderr, "%s: %s\n", prog, err);
        free(usage);
        return 2;
    }
    if (c->help) {
        if (usage)
            fwrite(usage, 1, usage_len, stdout);
        else
            opts_usage(stdout, prog, summary, table);
        free(usage);
        return 0;
    }
    free(usage);
    if (c->version) {
        printf("%s %s\n", prog, RDC_VERSION);
        return 0;
    }
    if (opts_apply_logging(c, prog, err, sizeof(err))) {
        fprintf(stderr, "%s: %s\n", prog, err);
        return 2;
    }
    return -1;
}
