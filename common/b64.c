#include "b64.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

char *b64_text(const char *b64)
{
    size_t n = strlen(b64);
    if (n % 4)
        return NULL;
    unsigned char *out = malloc(n / 4 * 3 + 1);
    if (!out)
        return NULL;
    int len = n ? EVP_DecodeBlock(out, (const unsigned char *)b64, (int)n) : 0;
    if (len < 0) {
        free(out);
        return NULL;
    }
    /* EVP_DecodeBlock counts the zero bytes that padding stands for: subtract them. */
    for (size_t i = n; i > 0 && b64[i - 1] == '='; i--)
        len--;
    out[len] = '\0';
    if (strlen((char *)out) != (size_t)len) {
        free(out);
        return NULL;
    }
    return (char *)out;
}
