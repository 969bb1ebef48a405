/* cluster_fixture: observerd's observation of a Cluster-mode RedisCluster's nodes, as the
 * tests of its plan build it (test_plan_cluster, test_projection).
 *
 *   CLUSTER_IDS[i]         the node id of pod i (40 digits i)
 *   onode_t                one node: a master (of = -1) with slots, or a replica of node
 *                          of; alone: it knows only itself (reset, or fresh)
 *   MET                    three shards, each a master with its slots followed by its
 *                          replica (the first six: a healthy cluster), then a fourth
 *                          shard's two nodes met, without slots
 *   cluster_observation(name, nodes, n, state)
 *                          the observation of n pods' nodes: pod i is
 *                          <name>-shard<i/2>-<i%2> at 10.0.0.(i+1) with id CLUSTER_IDS[i],
 *                          reachable, each saying cluster_state state and its CLUSTER
 *                          NODES view; the caller puts it
 */
#ifndef RDC_TEST_CLUSTER_FIXTURE_H
#define RDC_TEST_CLUSTER_FIXTURE_H

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

static const char *const CLUSTER_IDS[8] = {
    "0000000000000000000000000000000000000000", "1111111111111111111111111111111111111111",
    "2222222222222222222222222222222222222222", "3333333333333333333333333333333333333333",
    "4444444444444444444444444444444444444444", "5555555555555555555555555555555555555555",
    "6666666666666666666666666666666666666666", "7777777777777777777777777777777777777777"};

typedef struct {
    int of;
    const char *slots;
    int alone;
} onode_t;

static const onode_t MET[8] = {{-1, "0-5460", 0},     {0, NULL, 0}, {-1, "5461-10922", 0}, {2, NULL, 0},
                               {-1, "10923-16383", 0}, {4, NULL, 0}, {-1, NULL, 0},        {6, NULL, 0}};

static inline json_object *cluster_observation(const char *name, const onode_t *nodes, int n, const char *state)
{
    json_object *obs = json_object_new_object(), *arr = json_object_new_array();
    for (int i = 0; i < n; i++) {
        char view[8192] = "", line[512];
        for (int j = 0; j < n; j++) {
            if (j != i && (nodes[i].alone || nodes[j].alone))
                continue;
            snprintf(line, sizeof(line), "%s 10.0.0.%d:6379@16379 %s%s %s 0 0 1 connected %s\n", CLUSTER_IDS[j],
                     j + 1, j == i ? "myself," : "", nodes[j].of < 0 ? "master" : "slave",
                     nodes[j].of < 0 ? "-" : CLUSTER_IDS[nodes[j].of], nodes[j].slots ? nodes[j].slots : "");
            strcat(view, line); /* banned-ok: a test's fixed-size text */
        }
        json_object *o = json_object_new_object(), *cl = json_object_new_object();
        char p[300], ip[32];
        snprintf(p, sizeof(p), "%s-shard%d-%d", name, i / 2, i % 2);
        snprintf(ip, sizeof(ip), "10.0.0.%d", i + 1);
        json_object_object_add(o, "pod", json_object_new_string(p));
        json_object_object_add(o, "ip", json_object_new_string(ip));
        json_object_object_add(o, "reachable", json_object_new_boolean(1));
        json_object_object_add(o, "linkUp", json_object_new_boolean(nodes[i].of >= 0));
        json_object_object_add(o, "offset", json_object_new_int(100));
        json_object_object_add(cl, "nodes", json_object_new_string(view));
        json_object_object_add(cl, "state", json_object_new_string(state));
        json_object_object_add(o, "cluster", cl);
        json_object_array_add(arr, o);
    }
    json_object_object_add(obs, "nodes", arr);
    return obs;
}

#endif
