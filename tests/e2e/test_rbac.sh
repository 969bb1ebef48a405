#!/usr/bin/env bash
# End to end: RBAC is enough and no more. The operator runs on the token of deploy/'s
# ServiceAccount, bound to deploy/'s ClusterRole and leader-election Role, and passes the
# whole lifecycle test (create, drift, scale, config and image changes, resync without
# writes, deletion, leader election, release); the same token is refused what the
# operator does not need.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

sa_ns=rediscluster-operator-system
work=$(mktemp -d /tmp/rdc-e2e-rbac.XXXXXX)
# The operator's namespace goes again if this script made it (test_runtime installs
# deploy/ into it later and must find it gone).
# An earlier script's installation may still be going away (the namespace Terminating:
# nothing can be created in it until it is gone).
for _ in $(seq 1 120); do
    [ "$(kubectl get namespace "$sa_ns" -o jsonpath='{.status.phase}' 2>/dev/null)" = Terminating ] || break
    sleep 1
done
created_ns=0
kubectl get namespace "$sa_ns" >/dev/null 2>&1 || created_ns=1
cleanup() {
    [ "$created_ns" = 1 ] && kubectl delete namespace "$sa_ns" --ignore-not-found --wait=false >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT

kubectl apply -f "$TOP/crds/" >/dev/null # run alone on a fresh cluster too
kubectl wait --for=condition=Established --timeout=60s crd/redisclusters.cache.example.com crd/redisbackups.cache.example.com >/dev/null 2>&1
kubectl apply -f "$TOP/deploy/base/namespace.yaml" >/dev/null
kubectl apply -f "$TOP/deploy/base/rbac/" >/dev/null
check "deploy/ RBAC applied" kubectl -n "$sa_ns" get serviceaccount rediscluster-operator
token=$(kubectl -n "$sa_ns" create token rediscluster-operator --duration=1h)
token_kubeconfig "$work/kubeconfig" operator "$token"
as_op() { kubectl --kubeconfig "$work/kubeconfig" "$@"; }
check "the token may list RedisClusters" as_op get rdc -A
# Secrets: get (the password), list and watch (informerd, metadata only), create and patch
# (the record <name>-redis-auth); never update or delete.
check "the token may watch Secrets (informerd, metadata only)" sh -c "kubectl --kubeconfig '$work/kubeconfig' auth can-i watch secrets -A | grep -qx yes"
check "the token may not update or delete Secrets" sh -c "! kubectl --kubeconfig '$work/kubeconfig' auth can-i update secrets -A | grep -qx yes && ! kubectl --kubeconfig '$work/kubeconfig' auth can-i delete secrets -A | grep -qx yes"
check "the token may not delete RedisClusters" sh -c "! kubectl --kubeconfig '$work/kubeconfig' auth can-i delete redisclusters.cache.example.com -A | grep -qx yes"
check "the token may not create Pods" sh -c "! kubectl --kubeconfig '$work/kubeconfig' auth can-i create pods | grep -qx yes"
# Pods: delete, to roll a Replication cluster out in its own order (OnDelete, the primary
# handed over first); the lifecycle below rolls a cluster through an image change.
check "the token may delete Pods (OnDelete rollouts)" sh -c "kubectl --kubeconfig '$work/kubeconfig' auth can-i delete pods -A | grep -qx yes"
check "the token may list and patch PersistentVolumeClaims (volume expansion), not delete them" sh -c "kubectl --kubeconfig '$work/kubeconfig' auth can-i patch persistentvolumeclaims -A | grep -qx yes && kubectl --kubeconfig '$work/kubeconfig' auth can-i list persistentvolumeclaims -A | grep -qx yes && ! kubectl --kubeconfig '$work/kubeconfig' auth can-i delete persistentvolumeclaims -A | grep -qx yes"
# Backups: RedisBackups (create: a schedule's; delete: its retention; status) and the Jobs
# that take them (create, delete; never update, never Pods).
check "the token may create and delete RedisBackups and write their status" sh -c "kubectl --kubeconfig '$work/kubeconfig' auth can-i create redisbackups.cache.example.com -A | grep -qx yes && kubectl --kubeconfig '$work/kubeconfig' auth can-i delete redisbackups.cache.example.com -A | grep -qx yes && kubectl --kubeconfig '$work/kubeconfig' auth can-i patch redisbackups.cache.example.com --subresource=status -A | grep -qx yes"
check "the token may watch, create and delete Jobs, not update them" sh -c "kubectl --kubeconfig '$work/kubeconfig' auth can-i watch jobs.batch -A | grep -qx yes && kubectl --kubeconfig '$work/kubeconfig' auth can-i create jobs.batch -A | grep -qx yes && kubectl --kubeconfig '$work/kubeconfig' auth can-i delete jobs.batch -A | grep -qx yes && ! kubectl --kubeconfig '$work/kubeconfig' auth can-i update jobs.batch -A | grep -qx yes"
check "the token may not take Leases outside its namespace" sh -c "! kubectl --kubeconfig '$work/kubeconfig' auth can-i update leases -n default | grep -qx yes"
no_wildcard() { # no "*" in any rule's apiGroups, resources or verbs (comments aside)
    ! grep -hv '^[[:space:]]*#' "$TOP"/deploy/base/rbac/*.yaml | grep -E '^[[:space:]]*(- )?(apiGroups|resources|verbs):.*\*|^[[:space:]]*- "?\*"?[[:space:]]*$'
}
check "no rule grants '*'" no_wildcard

echo "# the whole lifecycle with the ServiceAccount's token:"
out=$(OPERATOR_KUBECONFIG="$work/kubeconfig" LEASE_NS="$sa_ns" bash "$(dirname "$0")/test_operator.sh" 2>&1)
echo "$out" | sed 's/^/    /'
line=$(echo "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -1)
check "lifecycle passes with the operator's own RBAC ($line)" sh -c "echo '$line' | grep -q ' 0 failed'"
summary
