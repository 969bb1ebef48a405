/* rdc-backup: take a Redis node's RDB to S3-compatible storage, restore one from it into
 * a data directory, keep the N newest backups under a prefix, or list them
 * (docs/backup.md). A command-line tool for a Job or an init container, not a daemon: it
 * blocks, and ends with one JSON line on stdout (success) or one line on stderr and exit
 * status 1 (failure; 2 for a bad command line). With --termination-log F that one line
 * (the JSON line when there is one, else the error line) is written to F as well, cut at
 * 4096 bytes, the most Kubernetes reads into the container's termination message. */
#include "cli.h"
#include "prune.h"
#include "restore.h"
#include "s3.h"
#include "take.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
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
            .list_max_keys = a->list_max_keys,
        };
        s = s3_new(&cfg, err, errlen);
    }
    backup_free_secret(access, alen);
    backup_free_secret(secret, slen);
    return s;
}

/* The subcommand, its output lines on out: the exit status, err filled when not 0. */
static int run(const backup_args_t *a, FILE *out, char *err, size_t errlen)
{
    int rc = 1;
    if (a->cmd == BACKUP_CMD_RESTORE) {
        int r = restore_prepare(a, out, err, errlen);
        if (r != 0)
            return r > 0 ? 0 : 1;
    }
    s3_t *s = open_s3(a, err, errlen);
    if (!s)
        return 1;
    switch (a->cmd) {
    case BACKUP_CMD_TAKE: rc = take_run(a, s, out, err, errlen); break;
    case BACKUP_CMD_RESTORE: rc = restore_download(a, s, out, err, errlen) == 0 ? 0 : 1; break;
    case BACKUP_CMD_PRUNE: rc = prune_run(a, s, out, err, errlen); break;
    case BACKUP_CMD_LIST: rc = list_run(a, s, out, err, errlen); break;
    case BACKUP_CMD_NONE: break;
    }
    s3_destroy(&s);
    return rc;
}

int main(int argc, char **argv)
{
    backup_args_t a;
    char err[1024] = "", line[1100], terr[512];
    char *outbuf = NULL;
    size_t outlen = 0;
    if (backup_args_parse(argc, argv, &a, err, sizeof err) != 0) {
        fprintf(stderr, "rdc-backup: %s\n%s", err, backup_usage());
        return 2;
    }
    if (a.help) {
        fputs(backup_usage(), stdout);
        return 0;
    }
    signal(SIGPIPE, SIG_IGN);
    FILE *out = open_memstream(&outbuf, &outlen);
    if (!out || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "rdc-backup: %s\n", out ? "curl_global_init failed" : "out of memory");
        if (out)
            fclose(out);
        free(outbuf);
        return 1;
    }
    int rc = run(&a, out, err, sizeof err);
    curl_global_cleanup();
    fclose(out);
    fwrite(outbuf, 1, outlen, stdout);
    fflush(stdout);
    snprintf(line, sizeof line, "rdc-backup %s: %s\n", backup_cmd_name(a.cmd), err);
    if (rc != 0)
        fputs(line, stderr);
    /* The JSON line when there is one (a prune whose deletes failed has one too), else
     * the error line. */
    if (a.termination_log &&
        backup_write_termination_log(a.termination_log, outlen ? outbuf : line, outlen ? outlen : strlen(line),
                                     terr, sizeof terr) != 0)
        fprintf(stderr, "rdc-backup %s: %s\n", backup_cmd_name(a.cmd), terr);
    free(outbuf);
    return rc;
}
