#!/usr/bin/env bash
# End to end: RedisCluster in two versions, the API server calling webhookd's /convert,
# and the storage migration of the upgrade (docs/api-versions.md).
#
# webhookd runs on 127.0.0.1:<free port> with a certificate from deploy/gen-certs.sh (a
# temporary CA, SAN IP:127.0.0.1); the CRD is the stock crds/ one with its conversion
# clientConfig pointed at that URL with that CA.
#
#   1. The CRD as it was before v1 (v1alpha1 only, storage) with 40 RedisClusters stored,
#      20 in the namespace the operator watches, 20 in one it does not.
#   2. Upgraded in place to the stock CRD (v1 storage, v1alpha1 deprecated, Webhook
#      conversion) while webhookd is down: the API's error names the conversion webhook,
#      the operator started then logs what it cannot list and is not ready.
#   3. webhookd back: the old objects read as v1 (mode Standalone, persistence aof), the
#      operator recovers and reconciles its 20.
#   4. supervisor ctl migrate-storage: 20 rewritten (the operator's status writes had
#      stored the other 20 as v1 already), storedVersions [v1], every object intact; a
#      second run does nothing; a restarted operator reconciles the migrated objects with
#      zero writes; with webhookd down, v1 reads still work and v1alpha1 ones name it.
#   5. Conversion both ways: created as v1alpha1 -> read as v1 and back; created as v1
#      with v1-only fields -> read as v1alpha1 (absent there), a full update (kubectl
#      replace) through v1alpha1, read as v1: intact; a no-op replace changes nothing;
#      kubectl prints the deprecation warning for v1alpha1 requests; kubectl get rdc.
#
# The CRD is deleted at the start (every RedisCluster with it) and the stock one is
# restored at the end (trap), so later scripts see the normal CRD.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

crd=redisclusters.cache.example.com
ns=rdc-e2e-ver-$$
ns2=rdc-e2e-ver2-$$
work=$(mktemp -d /tmp/rdc-e2e-ver.XXXXXX)
# A discovery cache of our own, dropped at every change of the CRD: kubectl would
# otherwise keep asking for the versions it saw before (10 minutes).
export KUBECACHEDIR=$work/kube-cache
wh_pid=
sup_pid=
op_ns=rediscluster-operator-system
created_op_ns=0
port=
V1=redisclusters.v1.cache.example.com
V1A=redisclusters.v1alpha1.cache.example.com
WARNING='cache.example.com/v1alpha1 RedisCluster is deprecated; use cache.example.com/v1 RedisCluster'

stop_webhookd() {
    if [ -n "$wh_pid" ] && kill -0 "$wh_pid" 2>/dev/null; then
        kill -TERM "$wh_pid" 2>/dev/null
        for _ in $(seq 20); do kill -0 "$wh_pid" 2>/dev/null || break; sleep 0.2; done
        kill -KILL "$wh_pid" 2>/dev/null
        wait "$wh_pid" 2>/dev/null
    fi
    wh_pid=
}
cleanup() {
    sup_stop 5
    # Objects still stored as v1alpha1 can only be read (and so deleted: the namespace's
    # and the CRD's finalizers list them) through the conversion webhook: keep it up.
    if [ -n "$port" ] && [ -z "$wh_pid" ]; then start_webhookd "$port" >/dev/null 2>&1; fi
    for n in "$ns" "$ns2"; do
        for o in $(kubectl -n "$n" get "$V1" -o name 2>/dev/null); do
            kubectl -n "$n" patch "$o" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
        done
    done
    kubectl delete namespace "$ns" "$ns2" --ignore-not-found --timeout=90s >/dev/null 2>&1
    # The stock CRD again (a fresh one: storedVersions [v1], the Service clientConfig).
    kubectl delete crd "$crd" --ignore-not-found --timeout=90s >/dev/null 2>&1
    stop_webhookd
    kubectl delete -f "$TOP/deploy/migrate-storage/rbac.yaml" --ignore-not-found --wait=false >/dev/null 2>&1
    [ "$created_op_ns" = 1 ] && kubectl delete namespace "$op_ns" --ignore-not-found --wait=false >/dev/null 2>&1
    kubectl apply -f "$TOP/crds/" >/dev/null 2>&1
    kubectl wait --for=condition=Established --timeout=60s "crd/$crd" >/dev/null 2>&1
    if [ "${RDC_E2E_KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

start_webhookd() { # [PORT]: webhookd on 127.0.0.1; sets port
    "$BIN/webhookd" --webhook-bind-address 127.0.0.1 --webhook-port "${1:-0}" --webhook-cert-dir "$work/certs" \
        --runtime-dir "$work/wh-rt" --log-level debug >>"$work/webhookd.log" 2>&1 &
    wh_pid=$!
    local want=${1:-}
    listening() {
        local p
        p=$(sed -n 's/.*"msg":"webhook server listening".*"port":"\([0-9]*\)".*/\1/p' "$work/webhookd.log" | tail -1)
        [ -n "$p" ] && { [ -z "$want" ] || [ "$p" = "$want" ]; } && port=$p
    }
    wait_until 10 listening && listening
}
stored_versions() { kubectl get crd "$crd" -o jsonpath='{.status.storedVersions}'; }
fresh_discovery() { rm -rf "$KUBECACHEDIR"; }
jqf() { jq -r "$1" "$2"; }
# jqe ARGS... FILE: jq -e on a file kubectl wrote, which must not be empty (jq -e passes on
# empty input, so a missing object would pass).
jqe() { local f=${*: -1}; test -s "$f" && jq -e "$@" >/dev/null; }

# ---- The stock CRD, as JSON, and its two variants ----------------------------------------
if ! kubectl create --dry-run=client -o json -f "$TOP/crds/cache.example.com_redisclusters.yaml" >"$work/stock.json" ||
    ! jqe '.spec.versions | length == 2' "$work/stock.json"; then
    not_ok "the stock CRD as JSON"
    summary
    exit 1
fi
check "stock CRD: v1 first (preferred), served, storage" \
    jqe '.spec.versions[0] | .name == "v1" and .served and .storage' "$work/stock.json"
check "stock CRD: v1alpha1 served, not storage, deprecated with a warning naming v1" \
    jqe --arg w "$WARNING" '.spec.versions[1] | .name == "v1alpha1" and .served and (.storage | not) and .deprecated and .deprecationWarning == $w' "$work/stock.json"
check "stock CRD: Webhook conversion at the webhook Service's /convert" \
    jqe '.spec.conversion | .strategy == "Webhook" and .webhook.clientConfig.service.path == "/convert" and .webhook.clientConfig.service.name == "rediscluster-operator-webhook"' "$work/stock.json"
check "stock CRD: the same printer columns on both versions (v1 adds wide ones)" \
    jqe '[.spec.versions[0].additionalPrinterColumns[] | select(.priority != 1) | .name] == [.spec.versions[1].additionalPrinterColumns[] | select(.priority != 1) | .name]' "$work/stock.json"
# Before v1: only v1alpha1, the storage version, no conversion.
jq '.spec.versions = [.spec.versions[] | select(.name == "v1alpha1") | .storage = true | del(.deprecated, .deprecationWarning)]
    | .spec.conversion = {strategy: "None"}' "$work/stock.json" >"$work/old.json"

# ---- 1. The CRD before v1, 40 objects stored as v1alpha1 ----------------------------------
# RedisClusters left by earlier scripts (a namespace still terminating after its operator
# stopped) keep their finalizer, and with it the CRD: no operator runs now to remove it.
left=$(kubectl get "$V1" -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}' 2>/dev/null)
for o in $left; do
    kubectl -n "${o%%/*}" patch "$V1" "${o#*/}" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
done
[ -z "$left" ] || echo "# finalizers removed from $(echo "$left" | wc -l) RedisCluster(s) left by earlier scripts"
kubectl delete crd "$crd" --ignore-not-found --timeout=90s >/dev/null 2>&1
if kubectl get crd "$crd" >/dev/null 2>&1; then
    not_ok "the CRD of earlier scripts removed (it is still there: objects it cannot read?)"
    kubectl get crd "$crd" -o jsonpath='{.status.conditions}'; echo
    summary
    exit 1
fi
ok "no CRD left from earlier scripts"
kubectl create -f "$work/old.json" >/dev/null
check "v1alpha1-only CRD established" kubectl wait --for=condition=Established --timeout=60s "crd/$crd"
check "storedVersions [v1alpha1]" wait_until 10 sh -c "kubectl get crd $crd -o jsonpath='{.status.storedVersions}' | grep -qx '\[\"v1alpha1\"\]'"
kubectl create namespace "$ns" >/dev/null
kubectl create namespace "$ns2" >/dev/null
# 20 in $ns, which the operator watches, and 20 in $ns2, which it does not (they stay as
# stored until the migration writes them).
for n in "$ns" "$ns2"; do
    for i in $(seq -w 1 20); do
        printf -- '---\napiVersion: cache.example.com/v1alpha1\nkind: RedisCluster\nmetadata: {name: old-%s, namespace: %s}\nspec: {size: 1, image: redis, version: "7.2", config: {maxmemory: %smb, maxmemoryPolicy: allkeys-lru}, storage: {size: 1Gi}}\n' "$i" "$n" "$((10#$i * 16))"
    done
done >"$work/old-objects.yaml"
check "40 RedisClusters created as v1alpha1" kubectl create -f "$work/old-objects.yaml"
fresh_discovery
check "kubectl get rdc with only v1alpha1: 20 listed" test "$(kubectl -n "$ns" get rdc --no-headers 2>/dev/null | wc -l)" = 20
kubectl get "$V1A" -A -o json >"$work/before-v1alpha1.json"
check "  ... as stored (no v1 fields, no annotation)" \
    jqe '(.items | length == 40) and all(.items[]; (.spec.mode == null) and (.metadata.annotations == null))' "$work/before-v1alpha1.json"

# ---- 2. The upgrade of the CRD while webhookd is down -------------------------------------
check "gen-certs.sh makes a CA and a serving certificate for 127.0.0.1" \
    "$TOP/deploy/gen-certs.sh" --certs-only --ip 127.0.0.1 --days 1 -o "$work/certs"
if ! start_webhookd; then
    not_ok "webhookd started"
    cat "$work/webhookd.log"
    summary
    exit 1
fi
ok "webhookd listening on 127.0.0.1:$port"
check "webhookd --help lists /convert" sh -c "'$BIN/webhookd' --help 2>&1 | grep -q '^  /convert'"
ca_b64=$(base64 -w0 <"$work/certs/ca.crt")
jq --arg url "https://127.0.0.1:$port/convert" --arg ca "$ca_b64" \
    '.spec.conversion.webhook.clientConfig = {url: $url, caBundle: $ca}' "$work/stock.json" >"$work/new.json"
# Down while the new CRD is applied: the API server reads the stored objects anew (a new
# storage for the CRD) and cannot convert them. (Once read, its watch cache holds them
# converted: a webhook that goes down later does not stop v1 readers.)
stop_webhookd
check "CRD upgraded in place to v1 storage" kubectl replace -f "$work/new.json"
check "upgraded CRD established" kubectl wait --for=condition=Established --timeout=60s "crd/$crd"
check "storedVersions [v1alpha1,v1]" wait_until 10 sh -c "kubectl get crd $crd -o jsonpath='{.status.storedVersions}' | grep -qx '\[\"v1alpha1\",\"v1\"\]'"
fresh_discovery
kubectl -n "$ns" get "$V1" -o json >/dev/null 2>"$work/down.err"
check "webhook down: a v1 list of objects stored as v1alpha1 fails" test -s "$work/down.err"
if grep -q 'conversion webhook for cache.example.com/v1alpha1, Kind=RedisCluster failed' "$work/down.err" &&
    grep -q 'connection refused' "$work/down.err"; then
    ok "  ... and the API's error names the conversion webhook and why"
else
    not_ok "  ... the API's error: $(head -c 400 "$work/down.err")"
fi
head -c 300 "$work/down.err"; echo
sup_start "$BIN" "$work/rt" "$work/operator.log" --workers 2 --leader-elect --namespace "$ns" \
    --leader-election-namespace "$ns" --leader-election-id rdc-e2e-ver --sync-period 10h
op_says_conversion() { grep '"relisting"' "$work/operator.log" | grep '"kind":"RedisCluster"' | grep -q 'conversion webhook'; }
check "operator's log: it cannot list RedisClusters, because of the conversion webhook" wait_until 30 op_says_conversion
grep '"relisting"' "$work/operator.log" | head -1 | cut -c1-400
check "  ... and it is not ready" sh -c "! curl -sf http://127.0.0.1:$health/readyz"

# ---- 3. webhookd back: everything recovers -------------------------------------------------
if start_webhookd "$port"; then ok "webhookd back on port $port"; else not_ok "webhookd restarted on port $port"; fi
check "v1 reads work again" wait_until 60 kubectl -n "$ns" get "$V1"
kubectl get "$V1" -A -o json >"$work/upgraded-v1.json" 2>/dev/null
check "the old objects read as v1: 40, mode Standalone, persistence aof, no annotation" \
    jqe '(.items | length == 40) and all(.items[]; .apiVersion == "cache.example.com/v1" and .spec.mode == "Standalone" and .spec.persistence == "aof" and .metadata.annotations == null)' "$work/upgraded-v1.json"
check "  ... with their v1alpha1 spec intact" \
    jqe --slurpfile a "$work/before-v1alpha1.json" '[.items[] | .spec | del(.mode, .persistence)] == [$a[0].items[] | .spec]' "$work/upgraded-v1.json"
check "operator recovers: ready" wait_until 90 curl -sf "http://127.0.0.1:$health/readyz"
all_reconciled() {
    kubectl -n "$ns" get "$V1" -o json >"$work/r.json" 2>/dev/null &&
        jqe '(.items | length == 20) and all(.items[]; .status.phase == "Running" and .status.observedGeneration == .metadata.generation)' "$work/r.json" &&
        test "$(kubectl -n "$ns" get statefulsets --no-headers 2>/dev/null | wc -l)" = 20
}
check "  ... and reconciles all 20 of its namespace (Running, StatefulSets created)" wait_until 180 all_reconciled
check "children's owner references name cache.example.com/v1" \
    sh -c "kubectl -n $ns get statefulset old-01 -o jsonpath='{.metadata.ownerReferences[0].apiVersion}' | grep -qx cache.example.com/v1"

murl() { echo "http://127.0.0.1:$metrics/metrics"; }
# Quiet: no writes for 4 s in a row.
quiet() {
    local a b
    a=$(write_requests "$(murl)") || return 1
    sleep 4
    b=$(write_requests "$(murl)") || return 1
    [ "$a" = "$b" ]
}
check "operator quiet" wait_until 90 quiet

# ---- 4. The storage migration ----------------------------------------------------------
# On the token of deploy/migrate-storage's ServiceAccount: its RBAC is enough.
kubectl get namespace "$op_ns" >/dev/null 2>&1 || { kubectl create namespace "$op_ns" >/dev/null && created_op_ns=1; }
check "deploy/migrate-storage applies (server dry run)" kubectl apply --dry-run=server -k "$TOP/deploy/migrate-storage"
kubectl apply -f "$TOP/deploy/migrate-storage/rbac.yaml" >/dev/null
token=$(kubectl -n "$op_ns" create token rediscluster-migrate-storage --duration=1h)
token_kubeconfig "$work/migrate.kubeconfig" migrate "$token"
check "  ... its token may not delete RedisClusters" \
    sh -c "! kubectl --kubeconfig '$work/migrate.kubeconfig' auth can-i delete redisclusters.cache.example.com -A | grep -qx yes"
kubectl get "$V1" -A -o json >"$work/pre-mig.json"
reconciles() { curl -sf "$(murl)" | awk '/^controller_runtime_reconcile_total\{/ { s += $NF } END { printf "%d\n", s }'; }
w0=$(write_requests "$(murl)")
r0=$(reconciles)
"$BIN/supervisor" ctl migrate-storage --kubeconfig "$work/migrate.kubeconfig" --page-size 7 --qps 50 \
    --state-file "$work/migrate.state" >"$work/migrate.out" 2>"$work/migrate.err"
mig_rc=$?
cat "$work/migrate.out" "$work/migrate.err"
check "migrate-storage exits 0" test "$mig_rc" = 0
# The operator's status writes stored its 20 as v1 already (any write stores the whole
# object in the storage version); the 20 it does not watch are rewritten now.
check "  ... 40 listed, 20 rewritten, 20 unchanged, 0 failed, 6 pages, storedVersions [v1alpha1,v1] -> [v1]" \
    grep -q '^migrate-storage redisclusters.cache.example.com to v1: 40 listed, 20 rewritten, 20 unchanged, 0 conflicts, 0 gone, 0 failed, 6 pages; storedVersions \[v1alpha1,v1\] -> \[v1\]' "$work/migrate.out"
check "  ... state file removed at the end" test ! -e "$work/migrate.state"
check "storedVersions == [v1]" sh -c "kubectl get crd $crd -o jsonpath='{.status.storedVersions}' | grep -qx '\[\"v1\"\]'"
kubectl get "$V1" -A -o json >"$work/post-mig.json"
check "every object intact: spec, status, generation, labels, annotations, finalizers as before" \
    jqe --slurpfile a "$work/pre-mig.json" '[.items[] | {n: .metadata.name, ns: .metadata.namespace, s: .spec, st: .status, g: .metadata.generation, l: .metadata.labels, an: .metadata.annotations, f: .metadata.finalizers}] == [$a[0].items[] | {n: .metadata.name, ns: .metadata.namespace, s: .spec, st: .status, g: .metadata.generation, l: .metadata.labels, an: .metadata.annotations, f: .metadata.finalizers}]' "$work/post-mig.json"
check "  ... the 20 the operator does not watch rewritten (new resourceVersion), its 20 not" \
    jqe --slurpfile a "$work/pre-mig.json" --arg ns2 "$ns2" '[.items[] | .metadata.resourceVersion] as $n | [$a[0].items[] | .metadata.resourceVersion] as $o | [range(0; 40) | select($n[.] != $o[.])] as $changed | ($changed | length == 20) and all($changed[]; $a[0].items[.].metadata.namespace == $ns2)' "$work/post-mig.json"
sleep 3
w1=$(write_requests "$(murl)")
echo "# operator writes before the migration $w0, after $w1; reconciles $r0 -> $(reconciles)"
check "the operator wrote nothing meanwhile" test "$w1" = "$w0"
"$BIN/supervisor" ctl migrate-storage --kubeconfig "$work/migrate.kubeconfig" >"$work/migrate2.out" 2>&1
check "a second run: exit 0, nothing to do" grep -q 'nothing to do, storedVersions is \[v1\]' "$work/migrate2.out"
check "migrate-storage refuses bad flags (exit 2)" sh -c "'$BIN/supervisor' ctl migrate-storage --page-size 0 >/dev/null 2>&1; test \$? = 2"

# A fresh operator over the migrated objects of its namespace: it reconciles all 20 and
# writes nothing (no child, no status: nothing changed) -- also with children as the
# operator of v1alpha1 made them, whose owner references name v1alpha1 (same group, same
# uid: still ours, and not rewritten).
sup_stop 10
for kind in configmaps services statefulsets; do
    for o in $(kubectl -n "$ns" get "$kind" -l app.kubernetes.io/managed-by=rediscluster-operator -o name); do
        kubectl -n "$ns" patch "$o" --type=json \
            -p '[{"op":"replace","path":"/metadata/ownerReferences/0/apiVersion","value":"cache.example.com/v1alpha1"}]' >/dev/null
    done
done
old_refs() { kubectl -n "$ns" get configmaps,services,statefulsets -l app.kubernetes.io/managed-by=rediscluster-operator \
    -o jsonpath='{range .items[*]}{.metadata.ownerReferences[0].apiVersion}{"\n"}{end}' | grep -c '^cache.example.com/v1alpha1$'; }
check "the children's owner references name v1alpha1 now, as an older operator wrote them ($(old_refs))" \
    test "$(old_refs)" -ge 60
sup_start "$BIN" "$work/rt2" "$work/operator2.log" --workers 2 --leader-elect --namespace "$ns" \
    --leader-election-namespace "$ns" --leader-election-id rdc-e2e-ver --sync-period 10h
check "operator restarted: ready" wait_until 60 curl -sf "http://127.0.0.1:$health/readyz"
saw_them() { test "$(reconciles)" -ge 20; }
check "  ... reconciled the 20 migrated objects of its namespace" wait_until 60 saw_them
sleep 3
w2=$(write_requests "$(murl)")
echo "# the restarted operator: $(reconciles) reconciles, $w2 writes"
check "  ... with zero writes (nothing changed: no child, no status)" test "$w2" = 0
check "  ... and the children's v1alpha1 owner references were left as they are" test "$(old_refs)" -ge 60

stop_webhookd
kubectl get "$V1" -A -o json >"$work/down-v1.json" 2>"$work/down-v1.err"
check "webhook down after the migration: v1 reads work (40 objects)" jqe '.items | length == 40' "$work/down-v1.json"
kubectl -n "$ns" get "$V1A" old-01 -o json >/dev/null 2>"$work/down-v1a.err"
check "  ... v1alpha1 reads fail, naming the conversion webhook" grep -q 'conversion webhook for cache.example.com/v1, Kind=RedisCluster failed' "$work/down-v1a.err"
check "  ... the operator stays ready" curl -sf "http://127.0.0.1:$health/readyz"
if start_webhookd "$port"; then ok "webhookd back on port $port"; else not_ok "webhookd restarted on port $port"; fi
check "  ... v1alpha1 reads work again" wait_until 20 kubectl -n "$ns" get "$V1A" old-01

# ---- 5. Conversion both ways through the API server --------------------------------------
# In $ns2, which the operator does not watch: its writes would race the full updates.
fresh_discovery
# read_both NAME: the RedisCluster NAME in $ns2 read as v1 into $work/NAME-v1.json and as
# v1alpha1 into $work/NAME-v1a.json.
read_both() {
    kubectl -n "$ns2" get "$V1" "$1" -o json >"$work/$1-v1.json"
    kubectl -n "$ns2" get "$V1A" "$1" -o json >"$work/$1-v1a.json" 2>/dev/null
}
printf 'apiVersion: cache.example.com/v1alpha1\nkind: RedisCluster\nmetadata: {name: alpha, namespace: %s}\nspec: {size: 2, image: redis, version: "7.2", config: {maxmemory: 64mb}}\n' "$ns2" |
    kubectl create -f - >/dev/null 2>"$work/create-alpha.err"
check "created as v1alpha1" kubectl -n "$ns2" get "$V1A" alpha
check "  ... kubectl prints the deprecation warning" grep -qF "Warning: $WARNING" "$work/create-alpha.err"
read_both alpha
check "  ... read as v1: apiVersion v1, mode Standalone, persistence aof, shared fields as written" \
    jqe '.apiVersion == "cache.example.com/v1" and .spec.mode == "Standalone" and .spec.persistence == "aof" and .spec.size == 2 and .spec.config.maxmemory == "64mb" and .metadata.annotations == null' "$work/alpha-v1.json"
check "  ... and back as v1alpha1: no v1 fields, no annotation" \
    jqe '.apiVersion == "cache.example.com/v1alpha1" and .spec.mode == null and .spec.persistence == null and .metadata.annotations == null and .spec.size == 2' "$work/alpha-v1a.json"
rc_yaml beta "$ns2" <<YAML | kubectl create -f - >/dev/null
  size: 3
  image: redis
  version: "7.2"
  mode: Replication
  persistence: rdb
  auth: {secretRef: {name: beta-pw, key: pass}}
  failover: {downAfter: 5s, minReplicasToWrite: 1, minReplicasMaxLag: 20}
YAML
read_both beta
check "created as v1 with v1-only fields" \
    jqe '.spec.mode == "Replication" and .spec.auth.secretRef.name == "beta-pw" and .spec.failover.downAfter == "5s"' "$work/beta-v1.json"
check "  ... read as v1alpha1: the v1-only fields absent from spec, kept in the annotation" \
    jqe '.spec.mode == null and .spec.auth == null and .spec.failover == null and .spec.persistence == null and (.metadata.annotations["cache.example.com/v1-fields"] | fromjson | .spec.auth.secretRef.name == "beta-pw")' "$work/beta-v1a.json"
rv0=$(jqf .metadata.resourceVersion "$work/beta-v1a.json")
gen0=$(jqf .metadata.generation "$work/beta-v1a.json")
kubectl replace -f "$work/beta-v1a.json" >/dev/null 2>&1
kubectl -n "$ns2" get "$V1" beta -o json >"$work/beta-noop.json"
check "a no-op full update through v1alpha1 changes nothing (same resourceVersion and generation)" \
    jqe --arg rv "$rv0" --argjson g "$gen0" '.metadata.resourceVersion == $rv and .metadata.generation == $g' "$work/beta-noop.json"
jq '.spec.size = 4' "$work/beta-v1a.json" >"$work/beta-edit.json"
check "full update (kubectl replace) through v1alpha1: size 4" kubectl replace -f "$work/beta-edit.json"
kubectl -n "$ns2" get "$V1" beta -o json >"$work/beta-after.json"
check "  ... read as v1: size 4 and the v1-only fields intact, no annotation" \
    jqe --slurpfile b "$work/beta-v1.json" '.spec.size == 4 and .spec.mode == $b[0].spec.mode and .spec.auth == $b[0].spec.auth and .spec.failover == $b[0].spec.failover and .spec.persistence == "rdb" and .metadata.annotations == null' "$work/beta-after.json"
# The webhooks' rules (v1): a v1-only field that breaks a rule is refused by the schema.
check "a bad v1-only field through v1 is refused" sh -c "kubectl -n $ns2 patch $V1 beta --type=merge -p '{\"spec\":{\"failover\":{\"downAfter\":\"10m\"}}}' 2>&1 | grep -q 'must be between 1s and 5m'"
check "kubectl get rdc (v1, preferred) lists both versions' objects" \
    sh -c "kubectl -n $ns2 get rdc --no-headers | wc -l | grep -qx 22"
check "kubectl get rdc: columns NAME READY SIZE PHASE DEGRADED REASON SHARDS STATE AGE (SHARDS, STATE: Cluster mode)" \
    sh -c "kubectl -n $ns2 get rdc alpha | head -1 | grep -Eq '^NAME +READY +SIZE +PHASE +DEGRADED +REASON +SHARDS +STATE +AGE'"
kubectl -n "$ns2" get "$V1A" >"$work/list-v1a.out" 2>"$work/list-v1a.err"
check "kubectl get with v1alpha1: 22 listed" test "$(grep -c . "$work/list-v1a.out")" = 23
check "  ... with the deprecation warning" grep -qF "Warning: $WARNING" "$work/list-v1a.err"
check "  ... no warning for v1" sh -c "! kubectl -n $ns2 get $V1 2>&1 >/dev/null | grep -q deprecated"
check "webhookd counted conversions (webhook_conversion_objects_total > 0)" wait_until 10 sh -c "test \"\$(awk '/^webhook_conversion_objects_total\\{/ { s += \$NF } END { printf \"%d\", s }' '$work/wh-rt/metrics/webhookd.prom')\" -gt 0"

summary
