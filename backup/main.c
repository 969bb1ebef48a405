/* rdc-backup: take a Redis node's RDB to S3-compatible storage, or restore one from it
 * into a data directory (docs/backup.md). A command-line tool for a Job or an init
 * container, not a daemon: it blocks, and ends with one JSON line on stdout (success) or
 * one line on stderr and exit status 1 (failure; 2 for a bad command line). */
#include "cli.h"
#include "restore.h"
#include "s3.h"
#include "take.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

/* The S3 client of the flags, credentials read from --credentials-dir. */
static s3_t *open_s3(const backup_args_t *a, char *err, size_t errlen)
{
    size_t alen = 0, slen = 0;
    s3_t *s = NULL;
    char *access = backup_read_small(a->credentials_dir, "access-key-id", &alen, err, errlen);
    char *secret = access ? backup_read_small(a->credentials_dir, "secret-access-key", &slen, err, errlen) : NULL;
    if (secret) {
        s3_config_t cfg = {
            .endpoint = a->endpoint,
            .region = a->region,
            .access_key = access,
            .secret_key = secret,
            .ca_file = a->s3_ca_file,
            .part_size = (size_t)a->part_size_mib * 1024 * 1024,
        };
        s = s3_new(&cfg, err, errlen);
    }
    backup_free_secret(access, alen);
    backup_free_secret(secret, slen);
    return s;
}

int main(int argc, char **argv)
{
    backup_args_t a;
    char err[1024] = "";
    int rc = 1;
    s3_t *s = NULL;
    if (backup_args_parse(argc, argv, &a, err, sizeof err) != 0) {
        fprintf(stderr, "rdc-backup: %s\n%s", err, backup_usage());
        return 2;
    }
    if (a.help) {
        fputs(backup_usage(), stdout);
        return 0;
    }
    signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "rdc-backup: curl_global_init failed\n");
        return 1;
    }
    if (a.cmd == BACKUP_CMD_RESTORE) {
        int r = restore_prepare(&a, stdout, err, sizeof err);
        if (r != 0) {
            rc = r > 0 ? 0 : 1;
            goto out;
        }
    }
    s = open_s3(&a, err, sizeof err);
    if (s && a.cmd == BACKUP_CMD_TAKE)
        rc = take_run(&a, s, stdout, err, sizeof err);
    else if (s)
        rc = restore_download(&a, s, stdout, err, sizeof err) == 0 ? 0 : 1;
out:
    if (rc != 0)
        fprintf(stderr, "rdc-backup %s: %s\n", a.cmd == BACKUP_CMD_TAKE ? "take" : "restore", err);
    s3_destroy(&s);
    curl_global_cleanup();
    return rc;
}
