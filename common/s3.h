/* s3: a small blocking client of S3-compatible object storage, for the backup and restore
 * processes (issue 36), not for a daemon's loop: every call runs its requests to the end
 * (libcurl's easy interface) and may wait between retries.
 *
 * Signing is libcurl's (CURLOPT_AWS_SIGV4 "aws:amz:<region>:s3" with the access key and
 * secret as user name and password): no signing code of ours. What we add to every
 * request is what libcurl 7.88 leaves to the caller and S3 requires:
 *   - x-amz-content-sha256: the hex SHA-256 of the body (of the empty string without
 *     one). libcurl signs that header's value as the payload hash (its "x-amz-content-
 *     sha256" rule); every body we send is in memory, so it is the real hash, never
 *     UNSIGNED-PAYLOAD, and plain HTTP is as safe from tampering as the signature is.
 *   - path-style URLs, endpoint/bucket/key, the key encoded by S3's rule (every byte but
 *     A-Z a-z 0-9 - _ . ~ and / as %XX) and sent as is (CURLOPT_PATH_AS_IS: "a/../b" is a
 *     key, not a path to normalise);
 *   - the query already in canonical form (names sorted, names and values encoded,
 *     "uploads=" with its "="), because libcurl before 8.3 signs the query as given.
 *
 * Uploads (s3_put) read the source into one buffer of part_size bytes (>= 5 MiB, S3's
 * smallest part): a source that ends within the first buffer goes as one PutObject, a
 * longer one as a multipart upload (CreateMultipartUpload, UploadPart per buffer,
 * CompleteMultipartUpload; AbortMultipartUpload when anything fails, so no half object
 * is left and none is visible). A multipart upload sends each part on a thread while the
 * next one is read into a second buffer (reading and sending overlap). Memory: two
 * part_size buffers, whatever the object's size.
 *
 * THE CHECKSUM. The SHA-256 of the whole object is computed while streaming (OpenSSL EVP)
 * and recorded as user metadata, x-amz-meta-sha256 (lower-case hex), which HEAD and GET
 * return. Why metadata and not S3's x-amz-checksum-sha256: for a multipart object S3
 * keeps only a composite checksum (the SHA-256 of the parts' SHA-256s, "-N"), never the
 * object's own SHA-256 (S3 has full-object multipart checksums for the CRCs only), so a
 * restore could not check the file it wrote against it; metadata holds the plain hash of
 * the bytes, whatever the upload path. Metadata must precede the body, so: a single
 * PutObject carries it (its body is the buffer, hashed before it goes); a multipart
 * upload, whose hash is known after its last part, gets it by a CopyObject of the
 * completed object onto itself with x-amz-metadata-directive REPLACE (server-side, no
 * data through us). An object without x-amz-meta-sha256 is therefore not a complete
 * upload of ours, and s3_get_fd refuses it unless the caller names the hash it expects.
 * The single PutObject also sends x-amz-checksum-sha256 (base64) so the server checks the
 * bytes it received.
 *
 * Retries: by the project's one rule (common/kube_retry.h) with the request's method:
 * GET, HEAD, PUT and DELETE are idempotent (every body is in memory, so a PUT or an
 * UploadPart is sent again whole), POST (CreateMultipartUpload, CompleteMultipartUpload)
 * is not. S3 asks clients to retry 500 InternalError as well as 503 SlowDown, which the
 * API server's rule stops at; an S3 500 or 502 enters the rule as a 503. A GET that broke
 * off after writing some bytes starts again at the fd's first offset (the fd must be
 * seekable for that; a pipe gets no retry once written to).
 *
 * Errors: 0 = OK, -1 with an s3_error_t: the S3 error's Code and Message from the XML
 * body, the HTTP status, the curl code, the operation and bucket/key. Credentials never
 * reach it.
 */
#ifndef RDC_S3_H
#define RDC_S3_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define S3_MIN_PART_SIZE ((size_t)5 * 1024 * 1024)
#define S3_DEFAULT_PART_SIZE ((size_t)8 * 1024 * 1024)
#define S3_SHA256_HEX_LEN 64

typedef struct s3 s3_t;

typedef struct {
    const char *endpoint;   /* "http://127.0.0.1:9000", "https://s3.eu-west-1.amazonaws.com" */
    const char *region;     /* signing region; NULL = "us-east-1" */
    const char *access_key; /* required */
    const char *secret_key; /* required */
    const char *ca_file;    /* CA bundle for https; NULL = the system's */
    size_t part_size;       /* multipart part size; 0 = S3_DEFAULT_PART_SIZE; >= 5 MiB */
    long timeout_ms;        /* per attempt, the whole transfer; 0 = none */
    long connect_timeout_ms;/* 0 = 10 s */
    int max_retries;        /* retries after the first attempt; < 0 = none; 0 = 4 */
    int list_max_keys;      /* ListObjectsV2 page size (max-keys); 0 = the server's, 1000 */
} s3_config_t;

typedef enum {
    S3_ERR_OK = 0,
    S3_ERR_CONFIG,    /* bad configuration or argument */
    S3_ERR_TRANSPORT, /* no answer: connect, TLS, timeout, broken transfer (curl_code) */
    S3_ERR_HTTP,      /* the server said no: http_status, s3_code, message */
    S3_ERR_NOT_FOUND, /* 404 (NoSuchKey, NoSuchBucket, NoSuchUpload) */
    S3_ERR_DECODE,    /* a response we could not read (bad XML, too large) */
    S3_ERR_SOURCE,    /* the upload's source failed (read error) */
    S3_ERR_SINK,      /* the download's file failed (write, seek, truncate) */
    S3_ERR_CHECKSUM,  /* the downloaded bytes' SHA-256 is not the expected one */
    S3_ERR_NO_CHECKSUM, /* nothing to verify against: no x-amz-meta-sha256, none given */
    S3_ERR_NOMEM
} s3_error_code_t;

typedef struct {
    s3_error_code_t code;
    int http_status;     /* 0 = no answer */
    int curl_code;       /* CURLcode of the last attempt */
    char op[32];         /* "PutObject", "GetObject", ... */
    char target[512];    /* "bucket/key" */
    char s3_code[64];    /* the XML error's Code ("NoSuchKey"), or "" */
    char message[512];   /* its Message, or what went wrong */
} s3_error_t;

/* One line for a log: "GetObject b/k: HTTP 404 NoSuchKey: The specified key does not
 * exist." Writes at most len bytes (NUL-terminated); returns buf. */
const char *s3_error_str(const s3_error_t *e, char *buf, size_t len);

/* A client for one endpoint and one set of credentials; the config's strings are copied.
 * NULL with err filled ("s3: part_size 1048576 below the 5 MiB minimum") on a bad config
 * or out of memory. Call curl_global_init first (the daemons' mains and the tests do). */
s3_t *s3_new(const s3_config_t *cfg, char *err, size_t errlen);

/* Frees the client and sets *s to NULL; NULL or *s == NULL is a no-op. */
void s3_destroy(s3_t **s);

/* The part size in use (after the default). */
size_t s3_part_size(const s3_t *s);

/* CreateBucket (PUT /bucket). A bucket that exists and is ours
 * (BucketAlreadyOwnedByYou) is 0: the tests and a first backup create it blindly. */
int s3_create_bucket(s3_t *s, const char *bucket, s3_error_t *e);

/* The source of an upload: up to len bytes into buf; 0 at the end, -1 on error (errno). */
typedef ssize_t (*s3_read_fn)(void *ctx, void *buf, size_t len);

typedef struct {
    uint64_t size;                          /* bytes uploaded */
    char sha256[S3_SHA256_HEX_LEN + 1];     /* hex SHA-256 of them, as recorded */
    char etag[128];                         /* the object's ETag, quotes kept */
    int parts;                              /* 0 = one PutObject, else the part count */
} s3_put_result_t;

/* Uploads what read gives until its end to bucket/key, one PutObject or a multipart
 * upload (the header), recording the SHA-256 as x-amz-meta-sha256. 0 with *res filled;
 * -1 with *e: nothing of the new object is visible then (a multipart upload is aborted;
 * an earlier object of the same key is left as it was, or, when the failure came after
 * CompleteMultipartUpload, replaced by one without x-amz-meta-sha256 that s3_get_fd
 * refuses). res may be NULL. */
int s3_put(s3_t *s, const char *bucket, const char *key, s3_read_fn read, void *ctx,
           s3_put_result_t *res, s3_error_t *e);

/* s3_put from a file descriptor (read(2) until EOF; EINTR retried). */
int s3_put_fd(s3_t *s, const char *bucket, const char *key, int fd, s3_put_result_t *res,
              s3_error_t *e);

typedef struct {
    uint64_t size;                       /* Content-Length, or bytes received */
    char etag[128];
    char sha256[S3_SHA256_HEX_LEN + 1];  /* x-amz-meta-sha256, "" when absent */
    char last_modified[64];              /* as sent (HTTP date in HEAD, ISO 8601 in LIST) */
} s3_object_t;

/* GetObject into fd, written from the fd's current offset, hashing as it goes. The bytes
 * are verified against expect_sha256 (hex) when given, else against the object's
 * x-amz-meta-sha256; neither: S3_ERR_NO_CHECKSUM. On a mismatch (S3_ERR_CHECKSUM) or any
 * other failure after bytes were written, the file is truncated back to the offset it
 * had (a regular file), so a partial download never looks whole; write to a temporary
 * name and rename it after 0. obj (may be NULL) gets size, ETag and the recorded hash. */
int s3_get_fd(s3_t *s, const char *bucket, const char *key, int fd, const char *expect_sha256,
              s3_object_t *obj, s3_error_t *e);

/* HeadObject: *obj filled (size, ETag, x-amz-meta-sha256, Last-Modified). A missing
 * object is -1 with S3_ERR_NOT_FOUND. */
int s3_head(s3_t *s, const char *bucket, const char *key, s3_object_t *obj, s3_error_t *e);

/* DeleteObject. Deleting a key that does not exist is 0 (S3 answers 204 either way). */
int s3_delete(s3_t *s, const char *bucket, const char *key, s3_error_t *e);

/* Called by s3_list for every object, in S3's order (UTF-8 binary order of keys); a
 * non-zero return stops the listing and s3_list returns it. */
typedef int (*s3_list_fn)(void *ctx, const s3_object_t *obj, const char *key);

/* ListObjectsV2 of the keys under prefix (NULL or "" = all), page by page with the
 * continuation token; 0 when every page was listed, the callback's non-zero value when it
 * stopped, -1 with *e. */
int s3_list(s3_t *s, const char *bucket, const char *prefix, s3_list_fn fn, void *ctx,
            s3_error_t *e);

/* ---- Below: what a request would send and the response parsers, public so that the
 * unit tests check them without a network (and for a future --dry-run). ---- */

/* A query parameter; value NULL means none ("uploads" is sent "uploads="). */
typedef struct {
    const char *name;
    const char *value;
} s3_param_t;

#define S3_MAX_HEADERS 12

/* What s3_request_apply sets on a curl handle, as plain data. */
typedef struct {
    char method[8];               /* GET, HEAD, PUT, POST, DELETE */
    char *url;                    /* owned */
    char sigv4[96];               /* CURLOPT_AWS_SIGV4 */
    const char *username;         /* CURLOPT_USERNAME: the access key (the client's) */
    const char *password;         /* CURLOPT_PASSWORD: the secret (the client's) */
    char *headers[S3_MAX_HEADERS];/* CURLOPT_HTTPHEADER lines, owned */
    int nheaders;
    const void *body;             /* the body (the caller's memory), or NULL */
    size_t body_len;
    int upload;                   /* 1: PUT through CURLOPT_UPLOAD + READFUNCTION */
} s3_request_t;

/* Builds a request: method, bucket (required), key (NULL: the bucket itself), params
 * (n of them, any order: sorted here), body (NULL/0: none; x-amz-content-sha256 is its
 * hash). Headers given in extra (NULL-terminated "Name: value" lines, or NULL) are added.
 * 0, or -1 on a bad argument (a bucket name S3 refuses, an empty key, a key over 1024
 * bytes; err filled) or out of memory; *r is then empty. Free with s3_request_free. */
int s3_request_build(const s3_t *s, const char *method, const char *bucket, const char *key,
                     const s3_param_t *params, size_t n, const void *body, size_t body_len,
                     const char *const *extra, s3_request_t *r, char *err, size_t errlen);

/* Frees what *r owns and zeroes it. */
void s3_request_free(s3_request_t *r);

/* Appends to out (capacity cap) the S3 encoding of src: every byte but A-Z a-z 0-9 - _ .
 * ~ (and / when keep_slash) as %XX upper-case. Returns the length it needs without the
 * NUL (the output is complete only when that is < cap), as snprintf does. */
size_t s3_uri_encode(const char *src, int keep_slash, char *out, size_t cap);

/* The S3 error document (<Error><Code>..</Code><Message>..</Message></Error>): 0 with
 * code and message copied (truncated to their sizes), -1 when body is not one. */
int s3_parse_error(const char *body, size_t len, char *code, size_t code_len, char *message,
                   size_t message_len);

/* <InitiateMultipartUploadResult>'s UploadId: 0, or -1 when absent or too long. */
int s3_parse_upload_id(const char *body, size_t len, char *id, size_t id_len);

/* <CompleteMultipartUploadResult>'s ETag: 0; -1 when the body is an <Error> (S3 may
 * answer 200 and fail later: code and message then in *e) or unreadable. */
int s3_parse_complete(const char *body, size_t len, char *etag, size_t etag_len, s3_error_t *e);

/* One page of ListObjectsV2. */
typedef struct {
    s3_object_t *objects; /* owned: n of them */
    char **keys;          /* owned: n keys */
    size_t n;
    int truncated;        /* IsTruncated */
    char *next_token;     /* NextContinuationToken (owned) or NULL */
} s3_list_page_t;

/* Parses a <ListBucketResult> into *page (zeroed first): 0, or -1 when unreadable or out
 * of memory (*page then empty). Free with s3_list_page_free. */
int s3_parse_list(const char *body, size_t len, s3_list_page_t *page);

/* Frees what *page owns and zeroes it; NULL is a no-op. */
void s3_list_page_free(s3_list_page_t *page);

/* An S3 bucket name as S3 allows it (3-63 characters of a-z 0-9 . -, starting and ending
 * with a letter or digit): 1, else 0. */
int s3_bucket_name_ok(const char *bucket);

#endif
