/* merge: combine the Prometheus expositions of several children into one.
 *
 * Each child writes its own metrics file; the same family (say
 * controller_runtime_reconcile_total) appears in every worker's file. The exposition
 * format allows one HELP/TYPE block per family, so samples are grouped by family and
 * each sample gets a label child="<name>" that keeps the workers' series apart.
 * Input comes from our own children, but is still treated as text that may be cut
 * short: malformed lines are skipped, never trusted.
 */
#ifndef RDC_SUPERVISOR_MERGE_H
#define RDC_SUPERVISOR_MERGE_H

#include "buf.h"

typedef struct merge merge_t;

/* A new, empty merge; NULL when out of memory. */
merge_t *merge_new(void);

/* Free; sets *self_p to NULL. */
void merge_destroy(merge_t **self_p);

/* Add one child's exposition text, labelling its samples child="<child>". Returns 0, or
 * -1 when out of memory (what was added so far stays). */
int merge_add(merge_t *m, const char *child, const char *text, size_t len);

/* Write the merged exposition, families sorted by name. Returns 0 or -1 (buffer cap). */
int merge_render(const merge_t *m, buf_t *out);

#endif
