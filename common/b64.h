/* b64: standard base64 (RFC 4648, padded, as Kubernetes writes a Secret's data) decoded
 * into a C string. */
#ifndef RDC_B64_H
#define RDC_B64_H

/* base64 text b64 into a new NUL-terminated string (the caller frees it), or NULL when
 * b64 is not padded base64, decodes to bytes that hold a NUL (no C string carries them),
 * or memory runs out. "" decodes to "". */
char *b64_text(const char *b64);

#endif
