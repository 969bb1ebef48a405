/* redisinfo: the figures the observer reads from Redis's INFO text. Pure: no I/O.
 *
 * INFO answers "# Section" headers and "field:value" lines separated by CRLF (LF alone
 * is accepted). redisinfo_parse reads the replication section (role, the primary a
 * replica follows and its link, offsets, the replicas a primary sees) and, when the
 * text has them, the default sections' figures the metrics need (clients, memory,
 * persistence, stats). Unknown fields are ignored; a known field with a malformed value
 * counts as absent, never as an error, so a newer or older Redis is read as far as it
 * goes.
 */
#ifndef RDC_OBSERVERD_REDISINFO_H
#define RDC_OBSERVERD_REDISINFO_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    REDISINFO_ROLE_UNKNOWN = 0, /* no role: field (not INFO text, or a truncated one) */
    REDISINFO_ROLE_MASTER,
    REDISINFO_ROLE_SLAVE
} redisinfo_role_t;

#define REDISINFO_MAX_SLAVES 16 /* a table size for redisinfo_slaves' callers */

typedef struct {
    char ip[64];
    int port;
    char state[16];             /* "online", "wait_bgsave", "send_bulk", ... */
    int64_t offset;
    int64_t lag_s;              /* seconds since its last ack */
} redisinfo_slave_t;

typedef struct {
    redisinfo_role_t role;
    /* replica only */
    char master_host[256];      /* "" when not a replica */
    int master_port;            /* 0 when not a replica */
    int link_up;                /* master_link_status:up */
    int64_t link_down_s;        /* master_link_down_since_seconds; -1 absent (link up, or never linked) */
    int64_t master_io_s;        /* master_last_io_seconds_ago (link up); -1 absent */
    int64_t keys;               /* keys of every database (INFO keyspace); -1 no such section */
    int64_t slave_repl_offset;  /* -1 when absent */
    /* both roles */
    int64_t master_repl_offset; /* -1 when absent */
    int64_t connected_slaves;   /* -1 when absent */
    size_t nslaves;             /* slaveN lines (the replicas it lists: redisinfo_slaves) */
    /* default sections; -1 when absent (INFO replication alone has none of them) */
    int64_t connected_clients;
    int64_t used_memory;
    int64_t maxmemory;
    int64_t evicted_keys;
    int64_t expired_keys;
    int64_t keyspace_hits;
    int64_t keyspace_misses;
    int64_t total_commands_processed;
    int rdb_last_bgsave_ok;     /* 1 ok, 0 err, -1 absent */
} redisinfo_t;

/* Parse len bytes of INFO text into *out (cleared first). Returns 0 when a role: field
 * was found, -1 otherwise (*out then holds whatever other fields were read: INFO
 * keyspace alone gives keys and a -1). */
int redisinfo_parse(const char *text, size_t len, redisinfo_t *out);

/* The slaveN lines of an INFO text (a primary's replicas) into out[0..max): how many
 * lines there are (more than max: the first max are filled). Each line's fields as
 * Redis gives them; a missing offset or lag is -1. observerd keeps only the count
 * (redisinfo_t.nslaves: 1.7 kB a node less in each of its two kept INFOs), since what
 * it reads of a replica comes from that replica's own INFO. */
size_t redisinfo_slaves(const char *text, size_t len, redisinfo_slave_t *out, size_t max);

/* The replication offset of this node: slave_repl_offset for a replica when known, else
 * master_repl_offset; -1 when neither is known. */
int64_t redisinfo_offset(const redisinfo_t *info);

/* "master", "slave" or "" (the names INFO uses). */
const char *redisinfo_role_name(redisinfo_role_t role);

#endif
