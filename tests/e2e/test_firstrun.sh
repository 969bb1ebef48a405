#!/usr/bin/env bash
# End to end: what a new user meets on a first run (issue 19 items 5-7, issue 22 item 9).
#
#  1. Another operator of the same user already runs (a supervisor holding the default
#     runtime directory, $XDG_RUNTIME_DIR/rdc-operator, here under a private
#     XDG_RUNTIME_DIR): a second supervisor started without --runtime-dir takes
#     <default>-2, says so, and reconciles a RedisCluster to Running; the first one keeps
#     running. Given explicitly, a held directory is refused naming the holder's pid. A
#     runtime directory that is a symbolic link or open to others is refused, naming it.
#  2. The endpoints: the bound addresses are logged with the real port when given as :0;
#     the health-probe port serves /healthz and /readyz but not /metrics; the metrics port
#     serves /metrics, where process_cpu_seconds_total is a counter.
#  3. scripts/demo.sh with that other supervisor still on the default runtime directory
#     completes (RDC_DEMO_EXIT=1: the sample reaches Running, exit 0), and while it waits
#     (here for the cluster lock, held by this script for a few seconds) it says what it
#     waits for at the progress interval.
#  4. `kubectl apply -k deploy/` (the README's install command) on this control plane,
#     where the operator's pods never really serve: creating and updating a RedisCluster
#     with kubectl works, the API server having called the webhooks and failed open (its
#     log says so); invalid ones are still refused by the CRD's schema and CEL rules; and,
#     as a control, with failurePolicy Fail (the old manifests) the same create is refused.
#
# Cleanup (trap): the webhook configurations first, the supervisors by PID, then the
# namespaces and cluster-scoped objects this script created (the CRD stays: other
# scripts use it).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ns=rdc-e2e-first-$$
ns_a=rdc-e2e-firsta-$$
work=$(mktemp -d /tmp/rdc-e2e-first.XXXXXX)
xdg=$work/xdg
op_ns=rediscluster-operator-system
a_pid= b_pid= demo_pid= lock_pid=
applied_deploy=0
t0=$SECONDS
note() { echo "# [$((SECONDS - t0))s] $*"; }

stop_pid() { # stop_pid PID: TERM, wait up to 10 s, KILL
    local p=$1
    [ -n "$p" ] && kill -0 "$p" 2>/dev/null || return 0
    kill -TERM "$p" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.2; done
    kill -KILL "$p" 2>/dev/null
}
unfinalize() { # unfinalize NS NAME...: nobody runs the finalizer any more
    local n=$1; shift
    for r in "$@"; do
        kubectl -n "$n" patch rdc "$r" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
    done
}
cleanup() {
    if [ "$applied_deploy" = 1 ]; then
        kubectl delete validatingwebhookconfiguration rediscluster-operator-validating --ignore-not-found --wait=false >/dev/null 2>&1
        kubectl delete mutatingwebhookconfiguration rediscluster-operator-mutating --ignore-not-found --wait=false >/dev/null 2>&1
    fi
    stop_pid "$demo_pid"
    stop_pid "$lock_pid"
    stop_pid "$b_pid"
    stop_pid "$a_pid"
    for n in "$ns" "$ns_a"; do
        unfinalize "$n" $(kubectl -n "$n" get rdc -o name 2>/dev/null | sed 's|.*/||')
        kubectl delete namespace "$n" --ignore-not-found --wait=false >/dev/null 2>&1
    done
    unfinalize default cache
    kubectl -n default delete rdc cache --ignore-not-found --wait=false >/dev/null 2>&1
    kubectl -n default delete lease rdc-demo --ignore-not-found >/dev/null 2>&1
    if [ "$applied_deploy" = 1 ]; then
        # Waited for: test_rbac.sh and test_webhook.sh create things in this namespace,
        # which a terminating namespace refuses.
        kubectl delete namespace "$op_ns" --ignore-not-found --timeout=120s >/dev/null 2>&1
        kubectl delete clusterrole,clusterrolebinding -l app.kubernetes.io/part-of=rediscluster-operator \
            --ignore-not-found >/dev/null 2>&1
    fi
    if [ "${RDC_E2E_KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

rc_json() { # rc_json NS NAME SPEC-JSON
    printf '{"apiVersion":"cache.example.com/v1","kind":"RedisCluster","metadata":{"name":"%s","namespace":"%s"},"spec":%s}' "$2" "$1" "$3"
}
phase_is() { test "$(kubectl -n "$1" get rdc "$2" -o jsonpath='{.status.phase}' 2>/dev/null)" = "$3"; }

kubectl apply -f "$TOP/crds/" >/dev/null
kubectl wait --for=condition=Established --timeout=60s crd/redisclusters.cache.example.com >/dev/null
kubectl create namespace "$ns" >/dev/null
kubectl create namespace "$ns_a" >/dev/null
mkdir -m 700 "$xdg"
export XDG_RUNTIME_DIR=$xdg
def=$xdg/rdc-operator

# ---- 1. A second supervisor beside one on the default runtime directory ------------------
"$BIN/supervisor" --kubeconfig "$KUBECONFIG" --namespace "$ns_a" --workers 1 \
    --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 >"$work/a.log" 2>&1 &
a_pid=$!
check "first supervisor: takes the default runtime directory" wait_until 10 test -s "$def/endpoints"
check "  ... and holds its lock (its pid in supervisor.lock)" test "$(cat "$def/supervisor.lock" 2>/dev/null)" = "$a_pid"

"$BIN/supervisor" --kubeconfig "$KUBECONFIG" --namespace "$ns" --workers 1 \
    --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 >"$work/b.log" 2>&1 &
b_pid=$!
check "second supervisor, no --runtime-dir: starts on $def-2" wait_until 10 test -s "$def-2/endpoints"
check "  ... is still running" kill -0 "$b_pid"
check "  ... says why, naming the default and its holder" \
    grep -F "\"msg\":\"another supervisor holds the default runtime directory: using a free one" "$work/b.log"
check "  ... (holder_pid $a_pid, runtime_dir $def-2)" \
    sh -c "grep -F 'another supervisor holds' '$work/b.log' | grep -F '\"holder_pid\":\"$a_pid\"' | grep -qF '\"runtime_dir\":\"$def-2\"'"
check "  ... its children got that runtime directory" \
    sh -c "tr '\\0' ' ' </proc/\$(pgrep -P $b_pid -f informerd | head -1)/cmdline | grep -qF -- '--runtime-dir=$def-2'"
check "  ... and \`supervisor ctl --runtime-dir $def-2 status\` reaches it" \
    sh -c "'$BIN/supervisor' ctl --runtime-dir '$def-2' status | grep -q informerd"
# Standalone: kwok's pods have no Redis behind them (test_status.sh says why).
rc_json "$ns" first '{"size":1,"image":"redis","mode":"Standalone"}' | kubectl create -f - >/dev/null
check "  ... and reconciles a RedisCluster to Running" wait_until 60 phase_is "$ns" first Running
check "the first supervisor still runs" kill -0 "$a_pid"

# Explicitly given, a held directory is an error naming the holder.
# (Foreground runs are bounded: a supervisor that accepted the directory would run on.)
timeout 10 "$BIN/supervisor" --kubeconfig "$KUBECONFIG" --runtime-dir "$def" \
    --metrics-bind-address 0 --health-probe-bind-address 0 >"$work/c.log" 2>&1
c_rc=$?
check "--runtime-dir of a running supervisor: exits 1" test "$c_rc" = 1
check "  ... naming the directory and the holder's pid" \
    sh -c "grep -F 'another supervisor (pid $a_pid) runs on the runtime directory $def' '$work/c.log'"

# The runtime directory itself: no symbolic link, ours, mode 0700 (issue 22 item 9).
mkdir -m 700 "$work/real"
ln -s "$work/real" "$work/link"
timeout 10 "$BIN/supervisor" --runtime-dir "$work/link" --metrics-bind-address 0 --health-probe-bind-address 0 >"$work/d.log" 2>&1
d_rc=$?
check "a runtime directory that is a symbolic link is refused (exit 1)" test "$d_rc" = 1
check "  ... naming it and why" grep -qF "runtime directory $work/link is a symbolic link" "$work/d.log"
check "  ... and nothing was created through it" test -z "$(ls -A "$work/real")"
mkdir -m 755 "$work/open"
timeout 10 "$BIN/supervisor" --runtime-dir "$work/open" --metrics-bind-address 0 --health-probe-bind-address 0 >"$work/e.log" 2>&1
e_rc=$?
check "a runtime directory with mode 0755 is refused (exit 1)" test "$e_rc" = 1
check "  ... naming it, its mode and the fix" grep -qF "runtime directory $work/open has mode 0755, not 0700" "$work/e.log"
check "  ... and left as it was" test "$(stat -c %a "$work/open")" = 755
timeout 10 "$BIN/electord" --runtime-dir "$work/open" >"$work/f.log" 2>&1
check "  ... by the daemons too (electord alone)" grep -qF "has mode 0755, not 0700" "$work/f.log"

# ---- 2. Endpoints: bound addresses logged, /metrics only on the metrics port -------------
hp=$(sed -n 's/^health=//p' "$def-2/endpoints")
mp=$(sed -n 's/^metrics=//p' "$def-2/endpoints")
check "ports of :0 endpoints known (health $hp, metrics $mp)" test -n "$hp" -a -n "$mp" -a "${hp:-0}" != 0 -a "${mp:-0}" != 0
check "the health-probe address is logged with its real port" \
    grep -qF "\"msg\":\"serving health probes\",\"addr\":\"127.0.0.1:$hp\"" "$work/b.log"
check "the metrics address is logged with its real port" \
    grep -qF "\"msg\":\"serving metrics\",\"addr\":\"127.0.0.1:$mp\"" "$work/b.log"
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$1"; }
check "probe port: /healthz 200" test "$(code "http://127.0.0.1:$hp/healthz")" = 200
check "probe port: /readyz answers" sh -c "c=\$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://127.0.0.1:$hp/readyz); [ \"\$c\" = 200 ] || [ \"\$c\" = 503 ]"
check "probe port: /metrics 404 (metrics are on their own port)" test "$(code "http://127.0.0.1:$hp/metrics")" = 404
check "metrics port: /metrics 200" test "$(code "http://127.0.0.1:$mp/metrics")" = 200
check "metrics port: /healthz 404" test "$(code "http://127.0.0.1:$mp/healthz")" = 404
curl -s --max-time 5 "http://127.0.0.1:$mp/metrics" >"$work/metrics.txt"
check "process_cpu_seconds_total is typed counter" grep -qx '# TYPE process_cpu_seconds_total counter' "$work/metrics.txt"
check "  ... with a series per child" grep -q '^process_cpu_seconds_total{child="informerd"}' "$work/metrics.txt"
check "process_resident_memory_bytes stays a gauge" grep -qx '# TYPE process_resident_memory_bytes gauge' "$work/metrics.txt"
stop_pid "$b_pid"
b_pid=

# ---- 3. The demo, with the other supervisor still on the default runtime directory -------
# The demo brings up "the local control plane": ours, already up (RDC_CLUSTER_DIR). Hold
# cluster.sh's lock for a few seconds so that it has something to wait for and say.
cdir=${RDC_CLUSTER_DIR:-/tmp/rdc-cluster}
test -f "$cdir/ports.env" || not_ok "RDC_CLUSTER_DIR $cdir is not the running cluster's state dir"
flock "$cdir.lock" sleep 4 &
lock_pid=$!
wait_until 5 sh -c "awk '\$2 != \"->\"' /proc/locks | grep -q ':$(stat -c %i "$cdir.lock") '"
note "demo starting (another supervisor, pid $a_pid, holds $def)"
(
    unset KUBECONFIG
    export RDC_DEMO_EXIT=1 RDC_DEMO_PROGRESS=1
    exec timeout 240 "$TOP/scripts/demo.sh"
) >"$work/demo.log" 2>&1 &
demo_pid=$!
wait "$demo_pid"
demo_rc=$?
demo_pid=
note "demo done (exit $demo_rc)"
check "demo.sh completes beside another operator (exit 0)" test "$demo_rc" = 0
check "  ... says what it waits for while cluster.sh waits for its lock" \
    grep -qE "^demo: waiting [0-9]+ s for another cluster.sh \(pid [0-9]+\) working on $cdir" "$work/demo.log"
check "  ... says which runtime directory it took" \
    grep -qF "demo: another operator of yours holds the default runtime directory: this one uses $def-2" "$work/demo.log"
check "  ... prints the endpoints' real addresses" grep -qE "^demo: operator running .*serving metrics addr=127\.0\.0\.1:[1-9]" "$work/demo.log"
check "  ... the sample reached Running" grep -qF "demo: phase is Running" "$work/demo.log"
check "the first supervisor still runs" kill -0 "$a_pid"
if [ "$demo_rc" != 0 ]; then echo "--- demo.log (last 30 lines)"; tail -30 "$work/demo.log"; fi

# ---- 4. kubectl apply -k deploy/ never blocks RedisCluster writes -------------------------
apilog=$cdir/logs/kube-apiserver.log
check "the API server's log exists (the fail-open evidence is read there)" test -s "$apilog"
kubectl apply -k "$TOP/deploy/" >"$work/deploy.log" 2>&1
deploy_rc=$?
applied_deploy=1
check "kubectl apply -k deploy/ succeeds" test "$deploy_rc" = 0
check "  ... installed both webhook configurations, failing open" sh -c \
    "test \"\$(kubectl get validatingwebhookconfiguration rediscluster-operator-validating -o jsonpath='{.webhooks[0].failurePolicy}')\" = Ignore &&
     test \"\$(kubectl get mutatingwebhookconfiguration rediscluster-operator-mutating -o jsonpath='{.webhooks[0].failurePolicy}')\" = Ignore"
check "  ... without a serving certificate (the state a user is in)" \
    sh -c "! kubectl -n $op_ns get secret rediscluster-operator-webhook-cert"
lines_before=$(wc -l <"$apilog")
start=$SECONDS
rc_json "$ns" after-deploy '{"size":2,"image":"redis"}' | kubectl create -f - >"$work/create.log" 2>&1
create_rc=$?
took=$((SECONDS - start))
check "create a RedisCluster with kubectl after apply -k deploy/: accepted (${took} s)" test "$create_rc" = 0
[ "$create_rc" = 0 ] || cat "$work/create.log"
check "  ... the API server called the webhooks and failed open (its log)" \
    sh -c "tail -n +$((lines_before + 1)) '$apilog' | grep -i 'failing open' | grep -q 'rediscluster.cache.example.com'"
check "update it (size 2 -> 3) with kubectl: accepted" kubectl -n "$ns" patch rdc after-deploy --type=merge -p '{"spec":{"size":3}}'
check "  ... and stored" test "$(kubectl -n "$ns" get rdc after-deploy -o jsonpath='{.spec.size}')" = 3
check "kubectl scale it to 4: accepted" kubectl -n "$ns" scale rdc after-deploy --replicas=4
refused "invalid: size 0 (schema)" "spec.size" \
    sh -c "$(declare -f rc_json); rc_json $ns bad-size '{\"size\":0,\"image\":\"redis\"}' | kubectl create -f -"
refused "invalid: no image (schema)" "spec.image" \
    sh -c "$(declare -f rc_json); rc_json $ns no-image '{\"size\":1}' | kubectl create -f -"
refused "invalid: maxmemoryPolicy not in the enum (schema)" "spec.config.maxmemoryPolicy" \
    sh -c "$(declare -f rc_json); rc_json $ns bad-policy '{\"size\":1,\"image\":\"redis\",\"config\":{\"maxmemoryPolicy\":\"lfu\"}}' | kubectl create -f -"
# scale-in is refused only with spec.scaleDownPolicy Forbid (issue 34), storage may only grow
check "scaleDownPolicy Forbid set" kubectl -n "$ns" patch rdc after-deploy --type=merge -p '{"spec":{"scaleDownPolicy":"Forbid"}}'
refused "invalid: scale down 4 -> 2 with scaleDownPolicy Forbid (CEL)" "may not decrease" \
    kubectl -n "$ns" patch rdc after-deploy --type=merge -p '{"spec":{"size":2}}'
refused "invalid: kubectl scale down with scaleDownPolicy Forbid (CEL through /scale)" "may not decrease" \
    kubectl -n "$ns" scale rdc after-deploy --replicas=1
rc_json "$ns" with-storage '{"size":1,"image":"redis","storage":{"size":"1Gi","storageClass":"standard"}}' | kubectl create -f - >/dev/null 2>&1
refused "invalid: storage size shrunk (CEL)" "may not shrink" \
    kubectl -n "$ns" patch rdc with-storage --type=merge -p '{"spec":{"storage":{"size":"512Mi"}}}'
refused "invalid: storageClass changed (CEL)" "immutable" \
    kubectl -n "$ns" patch rdc with-storage --type=merge -p '{"spec":{"storage":{"storageClass":"fast"}}}'

# Control: the old, fail-closed manifests block the very same write.
kubectl patch validatingwebhookconfiguration rediscluster-operator-validating --type=json \
    -p '[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Fail"}]' >/dev/null
refused "control: with failurePolicy Fail the same create is refused" "failed calling webhook" \
    sh -c "$(declare -f rc_json); rc_json $ns blocked '{\"size\":1,\"image\":\"redis\"}' | kubectl create -f -"
kubectl patch validatingwebhookconfiguration rediscluster-operator-validating --type=json \
    -p '[{"op":"replace","path":"/webhooks/0/failurePolicy","value":"Ignore"}]' >/dev/null

# kubectl get rdc: READY as ready/size (status.ready), SIZE, DEGRADED and REASON.
kubectl -n "$ns" get rdc first >"$work/get.txt" 2>&1
check "kubectl get rdc: columns NAME READY SIZE PHASE DEGRADED REASON SHARDS STATE AGE (SHARDS, STATE: Cluster mode)" \
    sh -c "head -1 '$work/get.txt' | grep -qE '^NAME +READY +SIZE +PHASE +DEGRADED +REASON +SHARDS +STATE +AGE$'"
check "  ... the Running cluster reads 1/1 1 Running False" \
    sh -c "sed -n 2p '$work/get.txt' | grep -qE '^first +1/1 +1 +Running +False '"
check "  ... -o wide adds IMAGE" sh -c "kubectl -n $ns get rdc first -o wide | head -1 | grep -q IMAGE"
cat "$work/get.txt"

summary
