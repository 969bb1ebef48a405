#include "rmsg.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

typedef struct {
    char *data; /* len bytes plus a NUL */
    size_t len;
} rframe_t;

struct rmsg {
    rframe_t *frames;
    size_t n;
    size_t alloc;
};

/* Out of memory in a message is fatal, as in CZMQ: the process exits with a clear line
 * and the supervisor restarts it, instead of every call site handling a NULL. */
static void *must(void *p)
{
    if (!p) {
        fputs("rmsg: out of memory\n", stderr);
        abort();
    }
    return p;
}

rmsg_t *rmsg_new(void)
{
    return must(calloc(1, sizeof(rmsg_t)));
}

void rmsg_destroy(rmsg_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    rmsg_t *m = *self_p;
    for (size_t i = 0; i < m->n; i++)
        free(m->frames[i].data);
    free(m->frames);
    free(m);
    *self_p = NULL;
}

size_t rmsg_size(const rmsg_t *m)
{
    return m ? m->n : 0;
}

/* Insert a copy of data at position pos. */
static int rmsg_insert(rmsg_t *m, size_t pos, const void *data, size_t len)
{
    if (m->n == m->alloc) {
        size_t na = m->alloc ? m->alloc * 2 : 8;
        m->frames = must(realloc(m->frames, na * sizeof(rframe_t)));
        m->alloc = na;
    }
    char *copy = must(malloc(len + 1));
    if (len)
        memcpy(copy, data, len);
    copy[len] = '\0';
    memmove(&m->frames[pos + 1], &m->frames[pos], (m->n - pos) * sizeof(rframe_t));
    m->frames[pos].data = copy;
    m->frames[pos].len = len;
    m->n++;
    return 0;
}

int rmsg_addmem(rmsg_t *m, const void *data, size_t len)
{
    return rmsg_insert(m, m->n, data, len);
}

int rmsg_addstr(rmsg_t *m, const char *s)
{
    return rmsg_insert(m, m->n, s, strlen(s));
}

int rmsg_addf(rmsg_t *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        must(NULL);
    int rc = rmsg_insert(m, m->n, s, (size_t)n);
    free(s);
    return rc;
}

int rmsg_pushmem(rmsg_t *m, const void *data, size_t len)
{
    return rmsg_insert(m, 0, data, len);
}

int rmsg_pushstr(rmsg_t *m, const char *s)
{
    return rmsg_insert(m, 0, s, strlen(s));
}

const char *rmsg_frame(const rmsg_t *m, size_t i, size_t *len)
{
    if (!m || i >= m->n)
        return NULL;
    if (len)
        *len = m->frames[i].len;
    return m->frames[i].data;
}

char *rmsg_strdup(const rmsg_t *m, size_t i)
{
    if (!m || i >= m->n)
        return NULL;
    return must(strndup(m->frames[i].data, m->frames[i].len));
}

int rmsg_frame_is(const rmsg_t *m, size_t i, const char *s)
{
    if (!m || i >= m->n)
        return 0;
    size_t n = strlen(s);
    return m->frames[i].len == n && memcmp(m->frames[i].data, s, n) == 0;
}

int rmsg_frame_int64(const rmsg_t *m, size_t i, int64_t *out)
{
    if (!m || i >= m->n || m->frames[i].len == 0 || m->frames[i].len > 20)
        return -1;
    /* The frame is NUL-terminated by construction, so strtoll cannot overrun it. */
    const char *s = m->frames[i].data;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end != s + m->frames[i].len)
        return -1;
    *out = v;
    return 0;
}

char *rmsg_popstr(rmsg_t *m)
{
    if (!m || m->n == 0)
        return NULL;
    char *s = m->frames[0].data; /* already NUL-terminated */
    memmove(&m->frames[0], &m->frames[1], (m->n - 1) * sizeof(rframe_t));
    m->n--;
    return s;
}

rmsg_t *rmsg_pop_frame_msg(rmsg_t *m)
{
    if (!m || m->n == 0)
        return NULL;
    rmsg_t *out = rmsg_new();
    rmsg_addmem(out, m->frames[0].data, m->frames[0].len);
    free(rmsg_popstr(m));
    return out;
}

int rmsg_send(rmsg_t **self_p, void *socket, int flags)
{
    rmsg_t *m = *self_p;
    int rc = 0;
    for (size_t i = 0; i < m->n; i++) {
        int more = i + 1 < m->n ? ZMQ_SNDMORE : 0;
        if (zmq_send(socket, m->frames[i].data, m->frames[i].len, flags | more) < 0) {
            rc = -1;
            break;
        }
    }
    int saved = errno;
    rmsg_destroy(self_p);
    errno = saved;
    return rc;
}

rmsg_t *rmsg_recv(void *socket, int flags, size_t max_frames, size_t max_bytes)
{
    rmsg_t *m = rmsg_new();
    size_t total = 0;
    int oversize = 0;
    for (;;) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        /* Only the first frame may be non-blocking: the rest of a multipart message is
         * delivered atomically once the first part is. */
        if (zmq_msg_recv(&part, socket, m->n == 0 && !oversize ? flags : 0) < 0) {
            int saved = errno;
            zmq_msg_close(&part);
            rmsg_destroy(&m);
            errno = saved;
            return NULL;
        }
        size_t len = zmq_msg_size(&part);
        total += len;
        if (m->n >= max_frames || total > max_bytes)
            oversize = 1;
        if (!oversize)
            rmsg_addmem(m, zmq_msg_data(&part), len);
        int more = zmq_msg_more(&part);
        zmq_msg_close(&part);
        if (!more)
            break;
    }
    if (oversize) {
        rmsg_destroy(&m);
        errno = EMSGSIZE;
        return NULL;
    }
    return m;
}
