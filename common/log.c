#include "log.h"

#include "buf.h"
#include "clock.h"

#include <stdarg.h>
#include <string.h>
#include <strings.h>

static struct {
    char logger[64];
    rlog_level_t level;
    rlog_format_t format;
    FILE *out;
} g_log = {"rdc", RLOG_INFO, RLOG_JSON, NULL};

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void rlog_init(const char *logger, rlog_level_t level, rlog_format_t format, FILE *out)
{
    snprintf(g_log.logger, sizeof(g_log.logger), "%s", logger ? logger : "rdc");
    g_log.level = level;
    g_log.format = format;
    g_log.out = out;
}

int rlog_parse_level(const char *s, rlog_level_t *level)
{
    static const struct {
        const char *name;
        rlog_level_t level;
    } names[] = {{"debug", RLOG_DEBUG}, {"info", RLOG_INFO},    {"warn", RLOG_WARN},
                 {"warning", RLOG_WARN}, {"error", RLOG_ERROR}, {"0", RLOG_INFO},
                 {"1", RLOG_DEBUG},     {"2", RLOG_DEBUG},     {"3", RLOG_DEBUG},
                 {"4", RLOG_DEBUG},     {"5", RLOG_DEBUG}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcasecmp(s, names[i].name) == 0) {
            *level = names[i].level;
            return 0;
        }
    }
    return -1;
}

int rlog_parse_format(const char *s, rlog_format_t *format)
{
    if (strcasecmp(s, "json") == 0) {
        *format = RLOG_JSON;
        return 0;
    }
    if (strcasecmp(s, "text") == 0 || strcasecmp(s, "console") == 0) {
        *format = RLOG_TEXT;
        return 0;
    }
    return -1;
}

int rlog_enabled(rlog_level_t level)
{
    return level >= g_log.level;
}

/* Append s as a JSON string body (without quotes), escaping what JSON requires. */
static void put_json_escaped(buf_t *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': buf_puts(b, "\\\""); break;
        case '\\': buf_puts(b, "\\\\"); break;
        case '\n': buf_puts(b, "\\n"); break;
        case '\r': buf_puts(b, "\\r"); break;
        case '\t': buf_puts(b, "\\t"); break;
        default:
            if (*p < 0x20)
                buf_printf(b, "\\u%04x", *p);
            else
                buf_append(b, p, 1);
        }
    }
}

/* Text values are quoted when they contain spaces, quotes or control characters. */
static void put_text_value(buf_t *b, const char *s)
{
    int quote = *s == '\0' || strpbrk(s, " \"=\t\r\n") != NULL;
    if (!quote) {
        buf_puts(b, s);
        return;
    }
    buf_puts(b, "\"");
    put_json_escaped(b, s);
    buf_puts(b, "\"");
}

void rlog_at(rlog_level_t level, const char *msg, ...)
{
    if (!rlog_enabled(level))
        return;
    char ts[40];
    clock_format_rfc3339(clock_wall_ns(), 6, ts, sizeof(ts));
    buf_t b;
    buf_init(&b, 1 << 20);
    va_list ap;
    va_start(ap, msg);
    if (g_log.format == RLOG_JSON) {
        buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"logger\":\"", ts, level_names[level]);
        put_json_escaped(&b, g_log.logger);
        buf_puts(&b, "\",\"msg\":\"");
        put_json_escaped(&b, msg);
        buf_puts(&b, "\"");
        const char *k;
        while ((k = va_arg(ap, const char *)) != NULL) {
            const char *v = va_arg(ap, const char *);
            buf_puts(&b, ",\"");
            put_json_escaped(&b, k);
            if (v) {
                buf_puts(&b, "\":\"");
                put_json_escaped(&b, v);
                buf_puts(&b, "\"");
            } else {
                buf_puts(&b, "\":null");
            }
        }
        buf_puts(&b, "}\n");
    } else {
        buf_printf(&b, "%s %-5s %s ", ts, level_names[level], g_log.logger);
        put_text_value(&b, msg);
        const char *k;
        while ((k = va_arg(ap, const char *)) != NULL) {
            const char *v = va_arg(ap, const char *);
            buf_printf(&b, " %s=", k);
            put_text_value(&b, v ? v : "null");
        }
        buf_puts(&b, "\n");
    }
    va_end(ap);
    FILE *out = g_log.out ? g_log.out : stderr;
    fwrite(buf_str(&b), 1, b.len, out);
    fflush(out);
    buf_free(&b);
}
