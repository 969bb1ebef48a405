/* cli: rdc-backup's command line (cli.h). */
#include "cli.h"

#include "jsonx.h"
#include "opts.h"
#include "rdc_spec.h"
#include "redis_tls.h"
#include "retain.h"
#include "slots.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SMALL_FILE_MAX ((size_t)64 * 1024)
#define CMDS "take, restore, prune or list"

const char *backup_usage(void)
{
    return "usage:\n"
           "  rdc-backup take --redis IP:PORT [--user U] [--password-file F] [--tls-dir D]\n"
           "                  [--tls-server-name N] [--timeout 60s]\n"
           "                  (--key K | --prefix P [--keep N]) [--slots RANGES] S3-FLAGS\n"
           "                  [--termination-log F]\n"
           "  rdc-backup restore --to /data/dump.rdb [--expect-sha256 HEX] [--force | --aof] --key K S3-FLAGS\n"
           "                  [--only-pod NAME] [--termination-log F]\n"
           "  rdc-backup prune --prefix P --keep N S3-FLAGS [--termination-log F]\n"
           "  rdc-backup list --prefix P S3-FLAGS\n"
           "S3-FLAGS: --endpoint URL --bucket B [--region us-east-1] --credentials-dir D\n"
           "          [--s3-ca-file F] [--part-size-mib N] [--list-max-keys N]\n"
           "take streams the node's RDB (read through the replication stream, as redis-cli --rdb)\n"
           "to bucket/key (--prefix P: P/<UTC time>.rdb, then --keep keeps the N newest) and prints\n"
           "one JSON line; restore downloads and verifies it into --to, unless the data directory\n"
           "already holds data (--force replaces it); prune keeps the N newest backups under P;\n"
           "list prints one JSON line per backup under P, newest first. Cluster mode: take --slots\n"
           "\"0-5460\" fails when the shard's master serves other slots; restore --only-pod NAME\n"
           "restores only on the pod (host) NAME. docs/backup.md.\n";
}

const char *backup_cmd_name(backup_cmd_t cmd)
{
    switch (cmd) {
    case BACKUP_CMD_TAKE: return "take";
    case BACKUP_CMD_RESTORE: return "restore";
    case BACKUP_CMD_PRUNE: return "prune";
    case BACKUP_CMD_LIST: return "list";
    case BACKUP_CMD_NONE: break;
    }
    return "";
}

/* "IP:PORT" or "[IPv6]:PORT" into a->host and a->port. */
static int parse_hostport(backup_args_t *a, char *err, size_t errlen)
{
    const char *s = a->redis, *colon = strrchr(s, ':');
    const char *h = s;
    size_t hlen = colon ? (size_t)(colon - s) : 0;
    if (colon && s[0] == '[' && hlen >= 2 && s[hlen - 1] == ']') {
        h = s + 1;
        hlen -= 2;
    }
    char *end = NULL;
    long port = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || hlen == 0 || hlen >= sizeof a->host || !end || *end || end == colon + 1 || port < 1 ||
        port > 65535)
        goto bad;
    memcpy(a->host, h, hlen);
    a->host[hlen] = '\0';
    if (!redis_tls_is_ip(a->host))
        goto bad;
    a->port = (int)port;
    return 0;
bad:
    snprintf(err, errlen, "--redis \"%s\": not IP:PORT (an IP literal: nothing is resolved)", s);
    return -1;
}

static int is_hex64(const char *s)
{
    return strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

static int require(const char *v, const char *cmd, const char *flag, char *err, size_t errlen)
{
    if (v && *v)
        return 0;
    snprintf(err, errlen, "%s: --%s is required", cmd, flag);
    return -1;
}

static int check_s3(const backup_args_t *a, const char *cmd, char *err, size_t errlen)
{
    if (require(a->endpoint, cmd, "endpoint", err, errlen) || require(a->bucket, cmd, "bucket", err, errlen) ||
        require(a->credentials_dir, cmd, "credentials-dir", err, errlen))
        return -1;
    if (a->part_size_mib != 0 && (a->part_size_mib < 5 || a->part_size_mib > 5120)) {
        snprintf(err, errlen, "--part-size-mib %d: S3 parts are 5 to 5120 MiB", a->part_size_mib);
        return -1;
    }
    if (a->list_max_keys < 0 || a->list_max_keys > 1000) {
        snprintf(err, errlen, "--list-max-keys %d: 1 to 1000", a->list_max_keys);
        return -1;
    }
    return 0;
}

/* --prefix (required when need), normalised into a->prefix_buf; --keep checked. */
static int check_prefix(backup_args_t *a, const char *cmd, int need, char *err, size_t errlen)
{
    if (need && require(a->prefix, cmd, "prefix", err, errlen))
        return -1;
    if (a->prefix && retain_prefix_norm(a->prefix, a->prefix_buf, sizeof a->prefix_buf, err, errlen) != 0)
        return -1;
    if (a->prefix)
        a->prefix = a->prefix_buf;
    if (a->keep != -1 && a->keep < 1) {
        snprintf(err, errlen, "--keep %d: at least 1 (the backup just written is always kept)", a->keep);
        return -1;
    }
    return 0;
}

static int check_take(backup_args_t *a, char *err, size_t errlen)
{
    if (require(a->redis, "take", "redis", err, errlen) || parse_hostport(a, err, errlen) ||
        check_s3(a, "take", err, errlen) || check_prefix(a, "take", 0, err, errlen))
        return -1;
    if (!!a->key == !!a->prefix) {
        snprintf(err, errlen, "take: --key or --prefix is required, not both");
        return -1;
    }
    if (a->keep != -1 && !a->prefix) {
        snprintf(err, errlen, "--keep needs --prefix (retention keeps the backups named under it)");
        return -1;
    }
    if (a->timeout_s <= 0) {
        snprintf(err, errlen, "--timeout must be positive");
        return -1;
    }
    if (a->tls_server_name && !a->tls_dir) {
        snprintf(err, errlen, "--tls-server-name needs --tls-dir");
        return -1;
    }
    return a->slots ? slots_parse(a->slots, &a->want_slots, err, errlen) : 0;
}

static int check_restore(const backup_args_t *a, char *err, size_t errlen)
{
    if (require(a->to, "restore", "to", err, errlen) || require(a->key, "restore", "key", err, errlen) ||
        check_s3(a, "restore", err, errlen))
        return -1;
    if (a->prefix || a->keep != -1) {
        snprintf(err, errlen, "restore: %s does not apply", a->prefix ? "--prefix" : "--keep");
        return -1;
    }
    if (a->expect_sha256 && !is_hex64(a->expect_sha256)) {
        snprintf(err, errlen, "--expect-sha256: not 64 lower-case hex digits");
        return -1;
    }
    if (a->aof && a->force) {
        snprintf(err, errlen, "--aof with --force: an append-only directory is never restored over");
        return -1;
    }
    if (a->only_pod && !rdc_spec_is_dns1123_subdomain(a->only_pod)) {
        snprintf(err, errlen, "--only-pod \"%.64s%s\": not a pod name (a DNS-1123 subdomain of at most 253 characters)",
                 a->only_pod, strlen(a->only_pod) > 64 ? "..." : "");
        return -1;
    }
    return 0;
}

/* --slots belongs to take, --only-pod to restore: 0, or -1 naming the one given elsewhere. */
static int check_scoped(const backup_args_t *a, char *err, size_t errlen)
{
    const char *extra = a->slots && a->cmd != BACKUP_CMD_TAKE           ? "--slots"
                        : a->only_pod && a->cmd != BACKUP_CMD_RESTORE ? "--only-pod"
                                                                      : NULL;
    if (!extra)
        return 0;
    snprintf(err, errlen, "%s: %s does not apply", backup_cmd_name(a->cmd), extra);
    return -1;
}

/* prune and list: the prefix, no key; prune needs --keep, list refuses it. */
static int check_prune_list(backup_args_t *a, char *err, size_t errlen)
{
    const char *cmd = backup_cmd_name(a->cmd);
    int prune = a->cmd == BACKUP_CMD_PRUNE;
    if (check_prefix(a, cmd, 1, err, errlen) || (prune && a->keep == -1 && require(NULL, cmd, "keep", err, errlen)) ||
        check_s3(a, cmd, err, errlen))
        return -1;
    const char *extra = a->key ? "--key" : !prune && a->keep != -1 ? "--keep" : NULL;
    if (!extra && !prune && a->termination_log)
        extra = "--termination-log";
    if (extra) {
        snprintf(err, errlen, "%s: %s does not apply", cmd, extra);
        return -1;
    }
    return 0;
}

/* The checks of a->cmd's flags. */
static int check_cmd(backup_args_t *a, char *err, size_t errlen)
{
    if (check_scoped(a, err, errlen) != 0)
        return -1;
    if (a->cmd == BACKUP_CMD_TAKE)
        return check_take(a, err, errlen);
    if (a->cmd == BACKUP_CMD_RESTORE)
        return check_restore(a, err, errlen);
    return check_prune_list(a, err, errlen);
}

int backup_args_parse(int argc, char **argv, backup_args_t *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    a->region = "us-east-1";
    a->timeout_s = 60;
    a->keep = -1;
    if (argc < 2) {
        snprintf(err, errlen, "a subcommand is required: " CMDS);
        return -1;
    }
    const opt_t table[] = {
        {"help", OPT_BOOL, &a->help, NULL},
        {"redis", OPT_STRING, &a->redis, NULL},
        {"user", OPT_STRING, &a->user, NULL},
        {"password-file", OPT_STRING, &a->password_file, NULL},
        {"tls-dir", OPT_STRING, &a->tls_dir, NULL},
        {"tls-server-name", OPT_STRING, &a->tls_server_name, NULL},
        {"timeout", OPT_DURATION, &a->timeout_s, NULL},
        {"endpoint", OPT_STRING, &a->endpoint, NULL},
        {"bucket", OPT_STRING, &a->bucket, NULL},
        {"key", OPT_STRING, &a->key, NULL},
        {"region", OPT_STRING, &a->region, NULL},
        {"credentials-dir", OPT_STRING, &a->credentials_dir, NULL},
        {"s3-ca-file", OPT_STRING, &a->s3_ca_file, NULL},
        {"part-size-mib", OPT_INT, &a->part_size_mib, NULL},
        {"list-max-keys", OPT_INT, &a->list_max_keys, NULL},
        {"prefix", OPT_STRING, &a->prefix, NULL},
        {"keep", OPT_INT, &a->keep, NULL},
        {"termination-log", OPT_STRING, &a->termination_log, NULL},
        {"to", OPT_STRING, &a->to, NULL},
        {"expect-sha256", OPT_STRING, &a->expect_sha256, NULL},
        {"force", OPT_BOOL, &a->force, NULL},
        {"aof", OPT_BOOL, &a->aof, NULL},
        {"slots", OPT_STRING, &a->slots, NULL},
        {"only-pod", OPT_STRING, &a->only_pod, NULL},
        {NULL, OPT_END, NULL, NULL},
    };
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        a->help = 1;
        return 0;
    }
    for (backup_cmd_t c = BACKUP_CMD_TAKE; c <= BACKUP_CMD_LIST; c++)
        if (strcmp(cmd, backup_cmd_name(c)) == 0)
            a->cmd = c;
    if (a->cmd == BACKUP_CMD_NONE) {
        snprintf(err, errlen, "unknown subcommand \"%s\": " CMDS, cmd);
        return -1;
    }
    /* argv[1] (the subcommand) stands where opts_parse expects the program's name. */
    if (opts_parse(table, argc - 1, argv + 1, NULL, 0, NULL, err, errlen) != 0)
        return -1;
    return a->help ? 0 : check_cmd(a, err, errlen);
}

/* The path dir/name (or name) into out: 0, or -1 when it does not fit. */
static int join_path(const char *dir, const char *name, char *out, size_t cap)
{
    int n = dir ? snprintf(out, cap, "%s/%s", dir, name) : snprintf(out, cap, "%s", name);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

char *backup_read_small(const char *dir, const char *name, size_t *len, char *err, size_t errlen)
{
    char path[4096];
    char *data = NULL;
    size_t n = 0;
    int fd = -1;
    if (join_path(dir, name, path, sizeof path) != 0) {
        snprintf(err, errlen, "%s/%s: path too long", dir ? dir : "", name);
        goto out;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    data = fd >= 0 ? malloc(SMALL_FILE_MAX + 1) : NULL;
    if (!data) {
        snprintf(err, errlen, "%s: %s", path, strerror(fd < 0 ? errno : ENOMEM));
        goto out;
    }
    for (;;) {
        ssize_t r = read(fd, data + n, SMALL_FILE_MAX + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            goto fail;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > SMALL_FILE_MAX) {
            snprintf(err, errlen, "%s: over 64 KiB", path);
            goto fail;
        }
    }
    if (n && data[n - 1] == '\n')
        n--;
    if (n && data[n - 1] == '\r')
        n--;
    data[n] = '\0';
    if (n == 0) {
        snprintf(err, errlen, "%s: empty", path);
        goto fail;
    }
    if (len)
        *len = n;
    goto out;
fail:
    backup_free_secret(data, SMALL_FILE_MAX + 1);
    data = NULL;
out:
    if (fd >= 0)
        close(fd);
    return data;
}

int backup_write_termination_log(const char *path, const char *line, size_t len, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    size_t off = 0;
    if (len > BACKUP_TERMINATION_LOG_MAX)
        len = BACKUP_TERMINATION_LOG_MAX;
    while (fd >= 0 && off < len) {
        ssize_t w = write(fd, line + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            break;
        off += (size_t)w;
    }
    int failed = fd < 0 || off < len, saved = errno;
    if (fd >= 0 && close(fd) != 0 && !failed) {
        failed = 1;
        saved = errno;
    }
    if (failed) {
        snprintf(err, errlen, "--termination-log %s: %s", path, strerror(saved));
        return -1;
    }
    return 0;
}

void backup_free_secret(char *s, size_t n)
{
    if (!s)
        return;
    explicit_bzero(s, n);
    free(s);
}

void backup_print_json(FILE *out, json_object *o, int oom)
{
    o = jsonx_done(o, oom);
    fprintf(out, "%s\n", o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)
                           : "{}");
    json_object_put(o);
}
