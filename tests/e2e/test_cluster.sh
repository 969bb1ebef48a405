#!/usr/bin/env bash
# Smoke test of the local control plane (tests/cluster/cluster.sh). Assumes the cluster
# is up (`tests/cluster/cluster.sh up`); takes KUBECONFIG/PATH from `cluster.sh env`
# (honours RDC_CLUSTER_DIR). One line per check: "ok - ..." / "not ok - ...", then
# "N passed, M failed"; exits 1 when anything failed. Every wait has a timeout.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
eval "$("$root/tests/cluster/cluster.sh" env)"
. "$here/lib_cluster.sh"
NS="rdc-e2e-cluster-$$"
CR="rdc-e2e-cm-reader-$$"

crd_preexisting=0
cleanup() {
  k delete namespace "$NS" --wait=false >/dev/null 2>&1
  k delete clusterrole "$CR" --ignore-not-found >/dev/null 2>&1
  [ "$crd_preexisting" = 1 ] || k delete -f "$root/crds/" --ignore-not-found --wait=false >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT

# ---------------------------------------------------------------- control plane
require_cluster_up
check "apiserver /readyz is ok" bash -c '[ "$(kubectl --request-timeout=10s get --raw /readyz)" = ok ]'
check "kubectl and apiserver report the pinned version" bash -c \
  'kubectl version -o json | jq -e ".clientVersion.gitVersion == .serverVersion.gitVersion and (.serverVersion.gitVersion | startswith(\"v1.\"))"'
nodes_ready() { [ "$(k get nodes -o json | jq '[.items[] | select(.status.conditions[]? | select(.type=="Ready" and .status=="True"))] | length')" -ge 3 ]; }
check "3 nodes are Ready" eventually nodes_ready
check "a default StorageClass exists" bash -c \
  'kubectl get storageclass -o json | jq -e "[.items[] | select(.metadata.annotations[\"storageclass.kubernetes.io/is-default-class\"]==\"true\")] | length == 1"'

k create namespace "$NS" >/dev/null
sa_ready() { k get serviceaccount default -n "$NS" >/dev/null 2>&1; }
eventually sa_ready || true

# ---------------------------------------------------------------- CRD
k get crd redisclusters.cache.example.com >/dev/null 2>&1 && crd_preexisting=1
check "kubectl apply -f crds/" k apply -f "$root/crds/"
check "CRD redisclusters.cache.example.com is Established" \
  timeout "$((WAIT + 5))" kubectl wait --for=condition=Established crd/redisclusters.cache.example.com --timeout="${WAIT}s"
cr_created() {
  k apply -n "$NS" -f - >/dev/null 2>&1 <<'EOF'
apiVersion: cache.example.com/v1
kind: RedisCluster
metadata:
  name: smoke
spec:
  size: 3
  image: redis:7
EOF
}
# discovery may lag a moment behind Established
check "a valid RedisCluster is accepted" eventually cr_created
check "kubectl get rdc (short name) lists it" k get rdc smoke -n "$NS"
check "an invalid RedisCluster (size 11, no image) is rejected" bash -c "! kubectl apply -n $NS -f - <<'EOF'
apiVersion: cache.example.com/v1
kind: RedisCluster
metadata:
  name: invalid
spec:
  size: 11
EOF"

# ---------------------------------------------------------------- StatefulSet + PVCs
k apply -n "$NS" -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{name: redis, port: 6379}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: redis
        image: redis:7
        ports: [{containerPort: 6379}]
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata:
      name: data
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests: {storage: 1Gi}
EOF
ready_is() { [ "$(k get sts web -n "$NS" -o jsonpath='{.status.readyReplicas}')" = "$1" ]; }
pods_are() { [ "$(k get pods -n "$NS" -l app=web --no-headers 2>/dev/null | wc -l)" = "$1" ]; }
pvcs_bound() { [ "$(k get pvc -n "$NS" -o json | jq '[.items[] | select(.status.phase=="Bound")] | length')" = "$1" ]; }
check "StatefulSet with volumeClaimTemplate reaches readyReplicas 3" eventually ready_is 3
check "its 3 PVCs are Bound (default StorageClass + provisioner)" eventually pvcs_bound 3
check "its pods are scheduled onto the kwok nodes" bash -c \
  "kubectl get pods -n $NS -l app=web -o json | jq -e '[.items[] | select(.spec.nodeName | startswith(\"kwok-node-\"))] | length == 3'"
k scale sts web -n "$NS" --replicas=1 >/dev/null
check "scaling the StatefulSet to 1 removes two pods" eventually pods_are 1
check "... and readyReplicas becomes 1" eventually ready_is 1

# ---------------------------------------------------------------- garbage collector
k create configmap owner -n "$NS" --from-literal=a=b >/dev/null
uid=$(k get configmap owner -n "$NS" -o jsonpath='{.metadata.uid}')
k apply -n "$NS" -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: dependent
  ownerReferences:
  - {apiVersion: v1, kind: ConfigMap, name: owner, uid: "$uid"}
data: {a: b}
EOF
k delete configmap owner -n "$NS" --wait=false >/dev/null
cm_gone() { ! k get configmap dependent -n "$NS" >/dev/null 2>&1; }
check "deleting an owner ConfigMap garbage-collects its dependent" eventually cm_gone
k delete sts web -n "$NS" --cascade=background --wait=false >/dev/null
check "deleting the StatefulSet garbage-collects its pods" eventually pods_are 0

# ---------------------------------------------------------------- Job (kwok pod-complete stage)
k create job once -n "$NS" --image=busybox -- true >/dev/null
job_done() { [ "$(k get job once -n "$NS" -o jsonpath='{.status.succeeded}')" = 1 ]; }
check "a Job runs to completion" eventually job_done

# ---------------------------------------------------------------- service account token + RBAC
k create serviceaccount limited -n "$NS" >/dev/null
k create clusterrole "$CR" --verb=get,list --resource=configmaps >/dev/null
k create rolebinding limited -n "$NS" --clusterrole="$CR" --serviceaccount="$NS:limited" >/dev/null
token=$(k create token limited -n "$NS" --duration=10m 2>/dev/null || true)
server=$(kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$tmp/ca.crt"
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$tmp/ca.crt" -H "Authorization: Bearer $token" "$server$1"; }
check "kubectl create token returns a token" test -n "$token"
allowed() { [ "$(code "/api/v1/namespaces/$NS/configmaps")" = 200 ]; }
check "the token is allowed what its ClusterRole grants (list configmaps: 200)" eventually allowed
code_is() { [ "$(code "$2")" = "$1" ]; }
check "the token is refused what the role does not allow (list secrets: 403)" code_is 403 "/api/v1/namespaces/$NS/secrets"
check "the token is refused outside its namespace (configmaps in kube-system: 403)" code_is 403 /api/v1/namespaces/kube-system/configmaps
kt() { kubectl --kubeconfig=/dev/null --server="$server" --certificate-authority="$tmp/ca.crt" --token="$token" --request-timeout=10s "$@"; }
check "kubectl with the token: get configmaps is allowed" kt get configmaps -n "$NS"
forbidden_delete() { local out; out=$(kt delete configmap kube-root-ca.crt -n "$NS" 2>&1) && return 1; grep -q Forbidden <<<"$out"; }
check "kubectl with the token: delete configmap is Forbidden" forbidden_delete

# ---------------------------------------------------------------- cleanup
k delete namespace "$NS" --wait=false >/dev/null 2>&1
ns_gone() { ! k get namespace "$NS" >/dev/null 2>&1; }
check "the test namespace is deleted (namespace controller)" eventually ns_gone
pv_gone() { [ "$(k get pv -o json | jq --arg ns "$NS" '[.items[] | select(.spec.claimRef.namespace==$ns)] | length')" = 0 ]; }
check "the provisioned PVs are removed with their claims" eventually pv_gone

finish
