/* replsync: the replica's side of a Redis full synchronisation, as bytes: what
 * `rdc-backup take` reads after it sent the commands of the handshake, pipelined,
 *
 *     [AUTH ...] REPLCONF capa eof, REPLCONF rdb-only 1, PSYNC ? -1
 *
 * as `redis-cli --rdb` does, to get the node's RDB without touching its disk. Pure: fed
 * byte chunks as they come off the socket, it hands the RDB's bytes to a sink and says
 * when the RDB is whole. No I/O, no clock; tested against canned streams.
 *
 * What it reads, in order:
 *   1. one one-line reply per handshake command before PSYNC (replsync_init's n_pre),
 *      "+..." accepted; "-..." fails the sync with the command's name and Redis's words
 *      ("AUTH: WRONGPASS invalid username-password pair") unless the command was named
 *      optional (REPLCONF rdb-only: Redis before 7.0 does not know it);
 *   2. "+FULLRESYNC <replid> <offset>": the snapshot's replication ID and offset (the
 *      offset the RDB is consistent with). "+CONTINUE" (a partial resync, which "? -1"
 *      never asks for) and "-..." ("-NOMASTERLINK", "-LOADING") fail it;
 *   3. the RDB's header, one of
 *        "$<len>"            then exactly len bytes (a primary that saved to disk),
 *        "$EOF:<40 bytes>"   then the bytes, ended by the same 40 bytes (a diskless
 *                            primary, which sends this form only to a replica that said
 *                            "capa eof"); the marker is not part of the RDB;
 *   4. the RDB's bytes, to the sink. Anything after them (the command stream) is left
 *      unread: feed reports DONE with *used short of the chunk.
 * Before 2 and 3 the primary may send bare "\n" (keepalives while a BGSAVE starts or
 * runs): skipped. Lines are at most REPLSYNC_MAX_LINE bytes.
 *
 * The EOF form: the last 40 bytes seen are held back from the sink until more come, and
 * the RDB ends when the held bytes equal the marker. A primary sends nothing after the
 * marker until the replica acknowledges (Redis waits for REPLCONF ACK before it streams
 * commands to a diskless replica), so the marker ends a chunk; it is matched at the end of
 * the bytes seen, as redis-cli does.
 */
#ifndef RDC_REPLSYNC_H
#define RDC_REPLSYNC_H

#include <stddef.h>
#include <stdint.h>

#define REPLSYNC_MAX_LINE 512
#define REPLSYNC_MAX_PRE 4
#define REPLSYNC_MARK_LEN 40

typedef enum {
    REPLSYNC_PRE,        /* reading the handshake commands' replies */
    REPLSYNC_FULLRESYNC, /* waiting for +FULLRESYNC */
    REPLSYNC_HEADER,     /* waiting for $<len> or $EOF:<mark> */
    REPLSYNC_PAYLOAD,    /* the RDB's bytes */
    REPLSYNC_DONE,       /* the RDB is whole */
    REPLSYNC_FAILED,     /* see err */
} replsync_state_t;

/* The sink of the RDB's bytes: 0, or non-zero to stop the sync (it FAILS with "sink"). */
typedef int (*replsync_sink_fn)(void *ctx, const void *buf, size_t len);

typedef struct {
    replsync_state_t state;
    size_t n_pre, pre_seen;
    const char *pre_names[REPLSYNC_MAX_PRE];
    int pre_optional[REPLSYNC_MAX_PRE];
    char line[REPLSYNC_MAX_LINE];
    size_t line_len;
    char replid[64];             /* from +FULLRESYNC */
    int64_t offset;              /* from +FULLRESYNC */
    int eof_form;                /* 1: $EOF:<mark> */
    uint64_t remaining;          /* $<len> form: bytes still to come */
    uint64_t rdb_len;            /* bytes given to the sink */
    char mark[REPLSYNC_MARK_LEN];
    char held[REPLSYNC_MARK_LEN];
    size_t held_len;
    char err[256];               /* FAILED: one line */
} replsync_t;

/* Start a sync whose handshake sent n commands (<= REPLSYNC_MAX_PRE) before PSYNC, named
 * names[i] for errors ("AUTH", "REPLCONF capa eof"; the strings must outlive p), the ones
 * with optional[i] != 0 allowed to answer an error (optional may be NULL: none). */
void replsync_init(replsync_t *p, size_t n, const char *const *names, const int *optional);

/* Feed len bytes that came from the server. RDB bytes go to sink(ctx, ...) as they are
 * known to be the RDB's. Returns the state after them: PRE..PAYLOAD (feed more), DONE
 * (*used bytes were the sync's; the rest are not) or FAILED (err says why: the server's
 * refusal, a malformed line, the sink). *used (may be NULL) is the count consumed.
 * Feeding a DONE or FAILED sync consumes nothing and returns its state. */
replsync_state_t replsync_feed(replsync_t *p, const void *buf, size_t len, size_t *used,
                               replsync_sink_fn sink, void *ctx);

/* Called when the server closed the connection: DONE stays DONE; any other state
 * becomes FAILED with a line saying where in the sync it ended ("connection closed after
 * 1048576 of 2097152 RDB bytes"). Returns the state. */
replsync_state_t replsync_closed(replsync_t *p);

/* A state's name ("handshake", "FULLRESYNC", "RDB header", "RDB", "done", "failed"). */
const char *replsync_state_name(replsync_state_t s);

#endif
