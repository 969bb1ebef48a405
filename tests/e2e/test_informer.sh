#!/usr/bin/env bash
# End to end: informerd alone against the local control plane. The delta stream carries
# exactly the right changes (server-side label filtering included; Secrets as metadata
# only, their data never seen); a kube-apiserver
# restart and an etcd compaction (410 Gone on resume) end in a relist (in pages of one
# object here) that misses no update and invents none; a subscriber that joins late
# receives exactly the cache.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ns=rdc-e2e-inf-$$
inf_pid= sub_pid= late_pid=
cleanup_more() {
    for p in $late_pid $sub_pid $inf_pid; do kill -CONT "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; done
    sleep 1
    for p in $late_pid $sub_pid $inf_pid; do kill -KILL "$p" 2>/dev/null; done
}
e2e_setup inf "$ns"

"$BIN/informerd" --kubeconfig "$KUBECONFIG" --runtime-dir "$work/rt" --namespace "$ns" \
    --watch-timeout 5s --list-page-size 1 --log-format text >"$work/informerd.log" 2>&1 &
inf_pid=$!
check "informerd serves its snapshot socket" wait_until 20 test -S "$work/rt/snapshot.sock"
"$BIN/informerd" --runtime-dir "$work/rt" --subscribe >"$work/sub.jsonl" 2>"$work/sub.log" &
sub_pid=$!
check "subscriber synced" wait_until 20 grep -q '"type":"SYNCED"' "$work/sub.jsonl"

# lines TYPE KIND KEY: how many delta lines of that type, kind and key were printed
lines() { jq -r --arg t "$1" --arg k "$2" --arg key "$3" 'select(.type==$t and .kind==$k and .key==$key) | .seq' "$work/sub.jsonl" 2>/dev/null | wc -l; }
rc_yaml() { # name size
    printf 'apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: %s, namespace: %s}\nspec: {size: %s, image: redis}\n' "$1" "$ns" "$2"
}
# apply_rc NAME SIZE: create it, retrying while the API server is still starting
apply_rc() { wait_until 30 sh -c "printf 'apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: $1, namespace: $ns}\nspec: {size: $2, image: redis}\n' | kubectl apply -f -"; }

rc_yaml a 1 | kubectl apply -f - >/dev/null
check "ADDED RedisCluster a" wait_output 15 1 lines ADDED RedisCluster "$ns/a"
kubectl -n "$ns" patch rdc a --type merge -p '{"spec":{"size":2}}' >/dev/null
check "MODIFIED RedisCluster a" wait_output 15 1 lines MODIFIED RedisCluster "$ns/a"
uid=$(kubectl -n "$ns" get rdc a -o jsonpath='{.metadata.uid}')
cat <<YAML | kubectl apply -f - >/dev/null
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  namespace: $ns
  labels: {app.kubernetes.io/managed-by: rediscluster-operator}
  ownerReferences: [{apiVersion: cache.example.com/v1, kind: RedisCluster, name: a, uid: $uid, controller: true}]
data: {k: v}
YAML
kubectl -n "$ns" create configmap unlabelled --from-literal=k=v >/dev/null
check "ADDED ConfigMap with the operator's label" wait_output 15 1 lines ADDED ConfigMap "$ns/a"
sleep 1
check "a ConfigMap without the label never reaches the cache" test "$(lines ADDED ConfigMap "$ns/unlabelled")" = 0
kubectl -n "$ns" delete configmap a >/dev/null
check "DELETED ConfigMap" wait_output 15 1 lines DELETED ConfigMap "$ns/a"

# Secrets: cached as metadata only (PartialObjectMetadata), so their data never reaches
# informerd, its cache or its deltas; a change is a MODIFIED delta (a rotation's trigger).
secret_value="s3cr3t-inf-e2e-$$"
kubectl -n "$ns" create secret generic pw --from-literal=password="$secret_value" >/dev/null
check "ADDED Secret pw (metadata only)" wait_output 15 1 lines ADDED Secret "$ns/pw"
kubectl -n "$ns" create secret generic pw --from-literal=password="$secret_value-2" --dry-run=client -o yaml | kubectl replace -f - >/dev/null
check "MODIFIED Secret pw when its data changes" wait_output 15 1 lines MODIFIED Secret "$ns/pw"
check "the Secret deltas carry metadata and no data" sh -c "test \"\$(jq -r --arg key '$ns/pw' 'select(.kind==\"Secret\" and .key==\$key) | (.object | has(\"data\") or has(\"stringData\")) | tostring' '$work/sub.jsonl' | sort -u)\" = false"
check "the watch sent it as PartialObjectMetadata (apiVersion meta.k8s.io/v1: Accept as=PartialObjectMetadata)" sh -c "jq -r --arg key '$ns/pw' 'select(.kind==\"Secret\" and .key==\$key and .type==\"MODIFIED\") | .object.apiVersion' '$work/sub.jsonl' | grep -qx meta.k8s.io/v1"
check "the Secret's value appears nowhere in the delta stream ($(wc -c <"$work/sub.jsonl") bytes)" \
    sh -c "! grep -qF -e '$secret_value' -e \"\$(printf %s '$secret_value' | base64)\" '$work/sub.jsonl'"

# A kube-apiserver restart: watches break and resume from their resourceVersion (as
# client-go's reflector: no relist for a connection refused); if the new apiserver no
# longer serves that version it answers 410 and the kind relists, finding nothing new for a.
before_a=$(jq -r --arg key "$ns/a" 'select(.key==$key and .type!="SNAPSHOT") | .seq' "$work/sub.jsonl" | wc -l)
tests/cluster/cluster.sh restart-apiserver >/dev/null 2>&1 || "$TOP/tests/cluster/cluster.sh" restart-apiserver >/dev/null 2>&1
check "kube-apiserver back after a restart" wait_until 60 kubectl get --raw /readyz
apply_rc b 1
check "after the restart the informer sees new objects (b)" wait_until 60 sh -c "test \$(jq -r 'select((.type==\"ADDED\" or .type==\"SNAPSHOT\") and .key==\"$ns/b\") | .seq' '$work/sub.jsonl' | wc -l) -ge 1"
after_a=$(jq -r --arg key "$ns/a" 'select(.key==$key and .type!="SNAPSHOT") | .seq' "$work/sub.jsonl" | wc -l)
check "no spurious delta for unchanged a after the relist ($before_a -> $after_a)" test "$before_a" = "$after_a"
check "a broken watch resumes from its resourceVersion" grep -q 'watch broke; resuming.*resourceVersion=[0-9]' "$work/informerd.log"
check "  ... and no relist was spent on a refused connection" sh -c "! grep -E 'relisting.*curl 7' '$work/informerd.log'"

# 410 Gone: freeze informerd until its watches (5 s) have ended cleanly, change a,
# compact etcd and restart the apiserver, thaw: the watches resume from a resourceVersion
# the new apiserver no longer has, get 410, relist, and the change made meanwhile
# arrives as one MODIFIED.
kill -STOP "$inf_pid"
sleep 7
kubectl -n "$ns" patch rdc a --type merge -p '{"spec":{"size":3}}' >/dev/null
for i in 1 2 3; do kubectl -n "$ns" annotate rdc b "touch=$i" --overwrite >/dev/null; done
"$TOP/tests/cluster/cluster.sh" compact >/dev/null 2>&1
"$TOP/tests/cluster/cluster.sh" restart-apiserver >/dev/null 2>&1
kill -CONT "$inf_pid"
check "relisted after the break" wait_until 60 grep -q relisting "$work/informerd.log"
check "the resumed watch was refused as too old (410 Gone / Expired)" wait_until 30 grep -qE 'relisting.*(410|Expired|too old)' "$work/informerd.log"
check "no refused watch was read as events" sh -c "! grep -q 'missing.\{1,3\}type' '$work/informerd.log'"
check "the change made during the outage arrives (MODIFIED a, size 3)" wait_until 60 sh -c \
    "jq -r --arg key '$ns/a' 'select(.key==\$key and .type==\"MODIFIED\") | .object.spec.size' '$work/sub.jsonl' | grep -qx 3"
check "b's annotations arrive after the relist" wait_until 60 sh -c \
    "jq -r --arg key '$ns/b' 'select(.key==\$key and .type==\"MODIFIED\") | .object.metadata.annotations.touch' '$work/sub.jsonl' | grep -qx 3"
check "the relist read both RedisClusters in pages of one" grep -q 'listed kind=RedisCluster objects=2 ' "$work/informerd.log"

# A late subscriber gets exactly the cache: the RedisClusters the API server has.
"$BIN/informerd" --runtime-dir "$work/rt" --subscribe >"$work/late.jsonl" 2>"$work/late.log" &
late_pid=$!
check "late subscriber synced" wait_until 20 grep -q '"type":"SYNCED"' "$work/late.jsonl"
want=$(kubectl -n "$ns" get rdc -o jsonpath='{range .items[*]}{.metadata.namespace}/{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}' | sort)
have=$(jq -r 'select(.type=="SNAPSHOT" and .kind=="RedisCluster") | "\(.key)=\(.resourceVersion)"' "$work/late.jsonl" | sort)
check "late subscriber's snapshot equals the API's RedisClusters" test "$want" = "$have"
check "informerd survived it all" kill -0 "$inf_pid"
if [ "$failed" -gt 0 ] || [ -n "${RDC_E2E_VERBOSE:-}" ]; then
    echo "--- informerd log (last 30 lines)"; tail -30 "$work/informerd.log"
fi
summary
