#include "filesig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

filesig_t filesig_of(const char *path)
{
    struct stat st;
    filesig_t s = {0};
    if (stat(path, &st) == 0) {
        s.ok = 1;
        s.dev = st.st_dev;
        s.ino = st.st_ino;
        s.size = st.st_size;
        s.mtime = st.st_mtim;
    }
    return s;
}

int filesig_equal(const filesig_t *a, const filesig_t *b)
{
    return a->ok == b->ok && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

filesig_pair_t filesig_pair_of(const char *cert_path, const char *key_path)
{
    filesig_pair_t p = {filesig_of(cert_path), filesig_of(key_path)};
    return p;
}

int filesig_pair_equal(const filesig_pair_t *a, const filesig_pair_t *b)
{
    return filesig_equal(&a->cert, &b->cert) && filesig_equal(&a->key, &b->key);
}

/* "dir/name" in a new string, or NULL when out of memory. */
static char *path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

int filesig_watch_init(filesig_watch_t *w, const char *dir, const char *cert_name, const char *key_name)
{
    memset(w, 0, sizeof(*w));
    w->cert_path = path_join(dir, cert_name);
    w->key_path = path_join(dir, key_name);
    if (!w->cert_path || !w->key_path) {
        filesig_watch_free(w);
        return -1;
    }
    w->sig = filesig_pair_of(w->cert_path, w->key_path);
    return 0;
}

void filesig_watch_free(filesig_watch_t *w)
{
    free(w->cert_path);
    free(w->key_path);
    memset(w, 0, sizeof(*w));
}

int filesig_watch_changed(const filesig_watch_t *w, filesig_pair_t *now)
{
    *now = filesig_pair_of(w->cert_path, w->key_path);
    return !filesig_pair_equal(now, &w->sig);
}

int filesig_watch_settle(filesig_watch_t *w, const filesig_pair_t *now)
{
    filesig_pair_t after = filesig_pair_of(w->cert_path, w->key_path);
    if (!filesig_pair_equal(now, &after))
        return 0;
    w->sig = *now;
    return 1;
}
