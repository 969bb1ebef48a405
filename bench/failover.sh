#!/usr/bin/env bash
# bench/failover.sh: failover and switchover of a primary + 2 replicas on real redis-server
# pods (the pod runtime of tests/cluster), one "system" against another, trials alternated
# (see bench/README.md, "Failover"). `make bench-failover` runs it.
#
# Systems (SYSTEMS, in the order their trials alternate):
#   sentinel  a StatefulSet of 3 redis:7.2 pods linked by hand (fo-0 primary), 3 Redis
#             Sentinels (`redis-server --sentinel`) on 127.0.0.1, quorum 2; the writer
#             follows `SENTINEL get-master-addr-by-name`
#   operator  a RedisCluster (size 3, Replication, spec.failover.downAfter = DOWN_AFTER_MS)
#             run by this checkout's operator ($RDC_BIN/supervisor); the writer follows the
#             pod labelled cache.example.com/role=primary. If no pod is labelled and linked
#             within OPERATOR_SETUP_WAIT the system is reported "not ready" and skipped;
#             a kill with no new primary within FAILOVER_WAIT is "no failover within T".
#
# Per system: ackwriter (SET k_i + WAIT 1 100, only acknowledged writes logged), the ROLE
# sampler over the 3 pods, the label sampler. Scenarios:
#   kill        TRIALS times: SIGKILL of the primary's redis-server (cluster.sh pod-kill);
#               kill -> new primary named / labels right / first write accepted / first write
#               acknowledged by the new primary; acknowledged writes lost (all read back
#               from the new primary after each trial and at the end)
#   switchover  SWITCHOVERS times: a planned role change (sentinel: SENTINEL FAILOVER;
#               operator: a rolling config change, spec.config.extra.databases, which
#               rolls every pod, done however main does it). Complete when the system says
#               so (sentinel: another primary named and the set whole; operator: every pod
#               on the StatefulSet's new updateRevision and Ready, one pod labelled primary
#               = status.primary, the set whole); the longest gap between acknowledged
#               writes within it, acknowledged writes lost, two masters / two labels
# Every trial starts (or restarts, when a pod's IP changed) the ROLE sampler over the three
# pods' IPs and records whether it was still running at the end; without samples the
# report says NOT MEASURED and exits 3.
# Between trials the set must be whole again (the killed pod back as a replica, both
# replicas linked to the primary) within RECOVER_WAIT, or the trial is skipped.
#
# Knobs: SYSTEMS="sentinel operator" TRIALS=10 SWITCHOVERS=3 DOWN_AFTER_MS=3000
#   FAILOVER_TIMEOUT_MS=10000 (Sentinel failover-timeout) FAILOVER_WAIT=30 RECOVER_WAIT=300
#   SWITCHOVER_WAIT=240
#   OPERATOR_SETUP_WAIT=120 RATE=200 (writes/s) FO_CLUSTER_DIR=/tmp/rdc-cluster-failover
#   RDC_POD_CIDR=127.71.0.0/16 (when this script starts the cluster)
#   FO_KEEP_CLUSTER=1 leaves the cluster up; FO_OUT=<file> (default
#   bench/results/failover-<date>-<sha>.json).
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
SYSTEMS=${SYSTEMS:-sentinel operator}
TRIALS=${TRIALS:-10}
SWITCHOVERS=${SWITCHOVERS:-3}
DOWN_AFTER_MS=${DOWN_AFTER_MS:-3000}
FAILOVER_TIMEOUT_MS=${FAILOVER_TIMEOUT_MS:-10000}
FAILOVER_WAIT=${FAILOVER_WAIT:-30}
SWITCHOVER_WAIT=${SWITCHOVER_WAIT:-240}
RECOVER_WAIT=${RECOVER_WAIT:-300}
OPERATOR_SETUP_WAIT=${OPERATOR_SETUP_WAIT:-120}
RATE=${RATE:-200}
export RDC_CLUSTER_DIR=${FO_CLUSTER_DIR:-${RDC_CLUSTER_DIR:-/tmp/rdc-cluster-failover}}
export RDC_CLUSTER_PROCESS_NODES=3
# Pod IPs of their own: every cluster with process nodes allocates from the top of its pod
# CIDR, so two of them on one machine (other developers' tests) would hand out the same
# addresses and one's Redis would answer for the other's pod.
export RDC_POD_CIDR=${RDC_POD_CIDR:-127.71.0.0/16}
export TOP=$top
cluster=$top/tests/cluster/cluster.sh
BIN=${RDC_BIN:-$top/build/bin}
# shellcheck source=../tests/e2e/lib.sh
. tests/e2e/lib.sh
# shellcheck source=../tests/e2e/lib_failover.sh
. tests/e2e/lib_failover.sh
# shellcheck source=lib_cluster.sh
. bench/lib_cluster.sh

log() { echo "failover: $*" >&2; }
now_ms() { date +%s%3N; }

fo_build || { log "cannot build $FO_ACKWRITER"; exit 1; }
work=$(mktemp -d /tmp/rdc-bench-failover.XXXXXX)
trials=$work/trials.jsonl
: >"$trials"
started=0
cleanup() {
    local s
    for s in $SYSTEMS; do
        declare -F "sys_${s}_teardown" >/dev/null && "sys_${s}_teardown" >/dev/null 2>&1
    done
    if [ "$started" = 1 ] && [ "${FO_KEEP_CLUSTER:-0}" != 1 ]; then "$cluster" down >&2 || true; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench_cluster_up

# ------------------------------------------------------------------ shared helpers
# pod_of NS H:P: the pod of NS whose IP is H.
pod_of() {
    kubectl -n "$1" get pods -o jsonpath='{range .items[*]}{.metadata.name} {.status.podIP}{"\n"}{end}' |
        awk -v ip="${2%:*}" '$2 == ip {print $1; exit}'
}
# whole NS NAME PRIMARY_H:P: the three pods NAME-0..2 have IPs and every other one is a
# linked replica of it (a pod without an IP is not "linked": never vacuously whole).
whole() {
    local ns=$1 name=$2 p=${3%:*} ip info ips
    [ "$(redis-cli -h "$p" role 2>/dev/null | head -1)" = master ] || return 1
    ips=$(fo_pod_ips "$ns" "$name" 3)
    [ "$(wc -w <<<"$ips")" = 3 ] || return 1
    for ip in $ips; do
        [ "$ip" = "$p" ] && continue
        info=$(redis-cli -h "$ip" info replication 2>/dev/null | tr -d '\r')
        grep -qx "master_host:$p" <<<"$info" && grep -qx 'master_link_status:up' <<<"$info" || return 1
    done
}
# roles_follow SYSTEM: the ROLE sampler of SYSTEM samples the three pods' current IPs
# (started, or restarted when an IP changed, e.g. a pod recreated elsewhere); 1 when a pod
# has no IP or the sampler does not sample (fo_role_sampler_start says why).
roles_follow() {
    local s=$1 d=$work/$1 ips want
    ips=$(fo_pod_ips "$("sys_${s}_ns")" fo 3)
    [ "$(wc -w <<<"$ips")" = 3 ] || { log "$s: ROLE sampler: a pod has no IP ($ips)"; return 1; }
    want=$(echo "$ips" | sed 's/ /:6379,/g; s/$/:6379/')
    if [ "$(cat "$d/roles.candidates" 2>/dev/null)" = "$want" ] && fo_role_sampler_alive "$d"; then return 0; fi
    fo_role_sampler_stop "$d" >/dev/null
    fo_role_sampler_start "$d" "$want"
}

# record KEY=VALUE...: one JSON line into trials.jsonl (values that are integers stay numbers).
record() { json_line "$@" >>"$trials"; }

# ------------------------------------------------------------------ system: sentinel
S_NS=rdc-fo-sentinel-$$
sys_sentinel_setup() {
    local d=$work/sentinel ip0 ip1 ip2
    mkdir -p "$d"
    kubectl create namespace "$S_NS" >/dev/null && "$cluster" pin-namespace "$S_NS" >/dev/null || return 1
    wait_until 20 kubectl -n "$S_NS" get serviceaccount default || return 1
    fo_redis_statefulset "$S_NS" fo 3 || { echo "3 redis pods did not answer PING within 180 s" >"$d/skip"; return 1; }
    read -r ip0 ip1 ip2 <<<"$(fo_pod_ips "$S_NS" fo 3)"
    fo_link_replicas "$ip0" "$ip1" "$ip2" || { echo "replicas did not link" >"$d/skip"; return 1; }
    fo_sentinels_start "$d/s" fo "$ip0" 6379 "$DOWN_AFTER_MS" "$FAILOVER_TIMEOUT_MS" ||
        { echo "sentinels did not start" >"$d/skip"; return 1; }
    wait_until 20 sh -c "redis-cli -p ${FO_SENTINELS##*:} sentinel replicas fo | grep -c '^name\$' | grep -qx 2" ||
        { echo "sentinels did not find the 2 replicas" >"$d/skip"; return 1; }
    wait_until 20 sh -c "redis-cli -p ${FO_SENTINELS##*:} sentinel sentinels fo | grep -c '^name\$' | grep -qx 2" ||
        { echo "sentinels did not find each other" >"$d/skip"; return 1; }
    roles_follow sentinel || { echo "the ROLE sampler did not start" >"$d/skip"; return 1; }
    fo_writer_start "$d" --sentinels "$FO_SENTINELS" --master fo --rate "$RATE" --prefix s_
}
sys_sentinel_ns() { echo "$S_NS"; }
sys_sentinel_primary() { fo_sentinel_master "$work/sentinel/s" fo; }
sys_sentinel_labels_right() { return 1; } # Sentinel moves no label
sys_sentinel_switchover() {
    local a
    for a in $(tr ',' ' ' <"$work/sentinel/s/sentinels"); do
        [ "$(redis-cli -h "${a%:*}" -p "${a##*:}" sentinel failover fo 2>/dev/null)" = OK ] && return 0
    done
    return 1
}
# switched OLD_H:P: done when the Sentinels name another primary and the set is whole
# around it (the old primary converted into a linked replica).
sys_sentinel_switched() {
    local p
    p=$(sys_sentinel_primary) && [ "$p" != "$1" ] && whole "$S_NS" fo "$p"
}
sys_sentinel_teardown() {
    local d=$work/sentinel
    fo_writer_stop "$d" >/dev/null
    fo_role_sampler_stop "$d" >"$d/roles.final" 2>/dev/null
    fo_label_sampler_stop "$d" >"$d/labels.final" 2>/dev/null
    fo_sentinels_stop "$d/s"
    kubectl delete namespace "$S_NS" --wait=false >/dev/null 2>&1
    return 0
}

# ------------------------------------------------------------------ system: operator
O_NS=rdc-fo-operator-$$
sys_operator_setup() {
    local d=$work/operator ips
    mkdir -p "$d"
    if [ ! -x "$BIN/supervisor" ]; then echo "no operator in $BIN (make)" >"$d/skip"; return 1; fi
    bench_crds || return 1
    kubectl create namespace "$O_NS" >/dev/null && "$cluster" pin-namespace "$O_NS" >/dev/null || return 1
    wait_until 20 kubectl -n "$O_NS" get serviceaccount default || return 1
    rc_apply_replication fo "$O_NS" "${DOWN_AFTER_MS}ms" || { echo "the RedisCluster was refused" >"$d/skip"; return 1; }
    sup_start "$BIN" "$d/rt" "$d/operator.log" --kubeconfig "$KUBECONFIG" --workers 1 --namespace "$O_NS"
    fo_label_sampler_start "$d" "$O_NS"
    local end=$((SECONDS + OPERATOR_SETUP_WAIT)) p
    while :; do
        p=$(cat "$d/primary.addr" 2>/dev/null)
        [ -n "$p" ] && whole "$O_NS" fo "$p" && break
        if [ "$SECONDS" -ge "$end" ]; then
            echo "no pod labelled cache.example.com/role=primary with 2 linked replicas within ${OPERATOR_SETUP_WAIT} s (phase $(kubectl -n "$O_NS" get rdc fo -o jsonpath='{.status.phase}' 2>/dev/null), status.primary '$(kubectl -n "$O_NS" get rdc fo -o jsonpath='{.status.primary}' 2>/dev/null)')" >"$d/skip"
            return 1
        fi
        sleep 0.5
    done
    roles_follow operator || { echo "the ROLE sampler did not start" >"$d/skip"; return 1; }
    fo_writer_start "$d" --resolve-file "$d/primary.addr" --rate "$RATE" --prefix o_
}
sys_operator_ns() { echo "$O_NS"; }
sys_operator_primary() { local p; p=$(cat "$work/operator/primary.addr" 2>/dev/null) && [ -n "$p" ] && echo "$p"; }
# labels and status right: one pod labelled, it is status.primary, and it is not OLD_POD.
sys_operator_labels_right() {
    local old=$1 p pod st
    p=$(sys_operator_primary) || return 1
    pod=$(pod_of "$O_NS" "$p")
    st=$(kubectl -n "$O_NS" get rdc fo -o jsonpath='{.status.primary}' 2>/dev/null)
    [ -n "$pod" ] && [ "$pod" != "$old" ] && [ "$st" = "$pod" ]
}
# A planned role change: a rolling config change. config.extra.databases is not settable
# at run time, so it changes the pod template's redis.conf hash and rolls every pod
# (docs/knobs.md, "What rolls"). What the operator does with it is main's: today the
# StatefulSet's RollingUpdate (the primary's restart is a failover); with a switchover
# rollout, replicas first and the role handed over with Redis FAILOVER. Records the
# StatefulSet's updateRevision before the change in $work/operator/rev.before.
O_DB=16
sys_operator_switchover() {
    kubectl -n "$O_NS" get sts fo -o jsonpath='{.status.updateRevision}' >"$work/operator/rev.before" 2>/dev/null
    [ -s "$work/operator/rev.before" ] || return 1
    O_DB=$((O_DB == 16 ? 17 : 16))
    kubectl -n "$O_NS" patch rdc fo --type merge -p "{\"spec\":{\"config\":{\"extra\":{\"databases\":\"$O_DB\"}}}}" >/dev/null
}
# switched OLD_H:P: the rollout is complete, whatever way main does it: the StatefulSet has
# a new updateRevision (so a rollout did start), has seen its latest generation, every
# pod is on that revision and Ready, exactly one pod is labelled primary, status.primary
# names it, and the set is whole around it. The primary may or may not have moved.
sys_operator_switched() {
    local before rev gen ogen pods p pod st
    before=$(cat "$work/operator/rev.before" 2>/dev/null)
    read -r rev gen ogen <<<"$(kubectl -n "$O_NS" get sts fo -o jsonpath='{.status.updateRevision} {.metadata.generation} {.status.observedGeneration}' 2>/dev/null)"
    [ -n "$before" ] && [ -n "$rev" ] && [ "$rev" != "$before" ] && [ "$gen" = "$ogen" ] || return 1
    pods=$(kubectl -n "$O_NS" get pods fo-0 fo-1 fo-2 -o json 2>/dev/null |
        jq -r --arg rev "$rev" '[.items[] | select(.metadata.deletionTimestamp == null)
            | select(.metadata.labels["controller-revision-hash"] == $rev)
            | select(any(.status.conditions[]?; .type == "Ready" and .status == "True"))] | length')
    [ "$pods" = 3 ] || return 1
    p=$(sys_operator_primary) || return 1
    pod=$(pod_of "$O_NS" "$p")
    st=$(kubectl -n "$O_NS" get rdc fo -o jsonpath='{.status.primary}' 2>/dev/null)
    [ -n "$pod" ] && [ "$st" = "$pod" ] && whole "$O_NS" fo "$p"
}
sys_operator_teardown() {
    local d=$work/operator
    fo_writer_stop "$d" >/dev/null
    fo_role_sampler_stop "$d" >"$d/roles.final" 2>/dev/null
    fo_label_sampler_stop "$d" >"$d/labels.final" 2>/dev/null
    # the RedisCluster goes while its operator still runs its finalizer; if it cannot, the
    # finalizer is taken off so the namespace does not stay Terminating
    kubectl -n "$O_NS" delete rdc fo --timeout=30s >/dev/null 2>&1 ||
        kubectl -n "$O_NS" patch rdc fo --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
    sup_stop 5
    kubectl delete namespace "$O_NS" --wait=false >/dev/null 2>&1
    return 0
}

# ------------------------------------------------------------------ trials
# trial SYSTEM SCENARIO N: one kill or switchover, recorded in trials.jsonl.
trial() {
    local s=$1 scen=$2 n=$3 d=$work/$1 ns old oldpod new= t0 t_kill t_new= t_labels= end outcome verify missing
    ns=$("sys_${s}_ns")
    local end_whole=$((SECONDS + RECOVER_WAIT))
    until old=$("sys_${s}_primary") && whole "$ns" fo "$old"; do
        if [ "$SECONDS" -ge "$end_whole" ]; then
            record system="$s" scenario="$scen" trial="$n" outcome="skipped: the set was not whole within ${RECOVER_WAIT} s"
            log "$s $scen $n: skipped (not whole)"
            return 0
        fi
        sleep 0.5
    done
    roles_follow "$s" || { record system="$s" scenario="$scen" trial="$n" outcome="ROLE sampler not sampling"; return 0; }
    # the writer must be acknowledging on this primary before the fault
    wait_until 10 fo_events_after "$d" ack 0 >/dev/null
    local t_ready
    t_ready=$(now_ms)
    sleep 1
    oldpod=$(pod_of "$ns" "$old")
    t0=$(now_ms)
    if [ "$scen" = kill ]; then
        "$cluster" pod-kill "$ns/$oldpod" >/dev/null 2>&1 || { record system="$s" scenario="$scen" trial="$n" outcome="pod-kill failed"; return 0; }
    else
        "sys_${s}_switchover" || { record system="$s" scenario="$scen" trial="$n" outcome="switchover command failed"; return 0; }
    fi
    t_kill=$(now_ms)
    end=$((SECONDS + FAILOVER_WAIT))
    while [ "$SECONDS" -lt "$end" ]; do
        if [ -z "$t_new" ] && new=$("sys_${s}_primary") && [ "$new" != "$old" ]; then t_new=$(now_ms); fi
        if [ -z "$t_labels" ] && "sys_${s}_labels_right" "$oldpod" 2>/dev/null; then t_labels=$(now_ms); fi
        if [ -n "$t_new" ] && fo_events_after "$d" ack "$t_kill" "$old" >/dev/null; then
            [ "$s" = sentinel ] || [ -n "$t_labels" ] && break
        fi
        sleep 0.05
    done
    if [ -n "$t_new" ] && fo_events_after "$d" ack "$t_kill" "$old" >/dev/null; then
        outcome=ok
    elif [ -n "$t_new" ]; then
        outcome="new primary $new named but no write acknowledged on it within ${FAILOVER_WAIT} s"
    else
        outcome="no failover within ${FAILOVER_WAIT} s"
    fi
    # every acknowledged write so far, read back from the primary of now
    local cur
    cur=$("sys_${s}_primary") || cur=$old
    verify=$(fo_verify "$d" "$cur" --show 0 2>&1 | tail -1)
    missing=$(sed -n 's/.*missing=\([0-9]*\).*/\1/p' <<<"$verify")
    record system="$s" scenario="$scen" trial="$n" outcome="$outcome" old="$old" old_pod="$oldpod" \
        new="${new:-}" new_pod="$( [ -n "$t_new" ] && pod_of "$ns" "$new")" t_ready="$t_ready" t_cmd="$t0" t_kill="$t_kill" \
        t_new="${t_new:-}" t_labels="${t_labels:-}" roles_alive="$(fo_role_sampler_alive "$d" && echo 1 || echo 0)" \
        verify_on="$cur" verify="$verify" missing="${missing:-}"
    log "$s $scen $n: $outcome (${oldpod} -> $( [ -n "$t_new" ] && pod_of "$ns" "$new"), named after $(( ${t_new:-$t_kill} - t_kill )) ms; $verify)"
}

# switchover SYSTEM N: one planned role change, recorded in trials.jsonl: from the command
# until sys_SYSTEM_switched (bounded by SWITCHOVER_WAIT); the report takes the writer's
# longest gap between acknowledged writes within it and the acknowledged writes lost.
switchover() {
    local s=$1 n=$2 d=$work/$1 ns old oldpod t0 t_cmd t_done= outcome verify missing cur acked0 acked1
    ns=$("sys_${s}_ns")
    local end_whole=$((SECONDS + RECOVER_WAIT))
    until old=$("sys_${s}_primary") && whole "$ns" fo "$old"; do
        if [ "$SECONDS" -ge "$end_whole" ]; then
            record system="$s" scenario=switchover trial="$n" outcome="skipped: the set was not whole within ${RECOVER_WAIT} s"
            log "$s switchover $n: skipped (not whole)"
            return 0
        fi
        sleep 0.5
    done
    roles_follow "$s" || { record system="$s" scenario=switchover trial="$n" outcome="ROLE sampler not sampling"; return 0; }
    wait_until 10 fo_events_after "$d" ack 0 >/dev/null
    local t_ready
    t_ready=$(now_ms)
    sleep 1
    oldpod=$(pod_of "$ns" "$old")
    acked0=$(fo_acked "$d")
    t0=$(now_ms)
    "sys_${s}_switchover" || { record system="$s" scenario=switchover trial="$n" outcome="switchover command failed"; return 0; }
    t_cmd=$(now_ms)
    local end=$((SECONDS + SWITCHOVER_WAIT))
    while [ "$SECONDS" -lt "$end" ]; do
        if "sys_${s}_switched" "$old" 2>/dev/null; then t_done=$(now_ms); break; fi
        roles_follow "$s" 2>/dev/null # a pod recreated with another IP is sampled from then on
        sleep 0.2
    done
    acked1=$(fo_acked "$d")
    if [ -z "$t_done" ]; then
        outcome="not complete within ${SWITCHOVER_WAIT} s"
    elif [ "$acked1" -le "$acked0" ]; then
        outcome="no write acknowledged during it"
    else
        outcome=ok
    fi
    cur=$("sys_${s}_primary") || cur=$old
    verify=$(fo_verify "$d" "$cur" --show 0 2>&1 | tail -1)
    missing=$(sed -n 's/.*missing=\([0-9]*\).*/\1/p' <<<"$verify")
    record system="$s" scenario=switchover trial="$n" outcome="$outcome" old="$old" old_pod="$oldpod" \
        new="$cur" new_pod="$(pod_of "$ns" "$cur")" t_ready="$t_ready" t_cmd="$t0" t_kill="$t_cmd" \
        t_done="${t_done:-}" roles_alive="$(fo_role_sampler_alive "$d" && echo 1 || echo 0)" \
        verify_on="$cur" verify="$verify" missing="${missing:-}"
    log "$s switchover $n: $outcome ($oldpod -> $(pod_of "$ns" "$cur") in $(( ${t_done:-$(now_ms)} - t0 )) ms; $verify)"
}

active=()
for s in $SYSTEMS; do
    if ! declare -F "sys_${s}_setup" >/dev/null; then log "unknown system $s"; exit 2; fi
    log "setting up $s"
    if "sys_${s}_setup"; then
        active+=("$s")
    else
        reason=$(cat "$work/$s/skip" 2>/dev/null || echo "setup failed")
        log "$s: not ready: $reason"
        record system="$s" scenario=setup outcome="not ready: $reason"
    fi
done
for ((i = 1; i <= TRIALS; i++)); do
    for s in "${active[@]}"; do trial "$s" kill "$i"; done
done
for ((i = 1; i <= SWITCHOVERS; i++)); do
    for s in "${active[@]}"; do switchover "$s" "$i"; done
done
# the final read-back, after the last trial settled
for s in "${active[@]}"; do
    ns=$("sys_${s}_ns")
    end=$((SECONDS + RECOVER_WAIT))
    until p=$("sys_${s}_primary") && whole "$ns" fo "$p"; do [ "$SECONDS" -lt "$end" ] || break; sleep 0.5; done
    fo_writer_stop "$work/$s" >/dev/null
    p=$("sys_${s}_primary")
    v=$(fo_verify "$work/$s" "$p" --show 20 2>&1)
    echo "$v" >"$work/$s/verify.final"
    record system="$s" scenario=final verify_on="$p" verify="$(tail -1 <<<"$v")" \
        missing="$(tail -1 <<<"$v" | sed -n 's/.*missing=\([0-9]*\).*/\1/p')"
done
for s in $SYSTEMS; do "sys_${s}_teardown" >/dev/null 2>&1; done

sha=$(git rev-parse --short HEAD 2>/dev/null || echo nogit)
out=${FO_OUT:-bench/results/failover-$(date +%F)-$sha.json}
i=2
while [ -e "$out" ] && [ -z "${FO_OUT:-}" ]; do out=bench/results/failover-$(date +%F)-$sha-$i.json; i=$((i + 1)); done
read -r la1e la5e la15e _ </proc/loadavg
python3 bench/failover_report.py "$work" "$out" \
    --meta commit="$sha" date="$(date -u +%FT%TZ)" cores="$(nproc)" mem_gib="$(awk '/MemTotal/ {printf "%.1f", $2/1048576}' /proc/meminfo)" \
    load_start="$la1 $la5 $la15" load_end="$la1e $la5e $la15e" down_after_ms="$DOWN_AFTER_MS" \
    failover_timeout_ms="$FAILOVER_TIMEOUT_MS" failover_wait_s="$FAILOVER_WAIT" rate="$RATE" \
    trials="$TRIALS" switchovers="$SWITCHOVERS" systems="$SYSTEMS" redis="$(redis-server --version | awk '{print $3}')"
rc=$?
log "results in $out (logs and event streams in $work)"
exit $rc
