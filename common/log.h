/* log: structured logging, one line per record.
 *
 * JSON format (default) writes one object per line with ts, level, logger, msg and the
 * record's key/value pairs, as controller-runtime's zap logger does; text format writes
 * "ts LEVEL logger msg key=value ..." for a terminal. Logging never fails loudly: a
 * write error is ignored, and values are escaped so that no input can break a line.
 */
#ifndef RDC_LOG_H
#define RDC_LOG_H

#include <stdio.h>

typedef enum { RLOG_DEBUG = 0, RLOG_INFO, RLOG_WARN, RLOG_ERROR } rlog_level_t;
typedef enum { RLOG_JSON = 0, RLOG_TEXT } rlog_format_t;

/* Configure the process-wide logger. logger is the component name ("informerd"); out
 * NULL means stderr. May be called again to change settings. */
void rlog_init(const char *logger, rlog_level_t level, rlog_format_t format, FILE *out);

/* Parse "debug|info|warn|error" (also numeric verbosity "0".."5", and "warning").
 * Returns 0, or -1 when unknown. */
int rlog_parse_level(const char *s, rlog_level_t *level);

/* Parse "json|text" (also "console"). Returns 0, or -1 when unknown. */
int rlog_parse_format(const char *s, rlog_format_t *format);

/* 1 when records of this level are written. */
int rlog_enabled(rlog_level_t level);

/* Write a record: msg, then key/value string pairs terminated by NULL. A NULL value is
 * written as null. Example: rlog(RLOG_INFO, "watch started", "kind", "ConfigMap", NULL); */
void rlog(rlog_level_t level, const char *msg, ...) __attribute__((sentinel));

#define rlog_debug(...) rlog(RLOG_DEBUG, __VA_ARGS__)
#define rlog_info(...) rlog(RLOG_INFO, __VA_ARGS__)
#define rlog_warn(...) rlog(RLOG_WARN, __VA_ARGS__)
#define rlog_error(...) rlog(RLOG_ERROR, __VA_ARGS__)

#endif
