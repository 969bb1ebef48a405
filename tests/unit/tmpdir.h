/* tmpdir: a suite's scratch directory, made fresh (mkdtemp) and removed with everything
 * under it, without a shell (nftw, depth first, symbolic links removed, never followed).
 * Header-only. */
#ifndef RDC_TEST_TMPDIR_H
#define RDC_TEST_TMPDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

static inline int tmpdir_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Remove dir and all it holds. Returns 0, or -1 when something could not be removed
 * (a dir that does not exist is -1 too). */
static inline int tmpdir_remove(const char *dir)
{
    return nftw(dir, tmpdir_rm_one, 16, FTW_DEPTH | FTW_PHYS) ? -1 : 0;
}

/* A new directory /tmp/<name>.XXXXXX (mode 0700), its path into dir. Returns 0, or -1
 * (dir then holds the template). */
static inline int tmpdir_make(char *dir, size_t cap, const char *name)
{
    snprintf(dir, cap, "/tmp/%s.XXXXXX", name);
    return mkdtemp(dir) ? 0 : -1;
}

#endif
