/* Real redis-server processes for the unit tests (Debian's redis-server): each on a free
 * port (or the one given) of a loopback address, no persistence, its log discarded,
 * started by fork/exec and stopped by its PID; server_start_tls serves TLS only (Debian's
 * redis-server is built with it). Static helpers: include in one test file. */
#ifndef RDC_TEST_REDIS_SERVERS_H
#define RDC_TEST_REDIS_SERVERS_H

#include "clock.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    pid_t pid;
    int port;
} server_t;

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || getsockname(fd, (struct sockaddr *)&a, &len)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Answers PING (or asks for a password) within deadline_ms (a sync hiredis connection of the test's own). */
static int server_answers_at(const char *ip, int port, int deadline_ms)
{
    for (int waited = 0; waited <= deadline_ms; waited += 20) {
        struct timeval tv = {0, 200000};
        redisContext *c = redisConnectWithTimeout(ip, port, tv);
        if (c && !c->err) {
            redisReply *r = redisCommand(c, "PING");
            /* NOAUTH: up, and asking for the password (a --requirepass server). */
            int ok = r && (r->type == REDIS_REPLY_STATUS ||
                           (r->type == REDIS_REPLY_ERROR && r->str && strstr(r->str, "NOAUTH")));
            freeReplyObject(r);
            redisFree(c);
            if (ok)
                return 1;
        } else if (c) {
            redisFree(c);
        }
        nap_ms(20);
    }
    return 0;
}

/* Fork and exec redis-server with argv[0..n) and then extra (NULL-terminated), argv
 * having room for cap entries. 0, or -1 when fork failed. */
static inline int server_spawn(server_t *s, const char **argv, size_t n, size_t cap, const char *const *extra)
{
    for (size_t i = 0; extra && extra[i] && n < cap - 1; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    s->pid = fork();
    if (s->pid == 0) {
        execvp("redis-server", (char *const *)argv);
        _exit(127);
    }
    return s->pid < 0 ? -1 : 0;
}

/* Start redis-server on ip:port (0 = a free one) with extra arguments (NULL-terminated). */
static int server_start_at(server_t *s, const char *ip, int port, const char *const *extra)
{
    s->port = port ? port : free_port();
    char p[16];
    snprintf(p, sizeof(p), "%d", s->port);
    const char *argv[32] = {"redis-server", "--port", p, "--bind", ip, "--save", "", "--appendonly", "no",
                            "--daemonize", "no", "--logfile", "/dev/null", "--dir", "/tmp",
                            "--repl-diskless-sync-delay", "0"};
    if (server_spawn(s, argv, 17, 32, extra))
        return -1;
    return server_answers_at(ip, s->port, 5000) ? 0 : -1;
}

/* Accepts a TCP connection on ip:port within deadline_ms (a TLS-only server: nothing in
 * plain text to ask). */
static inline int server_accepts_at(const char *ip, int port, int deadline_ms)
{
    for (int waited = 0; waited <= deadline_ms; waited += 20) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        inet_pton(AF_INET, ip, &a.sin_addr);
        int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
        if (fd >= 0)
            close(fd);
        if (ok)
            return 1;
        nap_ms(20);
    }
    return 0;
}

/* Start redis-server on 127.0.0.1 serving TLS only (--port 0) on a free port with the
 * certificate dir/crt and key dir/key, clients' certificates checked against dir/ca.crt
 * when auth_clients (Redis's tls-auth-clients), plus extra arguments (NULL-terminated). */
static inline int server_start_tls(server_t *s, const char *dir, const char *crt, const char *key, int auth_clients,
                            const char *const *extra)
{
    s->port = free_port();
    char p[16], crt_path[512], key_path[512], ca_path[512];
    snprintf(p, sizeof(p), "%d", s->port);
    snprintf(crt_path, sizeof(crt_path), "%s/%s", dir, crt);
    snprintf(key_path, sizeof(key_path), "%s/%s", dir, key);
    snprintf(ca_path, sizeof(ca_path), "%s/ca.crt", dir);
    const char *argv[40] = {"redis-server", "--port", "0", "--tls-port", p, "--bind", "127.0.0.1",
                            "--tls-cert-file", crt_path, "--tls-key-file", key_path, "--tls-ca-cert-file", ca_path,
                            "--tls-auth-clients", auth_clients ? "yes" : "no", "--save", "", "--appendonly", "no",
                            "--daemonize", "no", "--logfile", "/dev/null", "--dir", "/tmp"};
    if (server_spawn(s, argv, 25, 40, extra))
        return -1;
    return server_accepts_at("127.0.0.1", s->port, 5000) ? 0 : -1;
}

static void server_stop(server_t *s)
{
    if (s->pid <= 0)
        return;
    kill(s->pid, SIGCONT);
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
}

static inline int server_start(server_t *s, int port, const char *const *extra)
{
    return server_start_at(s, "127.0.0.1", port, extra);
}

#endif
