/* clusternodes: Redis Cluster's own view of itself, parsed: the answers of CLUSTER NODES
 * and CLUSTER INFO (docs/cluster-mode.md). Pure: no I/O.
 *
 * CLUSTER NODES is one line per node the answering node knows:
 *
 *   <id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent> <pong-recv> <config-epoch>
 *   <link-state> [<slot> ...]
 *
 *   id          40 hexadecimal characters
 *   address     "ip:port@cport", an optional ",hostname" after it (Redis 7); ":0@0" (no
 *               address known yet, flag noaddr) gives ip "" and port 0; an IPv6 address
 *               is the part before the last ':'
 *   flags       comma-separated: myself, master, slave, fail?, fail, handshake, noaddr,
 *               nofailover, noflags (unknown ones are ignored)
 *   master      the master's id for a replica, "-" otherwise
 *   ping-sent, pong-recv, config-epoch   unsigned decimal
 *   link-state  connected | disconnected
 *   slots       "N" or "A-B" (a range), or an open slot: "[N->-id]" (migrating to id) or
 *               "[N-<-id]" (importing from id)
 *
 * A line that does not follow this shape is an error naming the line's number and what is
 * wrong; a node's slots are kept as ranges (sorted as given), its open slots apart.
 *
 * CLUSTER INFO is "key:value" lines (CRLF or LF); the fields kept are below, each -1 when
 * absent.
 */
#ifndef RDC_CLUSTERNODES_H
#define RDC_CLUSTERNODES_H

#include <stddef.h>
#include <stdint.h>

#define CN_SLOTS 16384
#define CN_ID_LEN 40

enum {
    CN_MYSELF = 1 << 0,
    CN_MASTER = 1 << 1,
    CN_REPLICA = 1 << 2, /* "slave" */
    CN_PFAIL = 1 << 3,   /* "fail?": this node cannot reach it */
    CN_FAIL = 1 << 4,    /* the cluster agreed it is down */
    CN_HANDSHAKE = 1 << 5,
    CN_NOADDR = 1 << 6,
    CN_NOFAILOVER = 1 << 7
};

typedef struct {
    int from, to; /* inclusive, 0 <= from <= to < CN_SLOTS */
} cn_range_t;

typedef struct {
    int slot;
    int importing;            /* 1: "[N-<-id]" (importing from id); 0: "[N->-id]" (migrating to id) */
    char peer[CN_ID_LEN + 1]; /* the other node's id */
} cn_open_slot_t;

typedef struct {
    char id[CN_ID_LEN + 1];
    char ip[64];             /* "" when no address is known (noaddr, ":0") */
    int port, cport;
    unsigned flags;          /* CN_* */
    char master[CN_ID_LEN + 1]; /* "" for "-" */
    uint64_t config_epoch;
    int connected;           /* link-state connected */
    size_t nranges;
    cn_range_t *ranges;      /* nranges slot ranges */
    size_t nopen;
    cn_open_slot_t *open;    /* nopen open slots */
} cn_node_t;

typedef struct {
    size_t n;
    cn_node_t *nodes;        /* in the answer's order */
} cn_view_t;

/* Parse len bytes of a CLUSTER NODES answer into a new view (*out; the caller frees it
 * with cn_view_destroy). Returns 0, or -1 with err (errlen bytes) saying which line is
 * wrong and how, *out NULL (also when out of memory). At most CN_MAX_NODES lines. */
#define CN_MAX_NODES 1000
int cn_parse(const char *text, size_t len, cn_view_t **out, char *err, size_t errlen);

/* Append view to out (outlen bytes with the terminator) as a normalized CLUSTER NODES
 * text: one line a node, sorted by id, ping-sent and pong-recv as 0 (they move every
 * second; what observerd compares must not), the flags in a fixed order (noflags when
 * none), open slots after the ranges. cn_parse reads it back to the same view. Returns
 * 0, or -1 when it does not fit (out then holds what did, cut at a line). */
int cn_format(const cn_view_t *view, char *out, size_t outlen);

/* Free the view and set *view_p to NULL. NULL is fine. */
void cn_view_destroy(cn_view_t **view_p);

/* The node of view flagged myself, or NULL. */
const cn_node_t *cn_myself(const cn_view_t *view);

/* The node of view with id, or NULL. */
const cn_node_t *cn_find(const cn_view_t *view, const char *id);

/* How many slots node's ranges cover. */
int cn_slot_count(const cn_node_t *node);

/* Append node's ranges to out as "0-5460,5461" ("" for none), at most outlen bytes with
 * the terminator; when they do not all fit, the ranges that do and ",..." (a map cut short
 * says so: a fragmented one, after restores and reshards, runs to kilobytes). */
void cn_ranges_text(const cn_range_t *ranges, size_t n, char *out, size_t outlen);

/* A slot bitmap (CN_SLOTS bits). */
typedef struct {
    uint8_t bit[CN_SLOTS / 8];
} cn_slots_t;

static inline void cn_slots_set(cn_slots_t *s, int slot)
{
    s->bit[slot >> 3] |= (uint8_t)(1u << (slot & 7));
}

static inline int cn_slots_has(const cn_slots_t *s, int slot)
{
    return (s->bit[slot >> 3] >> (slot & 7)) & 1;
}

/* Set node's slots in s. */
void cn_slots_add_node(cn_slots_t *s, const cn_node_t *node);

/* The ranges of slots in [from, to] that are set (want 1) or not set (want 0) in s, into
 * out (up to max; returns how many there are, which may exceed max). */
size_t cn_slots_ranges(const cn_slots_t *s, int from, int to, int want, cn_range_t *out, size_t max);

/* CLUSTER INFO's fields. */
typedef struct {
    int state_ok;            /* cluster_state:ok 1, fail 0, absent -1 */
    int slots_assigned, slots_ok, slots_pfail, slots_fail;
    int known_nodes, size;
    int64_t current_epoch, my_epoch;
} cn_info_t;

/* Parse len bytes of a CLUSTER INFO answer into *out (fields absent: -1). Never fails:
 * lines that are not "key:value" are skipped. */
void cn_info_parse(const char *text, size_t len, cn_info_t *out);

#endif
