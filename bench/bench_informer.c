/* bench_informer: what the informer's cache costs per object, and how many deltas per
 * second its PUB socket carries to a subscriber.
 *
 *   bench_informer [N objects] [M deltas]
 *
 * Memory: N StatefulSet-sized objects (the largest kind the operator caches) are parsed
 * and inserted into informerd's cache; the heap growth (mallinfo2) per object is printed
 * next to the object's JSON size. Throughput: M DELTA messages shaped as informerd sends
 * them (seq, type, kind, key, resourceVersion, object) go over ipc:// to a subscriber
 * process, which reports when it has them all. Prints a markdown table. Asserts nothing.
 */
#include "cache.h"
#include "clock.h"
#include "proto.h"
#include "rmsg.h"

#include <json-c/json.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

/* A StatefulSet as the API server returns one for a RedisCluster (managedFields
 * included: the cache strips them, as controller-runtime's transform does). */
static json_object *make_sts(int i)
{
    char buf[8192];
    snprintf(
        buf, sizeof(buf),
        "{\"apiVersion\":\"apps/v1\",\"kind\":\"StatefulSet\",\"metadata\":{\"name\":\"rc-%d\","
        "\"namespace\":\"bench\",\"uid\":\"00000000-0000-4000-8000-%012d\",\"resourceVersion\":\"%d\","
        "\"generation\":1,\"creationTimestamp\":\"2026-11-29T18:00:00Z\",\"labels\":{"
        "\"app.kubernetes.io/name\":\"redis\",\"app.kubernetes.io/instance\":\"rc-%d\","
        "\"app.kubernetes.io/managed-by\":\"rediscluster-operator\",\"app.kubernetes.io/part-of\":\"rediscluster\"},"
        "\"ownerReferences\":[{\"apiVersion\":\"cache.example.com/v1\",\"kind\":\"RedisCluster\","
        "\"name\":\"rc-%d\",\"uid\":\"10000000-0000-4000-8000-%012d\",\"controller\":true,\"blockOwnerDeletion\":"
        "true}],"
        "\"managedFields\":[{\"manager\":\"rediscluster-operator\",\"operation\":\"Apply\",\"apiVersion\":\"apps/v1\","
        "\"time\":\"2026-11-29T18:00:00Z\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:replicas\":{},"
        "\"f:serviceName\":{},\"f:template\":{\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"redis\\\"}\":{"
        "\".\":{},\"f:image\":{},\"f:name\":{}}}}}}}}]},"
        "\"spec\":{\"replicas\":3,\"serviceName\":\"rc-%d\",\"selector\":{\"matchLabels\":{"
        "\"app.kubernetes.io/name\":\"redis\",\"app.kubernetes.io/instance\":\"rc-%d\"}},"
        "\"template\":{\"metadata\":{\"labels\":{\"app.kubernetes.io/name\":\"redis\",\"app.kubernetes.io/instance\":"
        "\"rc-%d\"},"
        "\"annotations\":{\"cache.example.com/config-hash\":"
        "\"5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592\"}},"
        "\"spec\":{\"containers\":[{\"name\":\"redis\",\"image\":\"redis:7.2\",\"command\":[\"redis-server\","
        "\"/etc/redis/redis.conf\"],"
        "\"ports\":[{\"name\":\"redis\",\"containerPort\":6379,\"protocol\":\"TCP\"}],"
        "\"resources\":{\"requests\":{\"cpu\":\"100m\",\"memory\":\"256Mi\"},\"limits\":{\"cpu\":\"500m\",\"memory\":"
        "\"1Gi\"}},"
        "\"livenessProbe\":{\"exec\":{\"command\":[\"redis-cli\",\"ping\"]},\"initialDelaySeconds\":10,"
        "\"periodSeconds\":10},"
        "\"readinessProbe\":{\"exec\":{\"command\":[\"redis-cli\",\"ping\"]},\"initialDelaySeconds\":5,"
        "\"periodSeconds\":5},"
        "\"volumeMounts\":[{\"name\":\"config\",\"mountPath\":\"/etc/redis\"},{\"name\":\"data\",\"mountPath\":"
        "\"/data\"}],"
        "\"terminationMessagePath\":\"/dev/termination-log\",\"imagePullPolicy\":\"IfNotPresent\"}],"
        "\"volumes\":[{\"name\":\"config\",\"configMap\":{\"name\":\"rc-%d\",\"defaultMode\":420}}],"
        "\"restartPolicy\":\"Always\",\"dnsPolicy\":\"ClusterFirst\",\"schedulerName\":\"default-scheduler\"}},"
        "\"volumeClaimTemplates\":[{\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],"
        "\"resources\":{\"requests\":{\"storage\":\"1Gi\"}}}}]},"
        "\"status\":{\"replicas\":3,\"readyReplicas\":3,\"currentReplicas\":3,\"updatedReplicas\":3,"
        "\"observedGeneration\":1,\"currentRevision\":\"rc-%d-5d8f\",\"updateRevision\":\"rc-%d-5d8f\"}}",
        i, i, 1000 + i, i, i, i, i, i, i, i, i, i);
    return json_tokener_parse(buf);
}

static size_t heap_used(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void bench_memory(int n)
{
    cache_t *c = cache_new("RedisCluster");
    cache_add_kind(c, "RedisCluster");
    cache_add_kind(c, "StatefulSet");
    size_t json_bytes = 0, stripped_bytes = 0;
    char err[256];
    /* Sizes first, on objects that are then thrown away: json-c keeps the text it
     * serialised inside the object, which the cache itself never does. */
    {
        json_object *o = make_sts(0);
        json_bytes = strlen(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object *md = NULL;
        json_object_object_get_ex(o, "metadata", &md);
        json_object_object_del(md, "managedFields");
        stripped_bytes = strlen(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object_put(o);
    }
    size_t before = heap_used();
    for (int i = 0; i < n; i++) {
        json_object *o = make_sts(i);
        cache_change_t ch;
        cache_upsert(c, "StatefulSet", o, &ch, err, sizeof(err));
        json_object_put(o);
    }
    size_t after = heap_used();
    json_bytes *= (size_t)n;
    stripped_bytes *= (size_t)n;
    printf("| cache: objects | %d StatefulSets |\n", n);
    printf("| cache: JSON size per object (as listed / managedFields stripped) | %zu B / %zu B |\n",
           json_bytes / (size_t)n, stripped_bytes / (size_t)n);
    printf("| cache: heap per cached object | %zu B (%.1fx its stripped JSON) |\n",
           (after - before) / (size_t)n, (double)(after - before) / (double)stripped_bytes);
    cache_destroy(&c);
}

static void bench_pubsub(int m)
{
    char dir[] = "/tmp/rdc-bench-XXXXXX";
    if (!mkdtemp(dir))
        return;
    char ep[256];
    snprintf(ep, sizeof(ep), "ipc://%s/deltas.sock", dir);
    json_object *o = make_sts(1);
    const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    int ready[2];
    if (pipe(ready))
        return;
    pid_t pid = fork();
    if (pid == 0) {
        void *ctx = zmq_ctx_new(), *sub = zmq_socket(ctx, ZMQ_SUB);
        int hwm = 0;
        zmq_setsockopt(sub, ZMQ_RCVHWM, &hwm, sizeof(hwm));
        zmq_setsockopt(sub, ZMQ_SUBSCRIBE, "", 0);
        zmq_connect(sub, ep);
        usleep(200000); /* let the subscription reach the publisher */
        ssize_t w = write(ready[1], "r", 1);
        (void)w;
        int got = 0;
        int64_t first = 0;
        while (got < m) {
            rmsg_t *msg = rmsg_recv(sub, 0, PROTO_MAX_FRAMES, PROTO_MAX_BYTES);
            if (!msg)
                break;
            if (got++ == 0)
                first = clock_mono_ns();
            rmsg_destroy(&msg);
        }
        double secs = (double)(clock_mono_ns() - first) / 1e9;
        printf("| PUB -> SUB over ipc: deltas received | %d of %d |\n", got, m);
        printf("| PUB -> SUB over ipc: deltas per second | %.0f (%.1f MB/s of objects) |\n",
               got / secs, (double)got * (double)strlen(text) / secs / 1e6);
        fflush(stdout);
        zmq_close(sub);
        zmq_ctx_term(ctx);
        _exit(0);
    }
    void *ctx = zmq_ctx_new(), *pub = zmq_socket(ctx, ZMQ_PUB);
    int hwm = 0;
    zmq_setsockopt(pub, ZMQ_SNDHWM, &hwm, sizeof(hwm));
    zmq_bind(pub, ep);
    char r;
    if (read(ready[0], &r, 1) != 1)
        return;
    for (int i = 0; i < m; i++) {
        rmsg_t *msg = rmsg_new();
        rmsg_addstr(msg, PROTO_DELTA);
        rmsg_addf(msg, "%d", i + 1);
        rmsg_addstr(msg, "MODIFIED");
        rmsg_addstr(msg, "StatefulSet");
        rmsg_addstr(msg, "bench/rc-1");
        rmsg_addf(msg, "%d", 2000 + i);
        rmsg_addstr(msg, text);
        rmsg_send(&msg, pub, 0);
    }
    int status;
    waitpid(pid, &status, 0);
    zmq_close(pub);
    zmq_ctx_term(ctx);
    json_object_put(o);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd)) {
        /* nothing to do: a leftover temp dir */
    }
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 10000;
    int m = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 100000;
    if (n <= 0 || m <= 0) {
        fprintf(stderr, "usage: bench_informer [objects > 0] [deltas > 0]\n");
        return 2;
    }
    printf("| informer figure | value |\n|---|---|\n");
    fflush(stdout);
    bench_memory(n);
    fflush(stdout);
    bench_pubsub(m);
    return 0;
}
