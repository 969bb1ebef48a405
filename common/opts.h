/* opts: command-line flags spelled as controller-runtime operators spell them.
 *
 * A daemon describes its flags in a table of opt_t (the shared ones come from
 * opts_common_table()); opts_parse() accepts "--name=value", "--name value", and for
 * booleans "--name", "--name=true|false". Unknown flags and bad values are errors that
 * name the flag. --help prints every listed flag with its default (as it was before the
 * command line was parsed; durations in Go's style, 10h0m0s) and help text.
 *
 * Every daemon accepts every shared flag (the supervisor passes them all to each child),
 * but lists in --help only the ones it uses: opts_common_select() unlists the others. An
 * entry whose help is NULL is accepted and not listed.
 */
#ifndef RDC_OPTS_H
#define RDC_OPTS_H

#include "log.h"

#include <stddef.h>
#include <stdio.h>

typedef enum {
    OPT_STRING,   /* const char * (points into argv or at the default) */
    OPT_STRLIST,  /* opt_strlist_t: repeatable */
    OPT_INT,      /* int */
    OPT_DOUBLE,   /* double */
    OPT_BOOL,     /* int 0/1 */
    OPT_DURATION, /* double seconds; accepts Go durations "10h", "1m30s", "500ms", "15s" */
    OPT_END
} opt_type_t;

#define OPT_STRLIST_MAX 32
typedef struct {
    const char *items[OPT_STRLIST_MAX];
    size_t n;
} opt_strlist_t;

typedef struct {
    const char *name; /* without the leading dashes */
    opt_type_t type;
    void *target;
    const char *help; /* NULL: accepted, not listed by --help */
} opt_t;

/* Settings every daemon shares. Defaults as controller-runtime's. */
typedef struct {
    const char *kubeconfig;
    const char *context;
    const char *metrics_bind_address;      /* ":8080"; "0" disables */
    const char *health_probe_bind_address; /* ":8081"; "0" disables */
    int leader_elect;
    const char *leader_election_id;
    const char *leader_election_namespace;
    double lease_duration;                 /* seconds, 15 */
    double renew_deadline;                 /* seconds, 10 */
    double retry_period;                   /* seconds, 2 */
    int workers;                           /* 2 */
    int max_concurrent_reconciles;         /* 4: keys one worker process reconciles at once */
    opt_strlist_t namespaces;              /* empty = all namespaces */
    const char *log_level;                 /* "info" */
    const char *log_format;                /* "json" */
    double kube_api_qps;                   /* 20; <= 0 (-1) lifts the limiter */
    int kube_api_burst;                    /* 30 */
    double sync_period;                    /* seconds, 10 h */
    double graceful_shutdown_timeout;      /* seconds, 30 */
    const char *runtime_dir;               /* ipc endpoints live here */
    int help;
    int version;
} rdc_common_opts_t;

/* Fill c with the defaults. */
void opts_common_defaults(rdc_common_opts_t *c);

/* Number of entries opts_common_fill() writes (not counting OPT_END). */
#define OPTS_COMMON_COUNT 22

/* Write the shared flag descriptors for c into table[0..OPTS_COMMON_COUNT). */
void opts_common_fill(rdc_common_opts_t *c, opt_t *table);

/* The number of entries of table for opts_common_join(c, own, table): the shared flags
 * and every entry of the array own, its OPT_END included. */
#define OPTS_JOINED_LEN(own) (OPTS_COMMON_COUNT + sizeof(own) / sizeof((own)[0]))

/* A daemon's whole flag table: the shared flags for c (opts_common_fill), then the
 * daemon's own, the entries of own up to and including its OPT_END entry. table holds
 * OPTS_JOINED_LEN(own) entries. own is only read; the targets stay the caller's. */
void opts_common_join(rdc_common_opts_t *c, const opt_t *own, opt_t *table);

/* Unlist (help = NULL) every shared flag of table that is not named in used, a
 * comma-separated list ("kubeconfig,context,log-level"); --help and --version stay
 * listed. The daemon's own flags are left alone. A name in used that is not a shared flag
 * is a programmer error (assert). */
void opts_common_select(opt_t *table, const char *used);

/* The runtime directory used when --runtime-dir is not given: $XDG_RUNTIME_DIR/rdc-operator
 * when XDG_RUNTIME_DIR is set, else /tmp/rdc-operator-<uid>. Writes it to out; returns out. */
char *opts_default_runtime_dir(char *out, size_t outlen);

/* Format seconds as Go's time.Duration.String() does: "10h0m0s", "1m30s", "2.5s",
 * "500ms", "0s" (rounded to the nanosecond; negative values get a leading '-'). Returns
 * out. */
char *opts_format_duration(double seconds, char *out, size_t outlen);

/* Parse argv against table (terminated by an OPT_END entry). Positional arguments are
 * collected in order into positional (up to max_positional; NULL = none allowed).
 * Returns 0, or -1 with one line in err naming the flag. */
int opts_parse(const opt_t *table, int argc, char **argv, const char **positional,
               size_t max_positional, size_t *npositional, char *err, size_t errlen);

/* Print usage: "usage: prog [flags]", summary, then each listed flag with its help and
 * the current value of its target as the default (so call it before parsing). */
void opts_usage(FILE *out, const char *prog, const char *summary, const opt_t *table);

/* Parse a Go-style duration ("1h30m", "500ms", "15s", or plain seconds "15").
 * Returns 0, or -1 when s is not a duration. */
int opts_parse_duration(const char *s, double *seconds);

/* The start of every daemon's main(): parse argv against table (positional arguments as
 * in opts_parse), answer --help (usage with summary and the defaults as they were before
 * parsing) and --version, and apply the logging
 * flags of c. Returns -1 when main should go on, else the exit code to return at once:
 * 0 after --help or --version, 2 after a bad flag (one line on stderr, "prog: ..."). */
int opts_main(const char *prog, const char *summary, const opt_t *table, const rdc_common_opts_t *c,
              int argc, char **argv, const char **positional, size_t max_positional, size_t *npositional);

/* opts_main for a daemon without positional arguments: its whole table is the shared
 * flags for c and the entries of own up to its OPT_END (opts_common_join), the shared ones
 * not named in used unlisted (opts_common_select). Returns as opts_main. */
int opts_daemon_main(const char *prog, const char *summary, rdc_common_opts_t *c, const opt_t *own,
                     int argc, char **argv, const char *used);

/* Apply --log-level/--log-format to the logger for component name. Returns 0, or -1
 * with err naming the bad flag. */
int opts_apply_logging(const rdc_common_opts_t *c, const char *component, char *err,
                       size_t errlen);

#endif
