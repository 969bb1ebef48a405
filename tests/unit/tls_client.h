/* tls_client: the blocking TLS client of the webhook server's tests and its benchmark
 * (bench/bench_webhook.c): a TCP connection to 127.0.0.1 with 5 s send and receive
 * timeouts, then the handshake. Header-only. */
#ifndef RDC_TEST_TLS_CLIENT_H
#define RDC_TEST_TLS_CLIENT_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

typedef struct {
    int fd;   /* -1: none */
    SSL *ssl; /* NULL: none */
} tls_client_t;

/* A TCP connection to 127.0.0.1:port with 5 s timeouts (TCP_NODELAY with nodelay).
 * Returns the descriptor, or -1 (nothing left open). */
static inline int tls_tcp_connect(int port, int nodelay)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (nodelay) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Connect and finish the TLS handshake with a client of ctx. Returns 0, or -1 (c cleared:
 * fd -1, ssl NULL) when the connection or the handshake failed, as when the server
 * refuses at its cap (a reset or the end of the stream). */
static inline int tls_client_open(SSL_CTX *ctx, int port, int nodelay, tls_client_t *c)
{
    c->ssl = NULL;
    if ((c->fd = tls_tcp_connect(port, nodelay)) < 0)
        return -1;
    if ((c->ssl = SSL_new(ctx)) != NULL) {
        SSL_set_fd(c->ssl, c->fd);
        if (SSL_connect(c->ssl) == 1)
            return 0;
    }
    ERR_clear_error();
    SSL_free(c->ssl);
    close(c->fd);
    c->ssl = NULL;
    c->fd = -1;
    return -1;
}

/* Free the TLS state and close the connection; c is cleared (closing twice is harmless). */
static inline void tls_client_close(tls_client_t *c)
{
    if (c->ssl)
        SSL_free(c->ssl);
    if (c->fd >= 0)
        close(c->fd);
    c->ssl = NULL;
    c->fd = -1;
}

#endif
