/* hash: 64-bit FNV-1a over strings, for in-memory memos (never persisted, not for
 * adversarial keys). */
#ifndef RDC_HASH_H
#define RDC_HASH_H

#include <stdint.h>

#define HASH_FNV_START UINT64_C(0xcbf29ce484222325)

/* FNV-1a over s and its NUL (so "a","b" and "ab","" differ), continuing from h; NULL
 * hashes as "". Never 0 (0 marks a free slot in the callers' memos). */
static inline uint64_t hash_fnv(uint64_t h, const char *s)
{
    s = s ? s : "";
    do {
        h ^= (unsigned char)*s;
        h *= UINT64_C(0x100000001b3);
    } while (*s++);
    return h ? h : 1;
}

#endif
