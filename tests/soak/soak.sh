#!/usr/bin/env bash
# tests/soak/soak.sh: faults chosen at random from a seed, against the operator (two full
# replicas with leader election, every daemon under ASan and UBSan) and three RedisClusters
# on the pod runtime's real redis-server processes, each with a checked writer (issue 37).
#
#   sa   Standalone, size 1, appendfsync always: a write is acknowledged by SET's +OK
#        (bench/ackwriter --replicas 0), durable on the server's disk before the reply;
#   rep  Replication, size 3, failover.downAfter 2s: SET + WAIT 1 to the pod labelled
#        primary (bench/ackwriter following bench/labelsampler.py);
#   cm   Cluster mode, 3 shards x 1 replica, downAfter 2s: SET + WAIT 1 through a
#        cluster-aware client (bench/clusterwriter); SOAK_CLUSTER_MODE=0 leaves it out.
#
# The fault loop, for SOAK_SECONDS: a fault of a kind chosen at random (SOAK_FAULTS, all
# by default; a seeded shuffle of the kinds, each once per cycle), on a target chosen at
# random; with probability 1/4 a spec change of a
# cluster right after it (mid-fault: a run-time directive, or one that rolls the pods);
# then the time until every cluster is healthy again is measured (bounded by
# SOAK_RECOVER seconds: beyond it the round fails and the loop stops), and a pause of
# 1-5 s. Kinds:
#   redis-kill       SIGKILL of one pod's redis-server (cluster.sh pod-kill)
#   redis-freeze     SIGSTOP of one pod's redis-server for 3-8 s, then SIGCONT
#   pod-delete       kubectl delete pod
#   node-drain       kubectl drain of a process node (evictions, budgets respected), then
#                    uncordon
#   daemon-kill      SIGKILL of one daemon of one operator replica (its supervisor
#                    restarts it)
#   leader-kill      SIGKILL of the leader's whole supervisor process group; the replica
#                    is started again 2-6 s later
#   apiserver-restart  kube-apiserver stopped and started (cluster.sh restart-apiserver)
#   etcd-restart     etcd stopped and started (cluster.sh restart-etcd)
#
# Invariants, checked continuously and at the end:
#   - never two pods labelled primary for rep, nor for one shard of cm (labelsampler.py
#     watches each selector: two_events must be 0);
#   - no acknowledged write lost (every key read back at the end);
#   - every cluster healthy again within SOAK_RECOVER after each fault and at the end
#     (healthy: its own checks, the spec's generation observed, its StatefulSets rolled out);
#   - no sanitizer report of ours (ASan/UBSan log files) and no daemon that died of a
#     signal the soak did not send (the supervisors' "child exited" lines).
# The seed (SOAK_SEED, printed; random by default) reproduces the schedule: the kinds,
# the targets' indexes, the pauses. The result is a JSON file (SOAK_RESULT, default
# $work/result.json) and a table on stdout; the last line is "N passed, M failed".
#
# Needs the local control plane with process nodes (tests/cluster/cluster.sh up with
# RDC_CLUSTER_PROCESS_NODES=3, then `eval "$(tests/cluster/cluster.sh env)"`); builds
# the daemons under the sanitizers into build-asan/ (SOAK_ASAN=0: build/).
#   SOAK_SECONDS=1800 tests/soak/soak.sh          # by hand, 30 minutes
#   make soak                                     # the same with SOAK_SECONDS from make
set -uo pipefail
TOP=${RDC_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
export RDC_TOP=$TOP
. "$TOP/tests/e2e/lib.sh"
. "$TOP/tests/e2e/lib_failover.sh"

SOAK_SECONDS=${SOAK_SECONDS:-300}
SOAK_RECOVER=${SOAK_RECOVER:-180}
SOAK_SEED=${SOAK_SEED:-$(( $(date +%s%N) % 2147483647 ))}
SOAK_CLUSTER_MODE=${SOAK_CLUSTER_MODE:-1}
SOAK_ASAN=${SOAK_ASAN:-1}
SOAK_RATE=${SOAK_RATE:-100}
ALL_FAULTS="redis-kill redis-freeze pod-delete node-drain daemon-kill leader-kill apiserver-restart etcd-restart"
read -r -a FAULTS <<<"${SOAK_FAULTS:-$ALL_FAULTS}"
CLUSTER_SH=$TOP/tests/cluster/cluster.sh

if ! has_process_nodes; then
    # not a skip: a soak without real Redis has nothing to prove
    echo "not ok - the control plane has process nodes (RDC_CLUSTER_PROCESS_NODES=3 tests/cluster/cluster.sh up)"
    echo "0 passed, 1 failed"
    exit 1
fi

ns=rdc-soak-$$
e2e_setup soak "$ns"
SOAK_RESULT=${SOAK_RESULT:-$work/result.json}
echo "# soak: seed $SOAK_SEED, $SOAK_SECONDS s of faults (${FAULTS[*]}), work dir $work"
RANDOM=$SOAK_SEED
# rnd N: R = a number in [0, N) from the seeded generator (in this shell, never in a
# subshell, so that the sequence depends on the seed alone)
rnd() { R=$((RANDOM % $1)); }

# ---- build -----------------------------------------------------------------------------------
if [ "$SOAK_ASAN" = 1 ]; then
    SBUILD=build-asan
    check "the daemons built under ASan and UBSan" make -s -C "$TOP" asan
else
    SBUILD=build
    check "the daemons built" make -s -C "$TOP" all
fi
SBIN=$TOP/$SBUILD/bin
check "ackwriter and clusterwriter built" make -s -C "$TOP" build/bench/ackwriter build/bench/clusterwriter
CW=$TOP/build/bench/clusterwriter
mkdir -p "$work/san"
# every daemon inherits these: a report goes to a file of its own (<prefix>.<pid>)
export ASAN_OPTIONS="log_path=$work/san/asan:detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="log_path=$work/san/ubsan:print_stacktrace=1"

# ---- the operator: two replicas -----------------------------------------------------------------
declare -A sup_pids=()
lease=rdc-soak-leader
# start_replica NAME: one whole operator in a session of its own (so that leader-kill takes
# the process group), its log appended to $work/NAME.log
start_replica() {
    local n=$1
    setsid "$SBIN/supervisor" --kubeconfig "$KUBECONFIG" --workers 2 --leader-elect \
        --leader-election-namespace "$ns" --leader-election-id "$lease" \
        --leader-election-lease-duration 6s --leader-election-renew-deadline 4s \
        --leader-election-retry-period 1s --namespace "$ns" --runtime-dir "$work/$n" \
        --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
        >>"$work/$n.log" 2>&1 </dev/null &
    sup_pids[$n]=$!
}
stop_replicas() {
    local n pid
    for n in "${!sup_pids[@]}"; do
        pid=${sup_pids[$n]}
        kill -0 "$pid" 2>/dev/null || continue
        kill -TERM "$pid" 2>/dev/null
        wait_until 15 bash -c "! kill -0 $pid" || kill -KILL -- "-$pid" 2>/dev/null
    done
}
identity() {
    grep -F '"logger":"electord","msg":"campaigning"' "$work/$1.log" 2>/dev/null |
        sed -n 's/.*"identity":"\([^"]*\)".*/\1/p' | tail -1
}
leader() { # the replica the Lease names, or nothing
    local h n
    h=$(kubectl -n "$ns" get lease "$lease" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null)
    [ -n "$h" ] || return 0
    for n in "${!sup_pids[@]}"; do
        kill -0 "${sup_pids[$n]}" 2>/dev/null && [ "$(identity "$n")" = "$h" ] && { echo "$n"; return; }
    done
}
cleanup_more() {
    local d
    for d in "$work"/w-*; do
        [ -d "$d" ] || continue
        _fo_stop "$d/writer.pid" 5
        _fo_stop "$d/labels.pid" 5
    done
    stop_replicas
    local node
    for node in $(kubectl get nodes -l rdc.local/process-node=true -o name 2>/dev/null); do
        kubectl uncordon "$node" >/dev/null 2>&1
    done
}
check "cluster.sh pin-namespace $ns" "$CLUSTER_SH" pin-namespace "$ns"
wait_until 20 kubectl -n "$ns" get serviceaccount default
start_replica op-a
start_replica op-b
has_leader() { [ -n "$(leader)" ]; }
check "a replica holds the Lease" wait_until 60 has_leader

# ---- the clusters ------------------------------------------------------------------------------
rc_yaml sa "$ns" <<YAML | kubectl apply -f - >/dev/null
  mode: Standalone
  size: 1
  image: redis
  version: "7.2"
  persistence: aof
  config: {extra: {appendfsync: always}}
YAML
rc_yaml rep "$ns" <<YAML | kubectl apply -f - >/dev/null
  mode: Replication
  size: 3
  image: redis
  version: "7.2"
  failover: {downAfter: 2s}
YAML
CLUSTERS="sa rep"
if [ "$SOAK_CLUSTER_MODE" = 1 ]; then
    rc_yaml cm "$ns" <<YAML | kubectl apply -f - >/dev/null
  mode: Cluster
  size: 6
  image: redis
  version: "7.2"
  cluster: {shards: 3, replicasPerShard: 1}
  failover: {downAfter: 2s}
YAML
    CLUSTERS="sa rep cm"
fi

ip_of() { kubectl -n "$ns" get pod "$1" -o jsonpath='{.status.podIP}' 2>/dev/null; }
pods_of() { kubectl -n "$ns" get pods -l "app.kubernetes.io/instance=$1" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null | sort; }
rc_json() { kubectl -n "$ns" get rdc "$1" -o json 2>/dev/null; }
sa_ok() {
    rc_json sa | jq -e '.status.phase == "Running"' >/dev/null &&
        [ "$(redis-cli -h "$(ip_of sa-0)" ping 2>/dev/null)" = PONG ]
}
rep_ok() {
    local p text n
    rc_json rep | jq -e '.status.phase == "Running" and
        ([.status.conditions[]? | select(.type == "ReplicationHealthy")][0].status == "True")' >/dev/null || return 1
    p=$(rc_json rep | jq -r '.status.primary // ""')
    [ -n "$p" ] || return 1
    [ "$(kubectl -n "$ns" get pods -l app.kubernetes.io/instance=rep,cache.example.com/role=primary -o name)" = "pod/$p" ] || return 1
    text=$(redis-cli -h "$(ip_of "$p")" info replication 2>/dev/null | tr -d '\r')
    grep -qx 'role:master' <<<"$text" || return 1
    for n in rep-0 rep-1 rep-2; do
        [ "$n" = "$p" ] || grep -q "^slave[0-9]*:ip=$(ip_of "$n"),port=6379,state=online," <<<"$text" || return 1
    done
}
cm_ok() {
    rc_json cm | jq -e '.status.phase == "Running" and .status.cluster.state == "ok" and .status.cluster.slotsAssigned == 16384
        and ([.status.cluster.shards[] | select(.primary != "" and ([.replicas[]? | select(.linkUp)] | length) == 1)] | length) == 3' >/dev/null
}
# settled C: the spec's generation observed, and every StatefulSet of C rolled out (all
# replicas ready and at the update revision): a spec change's rollout counts as recovery
settled() {
    rc_json "$1" | jq -e '.status.observedGeneration == .metadata.generation' >/dev/null || return 1
    kubectl -n "$ns" get sts -l "app.kubernetes.io/instance=$1" -o json 2>/dev/null | jq -e '(.items | length) > 0 and
        all(.items[]; .status.updateRevision == .status.currentRevision and
            (.status.readyReplicas // 0) == .spec.replicas and (.status.updatedReplicas // 0) == .spec.replicas)' >/dev/null
}
all_ok() { local c; for c in $CLUSTERS; do "${c}_ok" && settled "$c" || return 1; done; }
export -f sa_ok rep_ok cm_ok all_ok settled ip_of rc_json
export ns CLUSTERS
check "every cluster Running and healthy" wait_until 360 all_ok

# ---- writers and label samplers --------------------------------------------------------------------
fo_build >/dev/null 2>&1
mkdir -p "$work/w-sa" "$work/w-rep" "$work/w-cm"
fo_writer_start "$work/w-sa" --resolve-cmd "kubectl -n $ns get pod sa-0 -o jsonpath='{.status.podIP}:6379'" \
    --replicas 0 --prefix sa: --rate "$SOAK_RATE"
fo_label_sampler_start "$work/w-rep" "$ns" "app.kubernetes.io/instance=rep,cache.example.com/role=primary"
check "the label sampler names rep's primary" wait_until 10 test -s "$work/w-rep/primary.addr"
fo_writer_start "$work/w-rep" --resolve-file "$work/w-rep/primary.addr" --prefix rep: --rate "$SOAK_RATE"
if [ "$SOAK_CLUSTER_MODE" = 1 ]; then
    for k in 0 1 2; do
        fo_label_sampler_start "$work/w-cm/s$k" "$ns" "app.kubernetes.io/instance=cm,cache.example.com/shard=$k,cache.example.com/role=primary"
    done
    seeds=""
    for p in $(pods_of cm); do seeds="$seeds${seeds:+,}$(ip_of "$p"):6379"; done
    _fo_start "$work/w-cm/writer.pid" "$work/w-cm/writer.out" "$work/w-cm/writer.err" "$CW" write \
        --seeds "$seeds" --acks "$work/w-cm/acks.txt" --events "$work/w-cm/events.jsonl" \
        --replicas 1 --prefix cm: --rate "$SOAK_RATE"
fi
for c in $CLUSTERS; do
    check "$c's writes are acknowledged" wait_until 30 sh -c "test -s $work/w-$c/acks.txt && test \$(wc -l <$work/w-$c/acks.txt) -ge 50"
done

# ---- faults ---------------------------------------------------------------------------------------
: >"$work/faults.jsonl"
declare -A fault_count=()
spec_gen=0
record() { # KIND TARGET RECOVERY_S OK
    printf '{"t":%s,"kind":"%s","target":"%s","recovery_s":%s,"recovered":%s}\n' \
        "$(date +%s)" "$1" "$2" "$3" "$4" >>"$work/faults.jsonl"
    fault_count[$1]=$(( ${fault_count[$1]:-0} + 1 ))
}
# pick_pod: TARGET = one redis pod of one cluster, by the seeded generator: half of the
# time a pod labelled primary (rep's, or one shard's of cm), where faults matter most
pick_pod() {
    local -a cs pods
    read -r -a cs <<<"$CLUSTERS"
    rnd "${#cs[@]}"; local c=${cs[$R]}
    rnd 2; local primary=$R
    if [ "$primary" = 1 ] && [ "$c" != sa ]; then
        mapfile -t pods < <(kubectl -n "$ns" get pods -l "app.kubernetes.io/instance=$c,cache.example.com/role=primary" \
            -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null | sort)
    else
        mapfile -t pods < <(pods_of "$c")
    fi
    rnd 64
    TARGET=
    [ "${#pods[@]}" -gt 0 ] && TARGET=${pods[$((R % ${#pods[@]}))]}
}
spec_change() {
    local -a cs
    read -r -a cs <<<"$CLUSTERS"
    rnd "${#cs[@]}"; local c=${cs[$R]}
    spec_gen=$((spec_gen + 1))
    rnd 2
    if [ "$R" = 0 ]; then # a run-time directive: CONFIG SET, no restart
        kubectl -n "$ns" patch rdc "$c" --type=merge -p "{\"spec\":{\"config\":{\"extra\":{\"hz\":\"$((10 + spec_gen % 5))\"}}}}" >/dev/null 2>&1
        echo "#   + spec change of $c: hz (run time)"
    else # a restart-only directive: the pods roll
        kubectl -n "$ns" patch rdc "$c" --type=merge -p "{\"spec\":{\"config\":{\"extra\":{\"databases\":\"$((16 + spec_gen % 2))\"}}}}" >/dev/null 2>&1
        echo "#   + spec change of $c: databases (rolls the pods)"
    fi
    record spec-change "$c" 0 true
}
inject() { # KIND: sets TARGET; returns once the fault is in place (and undone, for the brief ones)
    local kind=$1 node n pid
    TARGET=
    case $kind in
    redis-kill)
        pick_pod; [ -n "$TARGET" ] && "$CLUSTER_SH" pod-kill "$ns/$TARGET" redis >/dev/null 2>&1 ;;
    redis-freeze)
        pick_pod; rnd 6
        if [ -n "$TARGET" ] && "$CLUSTER_SH" pod-freeze "$ns/$TARGET" redis >/dev/null 2>&1; then
            sleep $((3 + R))
            "$CLUSTER_SH" pod-thaw "$ns/$TARGET" redis >/dev/null 2>&1
        fi ;;
    pod-delete)
        pick_pod; [ -n "$TARGET" ] && kubectl -n "$ns" delete pod "$TARGET" --wait=false >/dev/null 2>&1 ;;
    node-drain)
        local -a nodes
        mapfile -t nodes < <(kubectl get nodes -l rdc.local/process-node=true -o name | sort)
        rnd "${#nodes[@]}"; node=${nodes[$R]}; TARGET=${node#node/}
        kubectl drain "$node" --ignore-daemonsets --delete-emptydir-data --force --timeout=60s >"$work/drain.log" 2>&1
        kubectl uncordon "$node" >/dev/null 2>&1 ;;
    daemon-kill)
        local -a reps lines
        read -r -a reps <<<"$(printf '%s\n' "${!sup_pids[@]}" | sort | tr '\n' ' ')"
        rnd "${#reps[@]}"; n=${reps[$R]}
        mapfile -t lines < <("$SBIN/supervisor" ctl --runtime-dir "$work/$n" status 2>/dev/null |
            awk '$2 ~ /^[0-9]+$/ && $2 > 1 { print $1 " " $2 }' | sort)
        rnd 64
        if [ "${#lines[@]}" -gt 0 ]; then
            read -r TARGET pid <<<"${lines[$((R % ${#lines[@]}))]}"
            TARGET="$n/$TARGET"
            kill -KILL "$pid" 2>/dev/null
        fi ;;
    leader-kill)
        n=$(leader); rnd 5
        if [ -n "$n" ]; then
            TARGET=$n
            kill -KILL -- "-${sup_pids[$n]}" 2>/dev/null
            wait "${sup_pids[$n]}" 2>/dev/null
            sleep $((2 + R))
            start_replica "$n"
        fi ;;
    apiserver-restart)
        TARGET=kube-apiserver; "$CLUSTER_SH" restart-apiserver >>"$work/restarts.log" 2>&1 ;;
    etcd-restart)
        TARGET=etcd; "$CLUSTER_SH" restart-etcd >>"$work/restarts.log" 2>&1 ;;
    esac
}

t_end=$((SECONDS + SOAK_SECONDS))
unrecovered=0
round=0
cycle=()
while [ "$SECONDS" -lt "$t_end" ]; do
    round=$((round + 1))
    # the kinds in a seeded order, each once before any comes again (a short run covers
    # them evenly)
    if [ "${#cycle[@]}" -eq 0 ]; then
        cycle=("${FAULTS[@]}")
        for ((k = ${#cycle[@]} - 1; k > 0; k--)); do
            rnd $((k + 1)); tmpk=${cycle[$k]}; cycle[k]=${cycle[$R]}; cycle[R]=$tmpk
        done
    fi
    kind=${cycle[0]}; cycle=("${cycle[@]:1}")
    t0=$(date +%s%3N)
    inject "$kind"
    echo "# round $round: $kind ${TARGET:-(no target)}"
    rnd 4; [ "$R" = 0 ] && spec_change
    sleep 1 # let the fault be seen before health is asked
    if wait_until "$SOAK_RECOVER" all_ok; then
        rec=$(awk -v a="$(date +%s%3N)" -v b="$t0" 'BEGIN { printf "%.2f", (a - b) / 1000 }')
        record "$kind" "${TARGET:-}" "$rec" true
        echo "#   healthy again after $rec s"
    else
        record "$kind" "${TARGET:-}" "$SOAK_RECOVER" false
        unrecovered=$((unrecovered + 1))
        not_ok "round $round ($kind ${TARGET:-}): every cluster healthy within $SOAK_RECOVER s"
        for c in $CLUSTERS; do "${c}_ok" || echo "#   $c: $(rc_json "$c" | jq -c '{phase: .status.phase, conditions: [.status.conditions[]? | {type, status, reason}]}')"; done
        break
    fi
    rnd 5; sleep $((1 + R))
done

# ---- the end: healthy, every acknowledged write there, no report of ours -----------------------------
check "every cluster healthy at the end" wait_until "$SOAK_RECOVER" all_ok
sleep 2
declare -A acked=() lost=() dual=()
for c in $CLUSTERS; do
    _fo_stop "$work/w-$c/writer.pid" 5
done
# Standalone: the one pod; Replication: the pod labelled primary; Cluster mode: through the map
out=$(fo_verify "$work/w-sa" "$(ip_of sa-0):6379" 2>&1); echo "# sa: $out"
acked[sa]=$(sed -n 's/.*acked=\([0-9]*\).*/\1/p' <<<"$out"); lost[sa]=$(sed -n 's/.*missing=\([0-9]*\).*/\1/p' <<<"$out")
check "sa: every acknowledged write is there ($out)" grep -q ' missing=0 wrong=0' <<<"$out"
rp=$(rc_json rep | jq -r '.status.primary // ""')
out=$(fo_verify "$work/w-rep" "$(ip_of "$rp"):6379" 2>&1); echo "# rep: $out"
acked[rep]=$(sed -n 's/.*acked=\([0-9]*\).*/\1/p' <<<"$out"); lost[rep]=$(sed -n 's/.*missing=\([0-9]*\).*/\1/p' <<<"$out")
check "rep: every acknowledged write is there ($out)" grep -q ' missing=0 wrong=0' <<<"$out"
labels=$(fo_label_sampler_stop "$work/w-rep"); echo "# rep labels: $labels"
dual[rep]=$(sed -n 's/.*two_events=\([0-9]*\).*/\1/p' <<<"$labels")
check "rep: the label sampler ran ($labels)" grep -q '^samples=[1-9]' <<<"$labels"
check "rep: never two pods labelled primary" test "${dual[rep]:-x}" = 0
if [ "$SOAK_CLUSTER_MODE" = 1 ]; then
    seeds=""
    for p in $(pods_of cm); do seeds="$seeds${seeds:+,}$(ip_of "$p"):6379"; done
    out=$("$CW" verify --seeds "$seeds" --acks "$work/w-cm/acks.txt" 2>&1); echo "# cm: $out"
    acked[cm]=$(sed -n 's/.*acked=\([0-9]*\).*/\1/p' <<<"$out"); lost[cm]=$(sed -n 's/.*missing=\([0-9]*\).*/\1/p' <<<"$out")
    check "cm: every acknowledged write is there ($out)" grep -q ' missing=0 wrong=0' <<<"$out"
    dual[cm]=0
    for k in 0 1 2; do
        labels=$(fo_label_sampler_stop "$work/w-cm/s$k"); echo "# cm shard $k labels: $labels"
        check "cm shard $k: the label sampler ran" grep -q '^samples=[1-9]' <<<"$labels"
        dual[cm]=$(( dual[cm] + $(sed -n 's/.*two_events=\([0-9]*\).*/\1/p' <<<"$labels") ))
    done
    check "cm: never two pods of one shard labelled primary" test "${dual[cm]}" = 0
fi

stop_replicas
# the daemons' deaths: the soak sends SIGKILL (9) only
deaths=$(cat "$work"/op-*.log | grep -F '"msg":"child exited' | sed -n 's/.*"status":"\([^"]*\)".*/\1/p' | sort | uniq -c | sed 's/^ *//')
echo "# daemon exits seen by the supervisors: ${deaths:-none}"
crashes=$(cat "$work"/op-*.log | grep -F '"msg":"child exited' | grep -F '"status":"killed by signal' | grep -vc 'signal 9 ')
check "no daemon died of a signal the soak did not send ($crashes)" test "$crashes" = 0
reports=$(find "$work/san" -type f | wc -l)
[ "$reports" = 0 ] || for f in "$work"/san/*; do echo "# $f:"; head -30 "$f" | sed 's/^/#   /'; done
check "no sanitizer report ($reports files)" test "$reports" = 0

# ---- result -------------------------------------------------------------------------------------------
fc=$(for k in "${!fault_count[@]}"; do printf '"%s":%s\n' "$k" "${fault_count[$k]}"; done | sort | paste -sd, -)
python3 - "$work/faults.jsonl" "$SOAK_RESULT" <<PY
import json, sys
rounds = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rec = sorted(r["recovery_s"] for r in rounds if r["kind"] != "spec-change" and r["recovered"])
def pct(xs, q):
    return round(xs[min(len(xs) - 1, int(q * len(xs)))], 2) if xs else None
res = {
    "seed": $SOAK_SEED, "seconds": $SOAK_SECONDS, "recover_bound_s": $SOAK_RECOVER,
    "faults": {${fc}},
    "acknowledged": {$(for c in $CLUSTERS; do printf '"%s":%s,' "$c" "${acked[$c]:-0}"; done | sed 's/,$//')},
    "lost": {$(for c in $CLUSTERS; do printf '"%s":%s,' "$c" "${lost[$c]:--1}"; done | sed 's/,$//')},
    "dual_primary_events": {$(for c in $CLUSTERS; do [ "$c" = sa ] || printf '"%s":%s,' "$c" "${dual[$c]:--1}"; done | sed 's/,$//')},
    "recovery_s": {"n": len(rec), "p50": pct(rec, 0.5), "max": rec[-1] if rec else None},
    "unrecovered": $unrecovered, "daemon_crashes": $crashes, "sanitizer_reports": $reports,
    "passed": $passed, "failed": $failed,
}
json.dump(res, open(sys.argv[2], "w"), indent=1)
print("| figure | value |")
print("|---|---|")
print("| seed | %d |" % res["seed"])
print("| fault window (s) | %d |" % res["seconds"])
for k, v in sorted(res["faults"].items()):
    print("| faults: %s | %d |" % (k, v))
for k, v in res["acknowledged"].items():
    print("| %s: acknowledged writes / lost | %d / %d |" % (k, v, res["lost"][k]))
for k, v in res["dual_primary_events"].items():
    print("| %s: times two pods were labelled primary | %d |" % (k, v))
r = res["recovery_s"]
print("| recovery after a fault, p50 / max (s), rounds | %s / %s, %d |" % (r["p50"], r["max"], r["n"]))
print("| rounds not recovered within %d s | %d |" % (res["recover_bound_s"], res["unrecovered"]))
print("| daemon crashes / sanitizer reports | %d / %d |" % (res["daemon_crashes"], res["sanitizer_reports"]))
PY
echo "# result: $SOAK_RESULT (seed $SOAK_SEED: SOAK_SEED=$SOAK_SEED reproduces the schedule)"
check "the soak injected faults" test "$(grep -vc '"spec-change"' "$work/faults.jsonl")" -gt 0
summary
