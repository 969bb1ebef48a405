#!/usr/bin/env bash
# The install paths of README "Install": make build-installer's dist/install.yaml and the
# Helm chart (charts/rdc-operator, pinned Helm from tests/cluster/build-helm.sh), each
# running the operator as pods on the process nodes (as test_runtime does for deploy/).
#
#   1. helm template (default values) | kubectl apply --dry-run=server: every object is
#      valid for this API server (its OpenAPI, the CRD's schema, admission).
#   2. dist/install.yaml: applied as it is (into a namespace pinned to the process nodes
#      beforehand), the operator's pods become Ready and one takes the Lease; removed.
#   3. helm install with the chart's default values (release rdc-e2e, a namespace of its
#      own, so that nothing collides with deploy/'s cluster-scoped names): the pods run
#      on process nodes, one leads, two workerd processes; a RedisCluster (deploy/'s
#      sample) converges with real Redis, and a cache.example.com/v1alpha1 one is created
#      through the conversion and admission webhooks.
#   4. helm upgrade --set workers=3: revision 2, the new pods run three workerd processes;
#      the RedisClusters (the v1alpha1 one read in both versions) and the Redis data are
#      as before.
#   5. helm uninstall: the operator's objects go, the CRD (crds.keep), the RedisClusters,
#      their StatefulSets, pods and data stay (README "Helm"); a second helm install
#      with the same release name takes the kept CRD back and reconciles them again.
#
# Deviations of this control plane (tests/cluster/README.md "The operator as a pod"): the
# API server cannot reach a webhook through its Service, so the script points the three
# webhook clientConfigs (CRD conversion, mutating, validating) at https://127.0.0.1:9443,
# where webhookd listens on this machine, and puts them back before helm upgrades (Helm
# applies them server-side and would otherwise meet the script's fields). For that the
# certificate must name IP 127.0.0.1: the script creates the Secret rdc-e2e-webhook-cert
# first (deploy/gen-certs.sh --ip 127.0.0.1) with Helm's ownership metadata, and the chart
# keeps an existing certificate (it looks the Secret up), which is checked too. Two
# replicas share the machine's *:9443: one webhookd serves, the other retries (it is not
# part of /readyz); metrics and probes bind the pod IP.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$TOP"
cluster=$TOP/tests/cluster/cluster.sh
crd=redisclusters.cache.example.com
# every CRD of the operator (crds/): Helm creates them all itself, and takes over none that
# another tool applied without its ownership metadata
crds=$(ls crds/*.yaml | sed 's#crds/\(.*\)_\(.*\)\.yaml#\2.\1#')
V1=redisclusters.v1.cache.example.com
V1A=redisclusters.v1alpha1.cache.example.com
rel=rdc-e2e
ns=rdc-helm-$$
rns=rdc-helm-rc-$$
opns=rediscluster-operator-system
work=$(mktemp -d /tmp/rdc-e2e-helm.XXXXXX)
STATE=${RDC_CLUSTER_DIR:-/tmp/rdc-cluster}/runtime
export KUBECACHEDIR=$work/kube-cache   # the CRD is replaced: no stale discovery
helm_installed=0 inst_applied=0 created_opns=0

strip_finalizers() { # every RedisCluster in the cluster (no operator runs to remove them)
    local o
    for o in $(kubectl get "$V1" -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}' 2>/dev/null); do
        kubectl -n "${o%%/*}" patch "$V1" "${o#*/}" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
    done
}
gone() { ! kubectl get "$@" >/dev/null 2>&1; }
on_proc() { # on_proc NS POD...: every pod is bound to a process node
    local n=$1 p
    shift
    [ $# -gt 0 ] || return 1
    for p in "$@"; do [[ "$(kubectl -n "$n" get pod "$p" -o jsonpath='{.spec.nodeName}')" == proc-node-* ]] || return 1; done
}
holder_in() { # holder_in NS POD...: the Lease's holder identity starts with one of the pods' names
    local h p; h=$(kubectl -n "$1" get lease rediscluster-operator.cache.example.com -o jsonpath='{.spec.holderIdentity}')
    shift
    for p in "$@"; do [ -n "$h" ] && [[ "$h" == "$p"* ]] && return 0; done
    return 1
}
cleanup() {
    [ "$helm_installed" = 1 ] && H uninstall "$rel" -n "$ns" --wait --timeout 60s >/dev/null 2>&1
    if [ "$inst_applied" = 1 ]; then
        kubectl delete -f "$work/install-nocrd.yaml" --ignore-not-found --wait=false >/dev/null 2>&1
    fi
    strip_finalizers
    kubectl delete namespace "$ns" "$rns" --ignore-not-found --wait=false >/dev/null 2>&1
    # the stock CRD again, as later scripts expect it (not the chart's, kept by crds.keep)
    kubectl delete crd $crds --ignore-not-found --timeout=60s >/dev/null 2>&1
    kubectl apply -f crds/ >/dev/null 2>&1
    kubectl wait --for=condition=Established --timeout=60s $(printf 'crd/%s ' $crds) >/dev/null 2>&1
    # test_runtime installs deploy/ into $opns later and must find it gone
    for _ in $(seq 1 90); do { [ "$created_opns" = 0 ] || gone namespace "$opns"; } && gone namespace "$ns" && break; sleep 1; done
    rm -rf "$work"
}
trap cleanup EXIT

if [ "$(kubectl get nodes -l rdc.local/process-node=true -o name | wc -l)" -eq 0 ]; then
    echo "# SKIP: no process nodes in the cluster (RDC_CLUSTER_PROCESS_NODES=3 tests/cluster/cluster.sh up; run.sh does)"
    echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
if [ ! -x "$BIN/supervisor" ]; then
    echo "# SKIP: $BIN/supervisor is not built (make): the image rediscluster-operator runs it"
    echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
helm=$(tests/cluster/build-helm.sh 2>"$work/helm-build.log" | tail -1)
check "the pinned helm is built (tests/cluster/build-helm.sh: $helm)" test -x "$helm"
[ -x "$helm" ] || { sed 's/^/# /' "$work/helm-build.log" | tail -20; summary; exit 1; }
H() { "$helm" --kubeconfig "$KUBECONFIG" "$@"; }
echo "# $("$helm" version --short)"
chart=charts/rdc-operator

# RedisClusters and the CRD of earlier scripts: Helm creates the CRD itself (it does not
# take over an object another tool applied without its ownership metadata).
strip_finalizers
kubectl delete crd $crds --ignore-not-found --timeout=90s >/dev/null 2>&1
crds_gone() { local c; for c in $crds; do gone crd "$c" || return 1; done; }
check "no CRD left from earlier scripts ($crds)" crds_gone
for _ in $(seq 1 120); do   # an earlier script's operator namespace may still be going
    [ "$(kubectl get namespace "$opns" -o jsonpath='{.status.phase}' 2>/dev/null)" = Terminating ] || break
    sleep 1
done

# ---- 1. helm template | kubectl apply --dry-run=server --------------------------------------
kubectl create namespace "$ns" >/dev/null
"$cluster" pin-namespace "$ns" >/dev/null 2>&1
H template "$rel" "$chart" -n "$ns" >"$work/template.yaml" 2>"$work/template.err"
check "helm template (default values) renders" test -s "$work/template.yaml"
nobj=$(grep -c '^kind:' "$work/template.yaml")
# All in one apply (none of the chart's objects is of the kind its CRD defines).
kubectl apply --server-side --dry-run=server -f "$work/template.yaml" >"$work/dry.log" 2>&1
rc=$?
sed 's/^/# /' "$work/dry.log" | grep -v 'serverside-applied (server dry run)' | head -10
check "kubectl apply --server-side --dry-run=server: all $nobj objects of helm template are accepted" \
    eval "[ $rc = 0 ] && [ \$(grep -c '(server dry run)' '$work/dry.log') = $nobj ]"

# ---- 2. dist/install.yaml --------------------------------------------------------------------
check "make build-installer writes dist/install.yaml" make -s build-installer
python3 - dist/install.yaml "$work/install-nocrd.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
yaml.safe_dump_all([d for d in docs if d["kind"] != "CustomResourceDefinition"], open(sys.argv[2], "w"))
PY
if kubectl get namespace "$opns" >/dev/null 2>&1; then
    echo "# SKIP dist/install.yaml: namespace $opns exists already (another installation)"
else
    kubectl create namespace "$opns" >/dev/null 2>&1
    created_opns=1
    "$cluster" pin-namespace "$opns" >/dev/null 2>&1
    inst_applied=1
    check "kubectl apply --server-side -f dist/install.yaml applies cleanly" \
        kubectl apply --server-side --force-conflicts -f dist/install.yaml
    check "... the CRD is Established" kubectl wait --for=condition=Established --timeout=60s "crd/$crd"
    inst_ready() { [ "$(kubectl -n "$opns" get deploy rediscluster-operator -o jsonpath='{.status.readyReplicas}')" = 2 ]; }
    check "... its two operator pods become Ready" wait_until 120 inst_ready
    inst_pods() { kubectl -n "$opns" get pods -o jsonpath='{.items[*].metadata.name}'; }
    check "... on process nodes" on_proc "$opns" $(inst_pods)
    check "... and one of them holds the Lease" wait_until 60 eval 'holder_in "$opns" $(inst_pods)'
    kubectl delete -f "$work/install-nocrd.yaml" --ignore-not-found --wait=false >/dev/null 2>&1
    check "... removed again (its namespace is gone)" wait_until 120 gone namespace "$opns"
    inst_applied=0
    kubectl delete crd $crds --ignore-not-found --timeout=60s >/dev/null 2>&1
fi

# ---- 3. helm install, default values ---------------------------------------------------------
# The webhook certificate, for the Service's names and 127.0.0.1 (see the top), in the
# Secret the chart uses, with Helm's ownership metadata so that the release adopts it.
deploy/gen-certs.sh --certs-only --ip 127.0.0.1 -n "$ns" -s "$rel-webhook" -o "$work/certs" >/dev/null 2>&1
# Helm 4 applies server-side as field manager "helm": the Secret is applied under that
# name too, or the chart's (identical) data would conflict with kubectl's ownership.
kubectl -n "$ns" create secret generic "$rel-webhook-cert" --type=kubernetes.io/tls \
    --from-file=tls.crt="$work/certs/tls.crt" --from-file=tls.key="$work/certs/tls.key" \
    --from-file=ca.crt="$work/certs/ca.crt" --dry-run=client -o json |
    jq --arg rel "$rel" --arg ns "$ns" '.metadata.labels["app.kubernetes.io/managed-by"] = "Helm"
        | .metadata.annotations["meta.helm.sh/release-name"] = $rel
        | .metadata.annotations["meta.helm.sh/release-namespace"] = $ns' |
    kubectl apply --server-side --field-manager=helm -f - >/dev/null
H install "$rel" "$chart" -n "$ns" --timeout 5m >"$work/install.log" 2>&1
rc=$?
sed 's/^/# /' "$work/install.log" | head -8
check "helm install $rel $chart -n $ns (default values)" test "$rc" = 0
[ "$rc" = 0 ] && helm_installed=1
check "helm list: $rel deployed, revision 1" eval \
    "H list -n $ns -o json | jq -e '.[] | select(.name == \"$rel\") | .status == \"deployed\" and .revision == \"1\"'"
check "the CRD is Established, with helm.sh/resource-policy: keep" eval \
    "kubectl wait --for=condition=Established --timeout=60s crd/$crd && kubectl get crd $crd -o json |
     jq -e '.metadata.annotations[\"helm.sh/resource-policy\"] == \"keep\"'"
ca=$(base64 -w0 <"$work/certs/ca.crt")
check "the chart kept the existing certificate: its CA is in the Secret, the CRD and both webhook configurations" eval \
    "[ \"\$(kubectl -n $ns get secret $rel-webhook-cert -o jsonpath='{.data.ca\\.crt}')\" = '$ca' ] &&
     [ \"\$(kubectl get crd $crd -o jsonpath='{.spec.conversion.webhook.clientConfig.caBundle}')\" = '$ca' ] &&
     [ \"\$(kubectl get mutatingwebhookconfiguration $rel-mutating -o jsonpath='{.webhooks[0].clientConfig.caBundle}')\" = '$ca' ] &&
     [ \"\$(kubectl get validatingwebhookconfiguration $rel-validating -o jsonpath='{.webhooks[0].clientConfig.caBundle}')\" = '$ca' ]"
ready_n() { [ "$(kubectl -n "$ns" get deploy "$rel" -o jsonpath='{.status.readyReplicas}/{.status.updatedReplicas}/{.status.replicas}')" = "$1/$1/$1" ]; }
check "the Deployment's 2 pods (replicaCount 2) become Ready" wait_until 150 ready_n 2
# the release's pods that are not terminating
pods() { kubectl -n "$ns" get pods -l app.kubernetes.io/instance="$rel" -o json |
    jq -r '.items[] | select(.metadata.deletionTimestamp == null) | .metadata.name'; }
check "they run on process nodes" on_proc "$ns" $(pods)
leader() { holder_in "$ns" $(pods); }
check "one of them holds the Lease rediscluster-operator.cache.example.com in $ns" wait_until 60 leader
# workers N: every pod's supervisor (its PID file, written by the runtime) has N workerd children
workers_are() {
    local p pid n ps_=$(pods)
    [ -n "$ps_" ] || return 1
    for p in $ps_; do
        pid=$(cut -d' ' -f1 "$STATE/pids/${ns}_${p}_manager.pid" 2>/dev/null)
        [ -n "$pid" ] || return 1
        n=$(ps --ppid "$pid" -o comm= | grep -c '^workerd$')
        [ "$n" = "$1" ] || return 1
    done
}
check "each pod's supervisor runs 2 workerd processes (workers: 2)" wait_until 60 workers_are 2
check "the pods' command is the supervisor's with --workers=2 --leader-elect --webhook --metrics-secure" eval \
    "kubectl -n $ns get deploy $rel -o json | jq -e '.spec.template.spec.containers[0].command as \$c |
     \$c[0] == \"/usr/local/bin/supervisor\" and ([\"--workers=2\", \"--leader-elect\", \"--webhook\", \"--metrics-secure\"] - \$c == [])'"

# The webhooks through 127.0.0.1:9443 (see the top); back to the Service: route service.
route() {
    local to=$1 o path
    for o in "crd $crd /spec/conversion/webhook/clientConfig" \
             "mutatingwebhookconfiguration $rel-mutating /webhooks/0/clientConfig" \
             "validatingwebhookconfiguration $rel-validating /webhooks/0/clientConfig"; do
        set -- $o
        if [ "$to" = url ]; then
            path=$(kubectl get "$1" "$2" -o json | jq -r "getpath(\"$3/service/path\" | ltrimstr(\"/\") | split(\"/\") | map(tonumber? // .))")
            kubectl patch "$1" "$2" --type=json -p "[{\"op\":\"remove\",\"path\":\"$3/service\"},
                {\"op\":\"add\",\"path\":\"$3/url\",\"value\":\"https://127.0.0.1:9443$path\"}]" >/dev/null || return 1
        else
            path=$(kubectl get "$1" "$2" -o json | jq -r "getpath(\"$3/url\" | ltrimstr(\"/\") | split(\"/\") | map(tonumber? // .))")
            path=/${path#https://127.0.0.1:9443/}
            kubectl patch "$1" "$2" --type=json -p "[{\"op\":\"remove\",\"path\":\"$3/url\"},
                {\"op\":\"add\",\"path\":\"$3/service\",\"value\":{\"name\":\"$rel-webhook\",\"namespace\":\"$ns\",\"path\":\"$path\",\"port\":443}}]" >/dev/null || return 1
        fi
    done
}
check "the three webhook clientConfigs pointed at webhookd on 127.0.0.1:9443" route url
serving() { [ "$(curl -sk -o /dev/null -w '%{http_code}' https://127.0.0.1:9443/convert)" != 000 ]; }
check "a webhookd of the release serves https://127.0.0.1:9443" wait_until 60 serving

kubectl create namespace "$rns" >/dev/null
"$cluster" pin-namespace "$rns" >/dev/null 2>&1
sed "s/namespace: default/namespace: $rns/" deploy/samples/rediscluster.yaml | kubectl apply -f - >/dev/null
rc_running() { [ "$(kubectl get "$V1" -n "$rns" "$1" -o jsonpath='{.status.phase}')" = Running ]; }
check "deploy/samples/rediscluster.yaml (v1) converges: Running" wait_until 180 rc_running cache
pod_ip() { kubectl get pod -n "$rns" "$1" -o jsonpath='{.status.podIP}'; }
ip0=$(pod_ip cache-0)
redis-cli -h "$ip0" set helm-e2e survived >/dev/null 2>&1
check "real Redis behind it: cache-0 answers, a key written to it" \
    eval "[ \"\$(redis-cli -h '$ip0' get helm-e2e)\" = survived ]"
kubectl apply -f - >"$work/v1alpha1.log" 2>&1 <<EOF
apiVersion: cache.example.com/v1alpha1
kind: RedisCluster
metadata:
  name: legacy
  namespace: $rns
spec:
  size: 1
  image: redis
  version: "7.2"
  storage:
    size: 1Gi
EOF
rc=$?
sed 's/^/# /' "$work/v1alpha1.log" | head -3
check "a cache.example.com/v1alpha1 RedisCluster is created (conversion webhook of the release)" test "$rc" = 0
check "... read as v1: mode Standalone (converted and defaulted)" eval \
    "[ \"\$(kubectl get $V1 -n $rns legacy -o jsonpath='{.spec.mode}')\" = Standalone ]"
check "... and reconciled to Running" wait_until 180 rc_running legacy

# ---- 4. helm upgrade --set workers=3 -----------------------------------------------------------
check "the webhook clientConfigs back on the chart's Service (for Helm's server-side apply)" route service
uid_cache=$(kubectl get "$V1" -n "$rns" cache -o jsonpath='{.metadata.uid}')
uid_legacy=$(kubectl get "$V1" -n "$rns" legacy -o jsonpath='{.metadata.uid}')
old_pods=$(pods | sort | tr '\n' ' ')
H upgrade "$rel" "$chart" -n "$ns" --set workers=3 --timeout 5m >"$work/upgrade.log" 2>&1
rc=$?
sed 's/^/# /' "$work/upgrade.log" | head -8
check "helm upgrade $rel --set workers=3" test "$rc" = 0
check "helm list: revision 2, deployed" eval \
    "H list -n $ns -o json | jq -e '.[] | select(.name == \"$rel\") | .status == \"deployed\" and .revision == \"2\"'"
check "the Deployment's command says --workers=3" eval \
    "kubectl -n $ns get deploy $rel -o json | jq -e '.spec.template.spec.containers[0].command | index(\"--workers=3\")'"
rolled() { # 2 Ready, and none of them an old pod
    local p
    ready_n 2 || return 1
    for p in $(pods); do [[ " $old_pods " == *" $p "* ]] && return 1; done
    return 0
}
check "the rollout replaced both pods, 2 Ready" wait_until 240 rolled
check "each new pod's supervisor runs 3 workerd processes" wait_until 60 workers_are 3
check "the chart kept the certificate across the upgrade (same CA in the Secret)" eval \
    "[ \"\$(kubectl -n $ns get secret $rel-webhook-cert -o jsonpath='{.data.ca\\.crt}')\" = '$ca' ]"
check "the webhook clientConfigs pointed at 127.0.0.1:9443 again" route url
check "a new pod's webhookd serves https://127.0.0.1:9443" wait_until 90 serving
check "the RedisClusters survived the upgrade (same uids)" eval \
    "[ \"\$(kubectl get $V1 -n $rns cache -o jsonpath='{.metadata.uid}')\" = '$uid_cache' ] &&
     [ \"\$(kubectl get $V1 -n $rns legacy -o jsonpath='{.metadata.uid}')\" = '$uid_legacy' ]"
check "the v1alpha1 object reads in v1alpha1 and in v1" eval \
    "kubectl get $V1A -n $rns legacy -o jsonpath='{.apiVersion}' | grep -qx cache.example.com/v1alpha1 &&
     kubectl get $V1 -n $rns legacy -o jsonpath='{.apiVersion}' | grep -qx cache.example.com/v1"
check "both still Running under the upgraded operator" wait_until 120 eval "rc_running cache && rc_running legacy"
check "the Redis data is intact (the key written before the upgrade)" \
    eval "[ \"\$(redis-cli -h '$(pod_ip cache-0)' get helm-e2e)\" = survived ]"
kubectl patch "$V1" -n "$rns" cache --type=merge -p '{"spec":{"size":4}}' >/dev/null
sts_is() { [ "$(kubectl get sts -n "$rns" cache -o jsonpath='{.spec.replicas}')" = "$1" ]; }
check "the upgraded operator reconciles a change (size 3 -> 4: StatefulSet of 4)" wait_until 120 sts_is 4
check "... and the cluster is Running again" wait_until 180 rc_running cache

# ---- 5. helm uninstall ---------------------------------------------------------------------------
check "the webhook clientConfigs back on the chart's Service" route service
H uninstall "$rel" -n "$ns" --wait --timeout 2m >"$work/uninstall.log" 2>&1
rc=$?
sed 's/^/# /' "$work/uninstall.log" | head -5
check "helm uninstall $rel" test "$rc" = 0
[ "$rc" = 0 ] && helm_installed=0
check "... its Deployment, ClusterRoles and webhook configurations are gone" wait_until 60 eval \
    "gone deploy -n $ns $rel && gone clusterrole $rel-manager && gone clusterrolebinding $rel-manager &&
     gone mutatingwebhookconfiguration $rel-mutating && gone validatingwebhookconfiguration $rel-validating"
check "... and its pods" wait_until 60 eval "[ -z \"\$(kubectl -n $ns get pods -o name)\" ]"
check "the CRD stays (crds.keep: helm.sh/resource-policy keep)" kubectl get crd "$crd"
check "the RedisClusters stay" eval "kubectl get $V1 -n $rns cache && kubectl get $V1 -n $rns legacy"
check "their StatefulSets and claims stay" eval \
    "sts_is 4 && [ \$(kubectl get pvc -n $rns -o name | wc -l) -ge 5 ]"
check "and so does the data (the key, read from cache-0)" \
    eval "[ \"\$(redis-cli -h '$(pod_ip cache-0)' get helm-e2e)\" = survived ]"

# A new install of the same release takes the kept CRD back (it still carries the
# release's ownership metadata) and reconciles the RedisClusters again.
H install "$rel" "$chart" -n "$ns" --timeout 5m >"$work/reinstall.log" 2>&1
rc=$?
sed 's/^/# /' "$work/reinstall.log" | head -5
check "helm install $rel again adopts the kept CRD" test "$rc" = 0
[ "$rc" = 0 ] && helm_installed=1
check "... its pods become Ready" wait_until 150 ready_n 2
kubectl patch "$V1" -n "$rns" cache --type=merge -p '{"spec":{"size":5}}' >/dev/null
check "... and it reconciles the kept RedisCluster (size 4 -> 5)" wait_until 120 sts_is 5
H uninstall "$rel" -n "$ns" --wait --timeout 2m >/dev/null 2>&1 && helm_installed=0
summary
