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
#      defaults: pipeline 10 keys a MIGRATE), timed until shard 3 holds its quarter and
#      nothing is open; back to the starting point (2).
#   4. the operator started again (spec.cluster.shards is 4): timed from its start to
#      status.cluster.slotsToMove 0, shard 3 holding its quarter and nothing open; stopped,
#      back to the starting point (2).
#   3 and 4 are one trial; TRIALS trials run, redis-cli first in odd ones and the operator
#   first in even ones, and the report gives each trial and the medians (the longest pause
#   is one sample of a tail: a single trial says little about which mover holds clients
#   longer, see bench/README.md "The longest pause").
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
# Knobs: DATA=1073741824 VALUE_BYTES=1024 RATE=200 TRIALS=1 CB_CLUSTER_DIR=/tmp/rdc-cluster-rbench
#   PERSISTENCE=none|rdb|aof (spec.persistence; unset: the default, aof with snapshots: a
#   snapshot's fork stalls its node for tens of ms, at a time neither mover chooses, and
#   the latency monitor's "fork" says when one did; none leaves the movers alone)
#   BATCH_BYTES=<n> (spec.cluster.migration.batchBytes; unset: the default, 1 MiB, whose
#   pipelines of MIGRATEs carry 64 KiB; a smaller one bounds a pipeline to it)
#   BYTES_PER_SECOND=<n> (spec.cluster.migration.bytesPerSecond; unset: the operator's default,
#   RDC_SPEC_DEFAULT_MIGRATION_RATE of common/rdc_spec.h; 0: unpaced)
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
TRIALS=${TRIALS:-1}
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
bench_crds || exit 1
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
# "event=max_ms@node ..." of LATENCY LATEST: every event of every node, the largest first.
latency_summary() { local ip; for ip in $(pods | awk '{print $2}'); do
        redis-cli -h "$ip" --no-raw latency latest 2>/dev/null | paste -sd' ' | sed "s/\$/ @$ip/"; done |
        python3 -c '
import re, sys
seen = []
for line in sys.stdin:
    ip = line.rsplit("@", 1)[-1].strip()
    for ev, _ts, _last, mx in re.findall(r"\"([a-z-]+)\"\s+2\) \(integer\) (\d+)\s+3\) \(integer\) (\d+)\s+4\) \(integer\) (\d+)", line):
        seen.append((int(mx), ev, ip))
print(" ".join("%s=%d@%s" % (ev, mx, ip) for mx, ev, ip in sorted(seen, reverse=True)) or "none")'; }
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
# The rate the operator's moves keep, for the report: BYTES_PER_SECOND, else its default.
rate_default=$(sed -n 's/^#define RDC_SPEC_DEFAULT_MIGRATION_RATE INT64_C(\([0-9]*\))$/\1/p' common/rdc_spec.h)
[ -n "$rate_default" ] || { log "no RDC_SPEC_DEFAULT_MIGRATION_RATE in common/rdc_spec.h"; exit 1; }
export RB_RATE=${BYTES_PER_SECOND:-$rate_default}
case ${BYTES_PER_SECOND-unset} in
unset) export RB_RATE_LABEL="$rate_default (the default)" ;;
0) export RB_RATE_LABEL="0 (unpaced)" ;;
*) export RB_RATE_LABEL=$BYTES_PER_SECOND ;;
esac
rc_apply_cluster rs "$ns" 4 5s "${PERSISTENCE:+  persistence: $PERSISTENCE}"
migration=${BATCH_BYTES:+\"batchBytes\":$BATCH_BYTES}
[ -n "${BYTES_PER_SECOND:-}" ] && migration="${migration:+$migration,}\"bytesPerSecond\":$BYTES_PER_SECOND"
[ -n "$migration" ] && kubectl -n "$ns" patch rdc rs --type merge \
    -p "{\"spec\":{\"cluster\":{\"migration\":{$migration}}}}" >/dev/null
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

# the slots a master (an IP) owns, from its own CLUSTER NODES line
slots_of() { redis-cli -h "$1" cluster nodes 2>/dev/null | awk '/myself/ {n = 0; for (i = 9; i <= NF; i++) {
        if ($i ~ /^\[/) continue; k = split($i, r, "-"); n += (k == 2 ? r[2] - r[1] + 1 : 1) } print n }'; }
# the move is done: shard 3's master (IP $1) holds its quarter (within a slot or two of
# 4096). One CLUSTER NODES to one node every half second while a mover works, the same for
# both: no kubectl (a Go process and an API read each time) on the machine meanwhile.
quarter_in() { [ "$(slots_of "$1")" -ge 4090 ] 2>/dev/null; }
# CPU seconds by process name of every process now, the machine's busy CPU seconds and the
# CPU and IO pressure totals (µs some task waited for a CPU, for IO): what else ran while a
# mover worked, and how long runnable tasks (a Redis server, the writer) waited for a core.
cpu_snapshot() { python3 - >"$1" <<'PY'
import glob, os
hz = os.sysconf("SC_CLK_TCK")
by = {}
for f in glob.glob("/proc/[0-9]*/stat"):
    try:
        t = open(f).read()
    except OSError:
        continue
    name, rest = t[t.index("(") + 1:t.rindex(")")], t[t.rindex(")") + 2:].split()
    by[name] = by.get(name, 0) + (int(rest[11]) + int(rest[12])) / hz
    try:  # the main thread's time runnable but waiting for a CPU (ns), by process name
        wait = int(open(f[:-4] + "schedstat").read().split()[1]) / 1e9
        by["~wait:" + name] = by.get("~wait:" + name, 0) + wait
    except (OSError, IndexError, ValueError):
        pass
cpu = open("/proc/stat").readline().split()[1:]
by["@busy"] = (sum(int(x) for x in cpu[:8]) - int(cpu[3]) - int(cpu[4])) / hz
for kind in ("cpu", "io"):
    try:
        some = open("/proc/pressure/%s" % kind).readline().split()
        by["@psi_%s_some_s" % kind] = int(some[-1].split("=")[1]) / 1e6
    except OSError:
        pass
for k, v in sorted(by.items()):
    print("%s\t%.3f" % (k, v))
PY
}
# record NAME TRIAL T0 T1 NOTE [OPLOG]: the writer's summary, the keys, what held a node;
# logged, and kept as $work/trial-<TRIAL>-<cli|op>.json for the report
record() {
    local sum gap keys slow lat cmds tag=cli runs=""
    [ -n "${6:-}" ] && tag=op
    sum=$(writer_summary)
    gap=$(sed -n 's/.*longest_gap_ms=\([0-9]*\).*/\1/p' <<<"$sum")
    keys=$(keys_total)
    slow=$(slow_sets "$3") lat=$(latency_summary) cmds=$(slow_commands)
    log "$1, trial $2: $(($4 - $3)) ms ($5), longest pause $gap ms, keys $keys"
    log "$1, trial $2: SETs over 20 ms (ms after its start): $slow"
    [ -n "${6:-}" ] && runs=$(jq -r --argjson t0 "$3" 'select(.msg == "slots moved") | (.ts | sub("\\.[0-9]+Z$"; "Z") | fromdate * 1000) - $t0' "$6" 2>/dev/null | paste -sd' ') &&
        log "$1, trial $2: its slot move runs (ms after its start, each run's end, to the second): $runs"
    log "$1, trial $2: the nodes' latency monitor (max ms): $lat"
    log "$1, trial $2: the nodes' commands over 5 ms (SLOWLOG): $cmds"
    python3 - "$work/trial-$2-$tag.json" "$1" "$2" "$3" "$4" "$gap" "$keys" "$sum" "$slow" "$lat" "$cmds" \
        "$work/cpu-$2-$tag.0" "$work/cpu-$2-$tag.1" "${move_ok:-0}" <<'PY'
import json, sys
out, name, trial, a, b, gap, keys, summary, slow, lat, cmds, c0, c1, ok = sys.argv[1:]
def snap(f):
    d = {}
    for line in open(f):
        k, _, v = line.rstrip("\n").rpartition("\t")
        d[k] = float(v)
    return d
s0, s1 = snap(c0), snap(c1)
groups = {"redis": ("redis-server",), "operator": ("supervisor", "informerd", "workerd", "observerd", "electord",
                                                 "metricsd", "webhookd"),
          "control_plane": ("etcd", "kube-apiserver", "kube-controller", "kube-scheduler", "kwok", "rdc-pod-runtime"),
          "writer": ("clusterwriter",), "redis_cli": ("redis-cli",)}
cpu = {g: round(sum(s1.get(n, 0) - s0.get(n, 0) for n in names), 2) for g, names in groups.items()}
cpu["machine"] = round(s1.get("@busy", 0) - s0.get("@busy", 0), 2)
# how long the Redis servers' and the writer's main threads were runnable without a CPU
waited = {g: round(sum(s1.get("~wait:" + n, 0) - s0.get("~wait:" + n, 0) for n in groups[g]), 2)
          for g in ("redis", "writer")}
w = {}
for f in summary.split():  # the writer's summary line, "name=value ..." (numbers)
    k, _, v = f.partition("=")
    try:
        w[k] = float(v) if "." in v else int(v)
    except ValueError:
        pass
s = (int(b) - int(a)) / 1000.0
json.dump({"system": name, "trial": int(trial), "complete": ok == "1", "seconds": s, "longest_pause_ms": int(gap or -1),
           "keys_after": int(keys), "writer": w, "slow_sets": slow.split(), "redis_latency_max_ms": lat,
           "slow_commands": [c for c in cmds.split(";") if c], "cpu_s": cpu,
           "runqueue_wait_s": waited,
           "cpu_pressure_pct": round(100 * (s1.get("@psi_cpu_some_s", 0) - s0.get("@psi_cpu_some_s", 0)) / s, 1),
           "io_pressure_pct": round(100 * (s1.get("@psi_io_some_s", 0) - s0.get("@psi_io_some_s", 0)) / s, 1)},
          open(out, "w"))
PY
}
# One measured move from the starting point, each with its own writer (its keys' prefix
# names the trial) and Redis's latency monitor and SLOWLOG reset on every node.
# move_begin TAG TRIAL: shard 3's master (m3), Redis's latency monitor and SLOWLOG reset, a
# writer of the trial's own keys, the CPU counters; t0 is the move's start.
move_begin() {
    m3=$(shard3_master) move_ok=1
    latency_start
    writer_start "$1$2"
    sleep 2
    cpu_snapshot "$work/cpu-$2-$1.0"
    t0=$(now_ms)
}
# move_end TAG TRIAL WHO WAIT_S: until shard 3 holds its quarter (a move that does not get
# there within WAIT_S is logged and its row marked incomplete: it is in no median); t1.
move_end() {
    wait_until "$4" quarter_in "$m3" || { move_ok=0; log "$3, trial $2: shard 3 did not get its quarter within $4 s"; }
    t1=$(now_ms)
    cpu_snapshot "$work/cpu-$2-$1.1"
}
measure_cli() {
    local rc
    move_begin cli "$1"
    /usr/bin/time -f "%U %S" -o "$work/cli-$1.time" \
        redis-cli --cluster rebalance "$(any_ip):6379" --cluster-use-empty-masters --cluster-yes >"$work/cli-$1.out" 2>&1
    rc=$?
    move_end cli "$1" redis-cli 120
    # redis-cli has exited by the second snapshot: its CPU seconds from time(1) (the last line:
    # a failed run's first says how it exited)
    printf 'redis-cli\t%s\n' "$(awk 'END {print $1 + $2}' "$work/cli-$1.time" 2>/dev/null || echo 0)" >>"$work/cpu-$1-cli.1"
    wait_until 120 settled || log "redis-cli, trial $1: redis-cli --cluster check is not clean"
    record "redis-cli --cluster rebalance" "$1" "$t0" "$t1" "exit $rc"
}
measure_op() { # the operator started (spec.cluster.shards is 4) until it has moved the quarter; stopped
    local moves
    move_begin op "$1"
    sup_start "$BIN" "$work/rt-$1" "$work/operator-$1.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
    move_end op "$1" operator "$WAIT_S"
    wait_until 60 bash -c "kubectl -n $ns get rdc rs -o json | jq -e '.status.cluster.slotsToMove == 0 and .status.phase == \"Running\"' >/dev/null" ||
        log "operator, trial $1: its status did not say slotsToMove 0, Running"
    wait_until 120 settled || log "operator, trial $1: redis-cli --cluster check is not clean"
    sup_stop 10
    moves=$(grep -c '"msg":"slots moved"' "$work/operator-$1.log")
    record "operator (from its start)" "$1" "$t0" "$t1" "$moves slot move runs" "$work/operator-$1.log"
}

# ---- 2. the trials: redis-cli --cluster rebalance and the operator, each from the starting point
# (shard 3 emptied by redis-cli, the operator stopped), the order alternating: cli first in
# odd trials, the operator first in even ones, so that what drifts on the machine hits both.
k=1
while [ "$k" -le "$TRIALS" ]; do
    order="cli op"
    [ $((k % 2)) = 0 ] && order="op cli"
    for sys in $order; do
        "measure_$sys" "$k"
        [ "$k" = "$TRIALS" ] && [ "$sys" = "${order##* }" ] && break
        empty_shard3 "$k-$sys" || { log "redis-cli could not empty shard 3 after trial $k ($sys)"; exit 1; }
    done
    k=$((k + 1))
done

out=${RB_OUT:-bench/results/reshard-$(date -u +%F)-$(git rev-parse --short HEAD).json}
python3 - "$out" "$DATA" "$VALUE_BYTES" "$keys0" "$la1" "$work" <<'PY'
import glob, json, os, statistics, sys
out, data, vb, keys0, la, work = sys.argv[1:]
slots = 4096
moved = int(keys0) // 4  # a quarter of the keys goes to the fourth shard
rows = []
for f in sorted(glob.glob(os.path.join(work, "trial-*-*.json")), key=lambda f: (int(f.split("-")[-2]), f)):
    r = json.load(open(f))
    r["slots_per_s"], r["keys_per_s"] = slots / r["seconds"], moved / r["seconds"]
    rows.append(r)
systems = ("redis-cli --cluster rebalance", "operator (from its start)")
def col(name, get):  # a move that did not finish is in no median
    v = [get(r) for r in rows if r["system"] == name and r.get("complete", True) and get(r) is not None]
    return statistics.median(v) if v else None
figures = (("seconds", lambda r: r["seconds"]), ("slots_per_s", lambda r: r["slots_per_s"]),
           ("keys_per_s", lambda r: r["keys_per_s"]), ("longest_pause_ms", lambda r: r["longest_pause_ms"]),
           ("set_p99_ms", lambda r: r["writer"].get("set_p99_ms")), ("set_p999_ms", lambda r: r["writer"].get("set_p999_ms")),
           ("set_max_ms", lambda r: r["writer"].get("set_max_ms")), ("set_over_10ms", lambda r: r["writer"].get("set_over_10ms")))
medians = {name: {k: col(name, g) for k, g in figures} for name in systems}
trials = sorted({r["trial"] for r in rows})
def of(name, t):
    return next((r for r in rows if r["system"] == name and r["trial"] == t), None)
pairs = [(of(systems[0], t), of(systems[1], t)) for t in trials]
pairs = [(c, o) for c, o in pairs if c and o and c.get("complete", True) and o.get("complete", True)]
shorter = sum(1 for c, o in pairs if o["longest_pause_ms"] < c["longest_pause_ms"])
faster = sum(1 for c, o in pairs if o["seconds"] < c["seconds"])
json.dump({"data_bytes": int(data), "value_bytes": int(vb), "keys": int(keys0), "trials": len(trials), "rows": rows,
           "medians": medians, "operator_shorter_longest_pause": shorter, "operator_faster": faster,
           "load_at_start": la, "persistence": os.environ.get("PERSISTENCE") or "aof (the default)",
           "batch_bytes": int(os.environ.get("BATCH_BYTES") or 0) or "1048576 (the default)",
           "bytes_per_second": int(os.environ["RB_RATE"])},
          open(out, "w"), indent=1)
def ms(v):
    return "%.1f ms" % v if v is not None else "n/a"
def n(v):
    return "%d" % v if v is not None else "n/a"
print("### 3 -> 4 shards, %.2f GiB in %d keys of %d bytes (a quarter moves: 4096 slots), persistence %s, "
      "batchBytes %s, bytesPerSecond %s, %d trial(s)\n" % (
          int(data) / 2**30, int(keys0), int(vb), os.environ.get("PERSISTENCE") or "aof (the default)",
          os.environ.get("BATCH_BYTES") or "1 MiB (the default)", os.environ["RB_RATE_LABEL"],
          len(trials)))
print("SET latency: a SET's first send to Redis accepting it (MOVED/ASK, retries included), the writer's whole run.\n")
print("CPU s during the move: Redis servers / the mover (the operator's daemons, or redis-cli) / the control plane "
      "/ the whole machine (2 cores: at most 2 a second); CPU pressure: the share of the move's time some runnable "
      "task waited for a core (/proc/pressure/cpu); run-queue wait: seconds the Redis servers' main threads (summed) "
      "and the writer's were runnable without a core (/proc/<pid>/schedstat).\n")
print("| trial | system | time | slots/s | keys/s | longest pause of a SET writer | SET p99 | SET p99.9 | longest SET "
      "| SETs > 10 ms | SETs > 50 ms | SETs | keys after | CPU s | CPU pressure | run-queue wait: Redis / writer |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
def cpu_of(r):
    c = r.get("cpu_s") or {}
    mover = c.get("operator" if r["system"].startswith("operator") else "redis_cli")
    return "%s / %s / %s / %s" % tuple("%.1f" % v if v is not None else "n/a" for v in (
        c.get("redis"), mover, c.get("control_plane"), c.get("machine")))
for r in rows:
    w = r["writer"]
    rq = r.get("runqueue_wait_s") or {}
    print("| %d | %s | %.1f s | %.0f | %.0f | %d ms | %s | %s | %s | %s | %s | %s | %d | %s | %s %% | %s / %s s |" % (
        r["trial"], r["system"] + ("" if r.get("complete", True) else " (did not finish)"), r["seconds"], r["slots_per_s"], r["keys_per_s"], r["longest_pause_ms"],
        ms(w.get("set_p99_ms")), ms(w.get("set_p999_ms")), ms(w.get("set_max_ms")), n(w.get("set_over_10ms")),
        n(w.get("set_over_50ms")), n(w.get("acked")), r["keys_after"], cpu_of(r), r.get("cpu_pressure_pct", "n/a"),
        rq.get("redis", "n/a"), rq.get("writer", "n/a")))
if len(trials) > 1:
    print("\nMedians over the trials:\n")
    print("| system | time | slots/s | keys/s | longest pause | SET p99 | SET p99.9 | longest SET | SETs > 10 ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in systems:
        m = medians[name]
        print("| %s | %s s | %s | %s | %s | %s | %s | %s | %s |" % (
            name, "%.1f" % m["seconds"] if m["seconds"] else "n/a", n(m["slots_per_s"]), n(m["keys_per_s"]),
            ms(m["longest_pause_ms"]), ms(m["set_p99_ms"]), ms(m["set_p999_ms"]), ms(m["set_max_ms"]),
            n(m["set_over_10ms"])))
print("\nthe operator faster in %d of %d trials, its longest pause shorter in %d of %d" % (faster, len(pairs), shorter, len(pairs)))
print("results: %s" % out)
PY
