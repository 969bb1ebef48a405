#include "httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct httpd {
    struct MHD_Daemon *daemon;
    httpd_handler_fn handler;
    void *user;
    int port;
    char host[INET_ADDRSTRLEN];
};

int httpd_parse_addr(const char *addr, char *host, size_t hostlen, int *port)
{
    const char *colon = strrchr(addr, ':');
    if (!colon)
        return -1;
    size_t hl = (size_t)(colon - addr);
    if (hl >= hostlen)
        return -1;
    memcpy(host, addr, hl);
    host[hl] = '\0';
    char *end = NULL;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || p < 0 || p > 65535)
        return -1;
    *port = (int)p;
    return 0;
}

static enum MHD_Result httpd_answer(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **req_cls)
{
    (void)version, (void)upload_data;
    httpd_t *h = cls;
    /* First call for a request: only headers are known. Answer on the second. */
    if (*req_cls == NULL) {
        *req_cls = h;
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0; /* ignore request bodies */
        return MHD_YES;
    }
    buf_t body;
    buf_init(&body, 32 << 20);
    int status;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        buf_puts(&body, "method not allowed\n");
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
    } else {
        status = h->handler(url, &body, h->user);
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        body.len, (void *)buf_str(&body), MHD_RESPMEM_MUST_COPY);
    buf_free(&body);
    if (!resp)
        return MHD_NO;
    const char *ctype = strcmp(url, "/metrics") == 0 ? "text/plain; version=0.0.4; charset=utf-8"
                                                      : "text/plain; charset=utf-8";
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
    enum MHD_Result rc = MHD_queue_response(conn, (unsigned)status, resp);
    MHD_destroy_response(resp);
    return rc;
}

int httpd_new(const char *addr, httpd_handler_fn handler, void *user, httpd_t **out,
              char *err, size_t errlen)
{
    *out = NULL;
    if (!addr || strcmp(addr, "0") == 0 || *addr == '\0')
        return 0;
    char host[64];
    int port;
    if (httpd_parse_addr(addr, host, sizeof(host), &port)) {
        snprintf(err, errlen, "bind address \"%s\": expected host:port or :port", addr);
        return -1;
    }
    struct sockaddr_in sin;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    if (host[0] == '\0' || strcmp(host, "0.0.0.0") == 0) {
        sin.sin_addr.s_addr = htonl(INADDR_ANY);
    } else if (strcmp(host, "localhost") == 0) {
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else if (inet_pton(AF_INET, host, &sin.sin_addr) != 1) {
        snprintf(err, errlen, "bind address \"%s\": \"%s\" is not an IPv4 address", addr, host);
        return -1;
    }
    httpd_t *h = calloc(1, sizeof(*h));
    if (!h) {
        snprintf(err, errlen, "bind address \"%s\": out of memory", addr);
        return -1;
    }
    h->handler = handler;
    h->user = user;
    h->daemon = MHD_start_daemon(MHD_USE_EPOLL, 0, NULL, NULL,
                                 httpd_answer, h, MHD_OPTION_SOCK_ADDR, &sin,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
                                 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 * 1024,
                                 MHD_OPTION_END);
    if (!h->daemon) {
        snprintf(err, errlen, "bind address \"%s\": cannot listen (in use or not permitted)",
                 addr);
        free(h);
        return -1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : port;
    inet_ntop(AF_INET, &sin.sin_addr, h->host, sizeof(h->host));
    *out = h;
    return 0;
}

void httpd_destroy(httpd_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    MHD_stop_daemon((*self_p)->daemon);
    free(*self_p);
    *self_p = NULL;
}

int httpd_fd(const httpd_t *h)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    return info ? info->epoll_fd : -1;
}

long httpd_timeout_ms(const httpd_t *h)
{
    MHD_UNSIGNED_LONG_LONG t;
    if (MHD_get_timeout(h->daemon, &t) != MHD_YES)
        return -1;
    return t > 60000 ? 60000 : (long)t;
}

void httpd_run(httpd_t *h)
{
    MHD_run(h->daemon);
}

int httpd_port(const httpd_t *h)
{
    return h->port;
}

char *httpd_bound_addr(const httpd_t *h, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s:%d", h->host, h->port);
    return out;
}
