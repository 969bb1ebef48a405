/* The S3 client (common/s3.h) without an S3 server: what a request would send (URL, query
 * in canonical order, headers, the SigV4 and credential options libcurl gets), the
 * response documents (errors, listings, multipart answers, hostile XML), and, against a
 * canned HTTP server on loopback, checksum verification and the retry rule. The suite
 * against a real server is tests/s3/ (make s3-check). */
#include "s3.h"

#include "cu_table.h"
#include "loopback.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static s3_t *client(const char *endpoint, const char *region)
{
    s3_config_t cfg = {.endpoint = endpoint, .region = region, .access_key = "AKIDEXAMPLE",
                       .secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", .max_retries = 2};
    char err[160];
    s3_t *s = s3_new(&cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL(s);
    return s;
}

static int has_header(const s3_request_t *r, const char *line)
{
    for (int i = 0; i < r->nheaders; i++)
        if (strcmp(r->headers[i], line) == 0)
            return 1;
    return 0;
}

/* ------------------------------------------------------------------ requests */

static void test_uri_encode(void)
{
    static const struct {
        const char *in;
        int keep_slash;
        const char *out;
    } rows[] = {
        {"plain-key_1.rdb~", 1, "plain-key_1.rdb~"},
        {"a b+c=d&e", 1, "a%20b%2Bc%3Dd%26e"},
        {"dir/sub/x", 1, "dir/sub/x"},
        {"dir/sub/x", 0, "dir%2Fsub%2Fx"},
        {"\xc3\xbc", 1, "%C3%BC"}, /* ü: its UTF-8 bytes, upper-case hex */
        {"*'()!$,;:@", 1, "%2A%27%28%29%21%24%2C%3B%3A%40"},
        {"", 1, ""},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char out[128];
        size_t n = s3_uri_encode(rows[i].in, rows[i].keep_slash, out, sizeof out);
        CU_ASSERT_STRING_EQUAL(out, rows[i].out);
        CU_ASSERT_EQUAL(n, strlen(rows[i].out));
    }
    char small[5];
    CU_ASSERT_EQUAL(s3_uri_encode("a b c", 1, small, sizeof small), 9); /* what it needs */
    CU_ASSERT_EQUAL(strlen(small), 4);
}

static void test_request_get_object(void)
{
    s3_t *s = client("http://127.0.0.1:9000/", "eu-west-1");
    s3_request_t r;
    char err[160];
    CU_ASSERT_EQUAL_FATAL(s3_request_build(s, "GET", "backups", "rdc/ns/a b/dump+1.rdb", NULL, 0,
                                           NULL, 0, NULL, &r, err, sizeof err), 0);
    /* Path-style, the trailing slash of the endpoint dropped, the key encoded once. */
    CU_ASSERT_STRING_EQUAL(r.url, "http://127.0.0.1:9000/backups/rdc/ns/a%20b/dump%2B1.rdb");
    CU_ASSERT_STRING_EQUAL(r.method, "GET");
    CU_ASSERT_STRING_EQUAL(r.sigv4, "aws:amz:eu-west-1:s3");
    CU_ASSERT_STRING_EQUAL(r.username, "AKIDEXAMPLE");
    CU_ASSERT_STRING_EQUAL(r.password, "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY");
    /* No body: the empty string's SHA-256, which libcurl signs as the payload hash. */
    CU_ASSERT_TRUE(has_header(&r, "x-amz-content-sha256: "
                                  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    CU_ASSERT_TRUE(has_header(&r, "Expect:")); /* no 100-continue round trip */
    CU_ASSERT_EQUAL(r.nheaders, 2);
    CU_ASSERT_FALSE(r.upload);
    CU_ASSERT_PTR_NULL(r.body);
    /* Nothing of ours signs: no Authorization header, no date header. */
    for (int i = 0; i < r.nheaders; i++) {
        CU_ASSERT_PTR_NULL(strcasestr(r.headers[i], "authorization"));
        CU_ASSERT_PTR_NULL(strcasestr(r.headers[i], "x-amz-date"));
    }
    s3_request_free(&r);
    CU_ASSERT_PTR_NULL(r.url);
    s3_destroy(&s);
    CU_ASSERT_PTR_NULL(s);
}

static void test_request_query_canonical(void)
{
    s3_t *s = client("https://s3.example.com", NULL);
    s3_request_t r;
    char err[160];
    /* Given in any order, sent sorted by name (libcurl < 8.3 signs the query as given). */
    s3_param_t p[] = {{"uploadId", "2~x/y+z"}, {"partNumber", "3"}};
    const char body[] = "part bytes";
    CU_ASSERT_EQUAL_FATAL(s3_request_build(s, "PUT", "bkt", "k", p, 2, body, sizeof body - 1, NULL,
                                           &r, err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(r.url, "https://s3.example.com/bkt/k?partNumber=3&uploadId=2~x%2Fy%2Bz");
    CU_ASSERT_STRING_EQUAL(r.sigv4, "aws:amz:us-east-1:s3"); /* the default region */
    CU_ASSERT_TRUE(r.upload);
    CU_ASSERT_PTR_EQUAL(r.body, body);
    CU_ASSERT_EQUAL(r.body_len, sizeof body - 1);
    char hex[65];
    unsigned char md[32];
    unsigned mdlen;
    EVP_Digest(body, sizeof body - 1, md, &mdlen, EVP_sha256(), NULL);
    for (unsigned i = 0; i < mdlen; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    char want[100];
    snprintf(want, sizeof want, "x-amz-content-sha256: %s", hex);
    CU_ASSERT_TRUE(has_header(&r, want)); /* the body's real hash, not UNSIGNED-PAYLOAD */
    s3_request_free(&r);
    /* A parameter without a value keeps its "=": "uploads=". */
    s3_param_t up[] = {{"uploads", NULL}};
    const char *extra[] = {"x-amz-meta-sha256: abc", NULL};
    CU_ASSERT_EQUAL_FATAL(s3_request_build(s, "POST", "bkt", "dir/k", up, 1, NULL, 0, extra, &r,
                                           err, sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(r.url, "https://s3.example.com/bkt/dir/k?uploads=");
    CU_ASSERT_TRUE(has_header(&r, "Content-Type: application/xml"));
    CU_ASSERT_TRUE(has_header(&r, "x-amz-meta-sha256: abc"));
    CU_ASSERT_FALSE(r.upload);
    s3_request_free(&r);
    /* ListObjectsV2's parameters. */
    s3_param_t l[] = {{"prefix", "rdc/ns/"}, {"list-type", "2"}, {"continuation-token", "a=b/c"}};
    CU_ASSERT_EQUAL_FATAL(s3_request_build(s, "GET", "bkt", NULL, l, 3, NULL, 0, NULL, &r, err,
                                           sizeof err), 0);
    CU_ASSERT_STRING_EQUAL(r.url, "https://s3.example.com/bkt?continuation-token=a%3Db%2Fc"
                                  "&list-type=2&prefix=rdc%2Fns%2F");
    s3_request_free(&r);
    s3_destroy(&s);
}

static void test_request_refusals(void)
{
    s3_t *s = client("http://127.0.0.1:9000", NULL);
    s3_request_t r;
    char err[160], key[1100];
    static const char *bad_buckets[] = {"ab", "Upper", "-lead", "trail-", "under_score", "a b",
                                        NULL};
    for (int i = 0; bad_buckets[i]; i++) {
        CU_ASSERT_EQUAL(s3_request_build(s, "GET", bad_buckets[i], "k", NULL, 0, NULL, 0, NULL, &r,
                                         err, sizeof err), -1);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "bucket name"));
        CU_ASSERT_PTR_NULL(r.url);
    }
    CU_ASSERT_EQUAL(s3_request_build(s, "GET", NULL, "k", NULL, 0, NULL, 0, NULL, &r, err, sizeof err), -1);
    CU_ASSERT_EQUAL(s3_request_build(s, "GET", "bkt", "", NULL, 0, NULL, 0, NULL, &r, err, sizeof err), -1);
    memset(key, 'k', 1025);
    key[1025] = '\0';
    CU_ASSERT_EQUAL(s3_request_build(s, "GET", "bkt", key, NULL, 0, NULL, 0, NULL, &r, err, sizeof err), -1);
    key[1024] = '\0';
    CU_ASSERT_EQUAL(s3_request_build(s, "GET", "bkt", key, NULL, 0, NULL, 0, NULL, &r, err, sizeof err), 0);
    s3_request_free(&r);
    CU_ASSERT_TRUE(s3_bucket_name_ok("rdc-backups.eu-1"));
    s3_destroy(&s);
}

static void test_config_refusals(void)
{
    char err[160];
    s3_config_t c = {.endpoint = "http://h", .access_key = "a", .secret_key = "b",
                     .part_size = 1024 * 1024};
    CU_ASSERT_PTR_NULL(s3_new(&c, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "part_size 1048576"));
    c.part_size = 0;
    c.endpoint = "ftp://h";
    CU_ASSERT_PTR_NULL(s3_new(&c, err, sizeof err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "not http"));
    c.endpoint = "http://h";
    c.secret_key = NULL;
    CU_ASSERT_PTR_NULL(s3_new(&c, err, sizeof err));
    c.secret_key = "b";
    s3_t *s = s3_new(&c, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(s3_part_size(s), S3_DEFAULT_PART_SIZE);
    s3_destroy(&s);
    s3_destroy(&s); /* NULL: a no-op */
}

/* ------------------------------------------------------------------ documents */

static void test_parse_error(void)
{
    static const char doc[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>"
        "<Message>The specified key does not exist &amp; never did.</Message>"
        "<Key>a/b</Key><RequestId>4442587FB7D0A2F9</RequestId></Error>";
    char code[64], msg[256];
    CU_ASSERT_EQUAL(s3_parse_error(doc, sizeof doc - 1, code, sizeof code, msg, sizeof msg), 0);
    CU_ASSERT_STRING_EQUAL(code, "NoSuchKey");
    CU_ASSERT_STRING_EQUAL(msg, "The specified key does not exist & never did.");
    /* Not an error document, not XML, nothing. */
    static const char list[] = "<ListBucketResult><Name>b</Name></ListBucketResult>";
    CU_ASSERT_EQUAL(s3_parse_error(list, sizeof list - 1, code, sizeof code, msg, sizeof msg), -1);
    CU_ASSERT_EQUAL(s3_parse_error("<Error><Code>x", 14, code, sizeof code, msg, sizeof msg), -1);
    CU_ASSERT_EQUAL(s3_parse_error(NULL, 0, code, sizeof code, msg, sizeof msg), -1);
    CU_ASSERT_STRING_EQUAL(code, "");
    /* Truncated to the caller's buffer. */
    char tiny[5];
    CU_ASSERT_EQUAL(s3_parse_error(doc, sizeof doc - 1, tiny, sizeof tiny, msg, sizeof msg), 0);
    CU_ASSERT_STRING_EQUAL(tiny, "NoSu");
}

static void test_parse_hostile(void)
{
    /* Entities declared in a DOCTYPE (billion laughs, external files): refused whole. */
    static const char laughs[] =
        "<?xml version=\"1.0\"?><!DOCTYPE Error [<!ENTITY a \"aaaaaaaaaa\">"
        "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">]><Error><Code>&b;</Code></Error>";
    static const char ext[] =
        "<?xml version=\"1.0\"?><!DOCTYPE Error [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
        "<Error><Code>&x;</Code></Error>";
    char code[64], msg[64];
    CU_ASSERT_EQUAL(s3_parse_error(laughs, sizeof laughs - 1, code, sizeof code, msg, sizeof msg), -1);
    CU_ASSERT_EQUAL(s3_parse_error(ext, sizeof ext - 1, code, sizeof code, msg, sizeof msg), -1);
    /* Nesting past the walker's depth, and a text over its cap. */
    char deep[512] = "";
    for (int i = 0; i < 12; i++)
        strncat(deep, "<a>", sizeof deep - strlen(deep) - 1);
    CU_ASSERT_EQUAL(s3_parse_error(deep, strlen(deep), code, sizeof code, msg, sizeof msg), -1);
    size_t n = 10000;
    char *big = malloc(n + 64);
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    int k = snprintf(big, n + 64, "<Error><Code>");
    memset(big + k, 'x', n);
    snprintf(big + k + n, 64, "</Code></Error>");
    CU_ASSERT_EQUAL(s3_parse_error(big, strlen(big), code, sizeof code, msg, sizeof msg), -1);
    free(big);
}

static void test_parse_list(void)
{
    static const char doc[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
        "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        "<Name>bkt</Name><Prefix>rdc/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>"
        "<IsTruncated>true</IsTruncated>"
        "<Contents><Key>rdc/a &amp; b.rdb</Key><LastModified>2026-12-01T10:00:00.000Z</LastModified>"
        "<ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>1048576</Size>"
        "<StorageClass>STANDARD</StorageClass></Contents>"
        "<Contents><Key>rdc/\xc3\xbc.rdb</Key><Size>0</Size><ETag>\"d41d-2\"</ETag></Contents>"
        "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
        "</ListBucketResult>";
    s3_list_page_t pg;
    CU_ASSERT_EQUAL_FATAL(s3_parse_list(doc, sizeof doc - 1, &pg), 0);
    CU_ASSERT_EQUAL_FATAL(pg.n, 2);
    CU_ASSERT_STRING_EQUAL(pg.keys[0], "rdc/a & b.rdb");
    CU_ASSERT_EQUAL(pg.objects[0].size, 1048576);
    CU_ASSERT_STRING_EQUAL(pg.objects[0].etag, "\"9b2cf535f27731c974343645a3985328\"");
    CU_ASSERT_STRING_EQUAL(pg.objects[0].last_modified, "2026-12-01T10:00:00.000Z");
    CU_ASSERT_STRING_EQUAL(pg.keys[1], "rdc/\xc3\xbc.rdb");
    CU_ASSERT_EQUAL(pg.objects[1].size, 0);
    CU_ASSERT_TRUE(pg.truncated);
    CU_ASSERT_STRING_EQUAL(pg.next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
    s3_list_page_free(&pg);
    CU_ASSERT_PTR_NULL(pg.keys);
    /* The last page: not truncated, no token, no contents. */
    static const char last[] = "<ListBucketResult><KeyCount>0</KeyCount>"
                               "<IsTruncated>false</IsTruncated></ListBucketResult>";
    CU_ASSERT_EQUAL_FATAL(s3_parse_list(last, sizeof last - 1, &pg), 0);
    CU_ASSERT_EQUAL(pg.n, 0);
    CU_ASSERT_FALSE(pg.truncated);
    CU_ASSERT_PTR_NULL(pg.next_token);
    s3_list_page_free(&pg);
    /* Truncated without a token would list forever: refused. An error document too. */
    static const char loop[] = "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>";
    CU_ASSERT_EQUAL(s3_parse_list(loop, sizeof loop - 1, &pg), -1);
    static const char err[] = "<Error><Code>AccessDenied</Code></Error>";
    CU_ASSERT_EQUAL(s3_parse_list(err, sizeof err - 1, &pg), -1);
}

static void test_parse_multipart(void)
{
    static const char init[] =
        "<?xml version=\"1.0\"?><InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>"
        "<UploadId>VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA</UploadId>"
        "</InitiateMultipartUploadResult>";
    char id[256];
    CU_ASSERT_EQUAL(s3_parse_upload_id(init, sizeof init - 1, id, sizeof id), 0);
    CU_ASSERT_STRING_EQUAL(id, "VXBsb2FkIElEIGZvciA2aWWpbmcncyBteS1tb3ZpZS5tMnRzIHVwbG9hZA");
    CU_ASSERT_EQUAL(s3_parse_upload_id(init, sizeof init - 1, id, 10), -1); /* too long */
    static const char noid[] = "<InitiateMultipartUploadResult/>";
    CU_ASSERT_EQUAL(s3_parse_upload_id(noid, sizeof noid - 1, id, sizeof id), -1);
    static const char done[] =
        "<CompleteMultipartUploadResult><Location>http://x/b/k</Location><Bucket>b</Bucket>"
        "<Key>k</Key><ETag>\"3858f62230ac3c915f300c664312c11f-9\"</ETag>"
        "</CompleteMultipartUploadResult>";
    char etag[128];
    s3_error_t e = {0};
    CU_ASSERT_EQUAL(s3_parse_complete(done, sizeof done - 1, etag, sizeof etag, &e), 0);
    CU_ASSERT_STRING_EQUAL(etag, "\"3858f62230ac3c915f300c664312c11f-9\"");
    /* A 200 whose body is an error: S3 found the failure while assembling the parts. */
    static const char late[] = "<Error><Code>InternalError</Code><Message>We encountered an "
                               "internal error. Please try again.</Message></Error>";
    CU_ASSERT_EQUAL(s3_parse_complete(late, sizeof late - 1, etag, sizeof etag, &e), -1);
    CU_ASSERT_EQUAL(e.code, S3_ERR_HTTP);
    CU_ASSERT_STRING_EQUAL(e.s3_code, "InternalError");
    memset(&e, 0, sizeof e);
    CU_ASSERT_EQUAL(s3_parse_complete("garbage", 7, etag, sizeof etag, &e), -1);
    CU_ASSERT_EQUAL(e.code, S3_ERR_DECODE);
}

static void test_error_str(void)
{
    s3_error_t e = {.code = S3_ERR_NOT_FOUND, .http_status = 404};
    snprintf(e.op, sizeof e.op, "GetObject");
    snprintf(e.target, sizeof e.target, "b/k");
    snprintf(e.s3_code, sizeof e.s3_code, "NoSuchKey");
    snprintf(e.message, sizeof e.message, "The specified key does not exist.");
    char buf[256];
    CU_ASSERT_STRING_EQUAL(s3_error_str(&e, buf, sizeof buf),
                           "GetObject b/k: HTTP 404 NoSuchKey: The specified key does not exist.");
    e = (s3_error_t){.code = S3_ERR_TRANSPORT};
    snprintf(e.op, sizeof e.op, "PutObject");
    snprintf(e.target, sizeof e.target, "b/k");
    snprintf(e.message, sizeof e.message, "Failed to connect");
    CU_ASSERT_STRING_EQUAL(s3_error_str(&e, buf, sizeof buf), "PutObject b/k: Failed to connect");
}

/* ------------------------------------------------------------------ a canned server */

typedef struct {
    int status;
    const char *body;
    size_t len;
    const char *meta_sha256; /* x-amz-meta-sha256, or NULL */
    size_t break_at;         /* > 0: the body breaks off after this many bytes */
} canned_t;

/* A body that breaks off: the first break_at bytes, then the connection is dropped. */
static ssize_t broken_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    const canned_t *r = cls;
    if (pos >= r->break_at)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    size_t n = r->break_at - (size_t)pos;
    n = n < max ? n : max;
    memcpy(buf, r->body + pos, n);
    return (ssize_t)n;
}

static struct {
    struct MHD_Daemon *d;
    char endpoint[64];
    canned_t replies[8]; /* served in turn; the last one repeats */
    int nreplies;
    int requests;
    char methods[8][8];
} srv;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    (void)cls, (void)url, (void)version, (void)upload;
    if (!*con_cls) {
        *con_cls = c;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0;
        return MHD_YES;
    }
    int i = srv.requests < srv.nreplies ? srv.requests : srv.nreplies - 1;
    if (srv.requests < 8)
        snprintf(srv.methods[srv.requests], sizeof srv.methods[0], "%s", method);
    srv.requests++;
    const canned_t *r = &srv.replies[i];
    struct MHD_Response *resp =
        r->break_at ? MHD_create_response_from_callback(r->len, 1024, broken_reader, (void *)r, NULL)
                    : MHD_create_response_from_buffer(r->len, (void *)r->body, MHD_RESPMEM_MUST_COPY);
    if (r->meta_sha256)
        MHD_add_response_header(resp, "x-amz-meta-sha256", r->meta_sha256);
    enum MHD_Result ret = MHD_queue_response(c, (unsigned)r->status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static int srv_init(void)
{
    struct sockaddr_in sa = loopback_any_port();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    srv.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, NULL,
                             MHD_OPTION_SOCK_ADDR, &sa, MHD_OPTION_END);
    if (!srv.d)
        return 1;
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(srv.d, MHD_DAEMON_INFO_BIND_PORT);
    snprintf(srv.endpoint, sizeof srv.endpoint, "http://127.0.0.1:%u", info->port);
    return 0;
}

static int srv_clean(void)
{
    MHD_stop_daemon(srv.d);
    curl_global_cleanup();
    return 0;
}
CU_HOOKS({"canned server", srv_init, srv_clean, NULL, NULL});

static void serve(const canned_t *r, int n)
{
    memcpy(srv.replies, r, (size_t)n * sizeof *r);
    srv.nreplies = n;
    srv.requests = 0;
}

static int temp_fd(void)
{
    char path[] = "/tmp/rdc-test-s3-XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0)
        unlink(path);
    return fd;
}

static off_t fd_size(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 ? st.st_size : -1;
}

/* A client of the canned server, the error and object its calls fill, and an empty
 * temporary file to get into (getter_open, getter_close). */
typedef struct {
    s3_t *s;
    s3_error_t e;
    s3_object_t o;
    int fd;
} getter_t;

static void getter_open(getter_t *g)
{
    memset(g, 0, sizeof(*g));
    g->s = client(srv.endpoint, NULL);
    g->fd = temp_fd();
    CU_ASSERT_FATAL(g->fd >= 0);
}

static void getter_close(getter_t *g)
{
    close(g->fd);
    s3_destroy(&g->s);
}

/* GET bkt/k with g's client into fd, expecting sha256 (NULL: the recorded one); as
 * s3_get_fd. */
static int get_into(getter_t *g, int fd, const char *sha256)
{
    return s3_get_fd(g->s, "bkt", "k", fd, sha256, &g->o, &g->e);
}

#define RDB "REDIS0011 some bytes of a dump"
/* sha256("REDIS0011 some bytes of a dump") */
static char rdb_sha[65];

static void compute_rdb_sha(void)
{
    unsigned char md[32];
    unsigned n;
    EVP_Digest(RDB, sizeof RDB - 1, md, &n, EVP_sha256(), NULL);
    for (unsigned i = 0; i < n; i++)
        snprintf(rdb_sha + 2 * i, 3, "%02x", md[i]);
}

static void test_checksum_verify(void)
{
    compute_rdb_sha();
    getter_t g;
    getter_open(&g);
    /* The recorded hash matches: the file holds the bytes. */
    serve((canned_t[]){{200, RDB, sizeof RDB - 1, rdb_sha, 0}}, 1);
    CU_ASSERT_EQUAL(get_into(&g, g.fd, NULL), 0);
    CU_ASSERT_EQUAL(g.o.size, sizeof RDB - 1);
    CU_ASSERT_STRING_EQUAL(g.o.sha256, rdb_sha);
    CU_ASSERT_EQUAL(fd_size(g.fd), (off_t)(sizeof RDB - 1));
    /* Upper-case hex from the caller is the same hash. */
    char upper[65];
    for (int i = 0; i < 65; i++)
        upper[i] = (char)(rdb_sha[i] >= 'a' && rdb_sha[i] <= 'f' ? rdb_sha[i] - 32 : rdb_sha[i]);
    CU_ASSERT_EQUAL(ftruncate(g.fd, 0), 0);
    lseek(g.fd, 0, SEEK_SET);
    CU_ASSERT_EQUAL(get_into(&g, g.fd, upper), 0);
    /* One byte differs from what was recorded: refused, the file back to empty. */
    CU_ASSERT_EQUAL(ftruncate(g.fd, 0), 0);
    lseek(g.fd, 0, SEEK_SET);
    serve((canned_t[]){{200, "REDIS0011 some bytes of a dumq", sizeof RDB - 1, rdb_sha, 0}}, 1);
    CU_ASSERT_EQUAL(get_into(&g, g.fd, NULL), -1);
    CU_ASSERT_EQUAL(g.e.code, S3_ERR_CHECKSUM);
    CU_ASSERT_EQUAL(fd_size(g.fd), 0);
    /* Nothing recorded and nothing expected: refused. */
    serve((canned_t[]){{200, RDB, sizeof RDB - 1, NULL, 0}}, 1);
    CU_ASSERT_EQUAL(get_into(&g, g.fd, NULL), -1);
    CU_ASSERT_EQUAL(g.e.code, S3_ERR_NO_CHECKSUM);
    CU_ASSERT_EQUAL(fd_size(g.fd), 0);
    getter_close(&g);
}

static void test_retry_rule(void)
{
    getter_t g;
    getter_open(&g);
    static const char slow[] = "<Error><Code>SlowDown</Code><Message>Reduce your request rate."
                               "</Message></Error>";
    static const char internal[] = "<Error><Code>InternalError</Code><Message>oops</Message></Error>";
    /* GET is idempotent: a 500 and a 503 are retried, the third attempt's body kept alone. */
    serve((canned_t[]){{500, internal, sizeof internal - 1, NULL, 0},
                       {503, slow, sizeof slow - 1, NULL, 0},
                       {200, RDB, sizeof RDB - 1, rdb_sha, 0}}, 3);
    CU_ASSERT_EQUAL(get_into(&g, g.fd, NULL), 0);
    CU_ASSERT_EQUAL(srv.requests, 3);
    CU_ASSERT_EQUAL(fd_size(g.fd), (off_t)(sizeof RDB - 1));
    /* max_retries 2: the third 503 is the answer, with S3's code. */
    serve((canned_t[]){{503, slow, sizeof slow - 1, NULL, 0}}, 1);
    CU_ASSERT_EQUAL(s3_delete(g.s, "bkt", "k", &g.e), -1);
    CU_ASSERT_EQUAL(srv.requests, 3);
    CU_ASSERT_EQUAL(g.e.http_status, 503);
    CU_ASSERT_STRING_EQUAL(g.e.s3_code, "SlowDown");
    /* 403 and 404 are answers: one attempt. */
    static const char denied[] = "<Error><Code>AccessDenied</Code><Message>no</Message></Error>";
    serve((canned_t[]){{403, denied, sizeof denied - 1, NULL, 0}}, 1);
    CU_ASSERT_EQUAL(s3_head(g.s, "bkt", "k", &g.o, &g.e), -1);
    CU_ASSERT_EQUAL(srv.requests, 1);
    CU_ASSERT_EQUAL(g.e.code, S3_ERR_HTTP);
    /* POST (CreateMultipartUpload) is not idempotent: a 503 once sent is the answer. The
     * source is over one part, so s3_put goes multipart; nothing to abort (no UploadId). */
    s3_config_t cfg = {.endpoint = srv.endpoint, .access_key = "a", .secret_key = "b",
                       .part_size = S3_MIN_PART_SIZE, .max_retries = 3};
    char err[128];
    s3_t *m = s3_new(&cfg, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    int src = temp_fd();
    char *zeros = calloc(1, S3_MIN_PART_SIZE + 10);
    CU_ASSERT_EQUAL(write(src, zeros, S3_MIN_PART_SIZE + 10), (ssize_t)(S3_MIN_PART_SIZE + 10));
    lseek(src, 0, SEEK_SET);
    serve((canned_t[]){{503, slow, sizeof slow - 1, NULL, 0}}, 1);
    CU_ASSERT_EQUAL(s3_put_fd(m, "bkt", "k", src, NULL, &g.e), -1);
    CU_ASSERT_EQUAL(srv.requests, 1);
    CU_ASSERT_STRING_EQUAL(srv.methods[0], "POST");
    CU_ASSERT_STRING_EQUAL(g.e.op, "CreateMultipartUpload");
    /* An UploadPart that fails for good: the upload is aborted (DELETE ?uploadId=). */
    static const char init[] = "<InitiateMultipartUploadResult><UploadId>u1</UploadId>"
                               "</InitiateMultipartUploadResult>";
    lseek(src, 0, SEEK_SET);
    serve((canned_t[]){{200, init, sizeof init - 1, NULL, 0}, {400, denied, sizeof denied - 1, NULL, 0}}, 2);
    CU_ASSERT_EQUAL(s3_put_fd(m, "bkt", "k", src, NULL, &g.e), -1);
    CU_ASSERT_STRING_EQUAL(g.e.op, "UploadPart");
    CU_ASSERT_EQUAL(srv.requests, 3);
    CU_ASSERT_STRING_EQUAL(srv.methods[1], "PUT");
    CU_ASSERT_STRING_EQUAL(srv.methods[2], "DELETE");
    free(zeros);
    close(src);
    s3_destroy(&m);
    getter_close(&g);
}

static void test_get_broken_off(void)
{
    getter_t g;
    getter_open(&g);
    /* A regular file: the broken transfer's bytes are cut off and the retry writes the
     * object once, from the offset the file had (after "x"). */
    CU_ASSERT_EQUAL(write(g.fd, "x", 1), 1);
    serve((canned_t[]){{200, RDB, sizeof RDB - 1, rdb_sha, 10}, {200, RDB, sizeof RDB - 1, rdb_sha, 0}}, 2);
    CU_ASSERT_EQUAL(get_into(&g, g.fd, NULL), 0);
    CU_ASSERT_EQUAL(srv.requests, 2);
    CU_ASSERT_EQUAL(fd_size(g.fd), (off_t)sizeof RDB); /* "x" + the object */
    char back[64] = "";
    CU_ASSERT_EQUAL(pread(g.fd, back, sizeof RDB, 0), (ssize_t)sizeof RDB);
    CU_ASSERT_STRING_EQUAL(back, "x" RDB);
    /* A pipe cannot be rewound: the broken transfer is the answer, no retry. */
    int p[2];
    CU_ASSERT_EQUAL_FATAL(pipe(p), 0);
    serve((canned_t[]){{200, RDB, sizeof RDB - 1, rdb_sha, 10}}, 1);
    CU_ASSERT_EQUAL(get_into(&g, p[1], NULL), -1);
    CU_ASSERT_EQUAL(srv.requests, 1);
    CU_ASSERT_EQUAL(g.e.code, S3_ERR_TRANSPORT);
    close(p[0]);
    close(p[1]);
    getter_close(&g);
}

static const cu_entry_t tests[] = {
    CU_SUITE("s3 requests"),
    {"keys and query values encoded by S3's rule", test_uri_encode},
    {"GetObject: path-style URL, SigV4 and credentials as libcurl options", test_request_get_object},
    {"query in canonical order; body hash; uploads=; list parameters", test_request_query_canonical},
    {"bad bucket names and keys refused", test_request_refusals},
    {"bad configurations refused", test_config_refusals},
    CU_SUITE("s3 documents"),
    {"error document", test_parse_error},
    {"DOCTYPE, entities, depth and size caps refused", test_parse_hostile},
    {"ListObjectsV2 pages", test_parse_list},
    {"multipart answers, a 200 carrying an error", test_parse_multipart},
    {"one error line", test_error_str},
    CU_SUITE("canned server"),
    {"checksum verified, a mismatch truncates the file", test_checksum_verify},
    {"retries: idempotent 5xx again, POST not, answers at once, abort", test_retry_rule},
    {"a GET broken off: again from the file's offset; a pipe: no retry", test_get_broken_off},
};
CU_MAIN(tests)
