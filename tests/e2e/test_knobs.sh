#!/usr/bin/env bash
# End to end: what Redis users configure (issue 20) on the local control plane.
#
#   1. kubectl explain documents every v1 knob.
#   2. A RedisCluster with every knob set: each appears in the StatefulSet and its pods
#      (resources, securityContext merged over the restricted defaults, affinity,
#      tolerations, nodeSelector, topologySpreadConstraints, priorityClassName,
#      imagePullSecrets, pod labels and annotations, terminationGracePeriodSeconds), the
#      Service (labels, annotations), the StatefulSet's persistentVolumeClaimRetentionPolicy,
#      redis.conf (config.extra) and the PodDisruptionBudget (maxUnavailable, owner).
#      A RedisCluster without knobs gets the defaults (anti-affinity across nodes,
#      maxUnavailable 1, the guide's resources).
#   3. Changing a pod knob rolls the pods; a CONFIG SET-able directive (hz) rewrites the
#      ConfigMap and rolls nothing; another directive (databases) rolls them.
#   3b. Removing a toleration, a pod label and a Service label from the spec removes them
#      from the StatefulSet's template and the Service within 30 s (a label someone else
#      put on the Service stays); the pods roll; then two resyncs write nothing.
#   4. The PDB's drift is healed; a resync writes nothing (PDBs cached like the other
#      children); deleting the RedisCluster takes the PDB with it (garbage collector).
#   5. A forbidden directive is refused by the API server with its name.
#   6. With process nodes (real redis-server pods): config.extra reaches the running Redis
#      (CONFIG GET), and the operator's /metrics carry the Redis figures INFO shows
#      (redis_exporter names), within one full INFO period of observerd.
#   7. With process nodes: changing run-time directives (hz, maxmemory-samples) of a running
#      Replication cluster reaches every pod by CONFIG SET within seconds (CONFIG GET), with
#      no restart (same pod uids and restartCounts) and no roll; each pod records it in
#      its cache.example.com/runtime-config annotation; then a reconcile writes nothing.
#   8. With process nodes: spec.persistence none, rdb and aof each in the running server
#      (CONFIG GET appendonly, save, appendfsync); aof -> none -> rdb -> aof on a running
#      pod by CONFIG SET with no restart and no roll, a key kept; the API server refuses
#      config.extra.save with none and appendfsync with rdb; save tunes rdb's points.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ns=rdc-e2e-knobs-$$
ns2=rdc-e2e-knobs2-$$
pc=rdc-e2e-knobs-$$
e2e_setup knobs "$ns"
cleanup_more() {
    kubectl delete priorityclass "$pc" --wait=false >/dev/null 2>&1
    kubectl delete namespace "$ns2" --wait=false >/dev/null 2>&1
}
get() { kubectl -n "$ns" get "$@" 2>/dev/null; }
jqs() { kubectl -n "$ns" get "$1" -o json 2>/dev/null | jq -c "$2"; } # jqs OBJECT FILTER
same() { [ -n "$1" ] && [ "$1" != null ] && [ "$1" = "$2" ]; }     # non-empty and equal

# ---- 1. kubectl explain ------------------------------------------------------------------
# The API server publishes a CRD's OpenAPI a few seconds after it is Established (a fresh
# cluster installs it just above): wait for it, then read each field once.
wait_until 60 sh -c "kubectl explain rediscluster.spec.config.extra --api-version=cache.example.com/v1 2>/dev/null | grep -q '^FIELD: *extra '"
for f in resources securityContext podSecurityContext affinity tolerations nodeSelector \
    topologySpreadConstraints priorityClassName imagePullSecrets podMetadata serviceMetadata \
    terminationGracePeriodSeconds podDisruptionBudget storage.retention config.extra; do
    out=$(kubectl explain "rediscluster.spec.$f" --api-version=cache.example.com/v1 2>&1)
    leaf=${f##*.}
    check "kubectl explain rediscluster.spec.$f documents it" \
        sh -c "printf '%s\n' \"\$1\" | grep -q \"^FIELD: *$leaf \" && printf '%s\n' \"\$1\" | sed -n '/^DESCRIPTION:/,\$p' | grep -q '[a-z]'" _ "$out"
done

# ---- 2. Every knob ---------------------------------------------------------------------
kubectl create priorityclass "$pc" --value=1000 >/dev/null
sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns" \
    --sync-period 5s --redis-observer=false
check "operator ready" wait_until 60 curl -sf "http://127.0.0.1:$health/readyz"
check "informerd caches PodDisruptionBudgets (synced)" \
    wait_until 20 grep -q '^informer_cache_synced{kind="PodDisruptionBudget"} 1' "$work/rt/metrics/informerd.prom"

rc_yaml knobs "$ns" <<YAML | kubectl apply -f - >/dev/null
  size: 3
  image: redis
  mode: Standalone
  resources:
    requests: {cpu: 250m, memory: 300Mi}
    limits: {cpu: 1, memory: 600Mi}
  securityContext: {runAsNonRoot: true}
  podSecurityContext: {runAsUser: 1001, runAsGroup: 1001, fsGroup: 1001}
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        preference: {matchExpressions: [{key: type, operator: In, values: [kwok]}]}
  tolerations:
  - {key: dedicated, operator: Equal, value: redis, effect: NoSchedule}
  nodeSelector: {type: kwok}
  topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector: {matchLabels: {app.kubernetes.io/instance: knobs}}
  priorityClassName: $pc
  imagePullSecrets: [{name: regcred}]
  podMetadata:
    labels: {team: payments}
    annotations: {example.com/owner: "team-payments"}
  serviceMetadata:
    labels: {tier: cache}
    annotations: {example.com/dns: "knobs.example.com"}
  terminationGracePeriodSeconds: 45
  podDisruptionBudget: {maxUnavailable: 2}
  storage: {size: 1Gi, retention: {whenDeleted: Delete, whenScaled: Retain}}
  config:
    maxmemory: 64mb
    extra: {hz: "20", databases: "16", slowlog-max-len: "256"}
YAML
check "StatefulSet and PodDisruptionBudget created" wait_until 30 get statefulset/knobs poddisruptionbudget/knobs
spec=$(jqs rdc/knobs .spec)
tmpl=$(jqs statefulset/knobs .spec.template.spec)
knob() { jq -c ".$1" <<<"$spec"; }
for k in affinity tolerations nodeSelector topologySpreadConstraints priorityClassName imagePullSecrets \
    terminationGracePeriodSeconds; do
    check "StatefulSet: $k as set ($(knob "$k" | cut -c1-60))" same "$(jq -c ".$k" <<<"$tmpl")" "$(knob "$k")"
done
check "StatefulSet: resources as set (cpu 1 as \"1\")" \
    same "$(jq -c '.containers[0].resources' <<<"$tmpl")" '{"limits":{"cpu":"1","memory":"600Mi"},"requests":{"cpu":"250m","memory":"300Mi"}}'
check "StatefulSet: podSecurityContext merged over the defaults" \
    same "$(jq -c '.securityContext | [.runAsUser, .runAsGroup, .fsGroup, .runAsNonRoot, .seccompProfile.type]' <<<"$tmpl")" \
    '[1001,1001,1001,true,"RuntimeDefault"]'
check "StatefulSet: container securityContext keeps drop ALL and read-only root" \
    same "$(jq -c '.containers[0].securityContext | [.runAsNonRoot, .capabilities.drop, .readOnlyRootFilesystem, .allowPrivilegeEscalation]' <<<"$tmpl")" \
    '[true,["ALL"],true,false]'
check "StatefulSet: pod label and annotation added" \
    same "$(jqs statefulset/knobs '.spec.template.metadata | [.labels.team, .annotations["example.com/owner"], .labels["app.kubernetes.io/instance"]]')" \
    '["payments","team-payments","knobs"]'
check "StatefulSet: persistentVolumeClaimRetentionPolicy Delete/Retain" \
    same "$(jqs statefulset/knobs '.spec.persistentVolumeClaimRetentionPolicy | [.whenDeleted, .whenScaled]')" '["Delete","Retain"]'
check "Service: label and annotation added" \
    same "$(jqs service/knobs '[.metadata.labels.tier, .metadata.annotations["example.com/dns"], .metadata.labels["app.kubernetes.io/managed-by"]]')" \
    '["cache","knobs.example.com","rediscluster-operator"]'
conf=$(kubectl -n "$ns" get configmap knobs -o jsonpath='{.data.redis\.conf}')
check "redis.conf: the extra directives after the operator's" \
    sh -c "printf '%s\n' \"\$1\" | tr '\n' '|' | grep -q 'maxmemory-policy allkeys-lru|databases 16|hz 20|slowlog-max-len 256|'" _ "$conf"
check "PDB: maxUnavailable 2, the pods' selector" \
    same "$(jqs pdb/knobs '[.spec.maxUnavailable, .spec.selector.matchLabels["app.kubernetes.io/instance"]]')" '[2,"knobs"]'
check "PDB: controlled by the RedisCluster" \
    same "$(jqs pdb/knobs '.metadata.ownerReferences[0] | [.kind, .name, .controller]')" '["RedisCluster","knobs",true]'
check "pods created (3)" wait_until 90 sh -c "test \$(kubectl -n $ns get pods -l app.kubernetes.io/instance=knobs -o name | wc -l) = 3"
pod=$(jqs pod/knobs-0 '.spec')
check "pod knobs-0: priorityClassName, nodeSelector, grace period, pull secret, runAsUser" \
    same "$(jq -c '[.priorityClassName, .nodeSelector.type, .terminationGracePeriodSeconds, .imagePullSecrets[0].name, .securityContext.runAsUser]' <<<"$pod")" \
    "[\"$pc\",\"kwok\",45,\"regcred\",1001]"
check "pod knobs-0: our toleration among the API's defaults" \
    sh -c "printf '%s' \"\$1\" | jq -e '.tolerations | any(.key == \"dedicated\" and .value == \"redis\")' >/dev/null" _ "$pod"
check "pod knobs-0: label team=payments" same "$(jqs pod/knobs-0 '.metadata.labels.team')" '"payments"'
check "PDB status counts the 3 pods" wait_until 60 sh -c "test \"\$(kubectl -n $ns get pdb knobs -o jsonpath='{.status.expectedPods}')\" = 3"

# Defaults.
kubectl apply -f - >/dev/null <<YAML
apiVersion: cache.example.com/v1
kind: RedisCluster
metadata: {name: plain, namespace: $ns}
spec: {size: 1, image: redis}
YAML
check "defaults: StatefulSet and PDB created" wait_until 30 get statefulset/plain poddisruptionbudget/plain
check "defaults: preferred pod anti-affinity across nodes for the cluster's pods" \
    same "$(jqs statefulset/plain '.spec.template.spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0] | [.weight, .podAffinityTerm.topologyKey, .podAffinityTerm.labelSelector.matchLabels["app.kubernetes.io/instance"]]')" \
    '[100,"kubernetes.io/hostname","plain"]'
check "defaults: PDB maxUnavailable 1" same "$(jqs pdb/plain '.spec.maxUnavailable')" 1
check "defaults: the guide's resources" \
    same "$(jqs statefulset/plain '.spec.template.spec.containers[0].resources')" \
    '{"limits":{"cpu":"500m","memory":"1Gi"},"requests":{"cpu":"100m","memory":"256Mi"}}'
check "defaults: claims retained (the API's Retain/Retain)" \
    same "$(jqs statefulset/plain '.spec.persistentVolumeClaimRetentionPolicy | [.whenDeleted, .whenScaled]')" '["Retain","Retain"]'
check "defaults: restricted pod securityContext (runAsUser 999, RuntimeDefault)" \
    same "$(jqs statefulset/plain '.spec.template.spec.securityContext | [.runAsNonRoot, .runAsUser, .seccompProfile.type]')" \
    '[true,999,"RuntimeDefault"]'

# ---- 3. What rolls and what does not ---------------------------------------------------------
check "knobs Running" wait_until 120 sh -c "test \"\$(kubectl -n $ns get rdc knobs -o jsonpath='{.status.phase}')\" = Running"
uids() { kubectl -n "$ns" get pods -l app.kubernetes.io/instance=knobs -o jsonpath='{range .items[*]}{.metadata.uid}{" "}{end}' 2>/dev/null; }
hash() { kubectl -n "$ns" get statefulset knobs -o jsonpath='{.spec.template.metadata.annotations.cache\.example\.com/config-hash}'; }
rev() { kubectl -n "$ns" get statefulset knobs -o jsonpath='{.status.updateRevision}'; }
u0=$(uids) h0=$(hash) r0=$(rev)
kubectl -n "$ns" patch rdc knobs --type=merge -p '{"spec":{"config":{"extra":{"hz":"30"}}}}' >/dev/null
check "hz 20 -> 30: the ConfigMap says hz 30" wait_until 30 sh -c "kubectl -n $ns get configmap knobs -o jsonpath='{.data.redis\.conf}' | grep -qx 'hz 30'"
sleep 5
check "hz (CONFIG SET-able): same config hash, same revision, same pods" \
    test "$(hash)|$(rev)|$(uids)" = "$h0|$r0|$u0"
kubectl -n "$ns" patch rdc knobs --type=merge -p '{"spec":{"config":{"extra":{"databases":"32"}}}}' >/dev/null
check "databases 16 -> 32: a new config hash on the pod template" wait_until 30 sh -c "test \"\$(kubectl -n $ns get statefulset knobs -o jsonpath='{.spec.template.metadata.annotations.cache\.example\.com/config-hash}')\" != $h0"
check "databases: the pods roll (a new revision)" wait_until 30 sh -c "test \"\$(kubectl -n $ns get statefulset knobs -o jsonpath='{.status.updateRevision}')\" != $r0"
check "Running again after the roll" wait_until 180 sh -c "test \"\$(kubectl -n $ns get rdc knobs -o jsonpath='{.status.phase}')\" = Running"
u1=$(uids)
r1=$(rev)
kubectl -n "$ns" patch rdc knobs --type=merge -p '{"spec":{"terminationGracePeriodSeconds":60}}' >/dev/null
check "terminationGracePeriodSeconds 45 -> 60: the pods roll" wait_until 30 sh -c "test \"\$(kubectl -n $ns get statefulset knobs -o jsonpath='{.status.updateRevision}')\" != $r1"
check "a rolled pod has 60" wait_until 180 sh -c "test \"\$(kubectl -n $ns get pod knobs-2 -o jsonpath='{.spec.terminationGracePeriodSeconds}')\" = 60"
u2=$(kubectl -n "$ns" get pod knobs-2 -o jsonpath='{.metadata.uid}' 2>/dev/null)
check "knobs-2 is a new pod" sh -c "test -n '$u2' && ! printf '%s' '$u1' | grep -q '$u2'"
check "Running again" wait_until 180 sh -c "test \"\$(kubectl -n $ns get rdc knobs -o jsonpath='{.status.phase}')\" = Running"

# ---- 3b. Removing knobs removes them (REMOVED KNOBS in workerd/plan.h) ------------------------
check "StatefulSet records its spec hash" \
    sh -c "kubectl -n $ns get statefulset knobs -o json | jq -e '.metadata.annotations[\"cache.example.com/spec-hash\"] | length == 64' >/dev/null"
check "before: toleration and pod label team on the template, Service label tier" \
    same "$(jqs statefulset/knobs '[(.spec.template.spec.tolerations | length), .spec.template.metadata.labels.team]')|$(jqs service/knobs '.metadata.labels.tier')" \
    '[1,"payments"]|"cache"'
kubectl -n "$ns" label service knobs example.com/added-by=someone-else >/dev/null
r2=$(rev)
kubectl -n "$ns" patch rdc knobs --type=json -p '[{"op":"remove","path":"/spec/tolerations"},{"op":"remove","path":"/spec/podMetadata/labels"},{"op":"remove","path":"/spec/serviceMetadata/labels"}]' >/dev/null
check "tolerations and podMetadata.labels removed from the spec: gone from the StatefulSet's template within 30 s" \
    wait_until 30 sh -c "kubectl -n $ns get statefulset knobs -o json | jq -e '.spec.template.spec.tolerations == null and .spec.template.metadata.labels.team == null and .spec.template.metadata.labels[\"app.kubernetes.io/instance\"] == \"knobs\"' >/dev/null"
check "serviceMetadata.labels removed: label tier gone from the Service, the operator's and someone else's kept" \
    wait_until 30 sh -c "kubectl -n $ns get service knobs -o json | jq -e '.metadata.labels.tier == null and .metadata.labels[\"example.com/added-by\"] == \"someone-else\" and .metadata.labels[\"app.kubernetes.io/managed-by\"] == \"rediscluster-operator\" and .metadata.annotations[\"example.com/dns\"] == \"knobs.example.com\"' >/dev/null"
check "the other knobs stay (nodeSelector, grace period 60, pod annotation)" \
    same "$(jqs statefulset/knobs '[.spec.template.spec.nodeSelector.type, .spec.template.spec.terminationGracePeriodSeconds, .spec.template.metadata.annotations["example.com/owner"]]')" \
    '["kwok",60,"team-payments"]'
check "the removal rolls the pods (a new revision)" wait_until 30 sh -c "test \"\$(kubectl -n $ns get statefulset knobs -o jsonpath='{.status.updateRevision}')\" != $r2"
check "Running after the removal" wait_until 180 sh -c "test \"\$(kubectl -n $ns get rdc knobs -o jsonpath='{.status.phase}')\" = Running"
check "knobs-0 rolled without the toleration" \
    wait_until 60 sh -c "kubectl -n $ns get pod knobs-0 -o json | jq -e '(.spec.tolerations // []) | all(.key != \"dedicated\")' >/dev/null"
sleep 3
w0=$(write_requests "http://127.0.0.1:$metrics/metrics")
sleep 12 # two resyncs (--sync-period 5s)
w1=$(write_requests "http://127.0.0.1:$metrics/metrics")
check "after the removal, two resyncs write nothing ($w0 -> $w1)" test "$w1" = "$w0"

# ---- 4. PDB drift, resync, deletion -------------------------------------------------------
kubectl -n "$ns" patch pdb knobs --type=merge -p '{"spec":{"maxUnavailable":0}}' >/dev/null
check "PDB maxUnavailable 0 by hand: put back to 2" wait_until 30 sh -c "test \"\$(kubectl -n $ns get pdb knobs -o jsonpath='{.spec.maxUnavailable}')\" = 2"
check "plain Running" wait_until 120 sh -c "test \"\$(kubectl -n $ns get rdc plain -o jsonpath='{.status.phase}')\" = Running"
sleep 3
w0=$(write_requests "http://127.0.0.1:$metrics/metrics")
sleep 12 # two resyncs (--sync-period 5s)
w1=$(write_requests "http://127.0.0.1:$metrics/metrics")
check "two resyncs with the PDBs in the cache write nothing ($w0 -> $w1)" test "$w1" = "$w0"
kubectl -n "$ns" delete rdc knobs --wait=true --timeout=60s >/dev/null 2>&1
check "the PDB goes with the RedisCluster" wait_until 60 sh -c "! kubectl -n $ns get pdb knobs >/dev/null 2>&1"

# ---- 5. A forbidden directive ------------------------------------------------------------------
refuse=$(printf 'apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: bad, namespace: %s}\nspec: {size: 1, image: redis, config: {extra: {hz: "20", requirepass: "x"}}}\n' "$ns" |
    kubectl apply -f - 2>&1)
echo "# $refuse"
check "config.extra.requirepass refused, the directive named" \
    sh -c "printf '%s' \"\$1\" | grep -q 'spec.config.extra: Forbidden: directive requirepass is owned by the operator'" _ "$refuse"
check "nothing was created" sh -c "! kubectl -n $ns get rdc bad >/dev/null 2>&1"
refuse=$(printf 'apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: bad, namespace: %s}\nspec: {size: 1, image: redis, config: {extra: {appendonly: "no"}}}\n' "$ns" |
    kubectl apply -f - 2>&1)
check "config.extra.appendonly refused while spec.persistence is set (its default aof)" \
    sh -c "printf '%s' \"\$1\" | grep -q 'directive appendonly is owned by the operator'" _ "$refuse"
sup_stop 5

# ---- 6. Real Redis: config.extra in the server, /metrics against INFO ---------------------------
process_part "part 6" "$ns2" "$work/rt2" "$work/operator2.log"
rc_yaml m "$ns2" <<YAML | kubectl apply -f - >/dev/null
  size: 1
  image: redis
  version: "7.2"
  mode: Standalone
  config: {maxmemory: 64mb, extra: {hz: "25", slowlog-max-len: "77"}}
YAML
check "a real Redis pod Running" wait_until 240 sh -c "kubectl -n $ns2 get rdc m -o jsonpath='{.status.phase}' | grep -qx Running"
ip=$(kubectl -n "$ns2" get pod m-0 -o jsonpath='{.status.podIP}')
wait_until 60 sh -c "redis-cli -h $ip ping | grep -q PONG"
check "CONFIG GET hz on the pod: 25 (spec.config.extra)" sh -c "redis-cli -h $ip config get hz | tail -1 | grep -qx 25"
check "CONFIG GET slowlog-max-len on the pod: 77" sh -c "redis-cli -h $ip config get slowlog-max-len | tail -1 | grep -qx 77"
for i in $(seq 1 20); do redis-cli -h "$ip" set "k$i" "v$i" >/dev/null; done
for i in $(seq 1 15); do redis-cli -h "$ip" get "k$i" >/dev/null; done   # 15 hits
for i in $(seq 1 7); do redis-cli -h "$ip" get "none$i" >/dev/null; done # 7 misses
redis-cli -h "$ip" set short v px 1 >/dev/null; sleep 0.2; redis-cli -h "$ip" get short >/dev/null # 1 expired, 1 miss
info=$(redis-cli -h "$ip" info | tr -d '\r')
iv() { printf '%s\n' "$info" | sed -n "s/^$1://p"; }
scrape() { curl -sf --max-time 5 "http://127.0.0.1:$metrics/metrics"; }
mv() { # mv METRIC: its value for pod m-0 on the operator's /metrics (integer part)
    scrape | grep "^$1{" | grep "pod=\"m-0\"" | grep "namespace=\"$ns2\"" | awk '{print $NF}' | head -1 | sed 's/\..*//;s/e+.*//'
}
# observerd reads the full INFO every 5 probes (5 s): wait for a read after the commands.
check "redis_keyspace_hits_total = INFO keyspace_hits ($(iv keyspace_hits))" wait_output 15 "$(iv keyspace_hits)" mv redis_keyspace_hits_total
sleep 6
check "and still a full INFO period later" same "$(mv redis_keyspace_hits_total)" "$(iv keyspace_hits)"
check "redis_keyspace_misses_total = INFO keyspace_misses ($(iv keyspace_misses))" same "$(mv redis_keyspace_misses_total)" "$(iv keyspace_misses)"
check "redis_memory_max_bytes = INFO maxmemory ($(iv maxmemory) = 64mb)" same "$(mv redis_memory_max_bytes)" "$(iv maxmemory)"
check "  ... which is the 64mb of spec.config" same "$(iv maxmemory)" 67108864
check "redis_expired_keys_total = INFO expired_keys ($(iv expired_keys))" same "$(mv redis_expired_keys_total)" "$(iv expired_keys)"
check "redis_evicted_keys_total = INFO evicted_keys ($(iv evicted_keys))" same "$(mv redis_evicted_keys_total)" "$(iv evicted_keys)"
check "redis_up 1" same "$(mv redis_up)" 1
check "redis_rdb_last_bgsave_status 1 (INFO rdb_last_bgsave_status:$(iv rdb_last_bgsave_status))" \
    same "$(mv redis_rdb_last_bgsave_status)" "$([ "$(iv rdb_last_bgsave_status)" = ok ] && echo 1 || echo 0)"
# Figures that move with every probe: within one full-INFO period of the value read now.
info=$(redis-cli -h "$ip" info | tr -d '\r')
c=$(mv redis_commands_processed_total) ic=$(iv total_commands_processed)
check "redis_commands_processed_total $c within a period of INFO's $ic" test -n "$c" -a "$c" -le "$ic" -a "$((ic - c))" -lt 60
u=$(mv redis_memory_used_bytes) iu=$(iv used_memory)
check "redis_memory_used_bytes $u within 10% of INFO's $iu" test -n "$u" -a "$((u * 10))" -ge "$((iu * 9))" -a "$((u * 10))" -le "$((iu * 11))"
cc=$(mv redis_connected_clients) icc=$(iv connected_clients)
check "redis_connected_clients $cc within 1 of INFO's $icc" test -n "$cc" -a "$((cc - icc))" -le 1 -a "$((icc - cc))" -le 1
o=$(mv redis_master_repl_offset) io=$(iv master_repl_offset)
check "redis_master_repl_offset $o = INFO's $io" same "$o" "$io"

# ---- 7. A run-time directive changed on running pods: CONFIG SET, no restart ----------------------
rc_yaml live "$ns2" <<YAML | kubectl apply -f - >/dev/null
  size: 2
  image: redis
  version: "7.2"
  mode: Replication
  config: {extra: {hz: "25", maxmemory-samples: "5", databases: "4"}}
YAML
check "live (Replication, 2 real pods) Running" wait_until 240 sh -c "kubectl -n $ns2 get rdc live -o jsonpath='{.status.phase}' | grep -qx Running"
lip0=$(kubectl -n "$ns2" get pod live-0 -o jsonpath='{.status.podIP}')
lip1=$(kubectl -n "$ns2" get pod live-1 -o jsonpath='{.status.podIP}')
cget() { redis-cli -h "$1" config get "$2" 2>/dev/null | tail -1; }
export -f cget
check "both pods answer ($lip0, $lip1)" wait_until 60 sh -c "redis-cli -h $lip0 ping | grep -q PONG && redis-cli -h $lip1 ping | grep -q PONG"
check "hz 25 on both from redis.conf" test "$(cget "$lip0" hz) $(cget "$lip1" hz)" = "25 25"
pods_state() { kubectl -n "$ns2" get pods -l app.kubernetes.io/instance=live -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.uid}/{.status.containerStatuses[0].restartCount}{" "}{end}'; }
s0=$(pods_state) lrev=$(kubectl -n "$ns2" get statefulset live -o jsonpath='{.status.updateRevision}')
check "the pods' identity read ($s0)" sh -c "printf '%s' '$s0' | grep -q 'live-0=.*live-1='"
kubectl -n "$ns2" patch rdc live --type=merge -p '{"spec":{"config":{"extra":{"hz":"40","maxmemory-samples":"9"}}}}' >/dev/null
t0=$(date +%s%N)
check "hz 40 by CONFIG GET on every pod within 10 s" wait_until 10 bash -c "test \"\$(cget $lip0 hz) \$(cget $lip1 hz)\" = '40 40'"
echo "# CONFIG SET reached both pods $((($(date +%s%N) - t0) / 1000000)) ms after the patch"
check "maxmemory-samples 9 on every pod" test "$(cget "$lip0" maxmemory-samples) $(cget "$lip1" maxmemory-samples)" = "9 9"
check "no restart: same pods, same restartCount ($(pods_state))" test "$(pods_state)" = "$s0"
check "no roll: the StatefulSet's revision is unchanged" test "$(kubectl -n "$ns2" get statefulset live -o jsonpath='{.status.updateRevision}')" = "$lrev"
check "the ConfigMap says hz 40 too (for the next start)" sh -c "kubectl -n $ns2 get configmap live -o jsonpath='{.data.redis\.conf}' | grep -qx 'hz 40'"
ann() { kubectl -n "$ns2" get pod "$1" -o jsonpath='{.metadata.annotations.cache\.example\.com/runtime-config}'; }
check "each pod records what it was given (cache.example.com/runtime-config)" \
    wait_until 10 sh -c "test -n \"\$(kubectl -n $ns2 get pod live-0 -o jsonpath='{.metadata.annotations.cache\.example\.com/runtime-config}')\" && test \"\$(kubectl -n $ns2 get pod live-0 -o jsonpath='{.metadata.annotations.cache\.example\.com/runtime-config}')\" = \"\$(kubectl -n $ns2 get pod live-1 -o jsonpath='{.metadata.annotations.cache\.example\.com/runtime-config}')\""
check "an Event ConfigApplied" wait_until 10 sh -c "kubectl -n $ns2 get events --field-selector reason=ConfigApplied -o name | grep -q ."
check "operator log: the CONFIG command done" grep -q '"command":"CONFIG"' "$work/operator2.log"
a0=$(ann live-0)
sleep 3
w0=$(write_requests "http://127.0.0.1:$metrics/metrics")
kubectl -n "$ns2" annotate rdc live cache.example.com/poke="$$" --overwrite >/dev/null # a reconcile, no change
sleep 6
w1=$(write_requests "http://127.0.0.1:$metrics/metrics")
check "once applied, a reconcile writes nothing ($w0 -> $w1) and the record stays" test "$w1|$(ann live-0)" = "$w0|$a0"
# ---- 8. spec.persistence: each mode in the running server, a change without a restart ------------
for m in none rdb aof; do
    rc_yaml "p-$m" "$ns2" <<YAML | kubectl apply -f - >/dev/null
  size: 1
  image: redis
  version: "7.2"
  mode: Standalone
  persistence: $m
YAML
done
for m in none rdb aof; do
    check "p-$m (persistence $m) Running" wait_until 240 sh -c "kubectl -n $ns2 get rdc p-$m -o jsonpath='{.status.phase}' | grep -qx Running"
done
pip() { kubectl -n "$ns2" get pod "$1" -o jsonpath='{.status.podIP}'; }
export -f cget
for m in none rdb aof; do
    wait_until 60 sh -c "redis-cli -h $(pip "p-$m-0") ping | grep -q PONG"
done
check "none: CONFIG GET appendonly no, save \"\"" test "$(cget "$(pip p-none-0)" appendonly)|$(cget "$(pip p-none-0)" save)" = "no|"
check "rdb: CONFIG GET appendonly no, save 900 1 300 10 60 10000" \
    test "$(cget "$(pip p-rdb-0)" appendonly)|$(cget "$(pip p-rdb-0)" save)" = "no|900 1 300 10 60 10000"
check "aof: CONFIG GET appendonly yes, save 900 1 300 10 60 10000" \
    test "$(cget "$(pip p-aof-0)" appendonly)|$(cget "$(pip p-aof-0)" save)" = "yes|900 1 300 10 60 10000"
check "aof: appendfsync everysec" test "$(cget "$(pip p-aof-0)" appendfsync)" = everysec
check "the ConfigMaps say so (none: save \"\")" sh -c "kubectl -n $ns2 get configmap p-none -o jsonpath='{.data.redis\.conf}' | grep -qx 'save \"\"'"
prev() { kubectl -n "$ns2" get pod "$1" -o jsonpath='{.metadata.uid}/{.status.containerStatuses[0].restartCount}'; }
p0=$(prev p-aof-0) prev_rev=$(kubectl -n "$ns2" get statefulset p-aof -o jsonpath='{.status.updateRevision}')
redis-cli -h "$(pip p-aof-0)" set kept yes >/dev/null
kubectl -n "$ns2" patch rdc p-aof --type=merge -p '{"spec":{"persistence":"none"}}' >/dev/null
check "aof -> none: CONFIG GET appendonly no and save \"\" within 10 s" \
    wait_until 10 bash -c "test \"\$(cget $(pip p-aof-0) appendonly)|\$(cget $(pip p-aof-0) save)\" = 'no|'"
kubectl -n "$ns2" patch rdc p-aof --type=merge -p '{"spec":{"persistence":"rdb"}}' >/dev/null
check "none -> rdb: save 900 1 300 10 60 10000, appendonly no within 10 s" \
    wait_until 10 bash -c "test \"\$(cget $(pip p-aof-0) appendonly)|\$(cget $(pip p-aof-0) save)\" = 'no|900 1 300 10 60 10000'"
kubectl -n "$ns2" patch rdc p-aof --type=merge -p '{"spec":{"persistence":"aof"}}' >/dev/null
check "rdb -> aof: appendonly yes within 10 s" wait_until 10 bash -c "test \"\$(cget $(pip p-aof-0) appendonly)\" = yes"
check "no restart through the three changes ($p0 -> $(prev p-aof-0)), same revision" \
    test "$(prev p-aof-0)|$(kubectl -n "$ns2" get statefulset p-aof -o jsonpath='{.status.updateRevision}')" = "$p0|$prev_rev"
check "the key written before the changes is still there" test "$(redis-cli -h "$(pip p-aof-0)" get kept)" = yes
refuse=$(kubectl -n "$ns2" patch rdc p-none --type=merge -p '{"spec":{"config":{"extra":{"save":"60 1"}}}}' 2>&1)
check "persistence none: config.extra.save refused by the API server" \
    sh -c "printf '%s' \"\$1\" | grep -q 'directive save is owned by the operator'" _ "$refuse"
refuse=$(kubectl -n "$ns2" patch rdc p-rdb --type=merge -p '{"spec":{"config":{"extra":{"appendfsync":"always"}}}}' 2>&1)
check "persistence rdb: config.extra.appendfsync refused" \
    sh -c "printf '%s' \"\$1\" | grep -q 'directive appendfsync is owned by the operator'" _ "$refuse"
kubectl -n "$ns2" patch rdc p-rdb --type=merge -p '{"spec":{"config":{"extra":{"save":"60 1"}}}}' >/dev/null
check "persistence rdb: config.extra.save tunes the save points (CONFIG GET save 60 1)" \
    wait_until 10 bash -c "test \"\$(cget $(pip p-rdb-0) save)\" = '60 1'"
summary
