/* slots: the pure half of `rdc-backup take --slots` (a Cluster-mode backup of one shard,
 * docs/backup.md): the slot list the operator expects the shard to serve, and the
 * comparison of what a node's CLUSTER NODES says its shard's master serves with it. No
 * I/O: take.h sends CLUSTER NODES and calls slots_check.
 *
 * WHY. A Cluster-mode backup is one RDB per shard, and a restore gives shard k's file to
 * shard k, which then claims shard k's slots. If the slots moved between the operator's
 * plan and the snapshot (a reshard, a slot move under way, a failover that made this
 * node's master another shard's), the RDB holds the keys of other slots than the ones
 * its shard is restored with. So the take checks before the sync and again once the
 * whole RDB has been read, before the upload is completed: a difference fails it.
 *
 * THE TEXT. --slots takes the form common/clusternodes.h's cn_ranges_text prints:
 * comma-separated "N" (one slot) or "A-B" (A <= B, both inclusive), every slot 0..16383,
 * no spaces, no slot twice ("0-5460", "5461-10922", "0-10,20-30,16383"). The ranges may
 * come in any order and may touch ("0-10,11-20" is slots 0..20); what is compared is
 * the set of slots.
 *
 * THE SHARD'S MASTER. The node read from is the myself line of its CLUSTER NODES; when
 * it is a master its own slots are compared, when it is a replica (the line names a
 * master id) that master's slots as this node sees them. Open slots ("[N->-id]") are not
 * slots served here: only the ranges count, as in cn_node_t.
 */
#ifndef RDC_BACKUP_SLOTS_H
#define RDC_BACKUP_SLOTS_H

#include "clusternodes.h"

#include <stddef.h>

/* The longest text slots_text writes for a message (longer lists are cut at a comma). */
#define SLOTS_TEXT_MAX 256

/* Parse text (THE TEXT) into *out (cleared first). 0, or -1 with one line in err naming
 * what is wrong ("--slots \"0-x\": \"0-x\" is not a slot N or a range A-B of slots 0 to
 * 16383"; "... slot 5 is given twice"; "--slots \"\": no slots"). */
int slots_parse(const char *text, cn_slots_t *out, char *err, size_t errlen);

/* The slots of s as cn_ranges_text prints merged ranges ("0-5460", "" when empty),
 * into out (at most outlen bytes with the terminator; cut at a comma). */
void slots_text(const cn_slots_t *s, char *out, size_t outlen);

/* Compare the slots of the shard's master (THE SHARD'S MASTER) in the CLUSTER NODES
 * answer text (len bytes) with want. 0 when they are the same set; -1 with one line in
 * err otherwise: the answer does not parse or has no myself line, the replica's master
 * is not in it, or "the shard's master 10.0.0.7:6379 serves 0-5000, not 0-5460 (--slots):
 * the slots moved ..." (the master's id instead of its address when it has none). Pure. */
int slots_check(const char *text, size_t len, const cn_slots_t *want, char *err, size_t errlen);

#endif
