/* watch: incremental decoder for the Kubernetes watch stream (one JSON event per line).
 *
 * A watch response body is a sequence of lines {"type":"ADDED","object":{...}}\n that
 * arrive in chunks cut anywhere. The decoder scans each chunk once for '\n' and parses
 * only complete lines: a line that fits in one chunk is parsed in place, the pieces of a
 * line split across chunks are gathered in a buffer capped at max_event_bytes. Nothing
 * is parsed twice and memory stays bounded whatever the server sends.
 *
 * Error policy: the first bad line stops the decoder (it becomes "failed": further
 * feeds return the same error and deliver nothing). A bad line means an event was lost,
 * so the only safe continuation is to drop the stream and relist, which is what the
 * informer does on any error from this module. The error code tells the caller what to
 * count; watch_decoder_error() gives one line naming the event number and what was wrong.
 * An ERROR event is not a decoder error: it is delivered to the callback (with the
 * Status mapped to a kube_error_t, 410/Expired -> KERR_GONE) and remembered; the server
 * ends the stream after it.
 *
 * Telling an idle watch from a dead one (the curl options the REST client's watch handle
 * sets; see kube_client_watch_handle):
 *  - do NOT use CURLOPT_LOW_SPEED_LIMIT/TIME: a healthy watch on a quiet resource sends
 *    nothing for minutes (bookmarks come about once a minute at best);
 *  - turn on TCP keepalive (CURLOPT_TCP_KEEPALIVE=1, CURLOPT_TCP_KEEPIDLE=30,
 *    CURLOPT_TCP_KEEPINTVL=10; the kernel's probe count then ends a dead peer within
 *    about two minutes);
 *  - ask the server to end the watch with timeoutSeconds (client-go picks 5..10 min) and
 *    put a client-side deadline of timeoutSeconds + a margin on the transfer
 *    (CURLOPT_TIMEOUT_MS), so a stream that stays open past that is known dead.
 * Then resume from watch_decoder_last_rv(), or relist after KERR_GONE.
 */
#ifndef RDC_WATCH_H
#define RDC_WATCH_H

#include "kube_error.h"

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

typedef struct watch_decoder watch_decoder_t;

typedef enum {
    WATCH_ADDED = 1,
    WATCH_MODIFIED,
    WATCH_DELETED,
    WATCH_BOOKMARK,
    WATCH_ERROR
} watch_event_type_t;

/* Decoder results; 0 = OK. */
typedef enum {
    WATCH_OK = 0,
    WATCH_ERR_TOO_LONG,   /* a line exceeds max_event_bytes */
    WATCH_ERR_SYNTAX,     /* a line is not (exactly one) JSON value */
    WATCH_ERR_NOT_OBJECT, /* a line is JSON but not an object */
    WATCH_ERR_BAD_EVENT,  /* missing/unknown "type", or "object" missing or not an object */
    WATCH_ERR_TRUNCATED,  /* the stream ended inside a line (watch_decoder_finish) */
    WATCH_ERR_STOPPED,    /* the callback returned non-zero */
    WATCH_ERR_NOMEM       /* out of memory */
} watch_status_t;

/* One decoded event; everything in it is borrowed and valid only during the callback
 * (take a reference with json_object_get(object) to keep the object). */
typedef struct {
    watch_event_type_t type;
    const char *type_name;        /* "ADDED", ... */
    json_object *object;          /* the event's object (a Status for ERROR) */
    const char *resource_version; /* object's metadata.resourceVersion, or NULL */
    const char *ns;               /* metadata.namespace or NULL */
    const char *name;             /* metadata.name or NULL */
    const kube_error_t *error;    /* for WATCH_ERROR: the mapped Status; else NULL */
    uint64_t index;               /* 1-based number of this line in the stream */
} watch_event_t;

/* Called once per event; return 0 to go on, anything else to stop the decoder (the feed
 * then returns WATCH_ERR_STOPPED). */
typedef int (*watch_event_fn)(const watch_event_t *ev, void *user);

/* A new decoder that refuses lines longer than max_event_bytes (0 = 16 MiB) and calls
 * fn(event, user) for each event. Returns NULL only when out of memory. The caller owns
 * the decoder; free it with watch_decoder_destroy. */
watch_decoder_t *watch_decoder_new(size_t max_event_bytes, watch_event_fn fn, void *user);

/* Free the decoder and set *self_p to NULL. Safe with NULL or *self_p NULL. */
void watch_decoder_destroy(watch_decoder_t **self_p);

/* Decode len bytes of the stream. Calls the callback for every event completed by this
 * chunk, in order, then returns WATCH_OK; or stops at the first bad line and returns its
 * watch_status_t (sticky: later feeds return it again without decoding). Empty lines
 * and a '\r' before '\n' are ignored. */
int watch_decoder_feed(watch_decoder_t *d, const char *chunk, size_t len);

/* The stream ended. A pending partial line that is a complete event (the final '\n' was
 * lost) is delivered; any other non-blank remainder gives WATCH_ERR_TRUNCATED. Returns
 * the sticky status when the decoder had failed before. */
int watch_decoder_finish(watch_decoder_t *d);

/* Start a new stream with the same settings: clears the buffer, the error and the
 * last ERROR event; keeps the last resourceVersion and the counters. */
void watch_decoder_reset(watch_decoder_t *d);

/* The newest metadata.resourceVersion seen in any event but ERROR (bookmarks included),
 * or the one set with watch_decoder_set_last_rv; "" when none. Valid until the next
 * call on d. */
const char *watch_decoder_last_rv(const watch_decoder_t *d);

/* Set the resourceVersion to resume from (the list's) before feeding a new stream.
 * Returns 0, or -1 (unchanged) when it does not fit (over 255 bytes) or rv is NULL. */
int watch_decoder_set_last_rv(watch_decoder_t *d, const char *rv);

/* The decoder's sticky status (WATCH_OK while healthy). */
int watch_decoder_status(const watch_decoder_t *d);

/* One line saying what went wrong ("" while healthy), naming the event number, e.g.
 * "watch event 12: line exceeds 1048576 bytes". Valid until the next call on d. */
const char *watch_decoder_error(const watch_decoder_t *d);

/* The Status of the last ERROR event in this stream, or NULL when there was none. */
const kube_error_t *watch_decoder_server_error(const watch_decoder_t *d);

/* Events delivered since the decoder was created (bookmarks and errors included). */
uint64_t watch_decoder_events(const watch_decoder_t *d);

/* Name of a status code ("too long", "syntax", ...). */
const char *watch_status_name(int status);

/* Name of an event type ("ADDED", ...), "UNKNOWN" otherwise. */
const char *watch_event_type_name(watch_event_type_t type);

#endif
