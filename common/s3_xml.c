/* s3_xml: the response documents of S3 (s3.h), read with expat.
 *
 * Why expat and not libxml2 (both are installed -dev packages here): these documents are
 * small and flat, a stream of leaf elements is all we read, and Debian's libxml2 pulls
 * libicu72 (about 36 MB of shared libraries) into an image that is 27.7 MB today; expat
 * is 200 kB with no dependency. A DOCTYPE is refused outright (no entity of any kind is
 * expanded), and expat >= 2.4 caps entity amplification anyway.
 *
 * One walker (s3x_walk) reports every leaf element (parent name, name, text) and the end
 * of every element that had children; each parser is a small callback over it.
 */
#include "s3.h"

#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S3X_DEPTH 8
#define S3X_NAME 48
#define S3X_TEXT 2048 /* a key is at most 1024 bytes; escaped it is still under this */

typedef struct s3x s3x_t;
/* A leaf (text != NULL) or the end of an element with children (text == NULL). */
typedef void (*s3x_fn)(s3x_t *x, const char *parent, const char *name, const char *text);

struct s3x {
    XML_Parser p;
    int depth;
    char names[S3X_DEPTH][S3X_NAME];
    int had_child[S3X_DEPTH];
    char text[S3X_TEXT];
    size_t text_len;
    int overflow; /* text or depth over its cap: the document is refused */
    int root_seen;
    char root[S3X_NAME];
    s3x_fn fn;
    void *ctx;
    int failed; /* set by a callback (out of memory) */
};

static void s3x_start(void *data, const XML_Char *name, const XML_Char **attrs)
{
    s3x_t *x = data;
    (void)attrs;
    if (x->depth >= S3X_DEPTH) {
        x->overflow = 1;
        XML_StopParser(x->p, XML_FALSE);
        return;
    }
    if (x->depth > 0)
        x->had_child[x->depth - 1] = 1;
    if (!x->root_seen) {
        x->root_seen = 1;
        snprintf(x->root, sizeof x->root, "%s", name);
    }
    snprintf(x->names[x->depth], S3X_NAME, "%s", name);
    x->had_child[x->depth] = 0;
    x->depth++;
    x->text_len = 0;
}

static void s3x_end(void *data, const XML_Char *name)
{
    s3x_t *x = data;
    (void)name;
    if (x->depth <= 0)
        return;
    x->depth--;
    const char *parent = x->depth > 0 ? x->names[x->depth - 1] : "";
    x->text[x->text_len] = '\0';
    x->fn(x, parent, x->names[x->depth], x->had_child[x->depth] ? NULL : x->text);
    x->text_len = 0;
}

static void s3x_chars(void *data, const XML_Char *s, int len)
{
    s3x_t *x = data;
    if (x->text_len + (size_t)len >= S3X_TEXT) {
        x->overflow = 1;
        XML_StopParser(x->p, XML_FALSE);
        return;
    }
    memcpy(x->text + x->text_len, s, (size_t)len);
    x->text_len += (size_t)len;
}

static void s3x_doctype(void *data, const XML_Char *name, const XML_Char *sysid,
                        const XML_Char *pubid, int has_internal)
{
    s3x_t *x = data;
    (void)name, (void)sysid, (void)pubid, (void)has_internal;
    x->overflow = 1;
    XML_StopParser(x->p, XML_FALSE);
}

/* Walks body; 0 when it is well-formed, within the caps and the callbacks did not fail.
 * *x is the caller's (its fn and ctx set); root names the document element after. */
static int s3x_walk(s3x_t *x, const char *body, size_t len)
{
    if (len > (size_t)64 * 1024 * 1024)
        return -1;
    x->p = XML_ParserCreate("UTF-8");
    if (!x->p)
        return -1;
    XML_SetUserData(x->p, x);
    XML_SetElementHandler(x->p, s3x_start, s3x_end);
    XML_SetCharacterDataHandler(x->p, s3x_chars);
    XML_SetStartDoctypeDeclHandler(x->p, s3x_doctype);
    enum XML_Status st = XML_Parse(x->p, body ? body : "", (int)len, XML_TRUE);
    XML_ParserFree(x->p);
    x->p = NULL;
    return st == XML_STATUS_OK && !x->overflow && !x->failed && x->root_seen ? 0 : -1;
}

static void copy_text(char *dst, size_t cap, const char *src)
{
    if (cap)
        snprintf(dst, cap, "%s", src);
}

/* ------------------------------------------------------------------ Error */

typedef struct {
    char *code;
    size_t code_len;
    char *message;
    size_t message_len;
} err_ctx_t;

static void err_leaf(s3x_t *x, const char *parent, const char *name, const char *text)
{
    err_ctx_t *c = x->ctx;
    if (!text || strcmp(parent, "Error") != 0)
        return;
    if (strcmp(name, "Code") == 0)
        copy_text(c->code, c->code_len, text);
    else if (strcmp(name, "Message") == 0)
        copy_text(c->message, c->message_len, text);
}

int s3_parse_error(const char *body, size_t len, char *code, size_t code_len, char *message,
                   size_t message_len)
{
    err_ctx_t c = {code, code_len, message, message_len};
    s3x_t x = {.fn = err_leaf, .ctx = &c};
    copy_text(code, code_len, "");
    copy_text(message, message_len, "");
    if (s3x_walk(&x, body, len) != 0 || strcmp(x.root, "Error") != 0)
        return -1;
    return 0;
}

/* ------------------------------------------------------------------ multipart */

typedef struct {
    const char *parent;
    const char *name;
    char *out;
    size_t cap;
    int found;
} one_ctx_t;

static void one_leaf(s3x_t *x, const char *parent, const char *name, const char *text)
{
    one_ctx_t *c = x->ctx;
    if (!text || strcmp(parent, c->parent) != 0 || strcmp(name, c->name) != 0)
        return;
    if (strlen(text) >= c->cap) {
        x->failed = 1;
        return;
    }
    copy_text(c->out, c->cap, text);
    c->found = 1;
}

int s3_parse_upload_id(const char *body, size_t len, char *id, size_t id_len)
{
    one_ctx_t c = {"InitiateMultipartUploadResult", "UploadId", id, id_len, 0};
    s3x_t x = {.fn = one_leaf, .ctx = &c};
    return s3x_walk(&x, body, len) == 0 && c.found && id[0] ? 0 : -1;
}

int s3_parse_complete(const char *body, size_t len, char *etag, size_t etag_len, s3_error_t *e)
{
    if (s3_parse_error(body, len, e->s3_code, sizeof e->s3_code, e->message,
                       sizeof e->message) == 0) {
        e->code = S3_ERR_HTTP;
        return -1;
    }
    one_ctx_t c = {"CompleteMultipartUploadResult", "ETag", etag, etag_len, 0};
    s3x_t x = {.fn = one_leaf, .ctx = &c};
    if (s3x_walk(&x, body, len) != 0 || strcmp(x.root, "CompleteMultipartUploadResult") != 0) {
        e->code = S3_ERR_DECODE;
        copy_text(e->message, sizeof e->message, "CompleteMultipartUpload: unreadable answer");
        return -1;
    }
    if (!c.found)
        copy_text(etag, etag_len, "");
    return 0;
}

/* ------------------------------------------------------------------ ListObjectsV2 */

typedef struct {
    s3_list_page_t *page;
    size_t cap;
    s3_object_t cur;
    char *cur_key;
} list_ctx_t;

static int list_push(list_ctx_t *c)
{
    s3_list_page_t *pg = c->page;
    if (pg->n == c->cap) {
        size_t ncap = c->cap ? c->cap * 2 : 64;
        s3_object_t *o = realloc(pg->objects, ncap * sizeof *o);
        if (!o)
            return -1;
        pg->objects = o;
        char **k = realloc(pg->keys, ncap * sizeof *k);
        if (!k)
            return -1;
        pg->keys = k;
        c->cap = ncap;
    }
    pg->objects[pg->n] = c->cur;
    pg->keys[pg->n] = c->cur_key;
    pg->n++;
    c->cur_key = NULL;
    memset(&c->cur, 0, sizeof c->cur);
    return 0;
}

static void list_contents_leaf(list_ctx_t *c, s3x_t *x, const char *name, const char *text)
{
    if (strcmp(name, "Key") == 0) {
        free(c->cur_key);
        c->cur_key = strdup(text);
        if (!c->cur_key)
            x->failed = 1;
    } else if (strcmp(name, "Size") == 0) {
        c->cur.size = strtoull(text, NULL, 10);
    } else if (strcmp(name, "ETag") == 0) {
        copy_text(c->cur.etag, sizeof c->cur.etag, text);
    } else if (strcmp(name, "LastModified") == 0) {
        copy_text(c->cur.last_modified, sizeof c->cur.last_modified, text);
    }
}

static void list_leaf(s3x_t *x, const char *parent, const char *name, const char *text)
{
    list_ctx_t *c = x->ctx;
    if (!text) {
        if (strcmp(name, "Contents") == 0 && c->cur_key && list_push(c) != 0)
            x->failed = 1;
        return;
    }
    if (strcmp(parent, "Contents") == 0) {
        list_contents_leaf(c, x, name, text);
    } else if (strcmp(parent, "ListBucketResult") == 0) {
        if (strcmp(name, "IsTruncated") == 0) {
            c->page->truncated = strcmp(text, "true") == 0;
        } else if (strcmp(name, "NextContinuationToken") == 0 && text[0]) {
            free(c->page->next_token);
            c->page->next_token = strdup(text);
            if (!c->page->next_token)
                x->failed = 1;
        }
    }
}

int s3_parse_list(const char *body, size_t len, s3_list_page_t *page)
{
    memset(page, 0, sizeof *page);
    list_ctx_t c = {.page = page};
    s3x_t x = {.fn = list_leaf, .ctx = &c};
    int rc = s3x_walk(&x, body, len);
    free(c.cur_key);
    if (rc != 0 || strcmp(x.root, "ListBucketResult") != 0 ||
        (page->truncated && !page->next_token)) {
        s3_list_page_free(page);
        return -1;
    }
    return 0;
}

void s3_list_page_free(s3_list_page_t *page)
{
    if (!page)
        return;
    for (size_t i = 0; i < page->n; i++)
        free(page->keys[i]);
    free(page->keys);
    free(page->objects);
    free(page->next_token);
    memset(page, 0, sizeof *page);
}
