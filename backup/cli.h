/* cli: rdc-backup's command line, parsed into one typed struct (pure: no file is read
 * here), and the small readers of the files it names (credentials, password).
 *
 *   rdc-backup take    --redis HOST:PORT [--user U] [--password-file F]
 *                      [--tls-dir D [--tls-server-name N]] [--timeout 60s]
 *                      (--key K | --prefix P [--keep N]) [--slots RANGES] S3 flags
 *                      [--termination-log F]
 *   rdc-backup restore --to /data/dump.rdb [--expect-sha256 H] [--force | --aof] --key K S3 flags
 *                      [--only-pod NAME] [--termination-log F]
 *   rdc-backup prune   --prefix P --keep N S3 flags [--termination-log F]
 *   rdc-backup list    --prefix P S3 flags
 *   S3 flags:          --endpoint URL --bucket B [--region R] --credentials-dir D
 *                      [--s3-ca-file F] [--part-size-mib N] [--list-max-keys N]
 *
 * take --prefix P names the object P/<UTC start time, ISO 8601 basic>.rdb (retain.h);
 * --keep N (N >= 1, with --prefix only) then keeps the N newest backups under P after
 * the upload succeeded. --prefix is kept normalised (no trailing '/') in a->prefix.
 *
 * --redis takes an IP literal (the pod IP the operator knows; nothing is resolved):
 * "10.0.0.5:6379", "[fd00::5]:6379". --tls-dir is a mounted Secret in cert-manager's
 * layout, as the pods' $REDIS_TLS_DIR: ca.crt, and tls.crt with tls.key when the server
 * asks for a client certificate (both or neither). Without --tls-server-name the server's
 * certificate must name the IP (an IP SAN), as the operator's own clients check it.
 * --credentials-dir holds the files access-key-id and secret-access-key (a Secret with
 * those two keys, mounted), read whole, one trailing newline dropped.
 *
 * take --slots RANGES (slots.h's text, parsed into a->want_slots): the slots the shard's
 * master must serve before the sync and after the RDB (a Cluster-mode backup of one
 * shard). restore --only-pod NAME (a pod name: a DNS-1123 subdomain, at most 253 bytes):
 * restore only when this host's name is NAME (restore.h, ONLY ONE POD). Each flag is
 * refused by the other subcommands.
 */
#ifndef RDC_BACKUP_CLI_H
#define RDC_BACKUP_CLI_H

#include "clusternodes.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdio.h>

typedef enum {
    BACKUP_CMD_NONE = 0,
    BACKUP_CMD_TAKE,
    BACKUP_CMD_RESTORE,
    BACKUP_CMD_PRUNE,
    BACKUP_CMD_LIST,
} backup_cmd_t;

/* The subcommand's name ("take", ...; "" for none). */
const char *backup_cmd_name(backup_cmd_t cmd);

typedef struct {
    backup_cmd_t cmd;
    int help;
    /* take */
    const char *redis;          /* HOST:PORT as given */
    char host[64];              /* its IP literal, brackets removed */
    int port;
    const char *user;
    const char *password_file;
    const char *tls_dir;
    const char *tls_server_name;
    double timeout_s;           /* connect, and the longest silence of the stream: 60 */
    const char *slots;          /* --slots as given; NULL: not given (no check) */
    cn_slots_t want_slots;      /* its slots */
    /* S3 */
    const char *endpoint;
    const char *bucket;
    const char *key;
    const char *region;         /* "us-east-1" */
    const char *credentials_dir;
    const char *s3_ca_file;
    int part_size_mib;          /* 0: s3's default (8) */
    int list_max_keys;          /* ListObjectsV2's page size; 0: the server's (1000) */
    /* naming and retention */
    const char *prefix;         /* normalised into prefix_buf; NULL: not given */
    char prefix_buf[1024];
    int keep;                   /* --keep; -1: not given (take: no retention) */
    const char *termination_log;/* also write the outcome's line here (take, restore, prune) */
    /* restore */
    const char *to;
    const char *expect_sha256;
    int force;
    int aof;                    /* --aof: the RDB becomes the base of a new appendonlydir */
    const char *only_pod;       /* --only-pod; NULL: every pod restores */
} backup_args_t;

/* Parse argv (argv[0] the program, argv[1] the subcommand) into *a, which points into
 * argv. 0; or -1 with one line in err naming the flag or the missing one ("take: --redis
 * is required", "--redis \"x:1\": not IP:PORT", "--expect-sha256: not 64 hex digits",
 * "--keep 0: at least 1 ...", "take: --key or --prefix, not both", "restore: --slots does
 * not apply").
 * "--help" anywhere is 0 with a->help set and nothing checked. */
int backup_args_parse(int argc, char **argv, backup_args_t *a, char *err, size_t errlen);

/* The usage text. */
const char *backup_usage(void);

/* Read the small file dir/name (dir NULL: name is the path) whole into a new string, one
 * trailing "\n" (or "\r\n") dropped: the caller's to free (and wipe: secrets). NULL with
 * one line in err naming the file when it cannot be read, is empty, or is over 64 KiB.
 * *len (may be NULL) gets the length. */
char *backup_read_small(const char *dir, const char *name, size_t *len, char *err, size_t errlen);

/* Print o (jsonx_done(o, oom): NULL after out of memory prints "{}") as one line to out
 * and put it. */
void backup_print_json(FILE *out, json_object *o, int oom);

/* Kubernetes' limit on a termination message (the kubelet reads no more). */
#define BACKUP_TERMINATION_LOG_MAX 4096

/* Replace what path holds with the first len bytes of line, at most
 * BACKUP_TERMINATION_LOG_MAX (--termination-log: the container's termination message).
 * 0, or -1 with err naming the file. */
int backup_write_termination_log(const char *path, const char *line, size_t len, char *err, size_t errlen);

/* Zero n bytes of s and free it; NULL is fine. */
void backup_free_secret(char *s, size_t n);

#endif
