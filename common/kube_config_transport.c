/* kube_config_transport: what client-go's transport layer decides from a kubeconfig and
 * the environment, as pure functions: which proxy a request goes through
 * (http.ProxyURL of proxy-url, else http.ProxyFromEnvironment) and the impersonation
 * headers (transport.NewImpersonatingRoundTripper). kube_config.c calls them once at
 * load; the unit tests call them with tables.
 */
#include "kube_config_internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- small string helpers ---- */

static char *dup_lower(const char *s, size_t len)
{
    char *r = malloc(len + 1);
    if (r == NULL)
        return NULL;
    for (size_t i = 0; i < len; i++)
        r[i] = (char)tolower((unsigned char)s[i]);
    r[len] = '\0';
    return r;
}

/* The scheme of url when it has one of the form "letters://", lowercased into out; else
 * out = "". Returns the offset just past "://" (0 when there is no scheme). */
static size_t url_scheme(const char *url, char *out, size_t outlen)
{
    size_t i = 0;
    out[0] = '\0';
    while (isalpha((unsigned char)url[i]) || (i > 0 && (isdigit((unsigned char)url[i]) ||
                                                        url[i] == '+' || url[i] == '-' ||
                                                        url[i] == '.')))
        i++;
    if (i == 0 || strncmp(url + i, "://", 3) != 0 || i >= outlen)
        return 0;
    for (size_t j = 0; j < i; j++)
        out[j] = (char)tolower((unsigned char)url[j]);
    out[i] = '\0';
    return i + 3;
}

/* Split the authority of url (after scheme://) into host (no brackets) and port (may be
 * ""). Returns 0, or -1 when there is no host or it does not fit. */
static int url_host_port(const char *url, size_t start, char *host, size_t hostlen, char *port,
                         size_t portlen)
{
    const char *a = url + start;
    size_t alen = strcspn(a, "/?#");
    const char *at = NULL;
    for (size_t i = 0; i < alen; i++)
        if (a[i] == '@')
            at = a + i; /* the last '@' ends the userinfo */
    if (at) {
        alen -= (size_t)(at + 1 - a);
        a = at + 1;
    }
    const char *h = a, *p = NULL;
    size_t hlen;
    if (alen > 0 && a[0] == '[') {
        const char *close = memchr(a, ']', alen);
        if (close == NULL)
            return -1;
        h = a + 1;
        hlen = (size_t)(close - h);
        if ((size_t)(close + 1 - a) < alen) {
            if (close[1] != ':')
                return -1;
            p = close + 2;
        }
    } else {
        const char *colon = NULL;
        for (size_t i = 0; i < alen; i++)
            if (a[i] == ':')
                colon = a + i;
        hlen = colon ? (size_t)(colon - a) : alen;
        if (colon)
            p = colon + 1;
    }
    size_t plen = p ? (size_t)(a + alen - p) : 0;
    if (hlen == 0 || hlen >= hostlen || plen >= portlen)
        return -1;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    memcpy(port, p ? p : "", plen);
    port[plen] = '\0';
    return 0;
}

/* ---- IP addresses (Go's net.IP semantics: IPv4 as IPv4-mapped IPv6) ---- */

/* Parse an IPv4 or IPv6 literal into 16 bytes. Returns 1 when s is one. */
static int parse_ip(const char *s, unsigned char ip[16])
{
    struct in_addr v4;
    if (inet_pton(AF_INET, s, &v4) == 1) {
        memset(ip, 0, 10);
        ip[10] = ip[11] = 0xff;
        memcpy(ip + 12, &v4, 4);
        return 1;
    }
    return inet_pton(AF_INET6, s, ip) == 1;
}

static int is_v4(const unsigned char ip[16])
{
    static const unsigned char prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    return memcmp(ip, prefix, 12) == 0;
}

static int is_loopback(const unsigned char ip[16])
{
    static const unsigned char v6lo[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
    return is_v4(ip) ? ip[12] == 127 : memcmp(ip, v6lo, 16) == 0;
}

/* ip inside the CIDR "addr/bits"? Returns -1 when cidr is not one. */
static int cidr_contains(const char *cidr, const unsigned char ip[16])
{
    char addr[64];
    unsigned char net[16];
    const char *slash = strchr(cidr, '/');
    char *end;
    if (slash == NULL || (size_t)(slash - cidr) >= sizeof addr || !slash[1])
        return -1;
    memcpy(addr, cidr, (size_t)(slash - cidr));
    addr[slash - cidr] = '\0';
    long bits = strtol(slash + 1, &end, 10);
    if (*end || !isdigit((unsigned char)slash[1]) || !parse_ip(addr, net))
        return -1;
    int v4 = strchr(addr, ':') == NULL;
    if (bits < 0 || bits > (v4 ? 32 : 128))
        return -1;
    if (v4)
        bits += 96;
    else if (is_v4(ip) != is_v4(net))
        return 0; /* Go: an IPv6 network does not hold IPv4 addresses */
    for (long i = 0; i < bits; i++) {
        int b = 7 - (int)(i % 8);
        if (((ip[i / 8] >> b) & 1) != ((net[i / 8] >> b) & 1))
            return 0;
    }
    return 1;
}

/* ---- NO_PROXY (golang.org/x/net/http/httpproxy) ---- */

/* Does one NO_PROXY entry (lowercased, trimmed, non-empty) exempt host:port? */
static int no_proxy_entry(const char *p, const char *host, const char *port, int host_is_ip,
                          const unsigned char ip[16])
{
    char phost[256];
    const char *pport = "";
    unsigned char pip[16];

    if (strcmp(p, "*") == 0)
        return 1;
    int c = cidr_contains(p, ip);
    if (c >= 0)
        return host_is_ip && c == 1;
    /* host:port or [v6]:port (Go's net.SplitHostPort); else the whole entry is a host */
    const char *colon = strrchr(p, ':');
    size_t plen = strlen(p);
    if (p[0] == '[' && colon && colon > p && colon[-1] == ']') {
        plen = (size_t)(colon - 1 - (p + 1));
        if (plen >= sizeof phost)
            return 0;
        memcpy(phost, p + 1, plen);
        phost[plen] = '\0';
        pport = colon + 1;
    } else if (colon && strchr(p, ':') == colon && p[0] != '[') {
        plen = (size_t)(colon - p);
        if (plen >= sizeof phost)
            return 0;
        memcpy(phost, p, plen);
        phost[plen] = '\0';
        pport = colon + 1;
    } else if (plen < sizeof phost) {
        memcpy(phost, p, plen + 1);
    } else {
        return 0;
    }
    if (phost[0] == '\0')
        return 0; /* malformed: no host part; Go ignores it */
    if (parse_ip(phost, pip)) {
        if (!host_is_ip || memcmp(pip, ip, 16) != 0)
            return 0;
        return !*pport || strcmp(pport, port) == 0;
    }
    /* domain.com matches itself and its subdomains; .domain.com and *.domain.com only
     * the subdomains. */
    const char *dom = phost;
    if (strncmp(dom, "*.", 2) == 0)
        dom++;
    int match_host = dom[0] != '.';
    const char *suffix = match_host ? dom : dom + 1; /* without the dot */
    size_t hl = strlen(host), sl = strlen(suffix);
    int hit = (match_host && strcmp(host, suffix) == 0) ||
              (hl > sl && host[hl - sl - 1] == '.' && strcmp(host + hl - sl, suffix) == 0);
    return hit && (!*pport || strcmp(pport, port) == 0);
}

int kcfg_no_proxy_match(const char *no_proxy, const char *host, const char *port)
{
    unsigned char ip[16];
    char *lhost = dup_lower(host, strlen(host));
    int hit = 0;

    if (lhost == NULL)
        return 0;
    int host_is_ip = parse_ip(lhost, ip);
    for (const char *p = no_proxy ? no_proxy : ""; *p && !hit;) {
        size_t len = strcspn(p, ",");
        size_t s = 0, e = len;
        while (s < e && isspace((unsigned char)p[s]))
            s++;
        while (e > s && isspace((unsigned char)p[e - 1]))
            e--;
        if (e > s) {
            char *entry = dup_lower(p + s, e - s);
            if (entry == NULL)
                break;
            hit = no_proxy_entry(entry, lhost, port, host_is_ip, ip);
            free(entry);
        }
        p += len;
        if (*p == ',')
            p++;
    }
    free(lhost);
    return hit;
}

/* ---- the proxy ---- */

static const char *env_any(kcfg_getenv_fn env, const char *a, const char *b,
                           const char **which)
{
    const char *v = env(a);
    if (v && *v) {
        *which = a;
        return v;
    }
    v = env(b);
    if (v && *v) {
        *which = b;
        return v;
    }
    *which = NULL;
    return NULL;
}

/* A copy of a proxy URL for curl: the scheme lowercased, socks5 as socks5h. */
static char *curl_proxy(const char *scheme, const char *rest)
{
    const char *cs = strcmp(scheme, "socks5") == 0 ? "socks5h" : scheme;
    size_t n = strlen(cs) + 3 + strlen(rest) + 1;
    char *r = malloc(n);
    if (r)
        snprintf(r, n, "%s://%s", cs, rest);
    return r;
}

static int proxy_scheme_ok(const char *s)
{
    return strcmp(s, "http") == 0 || strcmp(s, "https") == 0 || strcmp(s, "socks5") == 0;
}

int kcfg_proxy_for(const char *server, const char *proxy_url, kcfg_getenv_fn env,
                   char **proxy, const char **source, char *err, size_t errlen)
{
    char scheme[16], pscheme[16], host[512], port[32], phost[512], pport[32];
    unsigned char ip[16];
    size_t off;

    *proxy = NULL;
    *source = NULL;
    if (proxy_url && *proxy_url) {
        off = url_scheme(proxy_url, pscheme, sizeof pscheme);
        if (off == 0 || !proxy_scheme_ok(pscheme)) {
            kcfg_errf(err, errlen, "proxy-url \"%s\": unsupported scheme \"%s\", must be "
                                   "http, https, or socks5", proxy_url,
                      off ? pscheme : "");
            return -1;
        }
        if (url_host_port(proxy_url, off, phost, sizeof phost, pport, sizeof pport)) {
            kcfg_errf(err, errlen, "proxy-url \"%s\": no host", proxy_url);
            return -1;
        }
        for (const char *p = proxy_url; *p; p++)
            if ((unsigned char)*p <= 0x20 || *p == 0x7f) {
                kcfg_errf(err, errlen, "proxy-url \"%s\": contains whitespace or a control "
                                       "character", proxy_url);
                return -1;
            }
        if ((*proxy = curl_proxy(pscheme, proxy_url + off)) == NULL) {
            kcfg_errf(err, errlen, "proxy-url: out of memory");
            return -1;
        }
        *source = "proxy-url";
        return 0;
    }
    if (env == NULL || server == NULL)
        return 0;
    off = url_scheme(server, scheme, sizeof scheme);
    if (off == 0 || url_host_port(server, off, host, sizeof host, port, sizeof port))
        return 0; /* not a URL we know: the client reports it */
    const char *which = NULL, *val = NULL;
    if (strcmp(scheme, "https") == 0) {
        val = env_any(env, "HTTPS_PROXY", "https_proxy", &which);
    } else if (strcmp(scheme, "http") == 0) {
        const char *cgi = env("REQUEST_METHOD");
        if (!(cgi && *cgi)) /* Go refuses HTTP_PROXY under CGI (httpoxy) */
            val = env_any(env, "HTTP_PROXY", "http_proxy", &which);
    }
    if (val == NULL)
        return 0;
    if (!*port)
        snprintf(port, sizeof port, "%s", strcmp(scheme, "https") == 0 ? "443" : "80");
    if (strcasecmp(host, "localhost") == 0 || (parse_ip(host, ip) && is_loopback(ip)))
        return 0;
    const char *np_which;
    const char *np = env_any(env, "NO_PROXY", "no_proxy", &np_which);
    if (np && kcfg_no_proxy_match(np, host, port))
        return 0;
    /* Go's parseProxy: a value without http, https or socks5 gets http:// in front. */
    off = url_scheme(val, pscheme, sizeof pscheme);
    if (off && proxy_scheme_ok(pscheme))
        *proxy = curl_proxy(pscheme, val + off);
    else
        *proxy = curl_proxy("http", val);
    if (*proxy == NULL) {
        kcfg_errf(err, errlen, "%s: out of memory", which);
        return -1;
    }
    *source = which;
    return 0;
}

/* ---- impersonation ---- */

void kcfg_free_lines(char **lines, size_t n)
{
    for (size_t i = 0; lines && i < n; i++)
        free(lines[i]);
    free(lines);
}

/* An HTTP token character (RFC 7230) other than '%': kept as is in an extra key. */
static int header_key_byte(unsigned char b)
{
    return isalnum(b) || (b != '%' && b < 0x7f && strchr("!#$&'*+-.^_`|~", b) && b);
}

static int value_ok(const char *v)
{
    for (; *v; v++)
        if (((unsigned char)*v < 0x20 && *v != '\t') || *v == 0x7f)
            return 0;
    return 1;
}

/* Append "name: value" (curl sends "name;" as an empty header) to lines. */
static int add_line(char ***lines, size_t *n, const char *name, const char *value)
{
    size_t len = strlen(name) + strlen(value) + 3;
    char **nl = realloc(*lines, (*n + 1) * sizeof **lines);
    if (nl == NULL)
        return -1;
    *lines = nl;
    if ((nl[*n] = malloc(len)) == NULL)
        return -1;
    if (*value)
        snprintf(nl[*n], len, "%s: %s", name, value);
    else
        snprintf(nl[*n], len, "%s;", name);
    (*n)++;
    return 0;
}

/* The first impersonation field of u holding a value that would split a header (a control
 * character), by its kubeconfig name, or NULL. */
static const char *impersonation_bad_field(const kcfg_user_t *u)
{
    if (u->as && !value_ok(u->as))
        return "as";
    if (u->as_uid && !value_ok(u->as_uid))
        return "as-uid";
    for (size_t i = 0; i < u->n_as_groups; i++)
        if (!value_ok(u->as_groups[i]))
            return "as-groups";
    for (size_t i = 0; i < u->n_as_extra; i++)
        for (size_t j = 0; j < u->as_extra[i].n_values; j++)
            if (!value_ok(u->as_extra[i].values[j]))
                return "as-user-extra";
    return NULL;
}

/* "Impersonate-Extra-<key>" with the key's bytes that a header name cannot hold
 * percent-encoded, as client-go writes it; malloc'd, NULL when out of memory. */
static char *extra_header_name(const char *key)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t klen = strlen(key);
    char *name = malloc(sizeof "Impersonate-Extra-" + 3 * klen);
    if (name == NULL)
        return NULL;
    size_t off = (size_t)snprintf(name, sizeof "Impersonate-Extra-", "Impersonate-Extra-");
    for (size_t k = 0; k < klen; k++) {
        unsigned char b = (unsigned char)key[k];
        if (header_key_byte(b)) {
            name[off++] = (char)b;
        } else {
            name[off++] = '%';
            name[off++] = hex[b >> 4];
            name[off++] = hex[b & 15];
        }
    }
    name[off] = '\0';
    return name;
}

/* Append the Impersonate-Extra-<key> lines of u to l. 0, or -1 when out of memory. */
static int add_extra_lines(const kcfg_user_t *u, char ***l, size_t *count)
{
    for (size_t i = 0; i < u->n_as_extra; i++) {
        char *name = extra_header_name(u->as_extra[i].key);
        if (name == NULL)
            return -1;
        for (size_t j = 0; j < u->as_extra[i].n_values; j++)
            if (add_line(l, count, name, u->as_extra[i].values[j])) {
                free(name);
                return -1;
            }
        free(name);
    }
    return 0;
}

int kcfg_impersonation_headers(const kcfg_user_t *u, const char *where, char ***lines,
                               size_t *n, char *err, size_t errlen)
{
    char **l = NULL;
    size_t count = 0;

    *lines = NULL;
    *n = 0;
    int any = (u->as && *u->as) || (u->as_uid && *u->as_uid) || u->n_as_groups > 0 ||
              u->n_as_extra > 0;
    if (!any)
        return 0;
    if (!(u->as && *u->as)) {
        /* kubectl's words: the API server would refuse it anyway (400). */
        kcfg_errf(err, errlen, "%s: as-uid, as-groups or as-user-extra set without "
                               "impersonating a user (as)", where);
        return -1;
    }
    /* Refuse what would split a header, naming the field. */
    const char *bad = impersonation_bad_field(u);
    if (bad) {
        kcfg_errf(err, errlen, "%s: %s contains a control character", where, bad);
        return -1;
    }
    if (add_line(&l, &count, "Impersonate-User", u->as))
        goto nomem;
    if (u->as_uid && *u->as_uid && add_line(&l, &count, "Impersonate-Uid", u->as_uid))
        goto nomem;
    for (size_t i = 0; i < u->n_as_groups; i++)
        if (add_line(&l, &count, "Impersonate-Group", u->as_groups[i]))
            goto nomem;
    if (add_extra_lines(u, &l, &count))
        goto nomem;
    *lines = l;
    *n = count;
    return 0;
nomem:
    kcfg_free_lines(l, count);
    kcfg_errf(err, errlen, "%s: impersonation: out of memory", where);
    return -1;
}
