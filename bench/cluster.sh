#!/usr/bin/env bash
# bench/cluster.sh: Cluster mode (docs/cluster-mode.md) on the pod runtime of tests/cluster
# (real redis-server processes, cluster-enabled), side by side with redis-cli's own cluster
# manager on the same pods. `make bench-cluster` runs it; bench/README.md has the tables.
#
#   bootstrap  for each S in SHARDS (r = REPLICAS): a RedisCluster (mode Cluster, S x r) is
#              applied with this checkout's operator running; bench/clusterwait.py polls
#              every pod: t_ping (every pod answers PING) and t_ok (every node
#              cluster_state:ok with 16384 slots ok and S x (1 + r) nodes known, S masters
#              with r linked replicas each: the same rule for both sides). Then the operator
#              is stopped, every node reset (FLUSHALL, CLUSTER RESET HARD) and the same
#              topology created by hand on the same pods with
#              `redis-cli --cluster create ... --cluster-replicas r --cluster-yes`, timed
#              from the command to t_ok. Printed: apply -> t_ok, t_ping -> t_ok (the
#              operator's own part), redis-cli's create -> t_ok.
#   failover   S = 3, r = 1: TRIALS SIGKILLs of a shard primary's redis-server under a
#              bench/clusterwriter SET writer (no WAIT: a write is accepted when the new
#              primary takes it), with the operator running and then with it stopped (Redis
#              Cluster alone: the operator only moves labels and status). Per trial: kill ->
#              Redis promotes the replica (ROLE polled every 50 ms), -> the first write
#              accepted for the shard after the kill (the writer retries a failed key, so
#              it stalls on the dead shard until then), -> the role label (operator only).
#
# Knobs: SHARDS="3 6 10" REPLICAS=1 TRIALS=3 DOWN_AFTER_MS=2000 (cluster-node-timeout)
#   BOOT_WAIT=300 RECOVER_WAIT=180 RATE=200 CB_CLUSTER_DIR=/tmp/rdc-cluster-cbench
#   RDC_POD_CIDR=127.72.0.0/16 (when this script starts the control plane) CB_KEEP_CLUSTER=1
#   CB_OUT=<file> (default bench/results/cluster-<date>-<sha>.json). PARTS="bootstrap failover".
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
SHARDS=${SHARDS:-3 6 10}
REPLICAS=${REPLICAS:-1}
TRIALS=${TRIALS:-3}
DOWN_AFTER_MS=${DOWN_AFTER_MS:-2000}
BOOT_WAIT=${BOOT_WAIT:-300}
RECOVER_WAIT=${RECOVER_WAIT:-180}
RATE=${RATE:-200}
PARTS=${PARTS:-bootstrap failover}
# shellcheck source=lib_cluster.sh
. bench/lib_cluster.sh
bench_cluster_start cluster /tmp/rdc-cluster-cbench 127.72.0.0/16
work=$(mktemp -d /tmp/rdc-bench-cluster.XXXXXX)
results=$work/results.jsonl
: >"$results"
started=0 ns=
cleanup() {
    _fo_stop "$work/cw.pid" 5
    [ -n "$ns" ] && teardown_ns "$ns"
    sup_stop 5
    if [ "$started" = 1 ] && [ "${CB_KEEP_CLUSTER:-0}" != 1 ]; then "$cluster" down >&2 || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_cluster_up
bench_crds || { log "CRD not established"; exit 1; }

# record KEY=VALUE...: one JSON line into results.jsonl (integers stay numbers).
record() { json_line "$@" >>"$results"; }
jget() { python3 -c 'import json,sys; v=json.loads(sys.argv[1]).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2"; }

# new_ns WHAT: a namespace pinned to the process nodes, its default ServiceAccount there.
new_ns() {
    ns=rdc-bench-cl-$1-$$
    kubectl create namespace "$ns" >/dev/null && "$cluster" pin-namespace "$ns" >/dev/null &&
        wait_until 20 kubectl -n "$ns" get serviceaccount default
}
# teardown_ns NS: the RedisCluster deleted (its finalizer taken off when no operator runs
# it), the namespace deleted without waiting.
teardown_ns() {
    kubectl -n "$1" delete rdc --all --timeout=30s >/dev/null 2>&1 ||
        for r in $(kubectl -n "$1" get rdc -o name 2>/dev/null); do
            kubectl -n "$1" patch "$r" --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
        done
    kubectl delete namespace "$1" --wait=false >/dev/null 2>&1
    ns=
}
apply_rc() { # NAME SHARDS REPLICAS
    local size=$(($2 * (1 + $3)))
    rc_yaml "$1" "$ns" <<YAML | kubectl apply -f - >/dev/null
  mode: Cluster
  size: $size
  image: redis
  version: "7.2"
  cluster: {shards: $2, replicasPerShard: $3}
  failover: {downAfter: ${DOWN_AFTER_MS}ms}
YAML
}
# pod_addrs NAME N: the H:6379 of NAME's N pods, comma separated, once all N have an IP.
pod_addrs() {
    local end=$((SECONDS + BOOT_WAIT)) out
    while [ "$SECONDS" -lt "$end" ]; do
        out=$(kubectl -n "$ns" get pods -l "app.kubernetes.io/instance=$1" \
            -o jsonpath='{range .items[*]}{.status.podIP}{"\n"}{end}' 2>/dev/null | grep -c .)
        if [ "$out" = "$2" ]; then
            kubectl -n "$ns" get pods -l "app.kubernetes.io/instance=$1" \
                -o jsonpath='{range .items[*]}{.status.podIP}:6379{","}{end}' | sed 's/,$//'
            return 0
        fi
        sleep 0.2
    done
    return 1
}

# ------------------------------------------------------------------ bootstrap
bootstrap_one() {
    local s=$1 r=$REPLICAS n=$(($1 * (1 + REPLICAS))) t_apply addrs op hand t_cmd
    new_ns "s$s" || { record part=bootstrap shards="$s" outcome="namespace not ready"; return; }
    sup_start "$BIN" "$work/rt-$s" "$work/operator-$s.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
    t_apply=$(now_ms)
    apply_rc bc "$s" "$r"
    if ! addrs=$(pod_addrs bc "$n"); then
        record part=bootstrap shards="$s" outcome="pods without IPs after ${BOOT_WAIT} s"
        sup_stop 5; teardown_ns "$ns"; return
    fi
    op=$(python3 bench/clusterwait.py --addrs "$addrs" --shards "$s" --replicas "$r" --timeout "$BOOT_WAIT" --since-ms "$t_apply")
    log "S=$s operator: $op"
    local running
    running=$(kubectl -n "$ns" get rdc bc -o jsonpath='{.status.phase}' 2>/dev/null)
    sup_stop 10
    # the same pods, reset, and the topology made by hand
    local a
    for a in ${addrs//,/ }; do
        redis-cli -h "${a%:*}" flushall >/dev/null 2>&1
        redis-cli -h "${a%:*}" cluster reset hard >/dev/null 2>&1
    done
    wait_until 20 bash -c "for a in ${addrs//,/ }; do test \"\$(redis-cli -h \${a%:*} cluster info | tr -d '\r' | sed -n 's/^cluster_known_nodes://p')\" = 1 || exit 1; done"
    t_cmd=$(now_ms)
    # shellcheck disable=SC2086
    redis-cli --cluster create ${addrs//,/ } --cluster-replicas "$r" --cluster-yes >"$work/create-$s.out" 2>&1
    local rc=$? t_done
    t_done=$(now_ms)
    hand=$(python3 bench/clusterwait.py --addrs "$addrs" --shards "$s" --replicas "$r" --timeout "$BOOT_WAIT" --since-ms "$t_cmd")
    log "S=$s redis-cli --cluster create (exit $rc, returned after $((t_done - t_cmd)) ms): $hand"
    record part=bootstrap shards="$s" replicas="$r" pods="$n" t_apply="$t_apply" \
        op_t_ping="$(jget "$op" t_ping)" op_t_ok="$(jget "$op" t_ok)" op_why="$(jget "$op" why)" op_phase="$running" \
        cli_t_cmd="$t_cmd" cli_rc="$rc" cli_t_return="$t_done" cli_t_ok="$(jget "$hand" t_ok)" cli_why="$(jget "$hand" why)"
    teardown_ns "$ns"
}

# ------------------------------------------------------------------ failover
# healthy_again ADDRS: the cluster whole again (the killed node back as a replica).
healthy_again() {
    python3 bench/clusterwait.py --addrs "$1" --shards 3 --replicas 1 --timeout "$RECOVER_WAIT" >/dev/null
}
shard_pods() { # K: the shard's pods "name ip" lines
    kubectl -n "$ns" get pods -l "app.kubernetes.io/instance=fc,cache.example.com/shard=$1" \
        -o jsonpath='{range .items[*]}{.metadata.name} {.status.podIP}{"\n"}{end}'
}
failover_trial() { # SYSTEM TRIAL
    local sys=$1 t=$2 k=$(($2 % 3)) addrs primary= replica= pip= rip line name ip
    addrs=$(pod_addrs fc 6) || { record part=failover system="$sys" trial="$t" outcome="pods without IPs"; return; }
    healthy_again "$addrs" || { record part=failover system="$sys" trial="$t" outcome="not whole within ${RECOVER_WAIT} s"; return; }
    while read -r name ip; do
        [ -n "$name" ] || continue
        if [ "$(redis-cli -h "$ip" role 2>/dev/null | head -1)" = master ]; then primary=$name pip=$ip; else replica=$name rip=$ip; fi
    done <<<"$(shard_pods "$k")"
    [ -n "$primary" ] && [ -n "$replica" ] || { record part=failover system="$sys" trial="$t" outcome="shard $k has no primary/replica pair"; return; }
    : >"$work/cw.events"
    _fo_start "$work/cw.pid" "$work/cw.out" "$work/cw.err" "$CW" write --seeds "$addrs" --acks "$work/cw.acks" \
        --events "$work/cw.events" --prefix "f$t-" --rate "$RATE" --replicas 0
    wait_until 15 grep -q '"ev":"accept"' "$work/cw.events"
    sleep 1
    local t_kill t_prom= t_label= end
    t_kill=$(now_ms)
    "$cluster" pod-kill "$ns/$primary" redis >/dev/null 2>&1
    end=$((SECONDS + 60))
    while [ "$SECONDS" -lt "$end" ]; do
        [ -z "$t_prom" ] && [ "$(redis-cli -h "$rip" role 2>/dev/null | head -1)" = master ] && t_prom=$(now_ms)
        if [ "$sys" = operator ] && [ -z "$t_label" ] &&
            [ "$(kubectl -n "$ns" get pod "$replica" -o jsonpath='{.metadata.labels.cache\.example\.com/role}' 2>/dev/null)" = primary ]; then
            t_label=$(now_ms)
        fi
        [ -n "$t_prom" ] && { [ "$sys" != operator ] || [ -n "$t_label" ]; } && break
        sleep 0.05
    done
    sleep 2
    _fo_stop "$work/cw.pid" 5
    # the first write accepted after the first failure after the kill: the writer retries
    # the failed key, so this is the first write the dead shard's slots took again
    local t_acc
    t_acc=$(python3 - "$work/cw.events" "$t_kill" <<'PY'
import json, sys
t_kill, failed = int(sys.argv[2]), False
for line in open(sys.argv[1]):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e["t"] < t_kill:
        continue
    if e.get("ev") == "fail":
        failed = True
    elif e.get("ev") == "accept" and failed:
        print(e["t"]); break
PY
)
    record part=failover system="$sys" trial="$t" shard="$k" killed="$primary" promoted="$replica" \
        t_kill="$t_kill" t_promoted="${t_prom:-}" t_accept="${t_acc:-}" t_label="${t_label:-}" \
        outcome="$([ -n "$t_prom" ] && [ -n "$t_acc" ] && echo ok || echo "no failover within 60 s")"
    log "failover $sys $t: kill->promoted $(( ${t_prom:-0} - t_kill )) ms, ->accepted $(( ${t_acc:-0} - t_kill )) ms${t_label:+, ->label $((t_label - t_kill)) ms}"
}

failover_part() {
    new_ns fo || { record part=failover outcome="namespace not ready"; return; }
    sup_start "$BIN" "$work/rt-fo" "$work/operator-fo.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
    apply_rc fc 3 1
    local addrs t
    addrs=$(pod_addrs fc 6) && python3 bench/clusterwait.py --addrs "$addrs" --shards 3 --replicas 1 --timeout "$BOOT_WAIT" >/dev/null ||
        { record part=failover outcome="the cluster did not bootstrap"; sup_stop 5; teardown_ns "$ns"; return; }
    for ((t = 1; t <= TRIALS; t++)); do failover_trial operator "$t"; done
    sup_stop 10
    for ((t = 1; t <= TRIALS; t++)); do failover_trial redis-alone "$t"; done
    sup_start "$BIN" "$work/rt-fo2" "$work/operator-fo2.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns"
    teardown_ns "$ns"
    sup_stop 10
}

for p in $PARTS; do
    case $p in
    bootstrap) for s in $SHARDS; do bootstrap_one "$s"; done ;;
    failover) failover_part ;;
    *) log "unknown part $p" ;;
    esac
done

out=${CB_OUT:-bench/results/cluster-$(date -u +%F)-$(git rev-parse --short HEAD).json}
python3 - "$results" "$out" "$la1" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
json.dump({"rows": rows, "load_at_start": sys.argv[3]}, open(sys.argv[2], "w"), indent=1)
def d(r, a, b):
    return (r[b] - r[a]) / 1000.0 if isinstance(r.get(a), int) and isinstance(r.get(b), int) else None
def f(x):
    return "n/a" if x is None else "%.1f s" % x
print("### Bootstrap: to cluster_state:ok everywhere, replicas linked\n")
print("| shards x (1 + r) | operator: apply -> ok | operator: all pods answer -> ok | `redis-cli --cluster create` -> ok |")
print("|---|---|---|---|")
for r in rows:
    if r.get("part") == "bootstrap":
        if "outcome" in r:
            print("| %s | %s | | |" % (r.get("shards"), r["outcome"]))
            continue
        print("| %d x %d = %d | %s | %s | %s |" % (r["shards"], 1 + r["replicas"], r["pods"], f(d(r, "t_apply", "op_t_ok")),
              f(d(r, "op_t_ping", "op_t_ok")), f(d(r, "cli_t_cmd", "cli_t_ok"))))
print("\n### Failover of a shard primary (SIGKILL), 3 x 2 pods, cluster-node-timeout as downAfter\n")
print("| system | trials ok | kill -> promoted (median, max) | kill -> first write accepted (median, max) | kill -> label (median, max) |")
print("|---|---|---|---|---|")
for system in ("operator", "redis-alone"):
    tr = [r for r in rows if r.get("part") == "failover" and r.get("system") == system]
    ok = [r for r in tr if r.get("outcome") == "ok"]
    def mm(b):
        xs = [d(r, "t_kill", b) for r in ok if d(r, "t_kill", b) is not None]
        return "n/a" if not xs else "%.2f s, %.2f s" % (statistics.median(xs), max(xs))
    print("| %s | %d of %d | %s | %s | %s |" % (system, len(ok), len(tr), mm("t_promoted"), mm("t_accept"),
          mm("t_label") if system == "operator" else "(no labels)"))
print("\nresults: %s" % sys.argv[2])
PY
