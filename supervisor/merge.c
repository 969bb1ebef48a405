#include "merge.h"

#include <stdlib.h>
#include <string.h>

typedef struct family {
    char *name;
    char *help; /* "# HELP ..." line or NULL */
    char *type; /* "# TYPE ..." line or NULL */
    buf_t samples;
    struct family *next;
} family_t;

struct merge {
    family_t *families; /* sorted by name */
};

merge_t *merge_new(void)
{
    return calloc(1, sizeof(merge_t));
}

void merge_destroy(merge_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    family_t *f = (*self_p)->families;
    while (f) {
        family_t *next = f->next;
        free(f->name);
        free(f->help);
        free(f->type);
        buf_free(&f->samples);
        free(f);
        f = next;
    }
    free(*self_p);
    *self_p = NULL;
}

static int is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == ':';
}

static family_t *family_get(merge_t *m, const char *name, size_t len)
{
    family_t **pp = &m->families;
    while (*pp) {
        int c = strncmp((*pp)->name, name, len);
        if (c == 0 && (*pp)->name[len] == '\0')
            return *pp;
        if (c > 0 || (c == 0 && (*pp)->name[len] != '\0'))
            break;
        pp = &(*pp)->next;
    }
    family_t *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->name = strndup(name, len);
    if (!f->name) {
        free(f);
        return NULL;
    }
    buf_init(&f->samples, 16 << 20);
    f->next = *pp;
    *pp = f;
    return f;
}

/* The family a sample belongs to: histogram/summary series carry suffixes. A sample whose
 * base name (without _bucket/_sum/_count) has a family already belongs to that one. */
static family_t *family_for_sample(merge_t *m, const char *name, size_t len)
{
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
    for (size_t i = 0; i < 3; i++) {
        size_t sl = strlen(suffixes[i]);
        if (len > sl && memcmp(name + len - sl, suffixes[i], sl) == 0) {
            for (family_t *f = m->families; f; f = f->next) {
                if (strlen(f->name) == len - sl && memcmp(f->name, name, len - sl) == 0 &&
                    f->type && (strstr(f->type, " histogram") || strstr(f->type, " summary")))
                    return f;
            }
        }
    }
    return family_get(m, name, len);
}

/* 1 when rest (what follows a sample's name) is "[{labels}] value [timestamp]". */
static int sample_well_formed(const char *rest, size_t rlen)
{
    const char *p = rest, *end = rest + rlen;
    if (p < end && *p == '{') {
        const char *close = memchr(p, '}', rlen);
        if (!close)
            return 0;
        p = close + 1;
    }
    if (p >= end || *p != ' ')
        return 0;
    while (p < end && *p == ' ')
        p++;
    char value[64];
    size_t vl = 0;
    while (p + vl < end && p[vl] != ' ' && vl < sizeof(value) - 1) {
        value[vl] = p[vl];
        vl++;
    }
    value[vl] = '\0';
    if (vl == 0)
        return 0;
    if (strcmp(value, "+Inf") == 0 || strcmp(value, "-Inf") == 0 || strcmp(value, "NaN") == 0)
        return 1;
    char *num_end = NULL;
    strtod(value, &num_end);
    return num_end == value + vl;
}

/* Handle one line (without its newline). */
static int merge_line(merge_t *m, const char *child, const char *line, size_t len)
{
    if (len == 0)
        return 0;
    if (line[0] == '#') {
        int help = len > 7 && memcmp(line, "# HELP ", 7) == 0;
        int type = len > 7 && memcmp(line, "# TYPE ", 7) == 0;
        if (!help && !type)
            return 0;
        const char *name = line + 7;
        size_t nl = 0;
        while (7 + nl < len && is_name_char(name[nl]))
            nl++;
        if (nl == 0)
            return 0;
        family_t *f = family_get(m, name, nl);
        if (!f)
            return -1;
        char **slot = help ? &f->help : &f->type;
        if (!*slot && !(*slot = strndup(line, len)))
            return -1;
        return 0;
    }
    size_t nl = 0;
    while (nl < len && is_name_char(line[nl]))
        nl++;
    if (nl == 0 || nl == len || !sample_well_formed(line + nl, len - nl))
        return 0; /* not a sample line: skipped */
    family_t *f = family_for_sample(m, line, nl);
    if (!f)
        return -1;
    const char *rest = line + nl;
    size_t rlen = len - nl;
    buf_append(&f->samples, line, nl);
    if (rest[0] == '{') {
        const char *close = memchr(rest, '}', rlen);
        if (!close)
            return 0;
        /* Series that already say which child they describe keep their labels. */
        if ((rlen > 7 && memcmp(rest, "{child=", 7) == 0) ||
            memmem(rest, (size_t)(close - rest), ",child=", 7)) {
            buf_append(&f->samples, rest, rlen);
            buf_puts(&f->samples, "\n");
            return 0;
        }
        buf_printf(&f->samples, "{child=\"%s\"%s", child, close == rest + 1 ? "" : ",");
        buf_append(&f->samples, rest + 1, rlen - 1);
    } else {
        buf_printf(&f->samples, "{child=\"%s\"}", child);
        buf_append(&f->samples, rest, rlen);
    }
    buf_puts(&f->samples, "\n");
    return 0;
}

int merge_add(merge_t *m, const char *child, const char *text, size_t len)
{
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || text[i] == '\n') {
            /* A last line without a newline may be cut short: skip it. */
            if (i == len && i > start)
                break;
            if (merge_line(m, child, text + start, i - start))
                return -1;
            start = i + 1;
        }
    }
    return 0;
}

int merge_render(const merge_t *m, buf_t *out)
{
    for (const family_t *f = m->families; f; f = f->next) {
        if (f->help)
            buf_printf(out, "%s\n", f->help);
        if (f->type)
            buf_printf(out, "%s\n", f->type);
        buf_append(out, buf_str(&f->samples), f->samples.len);
    }
    return out->len + 1 >= out->cap ? -1 : 0;
}
