/* kube_path: request paths and query strings of the client (kube_client.h). */
#include "kube_client.h"

#include "kube_client_internal.h"

#include <stdio.h>
#include <string.h>

/* ---- paths and queries --------------------------------------------------------- */

static int is_unreserved(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

/* Append s percent-encoded. */
static int put_escaped(buf_t *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char enc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
        if (is_unreserved(*p) ? buf_append(out, p, 1) : buf_append(out, enc, 3))
            return -1;
    }
    return 0;
}

/* A path piece that is present must be a usable segment. */
static int bad_segment(const char *s)
{
    return !*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0;
}

/* Append lead, then value percent-encoded. 0, or -1 when the buffer is full. */
static int put_piece(buf_t *out, const char *lead, const char *value)
{
    return buf_puts(out, lead) || put_escaped(out, value) ? -1 : 0;
}

int kube_path(buf_t *out, const char *group, const char *version, const char *ns,
              const char *resource, const char *name, const char *subresource)
{
    const char *grp = group && *group ? group : NULL; /* "" is the core group: /api */
    /* After the group, the pieces in order: a NULL one is left out (version and
     * resource are required). */
    const struct {
        const char *lead, *value;
    } pieces[] = {
        {"/", version}, {"/namespaces/", ns}, {"/", resource}, {"/", name}, {"/", subresource},
    };
    size_t mark = out->len;
    int rc = -1;
    if (!version || !resource || (grp && bad_segment(grp)))
        goto out;
    for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++)
        if (pieces[i].value && bad_segment(pieces[i].value))
            goto out;
    if (grp ? put_piece(out, "/apis/", grp) : buf_puts(out, "/api"))
        goto out;
    for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++)
        if (pieces[i].value && put_piece(out, pieces[i].lead, pieces[i].value))
            goto out;
    rc = 0;
out:
    if (rc) {
        /* Leave out as it was. */
        out->len = mark;
        if (out->data)
            out->data[mark] = '\0';
    }
    return rc;
}

/* Append key=value (value percent-encoded) to a query string. */
int kc_query_add(buf_t *q, const char *key, const char *value)
{
    if (!value || !*value)
        return 0;
    if ((q->len && buf_puts(q, "&")) || buf_puts(q, key) || buf_puts(q, "="))
        return -1;
    return put_escaped(q, value);
}

int kc_query_add_long(buf_t *q, const char *key, long v)
{
    char n[32];
    snprintf(n, sizeof(n), "%ld", v);
    return kc_query_add(q, key, n);
}

