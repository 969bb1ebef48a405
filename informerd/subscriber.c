#include "subscriber.h"

#include "clock.h"
#include "daemon.h"
#include "log.h"
#include "proto.h"
#include "rmsg.h"

#include <errno.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#define SNAPSHOT_TIMEOUT_MS 10000

static void print_item(FILE *out, const char *type, const rmsg_t *m, size_t first)
{
    /* first: index of the seq frame; kind, key, rv, object follow (DELTA has type too). */
    int64_t seq = 0;
    rmsg_frame_int64(m, first, &seq);
    size_t k = first + 1 + (strcmp(type, "SNAPSHOT") == 0 ? 0 : 1);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "seq", json_object_new_int64(seq));
    json_object_object_add(o, "type", json_object_new_string(type));
    const char *names[] = {"kind", "key", "resourceVersion"};
    for (size_t i = 0; i < 3; i++) {
        size_t len = 0;
        const char *v = rmsg_frame(m, k + i, &len);
        json_object_object_add(o, names[i], json_object_new_string_len(v ? v : "", v ? (int)len : 0));
    }
    size_t olen = 0;
    const char *text = rmsg_frame(m, k + 3, &olen);
    json_object *obj = text ? json_tokener_parse(text) : NULL;
    json_object_object_add(o, "object", obj);
    fprintf(out, "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    fflush(out);
    json_object_put(o);
}

/* Ask for a snapshot and print it. Returns its sequence number, or -1 on timeout. */
static int64_t take_snapshot(void *snap, FILE *out)
{
    rmsg_t *req = rmsg_new();
    rmsg_addstr(req, PROTO_ICANHAZ);
    if (rmsg_send(&req, snap, 0))
        return -1;
    for (;;) {
        zmq_pollitem_t it = {snap, 0, ZMQ_POLLIN, 0};
        if (zmq_poll(&it, 1, SNAPSHOT_TIMEOUT_MS) <= 0)
            return -1;
        rmsg_t *m = rmsg_recv(snap, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, PROTO_MAX_BYTES);
        if (!m)
            continue;
        int64_t seq = -1;
        if (rmsg_frame_is(m, 0, PROTO_KTHXBAI) && rmsg_frame_int64(m, 1, &seq) == 0) {
            fprintf(out, "{\"type\":\"SYNCED\",\"seq\":%lld}\n", (long long)seq);
            fflush(out);
            rmsg_destroy(&m);
            return seq;
        }
        if (rmsg_frame_is(m, 0, PROTO_SNAP))
            print_item(out, "SNAPSHOT", m, 1);
        rmsg_destroy(&m);
    }
}

int subscriber_run(const char *runtime_dir, FILE *out, int signal_fd)
{
    char ep[4200];
    void *ctx = zmq_ctx_new();
    void *sub = zmq_socket(ctx, ZMQ_SUB);
    void *snap = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0, code = 1;
    zmq_setsockopt(sub, ZMQ_LINGER, &linger, sizeof(linger));
    zmq_setsockopt(snap, ZMQ_LINGER, &linger, sizeof(linger));
    zmq_setsockopt(sub, ZMQ_SUBSCRIBE, PROTO_DELTA, strlen(PROTO_DELTA));
    zmq_connect(sub, daemon_endpoint(runtime_dir, PROTO_EP_DELTAS, ep, sizeof(ep)));
    zmq_connect(snap, daemon_endpoint(runtime_dir, PROTO_EP_SNAPSHOT, ep, sizeof(ep)));
    /* Subscribe before the snapshot, so that nothing falls between the two. */
    int64_t seq = take_snapshot(snap, out);
    if (seq < 0) {
        rlog_error("no snapshot from informerd within 10 s (is it running?)", "endpoint", ep);
        goto out;
    }
    for (;;) {
        zmq_pollitem_t items[2] = {{NULL, signal_fd, ZMQ_POLLIN, 0}, {sub, 0, ZMQ_POLLIN, 0}};
        if (zmq_poll(items, 2, -1) < 0 && errno != EINTR)
            break;
        if (items[0].revents & ZMQ_POLLIN) {
            int sig = daemon_read_signal(signal_fd);
            if (sig == SIGTERM || sig == SIGINT) {
                code = 0;
                break;
            }
        }
        rmsg_t *m;
        while ((m = rmsg_recv(sub, ZMQ_DONTWAIT, PROTO_MAX_FRAMES, PROTO_MAX_BYTES)) != NULL) {
            int64_t s = 0;
            if (rmsg_frame_is(m, 0, PROTO_DELTA) && rmsg_frame_int64(m, 1, &s) == 0 && s > seq) {
                if (s != seq + 1) {
                    rlog_warn("gap in the delta stream; taking a new snapshot");
                    rmsg_destroy(&m);
                    seq = take_snapshot(snap, out);
                    if (seq < 0)
                        goto out;
                    continue;
                }
                size_t tl = 0;
                const char *type = rmsg_frame(m, 2, &tl);
                char tbuf[16];
                snprintf(tbuf, sizeof(tbuf), "%.*s", (int)(tl < 15 ? tl : 15), type ? type : "");
                print_item(out, tbuf, m, 1);
                seq = s;
            }
            rmsg_destroy(&m);
        }
    }
out:
    zmq_close(sub);
    zmq_close(snap);
    zmq_ctx_term(ctx);
    return code;
}
