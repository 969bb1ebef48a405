/* The S3 client (common/s3.h) against a real S3-compatible server: the pinned versitygw
 * that `make s3-check` builds and starts (tests/cluster/s3.sh) and names in S3_ENDPOINT,
 * S3_REGION, S3_ACCESS_KEY, S3_SECRET_KEY and S3_DATA (its POSIX backend's directory, to
 * corrupt an object at rest). Without them every test FAILS: this suite never skips.
 *
 * Put and get (keys with spaces, "+", UTF-8 and "a/../b"), head, list with continuation
 * tokens, delete, a 12 MiB multipart upload in 5 MiB parts, a corrupted object refused
 * and its partial file truncated, an object with no recorded checksum refused, a source
 * that fails mid-upload leaving no object, and S3's error codes surfaced. */
#include "s3.h"

#include "cu_table.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUCKET "rdc-s3-check"
#define MIB ((size_t)1024 * 1024)

static s3_t *s3;
static char errline[1024];

static const char *why(const s3_error_t *e)
{
    return s3_error_str(e, errline, sizeof errline);
}

static int suite_init(void)
{
    const char *ep = getenv("S3_ENDPOINT"), *ak = getenv("S3_ACCESS_KEY"),
               *sk = getenv("S3_SECRET_KEY");
    if (!ep || !ak || !sk || !getenv("S3_DATA")) {
        fprintf(stderr, "test_s3_server: S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY and S3_DATA "
                        "must name a running server (make s3-check starts one)\n");
        return 1; /* CUnit counts the suite's tests as failed */
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    s3_config_t cfg = {.endpoint = ep, .region = getenv("S3_REGION"), .access_key = ak,
                       .secret_key = sk, .part_size = 5 * MIB, .timeout_ms = 60000,
                       .list_max_keys = 2};
    char err[256];
    s3 = s3_new(&cfg, err, sizeof err);
    if (!s3) {
        fprintf(stderr, "test_s3_server: %s\n", err);
        return 1;
    }
    s3_error_t e;
    if (s3_create_bucket(s3, BUCKET, &e) != 0) {
        fprintf(stderr, "test_s3_server: %s\n", why(&e));
        return 1;
    }
    return 0;
}

static int suite_clean(void)
{
    s3_destroy(&s3);
    curl_global_cleanup();
    return 0;
}
CU_HOOKS({"s3 server", suite_init, suite_clean, NULL, NULL});

/* Deterministic bytes: a small xorshift stream. */
static void fill_bytes(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t x = seed | 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        p[i] = (unsigned char)x;
    }
}

static void sha_hex(const void *p, size_t n, char *hex)
{
    unsigned char md[32];
    unsigned len = 0;
    EVP_Digest(p, n, md, &len, EVP_sha256(), NULL);
    for (unsigned i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

/* A temporary file holding n bytes of seed; returns its fd at offset 0. */
static int temp_with(const unsigned char *p, size_t n)
{
    char path[] = "/tmp/rdc-s3-check-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    unlink(path);
    if (n && write(fd, p, n) != (ssize_t)n) {
        close(fd);
        return -1;
    }
    lseek(fd, 0, SEEK_SET);
    return fd;
}

static int temp_empty(void)
{
    return temp_with(NULL, 0);
}

/* The whole content of fd equals p[0..n). */
static int fd_equals(int fd, const unsigned char *p, size_t n)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != n)
        return 0;
    unsigned char *q = malloc(n ? n : 1);
    int same = q && pread(fd, q, n, 0) == (ssize_t)n && memcmp(p, q, n) == 0;
    free(q);
    return same;
}

static off_t fd_size(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_size : -1;
}

static void put_get_roundtrip(const char *key, size_t n, uint64_t seed)
{
    unsigned char *p = malloc(n ? n : 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    fill_bytes(p, n, seed);
    char want[65];
    sha_hex(p, n, want);
    int in = temp_with(p, n), out = temp_empty();
    s3_put_result_t r;
    s3_error_t e;
    int rc = s3_put_fd(s3, BUCKET, key, in, &r, &e);
    if (rc != 0)
        printf("\n  put %s: %s", key, why(&e));
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(r.size, n);
    CU_ASSERT_STRING_EQUAL(r.sha256, want);
    CU_ASSERT_EQUAL(r.parts, 0);
    s3_object_t o;
    rc = s3_head(s3, BUCKET, key, &o, &e);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(o.size, n);
    CU_ASSERT_STRING_EQUAL(o.sha256, want);
    rc = s3_get_fd(s3, BUCKET, key, out, NULL, &o, &e);
    if (rc != 0)
        printf("\n  get %s: %s", key, why(&e));
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_TRUE(fd_equals(out, p, n));
    close(in);
    close(out);
    free(p);
}

static void test_put_get(void)
{
    put_get_roundtrip("backups/plain.rdb", 100000, 1);
    put_get_roundtrip("backups/a b+c=d&e/ü ñ.rdb", 4321, 2);
    put_get_roundtrip("backups/x/../y//z.rdb", 10, 3); /* a key, not a path */
    put_get_roundtrip("backups/empty.rdb", 0, 4);
}

typedef struct {
    char keys[16][64];
    int n;
} seen_t;

static int on_obj(void *ctx, const s3_object_t *o, const char *key)
{
    seen_t *s = ctx;
    (void)o;
    if (s->n < 16)
        snprintf(s->keys[s->n++], sizeof s->keys[0], "%s", key);
    return 0;
}

static int stop_at_two(void *ctx, const s3_object_t *o, const char *key)
{
    on_obj(ctx, o, key);
    return ((seen_t *)ctx)->n == 2 ? 42 : 0;
}

static void test_list_pages(void)
{
    static const char *keys[] = {"list/a", "list/b", "list/c", "list/d", "list/e", "other/x"};
    s3_error_t e;
    for (size_t i = 0; i < 6; i++) {
        int fd = temp_with((const unsigned char *)keys[i], strlen(keys[i]));
        CU_ASSERT_EQUAL(s3_put_fd(s3, BUCKET, keys[i], fd, NULL, &e), 0);
        close(fd);
    }
    seen_t s = {0};
    /* max-keys 2 (the suite's client): three pages, two continuation tokens. */
    int rc = s3_list(s3, BUCKET, "list/", on_obj, &s, &e);
    if (rc != 0)
        printf("\n  list: %s", why(&e));
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL_FATAL(s.n, 5);
    for (int i = 0; i < 5; i++)
        CU_ASSERT_STRING_EQUAL(s.keys[i], keys[i]);
    seen_t t = {0};
    CU_ASSERT_EQUAL(s3_list(s3, BUCKET, "list/", stop_at_two, &t, &e), 42);
    CU_ASSERT_EQUAL(t.n, 2);
    seen_t none = {0};
    CU_ASSERT_EQUAL(s3_list(s3, BUCKET, "nothing-here/", on_obj, &none, &e), 0);
    CU_ASSERT_EQUAL(none.n, 0);
}

static void test_delete(void)
{
    s3_error_t e;
    s3_object_t o;
    CU_ASSERT_EQUAL(s3_delete(s3, BUCKET, "list/e", &e), 0);
    CU_ASSERT_EQUAL(s3_head(s3, BUCKET, "list/e", &o, &e), -1);
    CU_ASSERT_EQUAL(e.code, S3_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(s3_delete(s3, BUCKET, "list/e", &e), 0); /* again: still 0 */
    int out = temp_empty();
    CU_ASSERT_EQUAL(s3_get_fd(s3, BUCKET, "list/e", out, NULL, &o, &e), -1);
    CU_ASSERT_EQUAL(e.code, S3_ERR_NOT_FOUND);
    CU_ASSERT_EQUAL(e.http_status, 404);
    CU_ASSERT_STRING_EQUAL(e.s3_code, "NoSuchKey");
    CU_ASSERT_EQUAL(fd_size(out), 0); /* the error document did not reach the file */
    close(out);
}

/* A source of n generated bytes, read in odd-sized pieces; fails at fail_at when set. */
typedef struct {
    const unsigned char *p;
    size_t n, off, fail_at;
} gen_t;

static ssize_t gen_read(void *ctx, void *buf, size_t len)
{
    gen_t *g = ctx;
    if (g->fail_at && g->off >= g->fail_at) {
        errno = EIO;
        return -1;
    }
    size_t left = g->n - g->off, k = len < 777777 ? len : 777777;
    k = k < left ? k : left;
    memcpy(buf, g->p + g->off, k);
    g->off += k;
    return (ssize_t)k;
}

static void test_multipart(void)
{
    size_t n = 12 * MIB;
    unsigned char *p = malloc(n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    fill_bytes(p, n, 12);
    char want[65];
    sha_hex(p, n, want);
    gen_t g = {p, n, 0, 0};
    s3_put_result_t r;
    s3_error_t e;
    int rc = s3_put(s3, BUCKET, "big/12mib.rdb", gen_read, &g, &r, &e);
    if (rc != 0)
        printf("\n  multipart: %s", why(&e));
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_EQUAL(r.parts, 3); /* 5 + 5 + 2 MiB */
    CU_ASSERT_EQUAL(r.size, n);
    CU_ASSERT_STRING_EQUAL(r.sha256, want);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.etag, "-3")); /* a multipart ETag */
    s3_object_t o;
    CU_ASSERT_EQUAL(s3_head(s3, BUCKET, "big/12mib.rdb", &o, &e), 0);
    CU_ASSERT_EQUAL(o.size, n);
    CU_ASSERT_STRING_EQUAL(o.sha256, want); /* recorded after completion */
    int out = temp_empty();
    rc = s3_get_fd(s3, BUCKET, "big/12mib.rdb", out, NULL, &o, &e);
    if (rc != 0)
        printf("\n  get: %s", why(&e));
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_TRUE(fd_equals(out, p, n));
    close(out);
    free(p);
}

static void test_source_failure_leaves_nothing(void)
{
    size_t n = 12 * MIB;
    unsigned char *p = calloc(1, n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    gen_t g = {p, n, 0, 7 * MIB}; /* fails in the second part */
    s3_error_t e;
    s3_object_t o;
    CU_ASSERT_EQUAL(s3_put(s3, BUCKET, "big/failed.rdb", gen_read, &g, NULL, &e), -1);
    CU_ASSERT_EQUAL(e.code, S3_ERR_SOURCE);
    CU_ASSERT_EQUAL(s3_head(s3, BUCKET, "big/failed.rdb", &o, &e), -1);
    CU_ASSERT_EQUAL(e.code, S3_ERR_NOT_FOUND);
    free(p);
}

/* The object's file in versitygw's POSIX backend: S3_DATA/bucket/key. */
static void backend_path(const char *key, char *path, size_t len)
{
    snprintf(path, len, "%s/%s/%s", getenv("S3_DATA"), BUCKET, key);
}

static void test_corrupted_object_refused(void)
{
    size_t n = 300000;
    unsigned char *p = malloc(n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    fill_bytes(p, n, 99);
    int in = temp_with(p, n);
    s3_error_t e;
    s3_object_t o;
    CU_ASSERT_EQUAL_FATAL(s3_put_fd(s3, BUCKET, "corrupt/dump.rdb", in, NULL, &e), 0);
    close(in);
    /* One byte flipped at rest, in the middle: what a bad disk or a tampering hand does. */
    char path[1024];
    backend_path("corrupt/dump.rdb", path, sizeof path);
    int fd = open(path, O_RDWR);
    CU_ASSERT_FATAL(fd >= 0);
    unsigned char b = (unsigned char)(p[n / 2] ^ 0x5a);
    CU_ASSERT_EQUAL(pwrite(fd, &b, 1, (off_t)(n / 2)), 1);
    close(fd);
    /* The download starts after 5 bytes already in the file: those stay, the rest goes. */
    int out = temp_with((const unsigned char *)"head:", 5);
    lseek(out, 5, SEEK_SET);
    CU_ASSERT_EQUAL(s3_get_fd(s3, BUCKET, "corrupt/dump.rdb", out, NULL, &o, &e), -1);
    CU_ASSERT_EQUAL(e.code, S3_ERR_CHECKSUM);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.message, "SHA-256"));
    CU_ASSERT_EQUAL(fd_size(out), 5);
    close(out);
    /* The right bytes with the wrong expectation: refused as well. */
    out = temp_empty();
    CU_ASSERT_EQUAL(s3_get_fd(s3, BUCKET, "backups/plain.rdb", out,
                              "0000000000000000000000000000000000000000000000000000000000000000",
                              &o, &e), -1);
    CU_ASSERT_EQUAL(e.code, S3_ERR_CHECKSUM);
    CU_ASSERT_EQUAL(fd_size(out), 0);
    close(out);
    free(p);
}

static void test_no_checksum_refused(void)
{
    /* A file put into the bucket behind the gateway's back: an object with no
     * x-amz-meta-sha256, as a half-finished upload of ours would be. */
    char path[1024];
    backend_path("stray.rdb", path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(write(fd, "REDIS0011", 9), 9);
    close(fd);
    int out = temp_empty();
    s3_error_t e;
    s3_object_t o;
    CU_ASSERT_EQUAL(s3_get_fd(s3, BUCKET, "stray.rdb", out, NULL, &o, &e), -1);
    CU_ASSERT_EQUAL(e.code, S3_ERR_NO_CHECKSUM);
    CU_ASSERT_EQUAL(fd_size(out), 0);
    /* With the hash named by the caller (a RedisBackup's status), it is accepted. */
    char want[65];
    sha_hex("REDIS0011", 9, want);
    CU_ASSERT_EQUAL(s3_get_fd(s3, BUCKET, "stray.rdb", out, want, &o, &e), 0);
    CU_ASSERT_EQUAL(fd_size(out), 9);
    close(out);
}

static void test_errors_surfaced(void)
{
    s3_error_t e;
    s3_object_t o;
    int out = temp_empty();
    CU_ASSERT_EQUAL(s3_get_fd(s3, "no-such-bucket-here", "k", out, NULL, &o, &e), -1);
    CU_ASSERT_EQUAL(e.http_status, 404);
    CU_ASSERT_STRING_EQUAL(e.s3_code, "NoSuchBucket");
    CU_ASSERT_PTR_NOT_NULL(strstr(why(&e), "GetObject no-such-bucket-here/k: HTTP 404 NoSuchBucket"));
    close(out);
    /* Wrong secret: the server's refusal, no retry, no credential in the message. */
    s3_config_t cfg = {.endpoint = getenv("S3_ENDPOINT"), .access_key = getenv("S3_ACCESS_KEY"),
                       .secret_key = "wrong-secret"};
    char err[128];
    s3_t *bad = s3_new(&cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
    CU_ASSERT_EQUAL(s3_head(bad, BUCKET, "backups/plain.rdb", &o, &e), -1);
    CU_ASSERT_EQUAL(e.http_status, 403);
    CU_ASSERT_EQUAL(s3_delete(bad, BUCKET, "backups/plain.rdb", &e), -1);
    CU_ASSERT_EQUAL(e.http_status, 403);
    CU_ASSERT_STRING_EQUAL(e.s3_code, "SignatureDoesNotMatch");
    CU_ASSERT_PTR_NULL(strstr(why(&e), "wrong-secret"));
    s3_destroy(&bad);
    /* Nobody listening: a transport error after the retries. */
    cfg = (s3_config_t){.endpoint = "http://127.0.0.1:1", .access_key = "a", .secret_key = "b",
                        .max_retries = 1};
    bad = s3_new(&cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bad);
    CU_ASSERT_EQUAL(s3_delete(bad, BUCKET, "k", &e), -1);
    CU_ASSERT_EQUAL(e.code, S3_ERR_TRANSPORT);
    CU_ASSERT_EQUAL(e.curl_code, CURLE_COULDNT_CONNECT);
    s3_destroy(&bad);
}

static const cu_entry_t tests[] = {
    CU_SUITE("s3 server"),
    {"put and get, keys S3 encodes, an empty object", test_put_get},
    {"list by prefix across continuation tokens", test_list_pages},
    {"delete; a missing key is NoSuchKey", test_delete},
    {"12 MiB in 5 MiB parts, checksum recorded and verified", test_multipart},
    {"a source failing mid-upload leaves no object", test_source_failure_leaves_nothing},
    {"a corrupted object is refused, the partial file truncated", test_corrupted_object_refused},
    {"an object with no recorded checksum is refused", test_no_checksum_refused},
    {"S3 error codes surfaced; bad secret; no server", test_errors_surfaced},
};
CU_MAIN(tests)
