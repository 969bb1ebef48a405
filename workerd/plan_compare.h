/* plan_compare: the managed-field comparison and its twin, the merge of a desired object
 * over an observed one (workerd/plan*.c only; plan.h, MANAGED-FIELD COMPARISON and TAKING
 * A CHILD BACK, states both). Pure functions of their arguments, no state. */
#ifndef RDC_WORKERD_PLAN_COMPARE_H
#define RDC_WORKERD_PLAN_COMPARE_H

#include "buf.h"

#include <json-c/json.h>

/* plan_json_subset (plan.h) of desired at its place prefix ("spec.selector"; "" for a
 * whole object): 1 when desired is a subset of observed, else 0 with where they first
 * differ appended to where (when not NULL), named from prefix. */
int plan_json_subset_at(const json_object *desired, const json_object *observed, const char *prefix, buf_t *where);

/* The key that identifies the elements of a desired array: "uid" when every element is
 * an object with a non-empty string uid, else "name" likewise, else NULL (elements are
 * matched by position). */
const char *plan_json_array_key(const json_object *desired);

/* desired merged over observed as a new value (TAKING A CHILD BACK): objects key by key,
 * lists keyed as plan_json_array_key says element by element (in observed order, the
 * unmatched desired elements appended), anything else desired's. NULL for a NULL desired
 * (JSON null), or with *oom set when out of memory. */
json_object *plan_json_merge_over(const json_object *desired, const json_object *observed, int *oom);

#endif
