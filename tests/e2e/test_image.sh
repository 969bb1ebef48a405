#!/usr/bin/env bash
# The operator's image, run from its own filesystem (`buildah run --isolation chroot
# --network host`; podman/crun cannot run containers on this machine) against the local
# control plane, configured as in a pod: no kubeconfig, KUBERNETES_SERVICE_HOST/PORT, and
# the service-account token, CA and namespace of deploy/'s ServiceAccount as files at
# /var/run/secrets/kubernetes.io/serviceaccount. Through the lifecycle of test_operator:
# create -> Running, scale, delete. Also: the image is non-root (65532), has no shell, and
# its size is reported.
#
# The image is built by `make docker-build` (scripts/image.sh; cached: a rebuild only
# when the sources or the pinned Debian packages change). RDC_IMAGE_SKIP_BUILD=1 uses the
# image IMG as it is.
set -uo pipefail
TOP=${RDC_TOP:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$TOP/tests/e2e/lib.sh"
cd "$TOP"
img=${IMG:-localhost/rediscluster-operator:e2e}
ns=e2e-image-$$
opns=rediscluster-operator-system
work=$(mktemp -d /tmp/rdc-e2e-image.XXXXXX)
run_pid= ctr=
created_ns=0
kubectl get namespace "$opns" >/dev/null 2>&1 || created_ns=1
cleanup() {
    [ -n "$run_pid" ] && kill -0 "$run_pid" 2>/dev/null && { sup_of_run | xargs -r kill -TERM; sleep 3; kill -TERM "$run_pid" 2>/dev/null; }
    [ -n "$ctr" ] && buildah rm "$ctr" >/dev/null 2>&1
    kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
    # deploy/'s RBAC stays (test_rbac applies it too); its namespace goes if we made it
    # (test_runtime installs deploy/ later and must find it gone).
    [ "$created_ns" = 1 ] && kubectl delete namespace "$opns" --ignore-not-found --wait=false >/dev/null 2>&1
    rm -rf "$work"
}
trap cleanup EXIT
# The supervisor started by buildah run: a descendant of run_pid named supervisor.
sup_of_run() {
    local p=$run_pid kids
    for _ in 1 2 3 4; do
        kids=$(ps -o pid= --ppid "$p" 2>/dev/null | head -1 | tr -d ' ')
        [ -n "$kids" ] || return 0
        p=$kids
        [ "$(cat /proc/$p/comm 2>/dev/null)" = supervisor ] && { echo "$p"; return 0; }
    done
}

check "buildah is installed (make deps)" command -v buildah
if [ "${RDC_IMAGE_SKIP_BUILD:-0}" != 1 ]; then
    t0=$SECONDS
    check "make docker-build IMG=$img (buildah)" make -s docker-build IMG="$img" CONTAINER_TOOL=buildah
    echo "# image built or reused in $((SECONDS - t0)) s"
fi
ctr=$(buildah from --quiet --pull=never "$img" 2>/dev/null)
check "a working container of the image" test -n "$ctr"
mnt=$(buildah mount "$ctr")
bytes=$(du -sb "$mnt" | cut -f1)
echo "# image $img: $bytes bytes unpacked ($(du -sh "$mnt" | cut -f1)); $(buildah images --format '{{.Size}}' "$img") as buildah reports it"
check "the image is small: under 40 MB unpacked ($bytes bytes)" test "$bytes" -lt 40000000
check "no shell in the image (/bin/sh, /bin/bash, /usr/bin/sh absent)" \
    test ! -e "$mnt/bin/sh" -a ! -e "$mnt/bin/bash" -a ! -e "$mnt/usr/bin/sh" -a ! -e "$mnt/usr/bin/dash"
check "the seven daemons and rdc-backup (backup and restore, docs/backup.md) are in /usr/local/bin, nothing else" \
    test "$(ls "$mnt/usr/local/bin" | sort | tr '\n' ' ')" = "electord informerd metricsd observerd rdc-backup supervisor webhookd workerd "
user=$(buildah inspect --type image --format '{{.OCIv1.Config.User}}' "$img")
check "the image runs as 65532:65532 (USER $user)" test "$user" = 65532:65532
buildah umount "$ctr" >/dev/null

# deploy/'s namespace, ServiceAccount and RBAC; a token for the ServiceAccount, the CA of
# the API server and the namespace, as a pod's projected volume holds them.
kubectl apply -f deploy/base/crd/ >/dev/null
kubectl create namespace "$opns" >/dev/null 2>&1
kubectl apply -f deploy/base/rbac/ >/dev/null
check "deploy/'s ServiceAccount exists" kubectl -n "$opns" get serviceaccount rediscluster-operator
sa=$work/sa; mkdir -p "$sa" "$work/rt"
kubectl -n "$opns" create token rediscluster-operator --duration=1h >"$sa/token"
kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$sa/ca.crt"
echo -n "$opns" >"$sa/namespace"
check "token and CA written" test -s "$sa/token" -a -s "$sa/ca.crt"
chmod 0644 "$sa"/*
chown 65532:65532 "$work/rt"; chmod 0700 "$work/rt"
server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
host=${server#https://}; port=${host##*:}; host=${host%:*}
kubectl create namespace "$ns" >/dev/null

buildah run --isolation chroot --network host \
    --env KUBERNETES_SERVICE_HOST="$host" --env KUBERNETES_SERVICE_PORT="$port" \
    -v "$sa:/var/run/secrets/kubernetes.io/serviceaccount:ro" -v "$work/rt:/run/rdc" \
    "$ctr" -- /usr/local/bin/supervisor --leader-elect --namespace "$ns" --workers 2 \
    --redis-observer=false --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 \
    >"$work/op.log" 2>&1 &
run_pid=$!
check "the operator from the image wrote its endpoints" wait_until 20 test -s "$work/rt/rdc-operator/endpoints"
sup=$(sup_of_run)
check "its supervisor runs as uid 65532" eval "awk '/^Uid:/ {exit \$2 != 65532}' /proc/$sup/status"
check "it uses the in-cluster configuration (informerd's server is https://$host:$port)" wait_until 20 \
    grep -q "\"msg\":\"informerd started\".*\"server\":\"https://$host:$port\"" "$work/op.log"
health=$(sed -n 's/^health=//p' "$work/rt/rdc-operator/endpoints")
check "/readyz answers 200" wait_output 30 200 curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$health/readyz"
check "it holds the Lease in $opns (from the namespace file)" wait_until 30 eval \
    "kubectl -n $opns get lease rediscluster-operator.cache.example.com -o jsonpath='{.spec.holderIdentity}' | grep -q ."

rc_apply_cache "$ns"
check "create: the RedisCluster reaches Running 3/3" wait_output 60 "Running 3" \
    kubectl -n "$ns" get rdc cache -o 'jsonpath={.status.phase} {.status.readyReplicas}'
kubectl -n "$ns" patch rdc cache --type=merge -p '{"spec":{"size":5}}' >/dev/null
check "scale: size 5 -> StatefulSet of 5, Running 5/5" wait_output 90 "5 Running 5" \
    kubectl -n "$ns" get rdc,sts cache -o 'jsonpath={.items[1].spec.replicas} {.items[0].status.phase} {.items[0].status.readyReplicas}'
kubectl -n "$ns" delete rdc cache --wait=false >/dev/null
check "delete: the finalizer runs and the RedisCluster is gone" wait_until 60 eval "! kubectl -n $ns get rdc cache >/dev/null 2>&1"

sup=$(sup_of_run)
[ -n "$sup" ] && kill -TERM "$sup"
check "SIGTERM: the operator exits" wait_until 40 eval "! kill -0 $run_pid 2>/dev/null"
wait "$run_pid"; code=$?
check "... with status 0 (buildah run passes it on)" test "$code" -eq 0
run_pid=
# make bundle-build: the bundle image holds bundle/ and the annotations as labels.
bimg=localhost/rediscluster-operator-bundle:e2e
check "make bundle-build BUNDLE_IMG=$bimg" make -s bundle-build BUNDLE_IMG="$bimg" CONTAINER_TOOL=buildah
labels=$(buildah inspect --type image --format '{{.OCIv1.Config.Labels}}' "$bimg" 2>/dev/null)
check "... labelled registry+v1, package rediscluster-operator" eval \
    "grep -q 'bundle.mediatype.v1:registry+v1' <<<'$labels' && grep -q 'bundle.package.v1:rediscluster-operator' <<<'$labels'"
bctr=$(buildah from --quiet --pull=never "$bimg" 2>/dev/null); bmnt=$(buildah mount "$bctr" 2>/dev/null)
check "... with /manifests (CSV, CRD) and /metadata/annotations.yaml" test -s "$bmnt/manifests/rediscluster-operator.clusterserviceversion.yaml" \
    -a -s "$bmnt/manifests/cache.example.com_redisclusters.yaml" -a -s "$bmnt/metadata/annotations.yaml"
buildah rm "$bctr" >/dev/null 2>&1; buildah rmi "$bimg" >/dev/null 2>&1
grep -q '"level":"error"' "$work/op.log" && grep '"level":"error"' "$work/op.log" | head -5 | sed 's/^/# /'
summary
