/* keyfile: the keys a worker holds, as it tells `supervisor ctl status`.
 *
 * workerd writes the file <runtime-dir>/metrics/<child>.key whole (daemon_write_file_atomic)
 * whenever it takes or gives back a key; the supervisor reads it for the STATUS answer
 * (common/proto.h, control). One key a line, in the order the worker holds them:
 *
 *   namespace/name TAB taken
 *
 * taken: when the worker took the key, wall-clock milliseconds since the epoch (the two
 * processes share the machine's clock). An empty file: no key held. A line without the
 * tab is a key whose age is unknown. Both functions are pure.
 */
#ifndef RDC_KEYFILE_H
#define RDC_KEYFILE_H

#include "buf.h"

#include <json-c/json.h>
#include <stdint.h>

/* How much of a key file a reader takes: a worker holds at most 16 keys (worker.h) of at
 * most 317 characters (namespace/name), with their times. */
#define KEYFILE_READ_MAX 16384

/* Append the line of key (taken at taken_wall_ms) to b. Returns 0, or -1 (b unchanged)
 * when the key holds a tab or a newline, or b's cap is reached. */
int keyfile_append(buf_t *b, const char *key, int64_t taken_wall_ms);

/* The keys of text (a file's contents; NULL = none) as a new JSON array of objects
 * {"key": "namespace/name", "age_s": seconds held at now_wall_ms, or null when unknown},
 * in the file's order; empty lines are skipped, an age in the future is 0. The caller
 * puts it. NULL only when out of memory. */
json_object *keyfile_parse(const char *text, int64_t now_wall_ms);

#endif
