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

/* Write a record: msg, then key/value string pairs (a NULL value is written as null). The
 * macros end the list with RLOG_END themselves, so a call names only its pairs:
 *   rlog_info("watch started", "kind", "ConfigMap", "namespace", ns);
 * rlog_at() is the function behind them; a direct call ends its list with RLOG_END (a
 * typed null pointer: a bare NULL may be a plain 0 that va_arg cannot read as a pointer). */
void rlog_at(rlog_level_t level, const char *msg, ...) __attribute__((sentinel));

#define RLOG_END ((const char *)0)
#define rlog(level, ...) rlog_at((level), __VA_ARGS__, RLOG_END)
#define rlog_debug(...) rlog_at(RLOG_DEBUG, __VA_ARGS__, RLOG_END)
#define rlog_info(...) rlog_at(RLOG_INFO, __VA_ARGS__, RLOG_END)
#define rlog_warn(...) rlog_at(RLOG_WARN, __VA_ARGS__, RLOG_END)
#define rlog_error(...) rlog_at(RLOG_ERROR, __VA_ARGS__, RLOG_END)

#endif
