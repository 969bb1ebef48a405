/* s3: see s3.h. The request as data (s3_request_build), one transfer with the retry rule
 * (s3_send), and the operations over it. The response documents are read in s3_xml.c. */
#include "s3.h"

#include "backoff.h"
#include "buf.h"
#include "clock.h"
#include "kube_retry.h"

#include <curl/curl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S3_BODY_CAP ((size_t)1024 * 1024) /* an XML answer larger than this is refused */
#define S3_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct s3 {
    char *endpoint; /* without a trailing slash */
    char *region;
    char *access_key;
    char *secret_key;
    char *ca_file;
    size_t part_size;
    long timeout_ms;
    long connect_timeout_ms;
    int max_retries;
    int list_max_keys;
    uint64_t rng;
    CURL *curl; /* one handle: its connections are reused across requests */
};

/* ------------------------------------------------------------------ small helpers */

static void set_msg(s3_error_t *e, s3_error_code_t code, const char *fmt, const char *a)
{
    e->code = code;
    snprintf(e->message, sizeof e->message, fmt, a ? a : "");
}

static void err_start(s3_error_t *e, const char *op, const char *bucket, const char *key)
{
    memset(e, 0, sizeof *e);
    snprintf(e->op, sizeof e->op, "%s", op);
    snprintf(e->target, sizeof e->target, "%s%s%s", bucket ? bucket : "", key ? "/" : "",
             key ? key : "");
}

const char *s3_error_str(const s3_error_t *e, char *buf, size_t len)
{
    if (e->http_status)
        snprintf(buf, len, "%s %s: HTTP %d%s%s: %s", e->op, e->target, e->http_status,
                 e->s3_code[0] ? " " : "", e->s3_code, e->message);
    else
        snprintf(buf, len, "%s %s: %s", e->op, e->target, e->message);
    return buf;
}

static void hex_of(const unsigned char *md, unsigned n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    for (unsigned i = 0; i < n; i++) {
        out[2 * i] = hx[md[i] >> 4];
        out[2 * i + 1] = hx[md[i] & 15];
    }
    out[2 * n] = '\0';
}

/* SHA-256 of a buffer: hex (65 bytes) and, when b64 is not NULL, base64 (45 bytes). */
static int sha256_of(const void *p, size_t n, char *hex, char *b64)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    if (EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL) != 1)
        return -1;
    hex_of(md, mdlen, hex);
    if (b64)
        EVP_EncodeBlock((unsigned char *)b64, md, (int)mdlen);
    return 0;
}

size_t s3_uri_encode(const char *src, int keep_slash, char *out, size_t cap)
{
    static const char hx[] = "0123456789ABCDEF";
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)src; *p; p++) {
        int plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
                    (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.' ||
                    *p == '~' || (keep_slash && *p == '/');
        if (plain) {
            if (n + 1 < cap)
                out[n] = (char)*p;
            n++;
        } else {
            if (n + 3 < cap) {
                out[n] = '%';
                out[n + 1] = hx[*p >> 4];
                out[n + 2] = hx[*p & 15];
            }
            n += 3;
        }
    }
    if (cap)
        out[n < cap ? n : cap - 1] = '\0';
    return n;
}

int s3_bucket_name_ok(const char *b)
{
    size_t n = b ? strlen(b) : 0;
    if (n < 3 || n > 63)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = b[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (!alnum && ((c != '.' && c != '-') || i == 0 || i == n - 1))
            return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------ the client */

s3_t *s3_new(const s3_config_t *cfg, char *err, size_t errlen)
{
    size_t part = cfg->part_size ? cfg->part_size : S3_DEFAULT_PART_SIZE;
    if (!cfg->endpoint || !*cfg->endpoint || !cfg->access_key || !cfg->secret_key) {
        snprintf(err, errlen, "s3: endpoint, access key and secret are required");
        return NULL;
    }
    if (strncmp(cfg->endpoint, "http://", 7) != 0 && strncmp(cfg->endpoint, "https://", 8) != 0) {
        snprintf(err, errlen, "s3: endpoint %s: not http:// or https://", cfg->endpoint);
        return NULL;
    }
    if (part < S3_MIN_PART_SIZE || part > (size_t)5 * 1024 * 1024 * 1024) {
        snprintf(err, errlen, "s3: part_size %zu outside 5 MiB..5 GiB", part);
        return NULL;
    }
    s3_t *s = calloc(1, sizeof *s);
    int oom = !s;
    if (s) {
        s->endpoint = str_dup_opt(cfg->endpoint, &oom);
        s->region = str_dup_opt(cfg->region ? cfg->region : "us-east-1", &oom);
        s->access_key = str_dup_opt(cfg->access_key, &oom);
        s->secret_key = str_dup_opt(cfg->secret_key, &oom);
        s->ca_file = str_dup_opt(cfg->ca_file, &oom);
        s->curl = curl_easy_init();
        oom |= !s->curl;
    }
    if (oom) {
        snprintf(err, errlen, "s3: out of memory");
        s3_destroy(&s);
        return NULL;
    }
    size_t el = strlen(s->endpoint);
    while (el > 0 && s->endpoint[el - 1] == '/')
        s->endpoint[--el] = '\0';
    s->part_size = part;
    s->timeout_ms = cfg->timeout_ms;
    s->connect_timeout_ms = cfg->connect_timeout_ms ? cfg->connect_timeout_ms : 10000;
    s->max_retries = cfg->max_retries < 0 ? 0 : cfg->max_retries ? cfg->max_retries : 4;
    s->list_max_keys = cfg->list_max_keys > 0 ? cfg->list_max_keys : 0;
    s->rng = backoff_rng_seed();
    return s;
}

void s3_destroy(s3_t **sp)
{
    if (!sp || !*sp)
        return;
    s3_t *s = *sp;
    if (s->curl)
        curl_easy_cleanup(s->curl);
    free(s->endpoint);
    free(s->region);
    if (s->secret_key)
        OPENSSL_cleanse(s->secret_key, strlen(s->secret_key));
    free(s->access_key);
    free(s->secret_key);
    free(s->ca_file);
    free(s);
    *sp = NULL;
}

size_t s3_part_size(const s3_t *s)
{
    return s->part_size;
}

/* ------------------------------------------------------------------ the request as data */

static int param_cmp(const void *a, const void *b)
{
    return strcmp(((const s3_param_t *)a)->name, ((const s3_param_t *)b)->name);
}

/* Appends "name=value" pairs, sorted by name, encoded (the canonical query). */
static int append_query(char *url, size_t cap, size_t *len, const s3_param_t *params, size_t n)
{
    s3_param_t sorted[8];
    if (n > 8)
        return -1;
    if (n == 0)
        return 0;
    memcpy(sorted, params, n * sizeof *params);
    qsort(sorted, n, sizeof *sorted, param_cmp);
    for (size_t i = 0; i < n; i++) {
        if (*len + 1 >= cap)
            return -1;
        url[(*len)++] = i == 0 ? '?' : '&';
        *len += s3_uri_encode(sorted[i].name, 0, url + *len, cap - *len);
        if (*len + 1 >= cap)
            return -1;
        url[(*len)++] = '=';
        *len += s3_uri_encode(sorted[i].value ? sorted[i].value : "", 0, url + *len, cap - *len);
        if (*len >= cap)
            return -1;
    }
    url[*len] = '\0';
    return 0;
}

static int add_header(s3_request_t *r, const char *name, const char *value)
{
    if (r->nheaders >= S3_MAX_HEADERS)
        return -1;
    size_t n = strlen(name) + strlen(value) + 3;
    char *h = malloc(n);
    if (!h)
        return -1;
    snprintf(h, n, "%s: %s", name, value);
    r->headers[r->nheaders++] = h;
    return 0;
}

static int build_url(const s3_t *s, const char *bucket, const char *key, const s3_param_t *params,
                     size_t n, s3_request_t *r)
{
    size_t cap = strlen(s->endpoint) + strlen(bucket) + (key ? 3 * strlen(key) : 0) + 16;
    for (size_t i = 0; i < n; i++)
        cap += 3 * (strlen(params[i].name) + (params[i].value ? strlen(params[i].value) : 0)) + 2;
    r->url = malloc(cap);
    if (!r->url)
        return -1;
    size_t len = (size_t)snprintf(r->url, cap, "%s/%s", s->endpoint, bucket);
    if (key) {
        r->url[len++] = '/';
        len += s3_uri_encode(key, 1, r->url + len, cap - len);
    }
    return append_query(r->url, cap, &len, params, n);
}

int s3_request_build(const s3_t *s, const char *method, const char *bucket, const char *key,
                     const s3_param_t *params, size_t n, const void *body, size_t body_len,
                     const char *const *extra, s3_request_t *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (!s3_bucket_name_ok(bucket)) {
        snprintf(err, errlen, "bucket name \"%s\" is not one S3 allows", bucket ? bucket : "");
        return -1;
    }
    if (key && (!*key || strlen(key) > 1024)) {
        snprintf(err, errlen, "key: empty or over 1024 bytes");
        return -1;
    }
    char hash[S3_SHA256_HEX_LEN + 1] = S3_EMPTY_SHA256;
    if (body && body_len && sha256_of(body, body_len, hash, NULL) != 0)
        goto oom;
    snprintf(r->method, sizeof r->method, "%s", method);
    snprintf(r->sigv4, sizeof r->sigv4, "aws:amz:%s:s3", s->region);
    r->username = s->access_key;
    r->password = s->secret_key;
    r->body = body;
    r->body_len = body ? body_len : 0;
    r->upload = strcmp(method, "PUT") == 0;
    if (build_url(s, bucket, key, params, n, r) != 0 ||
        add_header(r, "x-amz-content-sha256", hash) != 0 || add_header(r, "Expect", "") != 0)
        goto oom;
    /* Expect: empty removes libcurl's "Expect: 100-continue" (a round trip per PUT). */
    r->headers[r->nheaders - 1][7] = '\0';
    if (strcmp(method, "POST") == 0 && add_header(r, "Content-Type", "application/xml") != 0)
        goto oom;
    for (const char *const *x = extra; x && *x; x++) {
        if (r->nheaders >= S3_MAX_HEADERS || !(r->headers[r->nheaders] = strdup(*x)))
            goto oom;
        r->nheaders++;
    }
    return 0;
oom:
    s3_request_free(r);
    snprintf(err, errlen, "out of memory or too many headers");
    return -1;
}

void s3_request_free(s3_request_t *r)
{
    free(r->url);
    for (int i = 0; i < r->nheaders; i++)
        free(r->headers[i]);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------------ one transfer */

/* Where a response's body goes: the object (2xx GET into fd) or the XML buffer. */
typedef struct {
    int fd;            /* -1: no object sink */
    off_t start;       /* the fd's offset at the start */
    int seekable;
    uint64_t written;
    EVP_MD_CTX *md;
    int failed_errno;  /* a write failed */
} sink_t;

typedef struct {
    CURL *curl;
    long status;
    char *body;
    size_t body_len;
    int body_over;
    sink_t *sink;
    s3_object_t obj;
    int has_length;
    int64_t retry_after_s;
    const char *up;   /* the upload body, sent from here */
    size_t up_len, up_off;
} resp_t;

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    resp_t *rs = ud;
    size_t len = sz * n;
    long st = 0;
    curl_easy_getinfo(rs->curl, CURLINFO_RESPONSE_CODE, &st);
    if (rs->sink && st >= 200 && st < 300) {
        for (size_t off = 0; off < len;) {
            ssize_t w = write(rs->sink->fd, p + off, len - off);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                rs->sink->failed_errno = w < 0 ? errno : EIO;
                return 0;
            }
            off += (size_t)w;
        }
        rs->sink->written += len;
        return EVP_DigestUpdate(rs->sink->md, p, len) == 1 ? len : 0;
    }
    if (rs->body_len + len > S3_BODY_CAP) {
        rs->body_over = 1;
        return 0;
    }
    char *nb = realloc(rs->body, rs->body_len + len + 1);
    if (!nb)
        return 0;
    rs->body = nb;
    memcpy(rs->body + rs->body_len, p, len);
    rs->body_len += len;
    rs->body[rs->body_len] = '\0';
    return len;
}

/* Copies the value of header line p (len bytes) after "name:" into out, trimmed. */
static int header_value(const char *p, size_t len, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    if (len <= nl || strncasecmp(p, name, nl) != 0 || p[nl] != ':')
        return 0;
    const char *v = p + nl + 1, *end = p + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' '))
        end--;
    snprintf(out, cap, "%.*s", (int)(end - v), v);
    return 1;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    resp_t *rs = ud;
    size_t len = sz * n;
    char num[32];
    if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) { /* a new response (after a 100) */
        memset(&rs->obj, 0, sizeof rs->obj);
        rs->has_length = 0;
        rs->retry_after_s = 0;
    }
    header_value(p, len, "ETag", rs->obj.etag, sizeof rs->obj.etag);
    header_value(p, len, "x-amz-meta-sha256", rs->obj.sha256, sizeof rs->obj.sha256);
    header_value(p, len, "Last-Modified", rs->obj.last_modified, sizeof rs->obj.last_modified);
    if (header_value(p, len, "Content-Length", num, sizeof num)) {
        rs->obj.size = strtoull(num, NULL, 10);
        rs->has_length = 1;
    }
    kube_retry_parse_after(p, len, &rs->retry_after_s);
    return len;
}

static size_t on_read(char *p, size_t sz, size_t n, void *ud)
{
    resp_t *rs = ud;
    size_t len = sz * n, left = rs->up_len - rs->up_off;
    if (len > left)
        len = left;
    memcpy(p, rs->up + rs->up_off, len);
    rs->up_off += len;
    return len;
}

static struct curl_slist *apply(const s3_t *s, const s3_request_t *r, resp_t *rs)
{
    CURL *c = s->curl;
    struct curl_slist *hl = NULL;
    for (int i = 0; i < r->nheaders; i++) {
        struct curl_slist *t = curl_slist_append(hl, r->headers[i]);
        if (!t) {
            curl_slist_free_all(hl);
            return NULL;
        }
        hl = t;
    }
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, r->url);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, r->sigv4);
    curl_easy_setopt(c, CURLOPT_USERNAME, r->username);
    curl_easy_setopt(c, CURLOPT_PASSWORD, r->password);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, s->connect_timeout_ms);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, s->timeout_ms);
    if (s->ca_file)
        curl_easy_setopt(c, CURLOPT_CAINFO, s->ca_file);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, rs);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, rs);
    if (r->upload) {
        rs->up = r->body;
        rs->up_len = r->body_len;
        rs->up_off = 0;
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, rs);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
    } else if (strcmp(r->method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, r->body ? (const char *)r->body : "");
    } else if (strcmp(r->method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (strcmp(r->method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
    }
    return hl;
}

/* Puts the sink back to where it started: a retry writes the object again. */
static int sink_rewind(sink_t *k)
{
    if (k->written && (!k->seekable || ftruncate(k->fd, k->start) != 0 ||
                       lseek(k->fd, k->start, SEEK_SET) < 0))
        return -1;
    k->written = 0;
    return EVP_DigestInit_ex(k->md, EVP_sha256(), NULL) == 1 ? 0 : -1;
}

static void fill_error(s3_error_t *e, const resp_t *rs, CURLcode cc, const char *curl_msg)
{
    e->curl_code = (int)cc;
    e->http_status = (int)rs->status;
    if (rs->sink && rs->sink->failed_errno) {
        set_msg(e, S3_ERR_SINK, "writing the file: %s", strerror(rs->sink->failed_errno));
    } else if (cc != CURLE_OK && !(rs->status >= 300)) {
        set_msg(e, S3_ERR_TRANSPORT, "%s", curl_msg[0] ? curl_msg : curl_easy_strerror(cc));
    } else if (rs->body_over) {
        set_msg(e, S3_ERR_DECODE, "the answer is over 1 MiB%s", NULL);
    } else {
        e->code = rs->status == 404 ? S3_ERR_NOT_FOUND : S3_ERR_HTTP;
        if (s3_parse_error(rs->body, rs->body_len, e->s3_code, sizeof e->s3_code, e->message,
                           sizeof e->message) != 0)
            snprintf(e->message, sizeof e->message, "no S3 error document in the answer");
    }
}

/* One attempt: 0 on a 2xx, else the decision's input filled. */
static int attempt(s3_t *s, const s3_request_t *r, resp_t *rs, CURLcode *cc, char *curl_msg)
{
    free(rs->body);
    rs->body = NULL;
    rs->body_len = 0;
    rs->body_over = 0;
    rs->status = 0;
    rs->curl = s->curl;
    struct curl_slist *hl = apply(s, r, rs);
    if (!hl) {
        *cc = CURLE_OUT_OF_MEMORY;
        return -1;
    }
    curl_msg[0] = '\0';
    curl_easy_setopt(s->curl, CURLOPT_ERRORBUFFER, curl_msg);
    *cc = curl_easy_perform(s->curl);
    curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &rs->status);
    curl_easy_setopt(s->curl, CURLOPT_ERRORBUFFER, NULL);
    curl_easy_setopt(s->curl, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hl);
    return *cc == CURLE_OK && rs->status >= 200 && rs->status < 300 ? 0 : -1;
}

/* Sends r by the retry rule. 0 on a 2xx with *rs kept (its body the caller's to free);
 * -1 with *e filled from the last attempt. */
static int s3_send(s3_t *s, const s3_request_t *r, resp_t *rs, s3_error_t *e)
{
    const kube_retry_policy_t pol = {s->max_retries, 200000000, 5000000000LL, 30000000000LL};
    char curl_msg[CURL_ERROR_SIZE];
    CURLcode cc = CURLE_OK;
    for (int retries = 0;; retries++) {
        if (rs->sink && sink_rewind(rs->sink) != 0) {
            set_msg(e, S3_ERR_SINK, "cannot retry: %s", "the file cannot be rewound");
            return -1;
        }
        if (attempt(s, r, rs, &cc, curl_msg) == 0)
            return 0;
        long req_size = 0;
        curl_easy_getinfo(s->curl, CURLINFO_REQUEST_SIZE, &req_size);
        int st = (int)rs->status;
        kube_retry_in_t in = {
            .idempotent = kube_retry_idempotent(r->method, NULL),
            .curl_code = (int)cc, .sent = req_size > 0,
            .http_status = st == 500 || st == 502 ? 503 : st,
            .retry_after_s = rs->retry_after_s, .retries = retries, .refreshed = 1,
            .now_ns = clock_mono_ns()};
        kube_retry_t d = kube_retry_decide(&pol, &in, &s->rng);
        int stuck = rs->sink && (rs->sink->failed_errno || (rs->sink->written && !rs->sink->seekable));
        if (!d.retry || stuck || cc == CURLE_OUT_OF_MEMORY) {
            fill_error(e, rs, cc, curl_msg);
            return -1;
        }
        struct timespec ts = {d.delay_ns / 1000000000, d.delay_ns % 1000000000};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
}

/* Builds and sends one request; *rs is the caller's to release with resp_free. */
static int request(s3_t *s, const char *method, const char *bucket, const char *key,
                   const s3_param_t *params, size_t n, const void *body, size_t body_len,
                   const char *const *extra, resp_t *rs, s3_error_t *e)
{
    s3_request_t r;
    char err[160];
    if (s3_request_build(s, method, bucket, key, params, n, body, body_len, extra, &r, err,
                         sizeof err) != 0) {
        set_msg(e, S3_ERR_CONFIG, "%s", err);
        return -1;
    }
    int rc = s3_send(s, &r, rs, e);
    s3_request_free(&r);
    return rc;
}

static void resp_free(resp_t *rs)
{
    free(rs->body);
    rs->body = NULL;
}

/* ------------------------------------------------------------------ operations */

int s3_create_bucket(s3_t *s, const char *bucket, s3_error_t *e)
{
    resp_t rs = {0};
    err_start(e, "CreateBucket", bucket, NULL);
    int rc = request(s, "PUT", bucket, NULL, NULL, 0, NULL, 0, NULL, &rs, e);
    if (rc != 0 && strcmp(e->s3_code, "BucketAlreadyOwnedByYou") == 0) {
        memset(e, 0, sizeof *e);
        rc = 0;
    }
    resp_free(&rs);
    return rc;
}

int s3_head(s3_t *s, const char *bucket, const char *key, s3_object_t *obj, s3_error_t *e)
{
    resp_t rs = {0};
    err_start(e, "HeadObject", bucket, key);
    int rc = request(s, "HEAD", bucket, key, NULL, 0, NULL, 0, NULL, &rs, e);
    if (rc == 0)
        *obj = rs.obj;
    else if (rs.status == 404)
        set_msg(e, S3_ERR_NOT_FOUND, "no such object%s", NULL); /* a HEAD has no body */
    resp_free(&rs);
    return rc;
}

int s3_delete(s3_t *s, const char *bucket, const char *key, s3_error_t *e)
{
    resp_t rs = {0};
    err_start(e, "DeleteObject", bucket, key);
    int rc = request(s, "DELETE", bucket, key, NULL, 0, NULL, 0, NULL, &rs, e);
    resp_free(&rs);
    return rc;
}

int s3_get_fd(s3_t *s, const char *bucket, const char *key, int fd, const char *expect,
              s3_object_t *obj, s3_error_t *e)
{
    err_start(e, "GetObject", bucket, key);
    struct stat st;
    sink_t k = {.fd = fd, .start = lseek(fd, 0, SEEK_CUR), .md = EVP_MD_CTX_new()};
    k.seekable = k.start >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    resp_t rs = {.sink = &k};
    int rc = -1;
    if (!k.md) {
        set_msg(e, S3_ERR_NOMEM, "out of memory%s", NULL);
        goto out;
    }
    if (request(s, "GET", bucket, key, NULL, 0, NULL, 0, NULL, &rs, e) != 0)
        goto out;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    char got[S3_SHA256_HEX_LEN + 1];
    if (EVP_DigestFinal_ex(k.md, md, &mdlen) != 1) {
        set_msg(e, S3_ERR_NOMEM, "SHA-256 failed%s", NULL);
        goto out;
    }
    hex_of(md, mdlen, got);
    const char *want = expect && *expect ? expect : rs.obj.sha256;
    if (!*want) {
        set_msg(e, S3_ERR_NO_CHECKSUM, "the object has no x-amz-meta-sha256%s", NULL);
    } else if (strcasecmp(want, got) != 0) {
        e->code = S3_ERR_CHECKSUM;
        snprintf(e->message, sizeof e->message, "SHA-256 of the %llu bytes is %s, want %s",
                 (unsigned long long)k.written, got, want);
    } else {
        rc = 0;
        if (obj) {
            *obj = rs.obj;
            obj->size = k.written;
        }
    }
out:
    if (rc != 0 && k.written && k.seekable && ftruncate(fd, k.start) == 0)
        lseek(fd, k.start, SEEK_SET); /* the partial file must not look whole */
    EVP_MD_CTX_free(k.md);
    resp_free(&rs);
    return rc;
}

/* ------------------------------------------------------------------ listing */

int s3_list(s3_t *s, const char *bucket, const char *prefix, s3_list_fn fn, void *ctx,
            s3_error_t *e)
{
    char *token = NULL;
    int rc = 0;
    err_start(e, "ListObjectsV2", bucket, prefix && *prefix ? prefix : NULL);
    do {
        s3_param_t p[4] = {{"list-type", "2"}};
        size_t n = 1;
        char max[16];
        if (s->list_max_keys) {
            snprintf(max, sizeof max, "%d", s->list_max_keys);
            p[n++] = (s3_param_t){"max-keys", max};
        }
        if (prefix && *prefix)
            p[n++] = (s3_param_t){"prefix", prefix};
        if (token)
            p[n++] = (s3_param_t){"continuation-token", token};
        resp_t rs = {0};
        s3_list_page_t page;
        if (request(s, "GET", bucket, NULL, p, n, NULL, 0, NULL, &rs, e) != 0) {
            resp_free(&rs);
            rc = -1;
            break;
        }
        int bad = s3_parse_list(rs.body, rs.body_len, &page);
        resp_free(&rs);
        if (bad) {
            set_msg(e, S3_ERR_DECODE, "unreadable ListBucketResult%s", NULL);
            rc = -1;
            break;
        }
        for (size_t i = 0; i < page.n && rc == 0; i++)
            rc = fn(ctx, &page.objects[i], page.keys[i]);
        free(token);
        token = page.next_token; /* NULL when the last page; the page gives it up */
        page.next_token = NULL;
        if (!page.truncated) {
            free(token);
            token = NULL;
        }
        s3_list_page_free(&page);
    } while (rc == 0 && token);
    free(token);
    return rc;
}

/* ------------------------------------------------------------------ uploads */

typedef struct {
    s3_read_fn read;
    void *ctx;
    char *buf;
    size_t cap;
    EVP_MD_CTX *md; /* the whole object's hash */
    uint64_t total;
    int eof;
} source_t;

/* Fills the buffer (up to cap) from the source; *len gets what it holds. */
static int fill(source_t *src, size_t *len, s3_error_t *e)
{
    *len = 0;
    while (*len < src->cap && !src->eof) {
        ssize_t n = src->read(src->ctx, src->buf + *len, src->cap - *len);
        if (n < 0) {
            set_msg(e, S3_ERR_SOURCE, "reading the source: %s", strerror(errno));
            return -1;
        }
        if (n == 0)
            src->eof = 1;
        *len += (size_t)n;
    }
    src->total += *len;
    if (EVP_DigestUpdate(src->md, src->buf, *len) != 1) {
        set_msg(e, S3_ERR_NOMEM, "SHA-256 failed%s", NULL);
        return -1;
    }
    return 0;
}

static int final_hash(source_t *src, char *hex, char *b64)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned mdlen = 0;
    if (EVP_DigestFinal_ex(src->md, md, &mdlen) != 1)
        return -1;
    hex_of(md, mdlen, hex);
    if (b64)
        EVP_EncodeBlock((unsigned char *)b64, md, (int)mdlen);
    return 0;
}

static int put_single(s3_t *s, const char *bucket, const char *key, source_t *src, size_t len,
                      s3_put_result_t *res, s3_error_t *e)
{
    char b64[64], meta[100], ck[100];
    if (final_hash(src, res->sha256, b64) != 0) {
        set_msg(e, S3_ERR_NOMEM, "SHA-256 failed%s", NULL);
        return -1;
    }
    snprintf(meta, sizeof meta, "x-amz-meta-sha256: %s", res->sha256);
    snprintf(ck, sizeof ck, "x-amz-checksum-sha256: %s", b64);
    const char *extra[] = {meta, ck, NULL};
    resp_t rs = {0};
    snprintf(e->op, sizeof e->op, "PutObject");
    int rc = request(s, "PUT", bucket, key, NULL, 0, src->buf, len, extra, &rs, e);
    if (rc == 0)
        snprintf(res->etag, sizeof res->etag, "%s", rs.obj.etag);
    resp_free(&rs);
    return rc;
}

typedef struct {
    char upload_id[256];
    char (*etags)[128];
    int nparts;
} multipart_t;

static int mp_create(s3_t *s, const char *bucket, const char *key, multipart_t *mp, s3_error_t *e)
{
    resp_t rs = {0};
    s3_param_t p[] = {{"uploads", NULL}};
    snprintf(e->op, sizeof e->op, "CreateMultipartUpload");
    int rc = request(s, "POST", bucket, key, p, 1, NULL, 0, NULL, &rs, e);
    if (rc == 0 && s3_parse_upload_id(rs.body, rs.body_len, mp->upload_id,
                                      sizeof mp->upload_id) != 0) {
        set_msg(e, S3_ERR_DECODE, "no UploadId in the answer%s", NULL);
        rc = -1;
    }
    resp_free(&rs);
    return rc;
}

static int mp_part(s3_t *s, const char *bucket, const char *key, multipart_t *mp,
                   const char *buf, size_t len, s3_error_t *e)
{
    if (mp->nparts >= 10000) {
        set_msg(e, S3_ERR_CONFIG, "over 10000 parts: raise part_size%s", NULL);
        return -1;
    }
    void *ne = realloc(mp->etags, (size_t)(mp->nparts + 1) * sizeof *mp->etags);
    if (!ne) {
        set_msg(e, S3_ERR_NOMEM, "out of memory%s", NULL);
        return -1;
    }
    mp->etags = ne;
    char num[16];
    snprintf(num, sizeof num, "%d", mp->nparts + 1);
    s3_param_t p[] = {{"partNumber", num}, {"uploadId", mp->upload_id}};
    resp_t rs = {0};
    snprintf(e->op, sizeof e->op, "UploadPart");
    int rc = request(s, "PUT", bucket, key, p, 2, buf, len, NULL, &rs, e);
    if (rc == 0 && !rs.obj.etag[0]) {
        set_msg(e, S3_ERR_DECODE, "UploadPart: no ETag in the answer%s", NULL);
        rc = -1;
    }
    if (rc == 0)
        snprintf(mp->etags[mp->nparts++], sizeof *mp->etags, "%s", rs.obj.etag);
    resp_free(&rs);
    return rc;
}

static int mp_complete(s3_t *s, const char *bucket, const char *key, multipart_t *mp,
                       s3_put_result_t *res, s3_error_t *e)
{
    size_t cap = 128 + (size_t)mp->nparts * 200, len = 0;
    char *xml = malloc(cap);
    if (!xml) {
        set_msg(e, S3_ERR_NOMEM, "out of memory%s", NULL);
        return -1;
    }
    len += (size_t)snprintf(xml + len, cap - len, "<CompleteMultipartUpload>");
    for (int i = 0; i < mp->nparts; i++)
        len += (size_t)snprintf(xml + len, cap - len,
                                "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>", i + 1,
                                mp->etags[i]);
    len += (size_t)snprintf(xml + len, cap - len, "</CompleteMultipartUpload>");
    s3_param_t p[] = {{"uploadId", mp->upload_id}};
    resp_t rs = {0};
    snprintf(e->op, sizeof e->op, "CompleteMultipartUpload");
    int rc = request(s, "POST", bucket, key, p, 1, xml, len, NULL, &rs, e);
    /* A 200 may still carry an <Error> (S3 reports failures found while assembling so). */
    if (rc == 0 && s3_parse_complete(rs.body, rs.body_len, res->etag, sizeof res->etag, e) != 0) {
        e->http_status = (int)rs.status;
        rc = -1;
    }
    resp_free(&rs);
    free(xml);
    return rc;
}

static void mp_abort(s3_t *s, const char *bucket, const char *key, multipart_t *mp)
{
    s3_error_t ignored;
    resp_t rs = {0};
    s3_param_t p[] = {{"uploadId", mp->upload_id}};
    err_start(&ignored, "AbortMultipartUpload", bucket, key);
    request(s, "DELETE", bucket, key, p, 1, NULL, 0, NULL, &rs, &ignored);
    resp_free(&rs);
}

/* The completed object's metadata: x-amz-meta-sha256 by a copy onto itself. */
static int set_sha256_meta(s3_t *s, const char *bucket, const char *key, const char *sha256,
                           s3_error_t *e)
{
    size_t cap = strlen(bucket) + 3 * strlen(key) + 64;
    char *src = malloc(cap), meta[100];
    if (!src) {
        set_msg(e, S3_ERR_NOMEM, "out of memory%s", NULL);
        return -1;
    }
    int n = snprintf(src, cap, "x-amz-copy-source: /%s/", bucket);
    s3_uri_encode(key, 1, src + n, cap - (size_t)n);
    snprintf(meta, sizeof meta, "x-amz-meta-sha256: %s", sha256);
    const char *extra[] = {src, "x-amz-metadata-directive: REPLACE", meta, NULL};
    resp_t rs = {0};
    snprintf(e->op, sizeof e->op, "CopyObject");
    int rc = request(s, "PUT", bucket, key, NULL, 0, NULL, 0, extra, &rs, e);
    /* CopyObject too may answer 200 with an <Error> body. */
    if (rc == 0 && s3_parse_error(rs.body, rs.body_len, e->s3_code, sizeof e->s3_code,
                                  e->message, sizeof e->message) == 0) {
        e->code = S3_ERR_HTTP;
        e->http_status = (int)rs.status;
        rc = -1;
    }
    resp_free(&rs);
    free(src);
    return rc;
}

/* One UploadPart on its own thread, so that the source's next part is read meanwhile. */
typedef struct {
    s3_t *s;
    const char *bucket, *key;
    multipart_t *mp;
    const char *buf;
    size_t len;
    s3_error_t e;
    int rc;
} part_job_t;

static void *part_thread(void *arg)
{
    part_job_t *j = arg;
    j->rc = mp_part(j->s, j->bucket, j->key, j->mp, j->buf, j->len, &j->e);
    return NULL;
}

/* The parts of src, the first (len bytes) already in src->buf: each part is uploaded on a
 * thread while the caller's thread fills the other buffer from the source (and hashes
 * it, in order), so that reading the source and sending to S3 overlap instead of taking
 * turns (a replication stream that waits for each upload also holds the node's RDB
 * child). Only the part thread uses s (its curl handle) while it runs; the source and
 * the hash only the caller's. 0, or -1 with e (the part's failure first). */
static int upload_parts(s3_t *s, const char *bucket, const char *key, multipart_t *mp, source_t *src,
                        size_t len, s3_error_t *e)
{
    char *spare = malloc(src->cap);
    if (!spare) {
        set_msg(e, S3_ERR_NOMEM, "out of memory%s", NULL);
        return -1;
    }
    int rc = 0;
    while (len > 0 && rc == 0) {
        part_job_t j = {.s = s, .bucket = bucket, .key = key, .mp = mp, .buf = src->buf, .len = len};
        err_start(&j.e, "UploadPart", bucket, key);
        pthread_t t;
        int threaded = pthread_create(&t, NULL, part_thread, &j) == 0;
        if (!threaded)
            part_thread(&j); /* no thread to be had: in turn, as before */
        char *sent = src->buf;
        src->buf = spare; /* fill the other buffer meanwhile */
        size_t next = 0;
        int frc = fill(src, &next, e);
        if (threaded)
            pthread_join(t, NULL);
        spare = sent;
        if (j.rc != 0) {
            *e = j.e;
            rc = -1;
        } else if (frc != 0) {
            rc = -1;
        }
        len = next;
    }
    free(spare);
    return rc;
}

static int put_multipart(s3_t *s, const char *bucket, const char *key, source_t *src,
                         size_t len, s3_put_result_t *res, s3_error_t *e)
{
    multipart_t mp = {0};
    int rc = -1, created = 0;
    if (mp_create(s, bucket, key, &mp, e) != 0)
        goto out;
    created = 1;
    if (upload_parts(s, bucket, key, &mp, src, len, e) != 0)
        goto out;
    if (final_hash(src, res->sha256, NULL) != 0) {
        set_msg(e, S3_ERR_NOMEM, "SHA-256 failed%s", NULL);
        goto out;
    }
    if (mp_complete(s, bucket, key, &mp, res, e) != 0)
        goto out;
    created = 0; /* completed: nothing to abort any more */
    res->parts = mp.nparts;
    rc = set_sha256_meta(s, bucket, key, res->sha256, e);
out:
    if (created)
        mp_abort(s, bucket, key, &mp);
    free(mp.etags);
    return rc;
}

int s3_put(s3_t *s, const char *bucket, const char *key, s3_read_fn read, void *ctx,
           s3_put_result_t *res, s3_error_t *e)
{
    s3_put_result_t local;
    res = res ? res : &local;
    memset(res, 0, sizeof *res);
    err_start(e, "PutObject", bucket, key);
    source_t src = {.read = read, .ctx = ctx, .cap = s->part_size};
    size_t len = 0;
    int rc = -1;
    src.buf = malloc(src.cap);
    src.md = EVP_MD_CTX_new();
    if (!src.buf || !src.md || EVP_DigestInit_ex(src.md, EVP_sha256(), NULL) != 1) {
        set_msg(e, S3_ERR_NOMEM, "out of memory%s", NULL);
        goto out;
    }
    if (fill(&src, &len, e) != 0)
        goto out;
    /* The source ended within one buffer: one PutObject. Else a multipart upload of
     * buffers, the first one in hand already. */
    if (src.eof)
        rc = put_single(s, bucket, key, &src, len, res, e);
    else
        rc = put_multipart(s, bucket, key, &src, len, res, e);
    res->size = src.total;
out:
    free(src.buf);
    EVP_MD_CTX_free(src.md);
    return rc;
}

static ssize_t read_fd(void *ctx, void *buf, size_t len)
{
    int fd = *(int *)ctx;
    ssize_t n;
    do
        n = read(fd, buf, len);
    while (n < 0 && errno == EINTR);
    return n;
}

int s3_put_fd(s3_t *s, const char *bucket, const char *key, int fd, s3_put_result_t *res,
              s3_error_t *e)
{
    return s3_put(s, bucket, key, read_fd, &fd, res, e);
}
