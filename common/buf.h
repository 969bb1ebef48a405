/* buf: a growable byte buffer with a hard size cap (after curl's dynbuf).
 *
 * The contents are always NUL-terminated (the terminator is not counted in len), so a
 * buffer of text can be handed to string functions directly. A buffer never grows past
 * its cap: an append that would is refused and leaves the buffer unchanged.
 */
#ifndef RDC_BUF_H
#define RDC_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct {
    char *data;   /* NULL until the first append */
    size_t len;   /* bytes used, excluding the terminator */
    size_t alloc; /* bytes allocated */
    size_t cap;   /* maximum len; 0 means the default cap (64 MiB) */
} buf_t;

#define BUF_DEFAULT_CAP ((size_t)64 << 20)

/* Initialise an empty buffer that may hold at most cap bytes (0 = default). */
void buf_init(buf_t *b, size_t cap);

/* Free the contents; the buffer is empty and reusable afterwards. */
void buf_free(buf_t *b);

/* Forget the contents but keep the allocation. */
void buf_reset(buf_t *b);

/* Append len bytes. Returns 0, or -1 (buffer unchanged) on cap or allocation failure. */
int buf_append(buf_t *b, const void *data, size_t len);

/* Append a NUL-terminated string. Same contract as buf_append. */
int buf_puts(buf_t *b, const char *s);

/* In a function of printf's kind whose last named parameter is the format fmt: format its
 * variable arguments into the char array dst of n bytes (truncated, always terminated).
 * The va_start/vsnprintf/va_end of every "set a message" helper, once. */
#define BUF_FORMAT_VA(dst, n, fmt)                                                                                 \
    do {                                                                                                           \
        va_list ap_;                                                                                               \
        va_start(ap_, fmt);                                                                                        \
        vsnprintf((dst), (n), (fmt), ap_);                                                                         \
        va_end(ap_);                                                                                               \
    } while (0)

/* Append printf-style formatted text. Same contract as buf_append. */
int buf_printf(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_vprintf(buf_t *b, const char *fmt, va_list ap);

/* Remove the first n bytes (n <= len), moving the rest to the front. */
void buf_consume(buf_t *b, size_t n);

/* strdup(s) for an optional string: NULL for NULL; when memory runs out, NULL with *oom
 * set (and never cleared), so a caller copies several fields and checks *oom once. */
char *str_dup_opt(const char *s, int *oom);

/* Hand the contents to the caller (who frees them) and leave the buffer empty. Returns
 * an empty allocated string when nothing was appended; NULL only when out of memory. */
char *buf_detach(buf_t *b);

/* The contents as a string; never NULL ("" when empty). */
const char *buf_str(const buf_t *b);

#endif
