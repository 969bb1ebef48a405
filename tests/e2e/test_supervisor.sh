#!/usr/bin/env bash
# End to end: the supervisor under fire, with the fault-injection build (make fault).
#
#  1. Quarantine (invariant 4): a RedisCluster annotated cache.example.com/test-fault: crash
#     aborts every workerd that reconciles it; after 3 crashes in a row it is quarantined
#     (Warning Event ReconcileCrashed, condition ReconcileCrashed=True) while the others
#     converge; a SIGKILLed informerd's successor restores the quarantine from the
#     condition; a spec change lifts it and the next reconcile turns the condition False.
#  2. `supervisor ctl workers` up to 4, then down to 1, while clusters converge.
#  3. Chaos: N RedisClusters (default 50, size 1) converging while random children
#     (workers, informerd, electord) are SIGKILLed every few seconds for a minute: every
#     cluster still reaches Running with its current generation observed (no key lost),
#     every child is back up, and the restarts are counted.
#  4. SIGTERM under load (invariant 8): drains and exits 0 within
#     --graceful-shutdown-timeout, and the Lease is released.
#
# Volumes: every PVC is pre-bound to a static PV created here (storageClass
# rdc-e2e-sup-static), so the test does not wait on the cluster's fake provisioner, which
# handles one claim every few seconds.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

FBIN=${RDC_FAULT_BIN:-$TOP/build-fault/bin}
N=${RDC_SUP_CLUSTERS:-50}    # chaos batch
M=${RDC_SUP_SMALL:-8}        # the batches of the quarantine and scaling phases
CHAOS_S=${RDC_SUP_CHAOS_SECONDS:-60}
GRACE=15

ns=rdc-e2e-sup-$$
work=$(mktemp -d /tmp/rdc-e2e-sup.XXXXXX)
rt=$work/rt
sc=rdc-e2e-sup-static
sup_pid= bg_pid=
t0=$SECONDS
cleanup() {
    [ -n "$bg_pid" ] && kill -TERM "$bg_pid" 2>/dev/null
    sup_stop 10
    # Nobody runs the finalizer any more: take it off so that the namespace can go.
    kubectl -n "$ns" get rdc -o json 2>/dev/null |
        jq '.items |= map(.metadata.finalizers = null)' 2>/dev/null |
        kubectl replace -f - >/dev/null 2>&1
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
    kubectl delete pv -l "rdc-e2e-sup=$ns" --wait=false >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
note() { echo "# [$((SECONDS - t0))s] $*"; }

if [ ! -x "$FBIN/supervisor" ] || [ ! -x "$FBIN/workerd" ]; then
    not_ok "fault-injection binaries in $FBIN (make fault)"
    summary
    exit 1
fi

# ---- helpers --------------------------------------------------------------------------

ctl() { "$FBIN/supervisor" ctl --runtime-dir "$rt" "$@"; }
# workers_are N: exactly N workerd rows in `ctl status`, all up and ready
workers_are() {
    local s
    s=$(ctl status 2>/dev/null) || return 1
    [ "$(awk 'NR > 1 && $1 ~ /^workerd-/' <<<"$s" | wc -l)" -eq "$1" ] &&
        [ "$(awk 'NR > 1 && $1 ~ /^workerd-/ && $3 == "up" && $4 == "yes"' <<<"$s" | wc -l)" -eq "$1" ]
}
# all_up: every child in `ctl status` is up and ready with a PID
all_up() {
    local s
    s=$(ctl status 2>/dev/null) || return 1
    [ "$(awk 'NR > 1' <<<"$s" | wc -l)" -gt 0 ] &&
        [ -z "$(awk 'NR > 1 && !($3 == "up" && $4 == "yes" && $2 > 0)' <<<"$s")" ]
}
# metric NAME [REGEX]: sum of the samples of NAME whose line matches REGEX
metric() {
    curl -s "http://127.0.0.1:$metrics/metrics" |
        awk -v n="$1{" -v re="${2:-.}" 'index($0, n) == 1 && $0 ~ re { s += $NF } END { printf "%d\n", s }'
}
# converged REGEX COUNT: COUNT RedisClusters whose name matches ^REGEX are Running at their
# current generation
converged() {
    [ "$(kubectl -n "$ns" get rdc -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase} {.status.observedGeneration} {.metadata.generation}{"\n"}{end}' |
        awk -v p="^$1" '$1 ~ p && $2 == "Running" && $3 == $4' | wc -l)" -eq "$2" ]
}
names() { # PREFIX COUNT
    for i in $(seq 1 "$2"); do printf '%s%02d\n' "$1" "$i"; done
}
rdc_json() { # NAME [ANNOTATIONS-JSON]
    printf '{"apiVersion":"cache.example.com/v1","kind":"RedisCluster","metadata":{"name":"%s","namespace":"%s"%s},"spec":{"size":1,"image":"redis","version":"7.2","config":{"maxmemory":"64mb","maxmemoryPolicy":"allkeys-lru"},"storage":{"size":"1Gi","storageClass":"%s"}}}\n' \
        "$1" "$ns" "${2:+,\"annotations\":$2}" "$sc"
}
pv_json() { # NAME: a PV pre-bound to the claim of pod NAME-0
    printf '{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"%s-%s","labels":{"rdc-e2e-sup":"%s"}},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Retain","storageClassName":"%s","hostPath":{"path":"/tmp/rdc-e2e-sup-pv/%s-%s"},"claimRef":{"namespace":"%s","name":"data-%s-0"}}}\n' \
        "$ns" "$1" "$ns" "$sc" "$ns" "$1" "$ns" "$1"
}
create_rdcs() { # NAME...: create them in one kubectl call
    for n in "$@"; do rdc_json "$n"; done | kubectl create -f - >/dev/null
}

# ---- setup ----------------------------------------------------------------------------

kubectl apply -f "$TOP/crds/" >/dev/null
check "CRD established" kubectl wait --for=condition=Established --timeout=60s crd/redisclusters.cache.example.com
kubectl create namespace "$ns" >/dev/null
{ echo crasher; names a "$M"; names b "$M"; names c "$N"; } | while read -r n; do pv_json "$n"; done |
    kubectl create -f - >/dev/null
check "static PersistentVolumes created" test "$(kubectl get pv -l "rdc-e2e-sup=$ns" -o name | wc -l)" -eq $((1 + 2 * M + N))

ulimit -c 0 # the crashing workers abort(): no core files
sup_start "$FBIN" "$rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns" \
    --leader-elect --leader-election-namespace "$ns" --leader-election-id rdc-e2e-sup \
    --leader-election-lease-duration 6s --leader-election-renew-deadline 4s \
    --leader-election-retry-period 1s --graceful-shutdown-timeout ${GRACE}s
check "operator ready (/readyz)" wait_until 60 curl -sf "http://127.0.0.1:$health/readyz"
initial_table() { all_up && workers_are 2; }
check "ctl status: electord, informerd and 2 workers up" wait_until 20 initial_table
check "Lease held" wait_until 30 sh -c "kubectl -n $ns get lease rdc-e2e-sup -o jsonpath='{.spec.holderIdentity}' | grep -q ."
note "setup done"

# ---- 1. quarantine, and the pool grows to 4 under load ---------------------------------

{ rdc_json crasher '{"cache.example.com/test-fault":"crash"}'; for n in $(names a "$M"); do rdc_json "$n"; done; } |
    kubectl create -f - >/dev/null
check "ctl workers 4 accepted" ctl workers 4
check "ctl status shows 4 workers up" wait_until 30 workers_are 4
crashed_event() {
    kubectl -n "$ns" get events --field-selector reason=ReconcileCrashed,involvedObject.name=crasher \
        -o jsonpath='{range .items[*]}{.type}{"\n"}{end}' | grep -q '^Warning$'
}
check "crashing key quarantined: Warning Event ReconcileCrashed" wait_until 90 crashed_event
check "crashing key quarantined: condition ReconcileCrashed True" wait_until 20 sh -c \
    "test \"\$(kubectl -n $ns get rdc crasher -o jsonpath='{.status.conditions[?(@.type==\"ReconcileCrashed\")].status}')\" = True"
# The children refresh their metrics files every 2 s: the condition can be seen first.
quarantine_counted() { [ "$(metric informer_quarantined_keys_total)" -ge 1 ]; }
check "informer_quarantined_keys_total counts it" wait_until 10 quarantine_counted
check "the workers' aborts were restarted (SIGABRT in the supervisor log)" grep -q 'signal 6 (SIGABRT)' "$work/operator.log"
check "the other $M RedisClusters converge meanwhile" wait_until 120 converged "a[0-9]" "$M"
check "the quarantined one made no StatefulSet" sh -c "! kubectl -n $ns get statefulset crasher >/dev/null 2>&1"
ev=$(kubectl -n "$ns" get events --field-selector reason=ReconcileCrashed -o jsonpath='{range .items[*]}{.involvedObject.name}{"\n"}{end}' | sort -u | tr '\n' ' ')
check "no other key was quarantined (ReconcileCrashed events on: $ev)" test "$ev" = "crasher "
check "all children up again after the crashes" wait_until 30 all_up
note "quarantine done"

# ---- 1b. the quarantine outlives informerd ---------------------------------------------
# It is recorded on the object (the condition names the generation and when it began): a
# new informerd holds the key back for the rest of the hour instead of letting it crash
# workers three more times.

aborts() { grep -c 'signal 6 (SIGABRT)' "$work/operator.log"; }
aborts_before=$(aborts)
ipid=$(ctl status | awk '$1 == "informerd" { print $2 }')
if [ -n "$ipid" ] && [ "$(awk '/^PPid:/ { print $2 }' "/proc/$ipid/status" 2>/dev/null)" = "$sup_pid" ]; then
    check "informerd SIGKILLed (pid $ipid)" kill -KILL "$ipid"
else
    not_ok "informerd's pid from ctl status ($ipid) is a child of the supervisor"
fi
informerd_back() { all_up && [ "$(ctl status | awk '$1 == "informerd" { print $2 }')" != "$ipid" ]; }
check "informerd restarted" wait_until 30 informerd_back
check "the new informerd restored the quarantine from the condition" wait_until 30 \
    grep -q '"msg":"key quarantined by its ReconcileCrashed condition".*"key":"'"$ns"'/crasher"' "$work/operator.log"
sleep 10
check "no worker crashed on the quarantined key since (SIGABRTs: $aborts_before -> $(aborts))" \
    test "$(aborts)" = "$aborts_before"
check "still no StatefulSet for the quarantined one" sh -c "! kubectl -n $ns get statefulset crasher >/dev/null 2>&1"
note "quarantine restored"

# ---- 2. the pool shrinks to 1 under load; a new spec lifts the quarantine ---------------

create_rdcs $(names b "$M")
kubectl -n "$ns" patch rdc crasher --type merge -p \
    '{"metadata":{"annotations":{"cache.example.com/test-fault":null}},"spec":{"config":{"maxmemory":"128mb"}}}' >/dev/null
check "ctl workers 1 accepted" ctl workers 1
check "ctl status shows exactly 1 worker up" wait_until 30 workers_are 1
check "the $M new RedisClusters converge with one worker" wait_until 120 converged "b[0-9]" "$M"
check "a spec change lifted the quarantine: crasher Running" wait_until 60 converged "crasher$" 1
crash_cond() { kubectl -n "$ns" get rdc crasher -o jsonpath='{.status.conditions[?(@.type=="ReconcileCrashed")].status}/{.status.conditions[?(@.type=="ReconcileCrashed")].reason}'; }
crash_cleared() { [ "$(crash_cond)" = False/ReconcileCompleted ]; }
check "the completed reconcile cleared the condition (ReconcileCrashed False/ReconcileCompleted)" \
    wait_until 30 crash_cleared
check "ctl status still shows exactly 1 worker" workers_are 1
check "retired workers cost no key a crash" sh -c "! grep '\"msg\":\"worker lost with an item in flight; requeued\".*\"reason\":\"exited\"' '$work/operator.log'"
note "scaling done"

# ---- 3. chaos: SIGKILL random children while N clusters converge ------------------------

check "ctl workers 3 accepted" ctl workers 3
check "ctl status shows 3 workers up" wait_until 30 workers_are 3
restarts_before=$(metric supervisor_child_restarts_total)
create_rdcs $(names c "$N") &
bg_pid=$!
note "creating $N RedisClusters; SIGKILLing children for ${CHAOS_S}s"
declare -A kills
nkills=0
# The first three victims are fixed (every kind of child dies at least once), then random.
order=(informerd workerd electord)
end=$((SECONDS + CHAOS_S))
while [ "$SECONDS" -lt "$end" ]; do
    sleep "$((2 + RANDOM % 3)).$((RANDOM % 10))"
    # At most 4 SIGKILLs per child keep the restart delays (1, 2, 4, 8 s) short.
    mapfile -t up < <(ctl status 2>/dev/null | awk 'NR > 1 && $3 == "up" && $2 > 0 { print $1, $2 }' |
        while read -r c p; do [ "${kills[$c]:-0}" -lt 4 ] && echo "$c $p"; done)
    [ "${#up[@]}" -gt 0 ] || continue
    if [ "$nkills" -lt "${#order[@]}" ]; then
        mapfile -t pick < <(printf '%s\n' "${up[@]}" | grep "^${order[$nkills]}" | shuf -n 1)
        [ "${#pick[@]}" -gt 0 ] || continue
        victim=${pick[0]}
    else
        victim=${up[RANDOM % ${#up[@]}]}
    fi
    name=${victim% *} pid=${victim#* }
    # Only ever a child of our supervisor.
    [ "$(awk '/^PPid:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)" = "$sup_pid" ] || continue
    if kill -KILL "$pid" 2>/dev/null; then
        kills[$name]=$((${kills[$name]:-0} + 1))
        nkills=$((nkills + 1))
        note "SIGKILL $name (pid $pid)"
    fi
done
wait "$bg_pid"
create_rc=$?
bg_pid=
check "the $N RedisClusters were created" test "$create_rc" = 0
note "chaos over: $nkills kills"
check "every child is up again (ctl status)" wait_until 120 all_up
check "electord, informerd and a worker were each killed" \
    test "${kills[electord]:-0}" -gt 0 -a "${kills[informerd]:-0}" -gt 0 -a "$(printf '%s\n' "${!kills[@]}" | grep -c '^workerd-')" -gt 0
check "every one of the $N RedisClusters reaches Running (no key lost)" wait_until 180 converged "c[0-9]" "$N"
if ! converged "c[0-9]" "$N"; then
    echo "# not converged:"
    kubectl -n "$ns" get rdc -o jsonpath='{range .items[*]}{.metadata.name} {.status.phase} {.status.observedGeneration} {.metadata.generation}{"\n"}{end}' |
        awk '!($2 == "Running" && $3 == $4) { print "#   " $0 }'
    ctl status | sed 's/^/#   /'
else
    note "all $N converged"
fi
check "and so does every earlier one" converged '' $((1 + 2 * M + N))
check "every RedisCluster has its StatefulSet" test "$(kubectl -n "$ns" get statefulset -o name | wc -l)" -eq $((1 + 2 * M + N))
restarts_after=$(metric supervisor_child_restarts_total)
check "supervisor_child_restarts_total grew by at least the $nkills kills ($restarts_before -> $restarts_after)" \
    test $((restarts_after - restarts_before)) -ge "$nkills"
for c in "${!kills[@]}"; do
    r=$(metric supervisor_child_restarts_total "child=\"$c\"")
    check "restarts of $c recorded ($r, killed ${kills[$c]}x)" test "$r" -ge "${kills[$c]}"
done
check "ctl status shows 3 workers" workers_are 3
restarts_shown() { ctl status | awk '$1 == "informerd" || $1 == "electord" { if ($6 > 0) n++ } END { exit n != 2 }'; }
check "ctl status RESTARTS > 0 for informerd and electord" restarts_shown
ev=$(kubectl -n "$ns" get events --field-selector reason=ReconcileCrashed -o jsonpath='{range .items[*]}{.involvedObject.name}{"\n"}{end}' | sort -u | tr '\n' ' ')
check "SIGKILLed workers got no key quarantined (ReconcileCrashed events on: $ev)" test "$ev" = "crasher "
# Ready again once informerd and electord have outlasted the longest restart delay (60 s).
wait_until 100 curl -sf "http://127.0.0.1:$health/readyz"
check "operator ready again (/readyz: $(curl -s "http://127.0.0.1:$health/readyz" | tr '\n' ' '))" \
    curl -sf "http://127.0.0.1:$health/readyz"
note "chaos phase done"

# ---- 4. SIGTERM drains under load ----------------------------------------------------
# Load: delete every RedisCluster (the finalizer runs through the workers). SIGTERM the
# moment `ctl status` shows a worker with a key in flight: that reconcile must finish.

child_pids=$(ctl status | awk 'NR > 1 && $2 > 0 { print $2 }')
kubectl -n "$ns" delete rdc --all --wait=false >/dev/null 2>&1 &
bg_pid=$!
busy=
for _ in $(seq 1 300); do
    mark=$(wc -l <"$work/operator.log") # its "reconciled" line comes after this one
    busy=$(ctl status 2>/dev/null | awk 'NR > 1 && $1 ~ /^workerd-/ && $7 ~ /\// { print $7; exit }')
    [ -n "$busy" ] && break
    sleep 0.1
done
kill -TERM "$sup_pid"
t_term=$(date +%s.%N)
note "SIGTERM with ${busy:-no key} in flight"
rc=124
for _ in $(seq 1 $((GRACE * 2 + 20))); do
    if ! kill -0 "$sup_pid" 2>/dev/null; then wait "$sup_pid"; rc=$?; break; fi
    sleep 0.5
done
took=$(awk -v a="$t_term" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
sup_pid=
check "SIGTERM: supervisor exits 0 (got $rc)" test "$rc" = 0
check "within the grace period (${took}s < ${GRACE}s)" awk -v t="$took" -v g="$GRACE" 'BEGIN { exit !(t < g) }'
check "a reconcile was in flight at SIGTERM (${busy:-none})" test -n "$busy"
check "and it finished" sh -c "tail -n +$mark '$work/operator.log' | grep '\"msg\":\"reconciled\"' | grep -q '\"name\":\"${busy#*/}\"'"
stopped() { # every child stopped on its own with code 0
    sed -n '/"msg":"shutting down: draining/,$p' "$work/operator.log" | grep '"msg":"child stopped"' >"$work/stopped"
    [ -s "$work/stopped" ] && ! grep -v '"status":"exited with code 0"' "$work/stopped" &&
        tail -1 "$work/stopped" | grep -q '"child":"electord"'
}
check "every child exited 0 on its own (workers and informerd first, then electord)" stopped
check "drained in order, nothing forced" grep -q '"msg":"all children stopped","forced":"false"' "$work/operator.log"
check "Lease released on shutdown" test -z "$(kubectl -n "$ns" get lease rdc-e2e-sup -o jsonpath='{.spec.holderIdentity}')"
none_alive() { for p in "$@"; do kill -0 "$p" 2>/dev/null && return 1; done; return 0; }
check "no child left behind" none_alive $child_pids
wait "$bg_pid" 2>/dev/null
bg_pid=
note "done"

if [ "$failed" -gt 0 ]; then
    echo "--- operator log (warnings and errors, last 80)"
    grep -v '"level":"info"' "$work/operator.log" | tail -80
    cp "$work/operator.log" "/tmp/rdc-e2e-sup-$$.operator.log" && echo "--- full log: /tmp/rdc-e2e-sup-$$.operator.log"
fi
summary
