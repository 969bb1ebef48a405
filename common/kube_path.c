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

int kube_path(buf_t *out, const char *group, const char *version, const char *ns,
              const char *resource, const char *name, const char *subresource)
{
    size_t mark = out->len;
    int rc = -1;
    if (!version || !resource || bad_segment(version) || bad_segment(resource) ||
        (group && *group && bad_segment(group)) || (ns && bad_segment(ns)) ||
        (name && bad_segment(name)) || (subresource && bad_segment(subresource)))
        goto out;
    if (group && *group) {
        if (buf_puts(out, "/apis/") || put_escaped(out, group))
            goto out;
    } else if (buf_puts(out, "/api")) {
        goto out;
    }
    if (buf_puts(out, "/") || put_escaped(out, version))
        goto out;
    if (ns && (buf_puts(out, "/namespaces/") || put_escaped(out, ns)))
        goto out;
    if (buf_puts(out, "/") || put_escaped(out, resource))
        goto out;
    if (name && (buf_puts(out, "/") || put_escaped(out, name)))
        goto out;
    if (subresource && (buf_puts(out, "/") || put_escaped(out, subresource)))
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

