#include "filesig.h"

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
