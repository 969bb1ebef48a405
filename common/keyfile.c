#include "keyfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int keyfile_append(buf_t *b, const char *key, int64_t taken_wall_ms)
{
    if (strpbrk(key, "\t\n"))
        return -1;
    return buf_printf(b, "%s\t%lld\n", key, (long long)taken_wall_ms) ? -1 : 0;
}

/* The age of a line's taken field (the text after its tab, up to the line's end), or a
 * JSON null when it is not a number. */
static json_object *age_of(const char *taken, size_t len, int64_t now_wall_ms)
{
    char num[32];
    if (!len || len >= sizeof(num))
        return NULL;
    memcpy(num, taken, len);
    num[len] = '\0';
    char *end = NULL;
    errno = 0;
    long long ms = strtoll(num, &end, 10);
    if (errno || *end || ms < 0)
        return NULL;
    int64_t age = now_wall_ms - (int64_t)ms;
    return json_object_new_double(age > 0 ? (double)age / 1000.0 : 0.0);
}

json_object *keyfile_parse(const char *text, int64_t now_wall_ms)
{
    json_object *arr = json_object_new_array();
    if (!arr)
        return NULL;
    for (const char *p = text; p && *p;) {
        size_t len = strcspn(p, "\n");
        const char *tab = memchr(p, '\t', len);
        size_t klen = tab ? (size_t)(tab - p) : len;
        if (klen) {
            json_object *o = json_object_new_object();
            json_object_object_add(o, "key", json_object_new_string_len(p, (int)klen));
            json_object_object_add(o, "age_s", tab ? age_of(tab + 1, len - klen - 1, now_wall_ms) : NULL);
            json_object_array_add(arr, o);
        }
        p += len;
        if (*p == '\n')
            p++;
    }
    return arr;
}
