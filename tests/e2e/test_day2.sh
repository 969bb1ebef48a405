#!/usr/bin/env bash
# End to end: the day-2 knobs of issue 34 (docs/knobs.md "Day-2") on the local control plane.
#
#   1. kubectl explain documents every new field (spec.service and its members, the pod
#      extras, spec.networkPolicy and its members).
#   2. A Replication RedisCluster with spec.service type NodePort and the user's
#      annotations and labels: <name>-primary and <name>-replicas are NodePort Services with
#      a node port allocated, spec.serviceMetadata's annotation on every Service (the
#      headless one too), spec.service's only on the role Services.
#   3. NodePort -> LoadBalancer (externalTrafficPolicy Local, loadBalancerSourceRanges): the
#      same Services updated in place, their clusterIP and node port kept (kube-apiserver
#      takes a LoadBalancer without a cloud: it simply gets no ingress address); then back
#      to ClusterIP: the node port and the range gone, the clusterIP still the same. An
#      annotation taken out of spec.service is taken off the Services.
#   4. The pod extras in the StatefulSet's template: imagePullPolicy, serviceAccountName,
#      env, volumes and volumeMounts, an init container and a sidecar container.
#   5. The API server's refusals (the CRD's CEL rules, even without the webhook), with their
#      messages: externalTrafficPolicy with ClusterIP, source ranges with NodePort, a bad
#      CIDR, NodePort outside Replication, the volume "data", the container "redis", the
#      env POD_IP, a mount at /data, a mount of no volume.
#   6. spec.networkPolicy.enabled: the NetworkPolicy <name> as specified (the pods of the
#      cluster, Ingress only, port 6379 from the cluster's pods, the operator's and the
#      user's selectors; owned by the RedisCluster); a port removed by hand is put back;
#      disabled: deleted; enabled again: created.
#   7. With process nodes: a sidecar container (busybox running sleep) beside redis-server
#      in a running pod, both Ready, and Redis answering PING.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

ns=rdc-e2e-day2-$$
ns2=rdc-e2e-day2b-$$
e2e_setup day2 "$ns"
cleanup_more() { kubectl delete namespace "$ns2" --wait=false >/dev/null 2>&1; }
jqs() { kubectl -n "$ns" get "$1" -o json 2>/dev/null | jq -r "$2"; } # jqs OBJECT FILTER
same() { [ -n "$1" ] && [ "$1" != null ] && [ "$1" = "$2" ]; }     # non-empty and equal

# ---- 1. kubectl explain ------------------------------------------------------------------
wait_until 60 sh -c "kubectl explain rediscluster.spec.networkPolicy --api-version=cache.example.com/v1 2>/dev/null | grep -q '^FIELD: *networkPolicy '"
for f in service service.type service.annotations service.labels service.externalTrafficPolicy \
    service.loadBalancerSourceRanges imagePullPolicy serviceAccountName env volumes volumeMounts \
    initContainers containers networkPolicy networkPolicy.enabled networkPolicy.allowedPeers; do
    out=$(kubectl explain "rediscluster.spec.$f" --api-version=cache.example.com/v1 2>&1)
    leaf=${f##*.}
    check "kubectl explain rediscluster.spec.$f documents it" \
        sh -c "printf '%s\n' \"\$1\" | grep -q \"^FIELD: *$leaf \" && printf '%s\n' \"\$1\" | sed -n '/^DESCRIPTION:/,\$p' | grep -q '[a-z]'" _ "$out"
done

# ---- 2. NodePort role Services with the user's metadata -----------------------------------
sup_start "$BIN" "$work/rt" "$work/operator.log" --kubeconfig "$KUBECONFIG" --workers 2 --namespace "$ns" \
    --sync-period 5s --redis-observer=false
check "operator ready" wait_until 60 curl -sf "http://127.0.0.1:$health/readyz"
check "informerd caches NetworkPolicies (synced)" \
    wait_until 20 grep -q '^informer_cache_synced{kind="NetworkPolicy"} 1' "$work/rt/metrics/informerd.prom"
kubectl -n "$ns" create serviceaccount redis-sa >/dev/null

rc_yaml d2 "$ns" <<YAML | kubectl apply -f - >/dev/null
  size: 2
  image: redis
  mode: Replication
  serviceMetadata:
    annotations: {example.com/team: payments}
  service:
    type: NodePort
    labels: {expose: outside}
    annotations: {external-dns.alpha.kubernetes.io/hostname: d2.example.com, example.com/lb: internal}
  imagePullPolicy: IfNotPresent
  serviceAccountName: redis-sa
  env:
  - {name: TZ, value: UTC}
  - name: NODE
    valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
  volumes:
  - {name: scratch, emptyDir: {}}
  volumeMounts:
  - {name: scratch, mountPath: /scratch}
  initContainers:
  - {name: prepare, image: busybox, command: [sh, -c, "true"]}
  containers:
  - {name: side, image: busybox, command: [sleep, "3600"]}
YAML
check "the role Services exist" wait_until 30 kubectl -n "$ns" get service d2-primary d2-replicas
for s in d2-primary d2-replicas; do
    check "$s: type NodePort" wait_output 20 NodePort jqs "service/$s" .spec.type
    check "$s: a node port allocated" sh -c "test \"\$(kubectl -n $ns get service $s -o jsonpath='{.spec.ports[0].nodePort}')\" -gt 0"
    check "$s: spec.service's annotations" \
        same "$(jqs "service/$s" '.metadata.annotations["external-dns.alpha.kubernetes.io/hostname"] + "," + .metadata.annotations["example.com/lb"]')" \
        "d2.example.com,internal"
    check "$s: spec.service's label" same "$(jqs "service/$s" .metadata.labels.expose)" outside
    check "$s: spec.serviceMetadata's annotation" same "$(jqs "service/$s" '.metadata.annotations["example.com/team"]')" payments
    check "$s: externalTrafficPolicy Cluster (the default, said)" same "$(jqs "service/$s" .spec.externalTrafficPolicy)" Cluster
done
check "headless d2: spec.serviceMetadata's annotation" same "$(jqs service/d2 '.metadata.annotations["example.com/team"]')" payments
check "headless d2: still headless, none of spec.service" \
    same "$(jqs service/d2 '[.spec.clusterIP, .spec.type, (.metadata.annotations["example.com/lb"] // "none")] | join(",")')" \
    "None,ClusterIP,none"

# ---- 3. NodePort -> LoadBalancer -> ClusterIP, in place ------------------------------------
ip0=$(jqs service/d2-primary .spec.clusterIP)
np0=$(jqs service/d2-primary '.spec.ports[0].nodePort')
uid0=$(jqs service/d2-primary .metadata.uid)
kubectl -n "$ns" patch rdc d2 --type=merge -p '{"spec":{"service":{"type":"LoadBalancer","externalTrafficPolicy":"Local","loadBalancerSourceRanges":["203.0.113.0/24"],"annotations":{"example.com/lb":null}}}}' >/dev/null
check "LoadBalancer: d2-primary's type follows within 20 s" wait_output 20 LoadBalancer jqs service/d2-primary .spec.type
check "LoadBalancer: the same Service (uid), clusterIP $ip0 and node port $np0 kept" \
    same "$(jqs service/d2-primary '[.metadata.uid, .spec.clusterIP, (.spec.ports[0].nodePort|tostring)] | join(",")')" "$uid0,$ip0,$np0"
check "LoadBalancer: externalTrafficPolicy Local, the source range" \
    same "$(jqs service/d2-primary '.spec.externalTrafficPolicy + "," + (.spec.loadBalancerSourceRanges | join(","))')" \
    "Local,203.0.113.0/24"
check "an annotation taken out of spec.service is gone (another of it stays)" \
    same "$(jqs service/d2-primary '(.metadata.annotations["example.com/lb"] // "gone") + "," + .metadata.annotations["external-dns.alpha.kubernetes.io/hostname"]')" \
    "gone,d2.example.com"
check "no cloud: the LoadBalancer has no ingress address (and nothing fails)" \
    same "$(jqs service/d2-primary '.status.loadBalancer.ingress // [] | length | tostring')" 0
kubectl -n "$ns" patch rdc d2 --type=merge -p '{"spec":{"service":{"type":null,"externalTrafficPolicy":null,"loadBalancerSourceRanges":null}}}' >/dev/null
check "back to ClusterIP within 20 s" wait_output 20 ClusterIP jqs service/d2-primary .spec.type
check "ClusterIP: no node port, no source range, no traffic policy; the same clusterIP" \
    same "$(jqs service/d2-primary '[.spec.clusterIP, (.spec.ports[0].nodePort // "none" | tostring), (.spec.loadBalancerSourceRanges // [] | length | tostring), (.spec.externalTrafficPolicy // "none")] | join(",")')" \
    "$ip0,none,0,none"
check "no write of a Service was refused (the operator's log)" \
    sh -c "! grep -E 'services/d2-(primary|replicas)' '$work/operator.log' | grep -E '\"level\":\"(warn|error)\"' | grep -qiE 'invalid|forbidden|\\b422\\b'"

# ---- 4. The pod extras in the StatefulSet -------------------------------------------------
tmpl=$(kubectl -n "$ns" get statefulset d2 -o json | jq -c .spec.template.spec)
tj() { jq -r "$1" <<<"$tmpl"; }
check "serviceAccountName redis-sa" same "$(tj .serviceAccountName)" redis-sa
check "redis: imagePullPolicy IfNotPresent" same "$(tj '.containers[] | select(.name=="redis") | .imagePullPolicy')" IfNotPresent
check "redis: env TZ=UTC after the operator's, NODE from the node name" \
    same "$(tj '.containers[] | select(.name=="redis") | .env | map(.name) | .[-2:] | join(",")')" "TZ,NODE"
check "redis: the operator's POD_IP still first" same "$(tj '.containers[] | select(.name=="redis") | .env[0].name')" POD_IP
check "volume scratch beside data/config, mounted at /scratch" \
    same "$(tj '(.volumes | map(.name) | index("scratch") | tostring) + "," + (.containers[] | select(.name=="redis") | .volumeMounts | map(select(.name=="scratch")) | .[0].mountPath)')" \
    "1,/scratch"
check "init container prepare" same "$(tj '.initContainers | map(.name) | join(",")')" prepare
check "containers: redis, then the sidecar side" same "$(tj '.containers | map(.name) | join(",")')" "redis,side"
kubectl -n "$ns" patch rdc d2 --type=json -p '[{"op":"remove","path":"/spec/initContainers"},{"op":"remove","path":"/spec/env"}]' >/dev/null
check "taken out of the spec: the init container and the env gone from the template within 20 s" \
    wait_until 20 sh -c "kubectl -n $ns get statefulset d2 -o json | jq -e '.spec.template.spec | (.initContainers == null) and ([.containers[0].env[].name] | index(\"TZ\") == null)'"

# ---- 5. The API server's refusals (CEL, no webhook needed) ----------------------------------
bad() { # bad NAME SPEC-YAML-FLOW: apply a RedisCluster with that spec
    printf 'apiVersion: cache.example.com/v1\nkind: RedisCluster\nmetadata: {name: %s, namespace: %s}\nspec: %s\n' "$1" "$ns" "$2" |
        kubectl apply -f -
}
refused "externalTrafficPolicy with ClusterIP refused" "may only be set with spec.service.type NodePort or LoadBalancer" \
    bad b1 '{size: 1, image: redis, mode: Replication, service: {externalTrafficPolicy: Local}}'
refused "loadBalancerSourceRanges with NodePort refused" "may only be set with spec.service.type LoadBalancer" \
    bad b2 '{size: 1, image: redis, mode: Replication, service: {type: NodePort, loadBalancerSourceRanges: [10.0.0.0/8]}}'
refused "a source range that is no CIDR refused" "must be a CIDR" \
    bad b3 '{size: 1, image: redis, mode: Replication, service: {type: LoadBalancer, loadBalancerSourceRanges: [10.0.0.1]}}'
refused "NodePort outside Replication refused" "which only spec.mode Replication has" \
    bad b4 '{size: 1, image: redis, mode: Standalone, service: {type: NodePort}}'
refused "the volume data refused" "data, config, tls and acl are the operator's volumes" \
    bad b5 '{size: 1, image: redis, volumes: [{name: data, emptyDir: {}}]}'
refused "the container redis refused" "redis is the operator's container" \
    bad b6 '{size: 1, image: redis, containers: [{name: redis, image: busybox}]}'
refused "the env POD_IP refused" "are set by the operator" \
    bad b7 '{size: 1, image: redis, env: [{name: POD_IP, value: x}]}'
refused "a mount at /data refused" "are the operator's mounts" \
    bad b8 '{size: 1, image: redis, volumes: [{name: s, emptyDir: {}}], volumeMounts: [{name: s, mountPath: /data}]}'
refused "a mount of no volume refused" "each volumeMount must name a volume of spec.volumes" \
    bad b9 '{size: 1, image: redis, volumeMounts: [{name: s, mountPath: /s}]}'
refused "two env vars of one name refused" "Duplicate value" \
    bad b10 '{size: 1, image: redis, env: [{name: A, value: x}, {name: A, value: y}]}'

# ---- 6. spec.networkPolicy ---------------------------------------------------------------
kubectl -n "$ns" patch rdc d2 --type=merge -p '{"spec":{"networkPolicy":{"enabled":true,"allowedPeers":[{"namespaceSelector":{"matchLabels":{"team":"web"}},"podSelector":{"matchLabels":{"app":"web"}}}]}}}' >/dev/null
check "NetworkPolicy d2 created" wait_until 20 kubectl -n "$ns" get networkpolicy d2
check "owned by the RedisCluster (controller reference)" \
    same "$(jqs networkpolicy/d2 '.metadata.ownerReferences[0] | .kind + "/" + .name + "/" + (.controller|tostring)')" "RedisCluster/d2/true"
check "it selects the cluster's pods, Ingress only" \
    same "$(jqs networkpolicy/d2 '[.spec.podSelector.matchLabels["app.kubernetes.io/instance"], (.spec.policyTypes | join("+"))] | join(",")')" "d2,Ingress"
check "port 6379/TCP only (no Cluster mode, no plain-text port)" \
    same "$(jqs networkpolicy/d2 '[.spec.ingress[] | .ports[] | "\(.port)/\(.protocol)"] | join(",")')" "6379/TCP"
check "from: the cluster's pods, the operator's pods (its namespace), its backup Jobs' pods, the user's selectors" \
    same "$(jqs networkpolicy/d2 '.spec.ingress[0].from | [.[0].podSelector.matchLabels["app.kubernetes.io/instance"], .[1].podSelector.matchLabels["app.kubernetes.io/name"], (.[1].namespaceSelector.matchLabels["kubernetes.io/metadata.name"] | length > 0 | tostring), .[2].podSelector.matchLabels["cache.example.com/backup-cluster"], (.[2].namespaceSelector == null | tostring), .[3].namespaceSelector.matchLabels.team, .[3].podSelector.matchLabels.app, (length | tostring)] | join(",")')" \
    "d2,rediscluster-operator,true,d2,true,web,web,4"
kubectl -n "$ns" patch networkpolicy d2 --type=json -p '[{"op":"replace","path":"/spec/ingress/0/ports","value":[{"port":1,"protocol":"TCP"}]}]' >/dev/null
check "a port changed by hand is put back within 20 s" \
    wait_output 20 6379 jqs networkpolicy/d2 '[.spec.ingress[0].ports[].port | tostring] | join(",")'
kubectl -n "$ns" patch rdc d2 --type=merge -p '{"spec":{"networkPolicy":{"enabled":false}}}' >/dev/null
check "disabled: the NetworkPolicy deleted within 20 s" wait_until 20 sh -c "! kubectl -n $ns get networkpolicy d2"
kubectl -n "$ns" patch rdc d2 --type=merge -p '{"spec":{"networkPolicy":{"enabled":true}}}' >/dev/null
check "enabled again: created again within 20 s" wait_until 20 kubectl -n "$ns" get networkpolicy d2
check "deleting the RedisCluster takes the NetworkPolicy along (garbage collector)" \
    sh -c "kubectl -n $ns delete rdc d2 --wait=true --timeout=60s && for i in \$(seq 60); do kubectl -n $ns get networkpolicy d2 >/dev/null 2>&1 || exit 0; sleep 0.5; done; exit 1"
sup_stop 5

# ---- 7. Real pods: a sidecar beside redis-server ---------------------------------------------
process_part "part 7" "$ns2" "$work/rt2" "$work/operator2.log"
rc_yaml side "$ns2" <<YAML | kubectl apply -f - >/dev/null
  size: 1
  image: redis
  version: "7.2"
  mode: Standalone
  env: [{name: TZ, value: UTC}]
  containers:
  - {name: side, image: busybox, command: [sleep, "3600"]}
YAML
check "the pod Running (phase Running)" wait_until 240 sh -c "kubectl -n $ns2 get rdc side -o jsonpath='{.status.phase}' | grep -qx Running"
cs() { kubectl -n "$ns2" get pod side-0 -o json | jq -r "$1"; }
check "two containers, redis and side, both running" \
    wait_output 30 "redis:true,side:true" cs '[.status.containerStatuses[] | "\(.name):\(.state.running != null)"] | sort | join(",")'
check "redis answers PING beside the sidecar" \
    wait_until 30 sh -c "redis-cli -h \$(kubectl -n $ns2 get pod side-0 -o jsonpath='{.status.podIP}') ping | grep -q PONG"
summary
