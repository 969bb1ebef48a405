/* loopback: the address the unit suites' servers bind, 127.0.0.1 on port 0 (any free
 * one; getsockname or the server's own report tells which). Header-only. */
#ifndef RDC_TEST_LOOPBACK_H
#define RDC_TEST_LOOPBACK_H

#include <arpa/inet.h>
#include <netinet/in.h>

/* 127.0.0.1, port 0, every other field zero. */
static inline struct sockaddr_in loopback_any_port(void)
{
    return (struct sockaddr_in){.sin_family = AF_INET, .sin_port = 0, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
}

#endif
