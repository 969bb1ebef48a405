#!/usr/bin/env bash
# bench/reshard.sh: a 3 -> 4 shard rebalance with DATA bytes of keys, the operator side by
# side with `redis-cli --cluster rebalance` on the same pods and the same data (issue 30,
# docs/cluster-mode.md "Resharding"). `make bench-reshard` runs it; bench/README.md has
# the table.
#
#   1. A RedisCluster "rs" (mode Cluster, 4 shards x 1 replica) made by this checkout's
#      operator; DATA bytes of keys (values of VALUE_BYTES) filled through the cluster
#      (bench/clusterwriter fill); the operator stopped.
#   2. The starting point, made by redis-cli: `--cluster rebalance --cluster-weight
#      <shard 3's master>=0` empties shard 3 into the other three (3 masters holding all
#      the data, a fourth empty one with its replica: what the operator sees right after
#      spec.cluster.shards went from 3 to 4).
#   3. redis-cli: `redis-cli --cluster rebalance --cluster-use-empty-masters` (its
#      defaults: pipeline 10 keys a MIGRATE), timed; back to the starting point (2).
#   4. the operator started again (spec.cluster.shards is 4): timed from its start to
#      status.cluster.slotsToMove 0 and every node cluster_state:ok.
#   During 3 and 4 a bench/clusterwriter SET writer (no WAIT) runs at RATE writes/s: its
#   longest pause between accepted SETs is printed beside slots/s and keys/s, and the
#   distribution of its SETs' latencies (from a SET's first send to Redis accepting it,
#   MOVED/ASK and retries included, the rate's spacing not): p99, p99.9, the longest, and
#   how many SETs waited over 10 ms and over 50 ms. The JSON has every field of the
#   writer's summary line (gap_* too: the gaps between accepted SETs, spacing included;
#   bench/clusterwriter.c's header). Between the runs `redis-cli --cluster check` must be
#   clean and the keys count the same. To tell where a long wait came from, each run also
#   logs (and keeps in the JSON) the writer's SETs over 20 ms, when they happened after the
#   run's start and which node answered, the operator's slot move runs' ends on the same
#   clock, the largest of each event of Redis's latency monitor on every node (threshold
#   5 ms: a fork for a snapshot, a slow command) and the commands SLOWLOG saw run 5 ms or
#   longer (which command held a node).
#
# Knobs: DATA=1073741824 VALUE_BYTES=1024 RATE=200 CB_CLUSTER_DIR=/tmp/rdc-cluster-rbench
#   PERSISTENCE=none|rdb|aof (spec.persistence; unset: the default, aof with snapshots: a
#   snapshot's fork stalls its node for tens of ms, at a time neither mover chooses, and
#   the latency monitor's "fork" says when one did; none leaves the movers alone)
#   RDC_POD_CIDR=127.73.0.0/16 (when this script starts the control plane) RB_KEEP_CLUSTER=1
#   RB_OUT=<file> (default bench/results/reshard-<date>-<sha>.json). A short variant:
#   DATA=67108864 (64 MiB).
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
DATA=${DATA:-1073741824}
VALUE_BYTES=${VALUE_BYTES:-1024}
RATE=${RATE:-200}
WAIT_S=${WAIT_S:-1800}
# shellcheck source=lib_cluster.sh
. bench/lib_cluster.sh
bench_cluster_start reshard /tmp/rdc-cluster-rbench 127.73.0.0/16
work=$(mktemp -d /tmp/rdc-bench-reshard.XXXXXX)
started=0 ns=rdc-bench-rs-$$
cleanup() {
    _fo_stop "$work/cw.pid" 5
    sup_stop 5
    kubectl -n "$ns" delete rdc rs --timeout=20s >/dev/null 2>&1 ||
        kubectl -n "$ns" patch rdc rs --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
    if [ "$started" = 1 ] && [ "${RB_KEEP_CLUSTER:-0}" != 1 ]; then "$cluster" down >&2 || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_cluster_up
kubectl apply -f crds/ >/dev/null && kubectl wait --for=condition=Established --timeout=60s \
    crd/redisclusters.cache.example.com >/dev/null || exit 1
kubectl create namespace "$ns" >/dev/null && "$cluster" pin-namespace "$ns" >/dev/null || exit 1
wait_until 20 kubectl -n "$ns" get serviceaccount default || exit 1

status() { kubectl -n "$ns" get rdc rs -o json 2>/dev/null; }
pods() { kubectl -n "$ns" get pods -l app.kubernetes.io/instance=rs -o jsonpath='{range .items[*]}{.metadata.name} {.status.podIP}{"\n"}{end}' 2>/dev/null; }
seeds() { pods | awk '{printf "%s%s:6379", (NR > 1 ? "," : ""), $2}'; }
any_ip() { pods | awk 'NR == 1 {print $2}'; }
settled() { # every node ok and nothing to move (operator) / nothing open (redis-cli)
    redis-cli --cluster check "$(any_ip):6379" 2>&1 | grep -q '\[OK\] All 16384 slots covered' &&
        ! redis-cli --cluster check "$(any_ip):6379" 2>&1 | grep -qE '\[WARNING\]|\[ERR\]'
}
keys_total() { local n=0 ip; for ip in $(pods | awk '{print $2}'); do
        [ "$(redis-cli -h "$ip" role | head -1)" = master ] && n=$((n + $(redis-cli -h "$ip" dbsize))); done; echo "$n"; }
shard3_master() { local ip; for ip in $(kubectl -n "$ns" get pods -l app.kubernetes.io/instance=rs,cache.example.com/shard=3 -o jsonpath='{range .items[*]}{.status.podIP}{"\n"}{end}'); do
        [ "$(redis-cli -h "$ip" role | head -1)" = master ] && { echo "$ip"; return; }; done; }
writer_start() {
    : >"$work/cw.events"
    _fo_start "$work/cw.pid" "$work/cw.out" "$work/cw.err" "$CW" write --seeds "$(seeds)" --acks "$work/cw.acks" \
        --events "$work/cw.events" --prefix "w$1-" --rate "$RATE" --replicas 0
}
writer_summary() { _fo_stop "$work/cw.pid" 10; grep -m1 'longest_gap_ms=' "$work/cw.out"; }
# Redis's own latency monitor on every node, from the writer's start (events over 5 ms: a
# fork, a slow command, the cluster bus's nodes.conf fsync is not one of them).
latency_start() { local ip; for ip in $(pods | awk '{print $2}'); do
        redis-cli -h "$ip" config set latency-monitor-threshold 5 slowlog-log-slower-than 5000 >/dev/null
        redis-cli -h "$ip" latency reset >/dev/null; redis-cli -h "$ip" slowlog reset >/dev/null; done; }
# The commands that ran 5 ms or longer on any node since latency_start (SLOWLOG), the
# longest first: "<ms>ms:<command>@<node>;..." (which command held a node: a MIGRATE waiting
# on its target, an EXEC, a CLUSTER NODES...).
slow_commands() { local ip; for ip in $(pods | awk '{print $2}'); do
        redis-cli -h "$ip" --json slowlog get 128 2>/dev/null | jq -r --arg ip "$ip" '.[] | "\(.[2] / 1000 | floor)ms:\(.[3][0:2] | join(" "))@\($ip)"'
    done | sort -t m -k1,1nr | head -12 | paste -sd';'; }
# "event=max_ms@node ..." of LATENCY LATEST over every node, the largest max per event.
latency_summary() { local ip; for ip in $(pods | awk '{print $2}'); do
        redis-cli -h "$ip" --no-raw latency latest 2>/dev/null | paste -sd' ' | sed "s/\$/ @$ip/"; done |
        python3 -c '
import re, sys
best = {}
for line in sys.stdin:
    ip = line.rsplit("@", 1)[-1].strip()
    for ev, _ts, _last, mx in re.findall(r"\"([a-z-]+)\"\s+2\) \(integer\) (\d+)\s+3\) \(integer\) (\d+)\s+4\) \(integer\) (\d+)", line):
        if int(mx) > best.get(ev, (0, ""))[0]:
            best[ev] = (int(mx), ip)
print(" ".join("%s=%d@%s" % (k, v[0], v[1]) for k, v in sorted(best.items())) or "none")'; }
# The writer's slow SETs (over 20 ms: clusterwriter's "slow" events) as "+<ms since t0>:<ms>@<addr>".
slow_sets() { jq -r --argjson t0 "$1" 'select(.ev == "slow") | "+\(.t - $t0):\(.ms)@\(.addr)"' "$work/cw.events" | paste -sd' '; }
empty_shard3() { # redis-cli moves every slot off shard 3's master (the starting point)
    local m
    m=$(shard3_master)
    redis-cli --cluster rebalance "$(any_ip):6379" --cluster-weight "$(redis-cli -h "$m" cluster myid)=0" \
        --cluster-yes >"$work/empty-$1.out" 2>&1
    wait_until 120 settled
}

# ---- 1. the cluster and the data -------------------------------------------------------------
rc_apply_cluster rs "$ns" 4 5s "${PERSISTENCE:+  persistence: $PERSISTENCE}"
sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
wait_until 600 bash -c "kubectl -n $ns get rdc rs -o jsonpath='{.status.phase}' | grep -qx Running" ||
    { log "the cluster did not come up"; exit 1; }
count=$((DATA / VALUE_BYTES))
t0=$(now_ms)
out=$("$CW" fill --seeds "$(seeds)" --count "$count" --prefix d: --value-bytes "$VALUE_BYTES" 2>&1)
log "fill: $out ($(( $(now_ms) - t0 )) ms)"
sup_stop 10
empty_shard3 start || { log "redis-cli could not empty shard 3"; exit 1; }
keys0=$(keys_total)
log "starting point: 3 masters hold $keys0 keys, shard 3 empty"

# ---- 2. redis-cli --cluster rebalance ---------------------------------------------------------
latency_start
writer_start cli
sleep 2
t0=$(now_ms)
redis-cli --cluster rebalance "$(any_ip):6379" --cluster-use-empty-masters --cluster-yes >"$work/cli.out" 2>&1
rc=$?
wait_until 120 settled
t1=$(now_ms)
sum_cli=$(writer_summary)
gap_cli=$(sed -n 's/.*longest_gap_ms=\([0-9]*\).*/\1/p' <<<"$sum_cli")
keys_cli=$(keys_total)
log "redis-cli: exit $rc, $((t1 - t0)) ms, longest pause $gap_cli ms, keys $keys_cli"
slow_cli=$(slow_sets "$t0") lat_cli=$(latency_summary) cmds_cli=$(slow_commands)
log "redis-cli: SETs over 20 ms (ms after its start): $slow_cli"
log "redis-cli: the nodes' latency monitor (max ms): $lat_cli"
log "redis-cli: the nodes' commands over 5 ms (SLOWLOG): $cmds_cli"
empty_shard3 again || { log "redis-cli could not empty shard 3 again"; exit 1; }

# ---- 3. the operator ----------------------------------------------------------------------------
latency_start
writer_start op
sleep 2
t2=$(now_ms)
sup_start "$BIN" "$work/rt2" "$work/operator2.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
wait_until "$WAIT_S" bash -c "kubectl -n $ns get rdc rs -o json | jq -e '.status.cluster.slotsToMove == 0 and .status.phase == \"Running\"' >/dev/null" ||
    log "the operator did not finish within $WAIT_S s"
wait_until 120 settled
t3=$(now_ms)
sum_op=$(writer_summary)
gap_op=$(sed -n 's/.*longest_gap_ms=\([0-9]*\).*/\1/p' <<<"$sum_op")
keys_op=$(keys_total)
moves=$(grep -c '"msg":"slots moved"' "$work/operator2.log")
first=$(grep -m1 '"msg":"slots moved"' "$work/operator2.log" | jq -r .ts)
log "operator: $((t3 - t2)) ms from its start ($moves slot moves, the first ended at $first), longest pause $gap_op ms, keys $keys_op"
slow_op=$(slow_sets "$t2") lat_op=$(latency_summary) cmds_op=$(slow_commands)
log "operator: SETs over 20 ms (ms after its start): $slow_op"
log "operator: its slot moves (ms after its start, each run's end): $(jq -r --argjson t0 "$t2" 'select(.msg == "slots moved") | (.ts | sub("\\.[0-9]+Z$"; "Z") | fromdate * 1000) - $t0' "$work/operator2.log" 2>/dev/null | paste -sd' ')"
log "operator: the nodes' latency monitor (max ms): $lat_op"
log "operator: the nodes' commands over 5 ms (SLOWLOG): $cmds_op"

out=${RB_OUT:-bench/results/reshard-$(date -u +%F)-$(git rev-parse --short HEAD).json}
python3 - "$out" "$DATA" "$VALUE_BYTES" "$keys0" "$t0" "$t1" "$gap_cli" "$keys_cli" "$t2" "$t3" "$gap_op" "$keys_op" "$la1" \
    "$sum_cli" "$sum_op" "$slow_cli" "$lat_cli" "$slow_op" "$lat_op" "$cmds_cli" "$cmds_op" <<'PY'
import json, os, sys
out, data, vb, keys0, t0, t1, gcli, kcli, t2, t3, gop, kop, la, scli, sop, slcli, ltcli, slop, ltop, ccli, cop = sys.argv[1:]
slots = 4096
rows = []
def writer(line):  # the writer's summary line, "name=value ..." (numbers)
    w = {}
    for f in line.split():
        k, _, v = f.partition("=")
        try:
            w[k] = float(v) if "." in v else int(v)
        except ValueError:
            pass
    return w
for name, a, b, gap, keys, summary, slow, lat, cmds in (
        ("redis-cli --cluster rebalance", t0, t1, gcli, kcli, scli, slcli, ltcli, ccli),
        ("operator (from its start)", t2, t3, gop, kop, sop, slop, ltop, cop)):
    s = (int(b) - int(a)) / 1000.0
    moved = int(keys0) // 4  # a quarter of the keys goes to the fourth shard
    rows.append({"system": name, "seconds": s, "slots_per_s": slots / s, "keys_per_s": moved / s,
                 "longest_pause_ms": int(gap or -1), "keys_after": int(keys), "writer": writer(summary),
                 "slow_sets": slow.split(), "redis_latency_max_ms": lat, "slow_commands": [c for c in cmds.split(";") if c]})
json.dump({"data_bytes": int(data), "value_bytes": int(vb), "keys": int(keys0), "rows": rows, "load_at_start": la,
           "persistence": os.environ.get("PERSISTENCE") or "aof (the default)"},
          open(out, "w"), indent=1)
def ms(w, k):
    return "%.1f ms" % w[k] if k in w else "n/a"
def n(w, k):
    return "%d" % w[k] if k in w else "n/a"
print("### 3 -> 4 shards, %.2f GiB in %d keys of %d bytes (a quarter moves: 4096 slots), persistence %s\n" % (
    int(data) / 2**30, int(keys0), int(vb), os.environ.get("PERSISTENCE") or "aof (the default)"))
print("SET latency: a SET's first send to Redis accepting it (MOVED/ASK, retries included), the writer's whole run.\n")
print("| system | time | slots/s | keys/s | longest pause of a SET writer | SET p99 | SET p99.9 | longest SET "
      "| SETs > 10 ms | SETs > 50 ms | SETs | keys after |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    w = r["writer"]
    print("| %s | %.1f s | %.0f | %.0f | %d ms | %s | %s | %s | %s | %s | %s | %d |" % (
        r["system"], r["seconds"], r["slots_per_s"], r["keys_per_s"], r["longest_pause_ms"], ms(w, "set_p99_ms"),
        ms(w, "set_p999_ms"), ms(w, "set_max_ms"), n(w, "set_over_10ms"), n(w, "set_over_50ms"), n(w, "acked"),
        r["keys_after"]))
print("\nresults: %s" % out)
PY
