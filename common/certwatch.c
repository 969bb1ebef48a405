/* certwatch: a serving certificate pair reloaded when its files change. See certwatch.h. */
#include "certwatch.h"

#include "buf.h"
#include "filesig.h"
#include "pem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct certwatch {
    filesig_watch_t files;
    certwatch_use_fn *use;
    void *arg;
    unsigned loads;
};

/* Append the file at path to out (capped at CERTWATCH_MAX_PEM). 0, or -1 with err
 * "cannot load the <what> <path>: <why>". */
static int read_pem(const char *what, const char *path, buf_t *out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "cannot load the %s %s: cannot open: %s", what, path, strerror(errno));
        return -1;
    }
    char chunk[4096];
    size_t n;
    int rc = 0;
    while (rc == 0 && (n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        if (buf_append(out, chunk, n)) {
            snprintf(err, errlen, "cannot load the %s %s: larger than %zu bytes", what, path, CERTWATCH_MAX_PEM);
            rc = -1;
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "cannot load the %s %s: cannot read: %s", what, path, strerror(errno));
        rc = -1;
    }
    fclose(f);
    return rc;
}

/* 0 when cert is a PEM certificate and key a PEM private key that belongs to it; else -1
 * with err saying which file is wrong and how. */
static int pair_ok(const certwatch_t *w, const buf_t *cert, const buf_t *key, char *err, size_t errlen)
{
    const char *cert_path = w->files.cert_path, *key_path = w->files.key_path;
    switch (pem_pair_check(buf_str(cert), cert->len, buf_str(key), key->len)) {
    case PEM_PAIR_NO_CERT:
        snprintf(err, errlen, "%s: not a PEM certificate", cert_path);
        return -1;
    case PEM_PAIR_NO_KEY:
        snprintf(err, errlen, "%s: not a PEM private key (or an encrypted one)", key_path);
        return -1;
    case PEM_PAIR_MISMATCH:
        snprintf(err, errlen, "%s: the private key does not match the certificate %s", key_path, cert_path);
        return -1;
    case PEM_PAIR_OK:
        break;
    }
    return 0;
}

/* Read and check the pair into cert and key. 0, or -1 with err. */
static int read_pair(const certwatch_t *w, buf_t *cert, buf_t *key, char *err, size_t errlen)
{
    if (read_pem("certificate", w->files.cert_path, cert, err, errlen) ||
        read_pem("private key", w->files.key_path, key, err, errlen))
        return -1;
    return pair_ok(w, cert, key, err, errlen);
}

/* Hand a checked pair to the listener. 0, or -1 with err "<cert path>: <why>". */
static int use_pair(certwatch_t *w, const buf_t *cert, const buf_t *key, char *err, size_t errlen)
{
    char why[400] = "refused by the listener";
    if (w->use(buf_str(cert), cert->len, buf_str(key), key->len, w->arg, why, sizeof(why))) {
        snprintf(err, errlen, "%s: %s", w->files.cert_path, why);
        return -1;
    }
    w->loads++;
    return 0;
}

int certwatch_new(const char *dir, const char *cert_name, const char *key_name, certwatch_use_fn *use, void *arg,
                  certwatch_t **out, char *err, size_t errlen)
{
    *out = NULL;
    certwatch_t *w = calloc(1, sizeof(*w));
    if (!w || filesig_watch_init(&w->files, dir, cert_name, key_name)) {
        free(w);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    w->use = use;
    w->arg = arg;
    buf_t cert, key;
    buf_init(&cert, CERTWATCH_MAX_PEM);
    buf_init(&key, CERTWATCH_MAX_PEM);
    int rc = read_pair(w, &cert, &key, err, errlen) || use_pair(w, &cert, &key, err, errlen) ? -1 : 0;
    buf_free(&cert);
    buf_free(&key);
    if (rc)
        certwatch_destroy(&w);
    *out = w;
    return rc;
}

int certwatch_check(certwatch_t *w, char *err, size_t errlen)
{
    filesig_pair_t now;
    if (!filesig_watch_changed(&w->files, &now))
        return 0;
    buf_t cert, key;
    buf_init(&cert, CERTWATCH_MAX_PEM);
    buf_init(&key, CERTWATCH_MAX_PEM);
    char why[512] = "";
    int bad = read_pair(w, &cert, &key, why, sizeof(why));
    int rc = 0;
    if (!filesig_watch_settle(&w->files, &now))
        rc = 0; /* swapped while read: maybe a mixed pair; the next check reads it again */
    else if (bad || use_pair(w, &cert, &key, why, sizeof(why)))
        rc = -1;
    else
        rc = 1;
    if (rc < 0)
        snprintf(err, errlen, "%s", why);
    buf_free(&cert);
    buf_free(&key);
    return rc;
}

unsigned certwatch_loads(const certwatch_t *w)
{
    return w->loads;
}

const char *certwatch_cert_path(const certwatch_t *w)
{
    return w->files.cert_path;
}

void certwatch_destroy(certwatch_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    filesig_watch_free(&(*self_p)->files);
    free(*self_p);
    *self_p = NULL;
}
