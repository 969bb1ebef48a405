/* readmemo: recent API answers by key. See readmemo.h. */
#include "readmemo.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    char *key; /* NULL = free */
    json_object *value;
    int64_t at_ns;
} slot_t;

struct readmemo {
    slot_t *slot;
    size_t n;
    int64_t ttl_ns;
};

readmemo_t *readmemo_new(size_t slots, int64_t ttl_ns)
{
    readmemo_t *m = calloc(1, sizeof(*m));
    if (!m || slots == 0 || (m->slot = calloc(slots, sizeof(slot_t))) == NULL) {
        free(m);
        return NULL;
    }
    m->n = slots;
    m->ttl_ns = ttl_ns;
    return m;
}

static void slot_free(slot_t *s)
{
    free(s->key);
    json_object_put(s->value);
    memset(s, 0, sizeof(*s));
}

void readmemo_clear(readmemo_t *m)
{
    for (size_t i = 0; m && i < m->n; i++)
        slot_free(&m->slot[i]);
}

void readmemo_destroy(readmemo_t **m_p)
{
    if (!m_p || !*m_p)
        return;
    readmemo_clear(*m_p);
    free((*m_p)->slot);
    free(*m_p);
    *m_p = NULL;
}

static slot_t *find(readmemo_t *m, const char *key)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->slot[i].key && !strcmp(m->slot[i].key, key))
            return &m->slot[i];
    return NULL;
}

int readmemo_get(readmemo_t *m, const char *key, int64_t now_ns, json_object **value)
{
    *value = NULL;
    slot_t *s = m && key ? find(m, key) : NULL;
    if (!s || now_ns - s->at_ns > m->ttl_ns || now_ns < s->at_ns)
        return 0;
    *value = json_object_get(s->value);
    return 1;
}

int readmemo_put(readmemo_t *m, const char *key, json_object *value, int64_t now_ns)
{
    if (!m || !key)
        return -1;
    slot_t *s = find(m, key);
    if (!s) {
        s = &m->slot[0];
        for (size_t i = 0; i < m->n && s->key; i++)
            if (!m->slot[i].key || m->slot[i].at_ns < s->at_ns)
                s = &m->slot[i];
    }
    char *k = s->key && !strcmp(s->key, key) ? s->key : strdup(key);
    if (!k)
        return -1;
    if (k != s->key)
        free(s->key);
    json_object_put(s->value);
    s->key = k;
    s->value = json_object_get(value);
    s->at_ns = now_ns;
    return 0;
}

size_t readmemo_count(const readmemo_t *m)
{
    size_t c = 0;
    for (size_t i = 0; m && i < m->n; i++)
        c += m->slot[i].key != NULL;
    return c;
}
