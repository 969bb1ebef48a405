#!/usr/bin/env bash
# kubebuilder's Makefile targets against the local control plane: `make help` lists them,
# they are .PHONY (a directory named like one does not shadow it: deploy/ exists),
# `make install && make run` reconciles a RedisCluster, `make deploy IMG=...` puts IMG in
# the Deployment and `make undeploy` leaves nothing of it behind.
set -uo pipefail
TOP=${RDC_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$TOP/tests/e2e/lib.sh"
cd "$TOP"
build=$(dirname "$BIN")
ns=e2e-make-$$
work=$(mktemp -d /tmp/rdc-e2e-make.XXXXXX)
run_pid=
cleanup() {
    [ -n "$run_pid" ] && kill -TERM -- "-$run_pid" 2>/dev/null
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT

help=$(make -s help | sed 's/\x1b\[[0-9;]*m//g' | awk 'NF > 1 {print $1}')
for t in install uninstall run deploy undeploy docker-build docker-push bundle bundle-build build-installer manifests helm-lint helm-package catalog-build; do
    check "make help lists $t" grep -qx "$t" <<<"$help"
done
phony=$(make -pn -f Makefile help 2>/dev/null | sed -n 's/^\.PHONY: //p' | tr ' ' '\n')
for t in install uninstall run deploy undeploy docker-build docker-push bundle bundle-build build-installer manifests helm-lint helm-package catalog-build help; do
    check "$t is .PHONY" grep -qx "$t" <<<"$phony"
done

check "make install applies the CRD (server-side apply: created or updated)" make -s install
check "the CRD is Established" kubectl wait --for=condition=Established --timeout=60s crd/redisclusters.cache.example.com
kubectl create namespace "$ns" >/dev/null
setsid make -s run BUILD="$build" RUN_ARGS="--runtime-dir $work/rt --namespace $ns \
    --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0" >"$work/run.log" 2>&1 &
run_pid=$!
rc_apply_cache "$ns"
check "make run reconciles: Running 3/3" wait_output 60 "Running 3" \
    kubectl -n "$ns" get rdc cache -o 'jsonpath={.status.phase} {.status.readyReplicas}'
check "make run serves /metrics over plain HTTP by default (controller-runtime's default)" \
    wait_until 10 eval "curl -fsS http://127.0.0.1:\$(sed -n 's/^metrics=//p' $work/rt/endpoints)/metrics | grep -q '^controller_runtime_reconcile_total'"
kubectl -n "$ns" delete rdc cache --timeout=60s >/dev/null
kill -TERM -- "-$run_pid" 2>/dev/null
wait_until 20 eval "! kill -0 $run_pid 2>/dev/null"
check "make run stopped on SIGTERM" eval "! kill -0 $run_pid 2>/dev/null"
run_pid=

img=registry.example:5000/team/rdc-operator:e2e-1
check "make deploy IMG=... applies deploy/" make -s deploy IMG="$img" BUILD="$build"
check "the Deployment runs IMG" output_is "$img" kubectl -n rediscluster-operator-system get deploy rediscluster-operator \
    -o 'jsonpath={.spec.template.spec.containers[0].image}'
check "make deploy created the metrics-reader ClusterRole" kubectl get clusterrole rediscluster-operator-metrics-reader
# undeploy deletes the CRD, which waits for every RedisCluster to go: earlier scripts may
# have left some in namespaces being deleted, with a finalizer no operator will run now.
for r in $(kubectl get rdc -A -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}{"\n"}{end}' 2>/dev/null); do
    kubectl -n "${r%%/*}" patch rdc "${r#*/}" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
done
check "make undeploy" timeout 180 make -s undeploy IMG="$img" BUILD="$build"
left=$(kubectl get "$(kubectl api-resources --verbs=list -o name | grep -v '^events' | paste -sd,)" \
    -A -l app.kubernetes.io/part-of=rediscluster-operator -o name 2>/dev/null)
check "nothing labelled part-of=rediscluster-operator is left (was: ${left:-nothing})" test -z "$left"
check "the namespace is gone" eval "! kubectl get ns rediscluster-operator-system >/dev/null 2>&1"
check "the webhook configurations are gone" eval "! kubectl get validatingwebhookconfiguration rediscluster-operator-validating >/dev/null 2>&1"
# Leave the CRD for the scripts that come after (they apply it anyway).
make -s install >/dev/null
summary
