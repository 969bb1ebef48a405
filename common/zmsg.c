#include "zmsg.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

typedef struct {
    char *data; /* len bytes plus a NUL */
    size_t len;
} zframe_t;

struct zmsg {
    zframe_t *frames;
    size_t n;
    size_t alloc;
};

/* Out of memory in a message is fatal, as in CZMQ: the process exits with a clear line
 * and the supervisor restarts it, instead of every call site handling a NULL. */
static void *must(void *p)
{
    if (!p) {
        fputs("zmsg: out of memory\n", stderr);
        abort();
    }
    return p;
}

zmsg_t *zmsg_new(void)
{
    return must(calloc(1, sizeof(zmsg_t)));
}

void zmsg_destroy(zmsg_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    zmsg_t *m = *self_p;
    for (size_t i = 0; i < m->n; i++)
        free(m->frames[i].data);
    free(m->frames);
    free(m);
    *self_p = NULL;
}

size_t zmsg_size(const zmsg_t *m)
{
    return m ? m->n : 0;
}

/* Insert a copy of data at position pos. */
static int zmsg_insert(zmsg_t *m, size_t pos, const void *data, size_t len)
{
    if (m->n == m->alloc) {
        size_t na = m->alloc ? m->alloc * 2 : 8;
        m->frames = must(realloc(m->frames, na * sizeof(zframe_t)));
        m->alloc = na;
    }
    char *copy = must(malloc(len + 1));
    if (len)
        memcpy(copy, data, len);
    copy[len] = '\0';
    memmove(&m->frames[pos + 1], &m->frames[pos], (m->n - pos) * sizeof(zframe_t));
    m->frames[pos].data = copy;
    m->frames[pos].len = len;
    m->n++;
    return 0;
}

int zmsg_addmem(zmsg_t *m, const void *data, size_t len)
{
    return zmsg_insert(m, m->n, data, len);
}

int zmsg_addstr(zmsg_t *m, const char *s)
{
    return zmsg_insert(m, m->n, s, strlen(s));
}

int zmsg_addf(zmsg_t *m, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        must(NULL);
    int rc = zmsg_insert(m, m->n, s, (size_t)n);
    free(s);
    return rc;
}

int zmsg_pushmem(zmsg_t *m, const void *data, size_t len)
{
    return zmsg_insert(m, 0, data, len);
}

int zmsg_pushstr(zmsg_t *m, const char *s)
{
    return zmsg_insert(m, 0, s, strlen(s));
}

const char *zmsg_frame(const zmsg_t *m, size_t i, size_t *len)
{
    if (!m || i >= m->n)
        return NULL;
    if (len)
        *len = m->frames[i].len;
    return m->frames[i].data;
}

char *zmsg_strdup(const zmsg_t *m, size_t i)
{
    if (!m || i >= m->n)
        return NULL;
    return must(strndup(m->frames[i].data, m->frames[i].len));
}

int zmsg_frame_is(const zmsg_t *m, size_t i, const char *s)
{
    if (!m || i >= m->n)
        return 0;
    size_t n = strlen(s);
    return m->frames[i].len == n && memcmp(m->frames[i].data, s, n) == 0;
}

int zmsg_frame_int64(const zmsg_t *m, size_t i, int64_t *out)
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

char *zmsg_popstr(zmsg_t *m)
{
    if (!m || m->n == 0)
        return NULL;
    char *s = m->frames[0].data; /* already NUL-terminated */
    memmove(&m->frames[0], &m->frames[1], (m->n - 1) * sizeof(zframe_t));
    m->n--;
    return s;
}

zmsg_t *zmsg_pop_frame_msg(zmsg_t *m)
{
    if (!m || m->n == 0)
        return NULL;
    zmsg_t *out = zmsg_new();
    zmsg_addmem(out, m->frames[0].data, m->frames[0].len);
    free(zmsg_popstr(m));
    return out;
}

int zmsg_send(zmsg_t **self_p, void *socket, int flags)
{
    zmsg_t *m = *self_p;
    int rc = 0;
    for (size_t i = 0; i < m->n; i++) {
        int more = i + 1 < m->n ? ZMQ_SNDMORE : 0;
        if (zmq_send(socket, m->frames[i].data, m->frames[i].len, flags | more) < 0) {
            rc = -1;
            break;
        }
    }
    int saved = errno;
    zmsg_destroy(self_p);
    errno = saved;
    return rc;
}

zmsg_t *zmsg_recv(void *socket, int flags, size_t max_frames, size_t max_bytes)
{
    zmsg_t *m = zmsg_new();
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
            zmsg_destroy(&m);
            errno = saved;
            return NULL;
        }
        size_t len = zmq_msg_size(&part);
        total += len;
        if (m->n >= max_frames || total > max_bytes)
            oversize = 1;
        if (!oversize)
            zmsg_addmem(m, zmq_msg_data(&part), len);
        int more = zmq_msg_more(&part);
        zmq_msg_close(&part);
        if (!more)
            break;
    }
    if (oversize) {
        zmsg_destroy(&m);
        errno = EMSGSIZE;
        return NULL;
    }
    return m;
}
