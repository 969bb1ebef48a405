#!/usr/bin/env bash
# The process runtime of the local control plane (tests/cluster/runtime, README "Process
# nodes"): pods on the process nodes run real redis-server processes on their pod IPs;
# deploy/ runs the operator itself as a pod there (skipped when build/bin is not built).
# Needs a cluster started with process nodes (RDC_CLUSTER_PROCESS_NODES=N, which
# tests/e2e/run.sh sets); on a cluster without them it says so and skips.
# One line per check: "ok - ..." / "not ok - ...", then "N passed, M failed".
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cluster="$root/tests/cluster/cluster.sh"
eval "$("$cluster" env)"
. "$here/lib_cluster.sh"
NS="rdc-e2e-runtime-$$"
# within SECONDS CMD...: CMD succeeds before SECONDS have passed
within() { local deadline=$(( $(date +%s) + $1 )); shift; until "$@"; do [ "$(date +%s)" -lt "$deadline" ] || return 1; sleep 0.25; done; }

cleanup() {
  k delete namespace "$NS" "$NS-rdc" --wait=false >/dev/null 2>&1
  for n in $(cat "$tmp/lost" 2>/dev/null); do "$cluster" node-restore "$n" >/dev/null 2>&1; done
  rm -rf "$tmp"
}
trap cleanup EXIT

require_cluster_up
nproc_nodes=$(k get nodes -l rdc.local/process-node=true -o name | wc -l)
if [ "$nproc_nodes" -eq 0 ]; then
  echo "# SKIP: the cluster in ${RDC_CLUSTER_DIR:-/tmp/rdc-cluster} has no process nodes;"
  echo "#       start it with RDC_CLUSTER_PROCESS_NODES=3 tests/cluster/cluster.sh up (run.sh does)"
  echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
STATE="$RDC_CLUSTER_DIR/runtime"
check "the process runtime's state dir exists ($STATE)" test -d "$STATE/pids"
check "redis-server and redis-cli are installed (scripts/deps.sh)" bash -c 'command -v redis-server && command -v redis-cli'

k create namespace "$NS" >/dev/null
check "cluster.sh pin-namespace $NS" "$cluster" pin-namespace "$NS"
sa_ready() { k get serviceaccount default -n "$NS" >/dev/null 2>&1; }
eventually sa_ready || true

field() { k get pod -n "$NS" "$1" -o jsonpath="$2" 2>/dev/null; }
ready_is() { [ "$(field "$1" '{.status.conditions[?(@.type=="Ready")].status}')" = "$2" ]; }
pong() { [ "$(timeout 5 redis-cli -h "$1" -p "${2:-6379}" ping 2>/dev/null)" = PONG ]; }
pod_pid() { cut -d' ' -f1 "$STATE/pids/${NS}_$1_${2:-redis}.pid" 2>/dev/null; }

# ---------------------------------------------------------------- a plain redis Pod
k apply -n "$NS" -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: r}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: redis
    image: redis:7.2
    command: [redis-server, --appendonly, "no", --save, ""]
    readinessProbe:
      exec: {command: [redis-cli, ping]}
      periodSeconds: 1
      timeoutSeconds: 1
      failureThreshold: 2
EOF
check "a redis Pod becomes Ready" eventually ready_is r True
ip=$(field r '{.status.podIP}')
node=$(field r '{.spec.nodeName}')
check "it runs on a process node (pin-namespace) with a loopback pod IP ($ip on $node)" \
  bash -c "[[ '$node' == proc-node-* ]] && [[ '$ip' == 127.* ]]"
check "its status is the kubelet's: phase Running, started, restartCount 0, podIP, conditions" bash -c \
  "kubectl get pod -n $NS r -o json | jq -e '.status.phase==\"Running\" and .status.containerStatuses[0].started==true
     and .status.containerStatuses[0].restartCount==0 and (.status.containerStatuses[0].state.running.startedAt|length>0)
     and ([.status.conditions[].type] | contains([\"Initialized\",\"ContainersReady\",\"Ready\",\"PodScheduled\"]))'"
check "redis-server answers PING at the pod IP ($ip:6379)" pong "$ip"
pid=$(pod_pid r)
check "the container's process has a PID file and is its own process group ($pid)" \
  bash -c "[ -n '$pid' ] && [ \"\$(ps -o pgid= -p $pid | tr -d ' ')\" = '$pid' ]"
listens_on_pod_ip_only() {
  local l; l=$(ss -Hltnp | grep "pid=$pid,")
  [ -n "$l" ] && ! grep -v "$ip:6379" <<<"$l"
}
check "it listens on the pod IP only, never on 0.0.0.0" listens_on_pod_ip_only
logs_ok() { k logs -n "$NS" r | grep -q "Ready to accept connections"; }
check "kubectl logs shows redis-server's output" eventually logs_ok
check "kubectl exec r -- redis-cli ping answers PONG (localhost is the pod)" \
  bash -c "[ \"\$(kubectl exec -n $NS r -- redis-cli ping)\" = PONG ]"
k exec -n "$NS" r -- redis-cli set via-exec 42 >/dev/null 2>&1
check "a key SET through kubectl exec's localhost is in the pod's Redis (GET at the pod IP)" \
  bash -c "[ \"\$(redis-cli -h $ip get via-exec)\" = 42 ]"
check "kubectl exec runs in the container's context (env: HOSTNAME, RDC_POD_IP)" \
  bash -c "[ \"\$(kubectl exec -n $NS r -- sh -c 'echo \$HOSTNAME \$RDC_POD_IP')\" = 'r $ip' ]"

# ---------------------------------------------------------------- freeze / thaw
# readiness: period 1 s, timeout 1 s, failureThreshold 2 => False within about 2 x (1 + 1) s
"$cluster" pod-freeze "$NS/r" >/dev/null 2>&1
t0=$(date +%s.%N)
if within 10 ready_is r False; then
  secs=$(python3 -c "import sys,time; print('%.1f' % (time.time()-float(sys.argv[1])))" "$t0")
  ok "frozen (SIGSTOP): Ready goes False in ${secs}s (period 1 s x failureThreshold 2, timeout 1 s; bound 10 s)"
else
  notok "frozen (SIGSTOP): Ready did not go False within 10 s"
fi
check "while frozen the process does not answer PING" bash -c "! timeout 2 redis-cli -h $ip ping"
"$cluster" pod-thaw "$NS/r" >/dev/null 2>&1
check "thawed (SIGCONT): Ready goes True again within 10 s" within 10 ready_is r True

# ---------------------------------------------------------------- crash, restart
"$cluster" pod-kill "$NS/r" >/dev/null 2>&1
restarted() { [ "$(field r '{.status.containerStatuses[0].restartCount}')" -ge 1 ] 2>/dev/null; }
check "crash (SIGKILL): restartCount grows (after the 10 s crash-loop back-off)" within 30 restarted
check "the last state says how it ended: terminated, exitCode 137, reason Error" bash -c \
  "kubectl get pod -n $NS r -o json | jq -e '.status.containerStatuses[0].lastState.terminated | .exitCode==137 and .reason==\"Error\"'"
check "after the restart it is Ready and answers PING at the same pod IP" \
  bash -c "$(declare -f within field ready_is k); NS=$NS; within 20 ready_is r True && [ \"\$(field r '{.status.podIP}')\" = $ip ] && [ \"\$(redis-cli -h $ip ping)\" = PONG ]"
check "kubectl logs --previous shows the killed run's output" \
  bash -c "kubectl logs -n $NS r --previous | grep -q 'Ready to accept connections'"
backoff_seen() { k get pod -n "$NS" r -o json | jq -e '.status.containerStatuses[0].state.waiting.reason=="CrashLoopBackOff"' >/dev/null; }
"$cluster" pod-kill "$NS/r" >/dev/null 2>&1
check "killed again: the container waits in CrashLoopBackOff (back-off 20 s)" within 10 backoff_seen

# ---------------------------------------------------------------- unmapped image
k run -n "$NS" nginx --image=nginx:1.25 >/dev/null
unmapped() {
  k get pod -n "$NS" nginx -o json | jq -e '.status.phase=="Pending" and
    (.status.containerStatuses[0].state.waiting | .reason=="ErrImagePull" and (.message|test("image table")))' >/dev/null
}
check "an unmapped image (nginx) waits with reason ErrImagePull and a message saying why" eventually unmapped

# ---------------------------------------------------------------- liveness, startup
k apply -n "$NS" -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: unlive}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: redis
    image: redis:7.2
    livenessProbe:
      exec: {command: [redis-cli, -p, "1", ping]}
      periodSeconds: 1
      failureThreshold: 2
---
apiVersion: v1
kind: Pod
metadata: {name: unstarted}
spec:
  containers:
  - name: redis
    image: redis:7.2
    startupProbe:
      tcpSocket: {port: 7777}
      periodSeconds: 1
      failureThreshold: 600
    readinessProbe:
      tcpSocket: {port: 6379}
      periodSeconds: 1
EOF
killed_by_liveness() {
  k get pod -n "$NS" unlive -o json | jq -e '.status.containerStatuses[0] | .restartCount >= 1 and
    .lastState.terminated.exitCode != null' >/dev/null
}
check "a failing liveness probe (period 1 s, threshold 2) kills the container and it is restarted" within 40 killed_by_liveness
not_started() {
  k get pod -n "$NS" unstarted -o json | jq -e '.status.containerStatuses[0] | .started==false and .ready==false
    and .state.running != null' >/dev/null
}
check "until its startup probe succeeds a running container is neither started nor Ready" eventually not_started
sleep 3
check "... and stays so (readiness is not probed before startup)" not_started

# ---------------------------------------------------------------- env, volumes
k create configmap -n "$NS" cfg --from-literal=key=one --from-literal=A=from-configmap >/dev/null
k create secret generic -n "$NS" sec --from-literal=S=from-secret >/dev/null
k apply -n "$NS" -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: env}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'echo "A=$A S=$S IP=$MYIP NAME=$MYNAME X=$X"; cat "$0"; echo; cat "$1"; echo; exec sleep 3600', /cfg/key, /var/run/secrets/kubernetes.io/serviceaccount/namespace]
    env:
    - {name: A, valueFrom: {configMapKeyRef: {name: cfg, key: A}}}
    - {name: S, valueFrom: {secretKeyRef: {name: sec, key: S}}}
    - {name: MYIP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: MYNAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: X, value: "ip-$(MYIP)"}
    volumeMounts: [{name: cfg, mountPath: /cfg}]
  volumes:
  - {name: cfg, configMap: {name: cfg}}
EOF
check "a busybox pod with env from a ConfigMap, a Secret and fieldRefs becomes Ready" eventually ready_is env True
eip=$(field env '{.status.podIP}')
env_ok() { k logs -n "$NS" env | grep -qx "A=from-configmap S=from-secret IP=$eip NAME=env X=ip-$eip"; }
check "env: configMapKeyRef, secretKeyRef, fieldRef status.podIP/metadata.name, \$(VAR) expansion" eventually env_ok
vol_ok() { k logs -n "$NS" env | grep -qx one && k logs -n "$NS" env | grep -qx "$NS"; }
check "volumes: the ConfigMap's file and the projected service-account volume's namespace file" eventually vol_ok
token_ok() { f=$(ls "$STATE"/pods/"$(field env '{.metadata.uid}')"/volumes/kube-api-access-*/token 2>/dev/null | head -1); [ -s "$f" ] &&
  kubectl --kubeconfig=/dev/null --server="$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')" \
    --insecure-skip-tls-verify --token="$(cat "$f")" auth whoami -o jsonpath='{.status.userInfo.username}' | grep -qx "system:serviceaccount:$NS:default"; }
check "the projected token (TokenRequest) authenticates as the pod's service account" token_ok
k create configmap -n "$NS" cfg --from-literal=key=two --from-literal=A=from-configmap --dry-run=client -o yaml | k apply -f - >/dev/null 2>&1
cfg_file="$STATE/pods/$(field env '{.metadata.uid}')/volumes/cfg/key"
updated() { [ "$(cat "$cfg_file" 2>/dev/null)" = two ]; }
check "a ConfigMap change reaches the volume's file within 45 s" within 45 updated

# ---------------------------------------------------------------- deletion: preStop, grace
k apply -n "$NS" -f - >/dev/null <<'EOF'
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: marker}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: stubborn}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: main
    image: busybox:1.36
    command: [sh, -c, 'trap "" TERM; while :; do sleep 0.2; done']
    lifecycle:
      preStop:
        exec: {command: [touch, /marker/prestop-ran]}
    volumeMounts: [{name: m, mountPath: /marker}]
  volumes:
  - {name: m, persistentVolumeClaim: {claimName: marker}}
EOF
check "a pod that ignores SIGTERM (grace 5 s, preStop hook) becomes Ready" eventually ready_is stubborn True
spid=$(pod_pid stubborn main)
pv=$(k get pvc -n "$NS" marker -o jsonpath='{.spec.volumeName}')
t0=$(date +%s.%N)
k delete pod -n "$NS" stubborn --wait=false >/dev/null
gone() { ! k get pod -n "$NS" "$1" >/dev/null 2>&1; }
within 30 gone stubborn
secs=$(python3 -c "import sys,time; print('%.1f' % (time.time()-float(sys.argv[1])))" "$t0")
check "it is removed only after its grace period: ${secs}s (>= 4.5, < 15)" \
  python3 -c "import sys; s=float(sys.argv[1]); sys.exit(0 if 4.5 <= s < 15 else 1)" "$secs"
check "its preStop hook ran (file on its PersistentVolume $pv)" test -f "$STATE/pv/$pv/prestop-ran"
check "its process (pid $spid) was killed (SIGKILL after the grace period)" bash -c "[ -n '$spid' ] && ! kill -0 $spid 2>/dev/null"
t0=$(date +%s.%N)
k delete pod -n "$NS" r --wait=false >/dev/null
within 30 gone r
secs=$(python3 -c "import sys,time; print('%.1f' % (time.time()-float(sys.argv[1])))" "$t0")
check "redis-server exits on SIGTERM: its pod (grace 30 s) is removed in ${secs}s (< 10)" \
  python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 10 else 1)" "$secs"
check "no process of it is left and the PID file is gone" bash -c "! kill -0 $pid 2>/dev/null && [ ! -e '$STATE/pids/${NS}_r_redis.pid' ]"

# ---------------------------------------------------------------- StatefulSet + PVCs
# workload KIND NAME REPLICAS GRACE: the manifest (stdout) of an apps/v1 KIND of REPLICAS
# pods labelled app=NAME, terminationGracePeriodSeconds GRACE; stdin is the rest: its
# containers (items indented six spaces), then any more of its spec (two spaces).
workload() {
  printf 'apiVersion: apps/v1\nkind: %s\nmetadata: {name: %s}\nspec:\n  replicas: %s\n' "$1" "$2" "$3"
  printf '  selector: {matchLabels: {app: %s}}\n  template:\n    metadata: {labels: {app: %s}}\n' "$2" "$2"
  printf '    spec:\n      terminationGracePeriodSeconds: %s\n      containers:\n' "$4"
  cat
}

workload StatefulSet st 3 10 <<'EOF' | k apply -n "$NS" -f - >/dev/null
      - name: redis
        image: redis:7.2
        command: [redis-server, --appendonly, "yes", --dir, /data]
        volumeMounts: [{name: data, mountPath: /data}]
        readinessProbe:
          exec: {command: [redis-cli, ping]}
          periodSeconds: 2
        livenessProbe:
          tcpSocket: {port: 6379}
          periodSeconds: 5
  serviceName: st
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 10Mi}}
EOF
sts_ready() { [ "$(k get sts -n "$NS" st -o jsonpath='{.status.readyReplicas}')" = 3 ]; }
check "a StatefulSet of 3 redis pods with volumeClaimTemplates becomes 3/3 Ready" eventually sts_ready
ip1=$(field st-1 '{.status.podIP}')
uid1=$(field st-1 '{.metadata.uid}')
check "SET on st-1 at its pod IP ($ip1)" bash -c "[ \"\$(redis-cli -h $ip1 set survivor yes)\" = OK ]"
pv1=$(k get pvc -n "$NS" data-st-1 -o jsonpath='{.spec.volumeName}')
check "st-1's data is in a directory of its PersistentVolume ($pv1)" \
  bash -c "$(declare -f within); within 10 bash -c 'ls $STATE/pv/$pv1 | grep -q appendonly'"
k delete pod -n "$NS" st-1 --wait=false >/dev/null
back() { [ -n "$(field st-1 '{.metadata.uid}')" ] && [ "$(field st-1 '{.metadata.uid}')" != "$uid1" ] && ready_is st-1 True; }
check "st-1 is deleted and comes back Ready (a new pod)" eventually back
ip1b=$(field st-1 '{.status.podIP}')
check "GET on the new st-1 ($ip1b) returns the value written before the deletion" \
  bash -c "[ \"\$(redis-cli -h $ip1b get survivor)\" = yes ]"

# ---------------------------------------------------------------- node lost
node2=$(field st-2 '{.spec.nodeName}')
ip2=$(field st-2 '{.status.podIP}')
echo "$node2" >>"$tmp/lost"
"$cluster" node-lose "$node2" >/dev/null 2>&1
check "node-lose $node2: the processes of its pods are gone within 5 s (st-2 stops answering)" \
  within 5 bash -c "! timeout 1 redis-cli -h $ip2 ping >/dev/null 2>&1"
notready() { [ "$(k get node "$node2" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" != True ]; }
check "the lost node goes NotReady/Unknown (its heartbeat and Lease stopped)" within 120 notready
"$cluster" node-restore "$node2" >/dev/null 2>&1
node_ready() { [ "$(k get node "$node2" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
check "node-restore: the node is Ready again" eventually node_ready
check "and st-2 runs again (its container restarted) and answers PING" \
  eventually bash -c "$(declare -f field ready_is k pong); NS=$NS; ready_is st-2 True && pong \$(field st-2 '{.status.podIP}')"

# ---------------------------------------------------------------- the operator as a pod
# deploy/ (with deploy/gen-certs.sh's Secret) on the process nodes: the image
# rediscluster-operator* runs build/bin/supervisor in a mount namespace where the
# projected service-account volume is at /var/run/secrets/kubernetes.io/serviceaccount, so
# the operator uses its in-cluster configuration, RBAC and the Lease for real. One
# replica (webhookd binds *:9443) and no webhook configurations (the apiserver reaches
# webhooks through Service IPs, which do not route here).
OPNS=rediscluster-operator-system
# An earlier script's installation may still be going away (a namespace Terminating).
for _ in $(seq 1 120); do
  [ "$(k get namespace "$OPNS" -o jsonpath='{.status.phase}' 2>/dev/null)" = Terminating ] || break
  sleep 1
done
if [ ! -x "$root/build/bin/supervisor" ]; then
  echo "# SKIP the operator as a pod: $root/build/bin/supervisor is not built (make)"
elif k get namespace "$OPNS" >/dev/null 2>&1; then
  echo "# SKIP the operator as a pod: namespace $OPNS exists already (another installation)"
else
  crd_pre=0; k get crd redisclusters.cache.example.com >/dev/null 2>&1 && crd_pre=1
  mkdir -p "$tmp/op"
  "$root/deploy/gen-certs.sh" -o "$tmp/certs" >/dev/null 2>&1
  {
    cat <<'EOF'
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- ../certs
patches:
- target: {kind: Deployment, name: rediscluster-operator}
  patch: |
    - {op: replace, path: /spec/replicas, value: 1}
EOF
    for kind in ValidatingWebhookConfiguration MutatingWebhookConfiguration; do
      printf -- '- target: {kind: %s}\n  patch: |\n    $patch: delete\n' "$kind"
      printf '    apiVersion: admissionregistration.k8s.io/v1\n    kind: %s\n    metadata: {name: any}\n' "$kind"
    done
  } >"$tmp/op/kustomization.yaml"
  k create namespace "$OPNS" >/dev/null 2>&1
  "$cluster" pin-namespace "$OPNS" >/dev/null 2>&1
  check "kubectl apply -k deploy/ (gen-certs overlay, 1 replica, no webhook configurations)" k apply -k "$tmp/op"
  op_ready() { [ "$(k get deploy -n "$OPNS" rediscluster-operator -o jsonpath='{.status.readyReplicas}')" = 1 ]; }
  check "the operator's pod becomes Ready (httpGet /readyz on its pod IP)" eventually op_ready
  opod=$(k get pods -n "$OPNS" -l app.kubernetes.io/name=rediscluster-operator -o jsonpath='{.items[0].metadata.name}')
  check "it runs on a process node" bash -c "[[ \"\$(kubectl get pod -n $OPNS $opod -o jsonpath='{.spec.nodeName}')\" == proc-node-* ]]"
  opid=$(cut -d' ' -f1 "$STATE/pids/${OPNS}_${opod}_manager.pid" 2>/dev/null)
  check "its process is build/bin/supervisor, without KUBECONFIG, with KUBERNETES_SERVICE_HOST/PORT" bash -c \
    "[ \"\$(readlink /proc/$opid/exe)\" = '$root/build/bin/supervisor' ] && ! tr '\\0' '\\n' </proc/$opid/environ | grep -q ^KUBECONFIG= &&
     tr '\\0' '\\n' </proc/$opid/environ | grep -qx KUBERNETES_SERVICE_PORT=\$(sed -n 's/^APISERVER_PORT=//p' $RDC_CLUSTER_DIR/ports.env)"
  # (through /proc/PID/root; /var/run is a symlink to /run on Debian, resolved from here)
  check "in its mount namespace the service-account token is at the in-cluster path" \
    test -s "/proc/$opid/root$(readlink -f /var/run)/secrets/kubernetes.io/serviceaccount/token"
  check "... and nothing was created on the machine's filesystem for it" \
    test ! -e /var/run/secrets/kubernetes.io/serviceaccount/token
  leader() { k get lease -n "$OPNS" rediscluster-operator.cache.example.com -o jsonpath='{.spec.holderIdentity}' | grep -q "^$opod"; }
  check "it takes the Lease (holder = its pod name: its own hostname)" eventually leader
  check "its log says it uses the in-cluster configuration (https://127.0.0.1:<apiserver port>)" \
    bash -c "kubectl logs -n $OPNS $opod | grep informerd | grep -q '\"server\":\"https://127.0.0.1:'"
  # deploy/'s metrics: HTTPS on 8443 of the pod (metricsd, self-signed), TokenReview and
  # SubjectAccessReview with the operator's own in-cluster credentials.
  opip=$(k get pod -n "$OPNS" "$opod" -o jsonpath='{.status.podIP}')
  k -n "$OPNS" create serviceaccount e2e-scraper >/dev/null 2>&1
  k create clusterrolebinding e2e-scraper-$$ --clusterrole=rediscluster-operator-metrics-reader \
    --serviceaccount="$OPNS:e2e-scraper" >/dev/null 2>&1
  stok=$(k -n "$OPNS" create token e2e-scraper)
  check "the pod's metrics (https://$opip:8443): no token -> 401" eventually bash -c "[ \"\$(curl -sk -o /dev/null -w '%{http_code}' https://$opip:8443/metrics)\" = 401 ]"
  check "... the metrics-reader's token -> 200" bash -c "[ \"\$(curl -sk -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer $stok' https://$opip:8443/metrics)\" = 200 ]"
  k delete clusterrolebinding e2e-scraper-$$ --wait=false >/dev/null 2>&1
  k create namespace "$NS-rdc" >/dev/null 2>&1
  "$cluster" pin-namespace "$NS-rdc" >/dev/null 2>&1
  sed "s/namespace: default/namespace: $NS-rdc/" "$root/deploy/samples/rediscluster.yaml" | k apply -f - >/dev/null
  rdc_running() { [ "$(k get rdc -n "$NS-rdc" cache -o jsonpath='{.status.phase}')" = Running ]; }
  check "it reconciles deploy/samples/rediscluster.yaml to Running (readiness: redis-cli ping in each pod)" eventually rdc_running
  real_redis() {
    local i ip
    for i in 0 1 2; do
      ip=$(k get pod -n "$NS-rdc" "cache-$i" -o jsonpath='{.status.podIP}')
      [ "$(redis-cli -h "$ip" ping)" = PONG ] || return 1
      [ "$(redis-cli -h "$ip" config get maxmemory | tail -1)" = 268435456 ] || return 1
    done
  }
  check "real Redis behind it: 3 pods answer PING, with the operator's redis.conf (maxmemory 256mb)" real_redis
  k delete rdc -n "$NS-rdc" cache --wait=false >/dev/null 2>&1
  rdc_gone() { ! k get rdc -n "$NS-rdc" cache >/dev/null 2>&1; }
  check "deleting the RedisCluster: the operator's finalizer runs and it is gone" eventually rdc_gone
  t0=$(date +%s.%N)
  k delete pod -n "$OPNS" "$opod" --wait=false >/dev/null 2>&1
  op_gone() { ! k get pod -n "$OPNS" "$opod" >/dev/null 2>&1; }
  within 60 op_gone
  secs=$(python3 -c "import sys,time; print('%.1f' % (time.time()-float(sys.argv[1])))" "$t0")
  check "its pod deleted: the supervisor drains on SIGTERM within the grace period of 40 s (${secs}s)" \
    python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 35 else 1)" "$secs"
  k delete namespace "$NS-rdc" --wait=false >/dev/null 2>&1
  if [ "$crd_pre" = 1 ]; then
    # everything of deploy/ but the CRD, which was there before us
    k delete clusterrole,clusterrolebinding -l app.kubernetes.io/part-of=rediscluster-operator --wait=false >/dev/null 2>&1
    k delete namespace "$OPNS" --wait=false >/dev/null 2>&1
  else
    k delete -k "$tmp/op" --wait=false >/dev/null 2>&1
  fi
  op_ns_gone() { ! k get namespace "$OPNS" >/dev/null 2>&1; }
  check "the operator is uninstalled (its namespace is gone)" eventually op_ns_gone
fi

# ---------------------------------------------------------------- the maximum
max=${RDC_RUNTIME_MAX_PODS:-30}
# every non-terminal pod on a process node holds a place (as on a kubelet's node)
running_now=$(k get pods -A -o json | jq '[.items[] | select((.spec.nodeName // "") | startswith("proc-node-"))
  | select(.status.phase!="Succeeded" and .status.phase!="Failed")] | length')
want=$((max - running_now + 2))
workload ReplicaSet many "$want" 1 <<'EOF' | k apply -n "$NS" -f - >/dev/null
      - {name: main, image: busybox:1.36, command: [sleep, "3600"]}
EOF
over_max() {
  k get pods -n "$NS" -l app=many -o json | jq -e --argjson w "$want" '(.items | length) == $w and
    ([.items[] | select(.status.reason=="MaxPodsExceeded" and .status.phase=="Pending")] | length) >= 2' >/dev/null
}
check "beyond the maximum ($max running pods) pods stay Pending with reason MaxPodsExceeded" eventually over_max
check "the message says why" bash -c "kubectl get pods -n $NS -l app=many -o json | jq -r '.items[].status.message // empty' | grep -q 'maximum of $max pods'"
at_max() { [ "$(find "$STATE/pids" -name '*.pid' | wc -l)" -le "$max" ]; }
check "the runtime runs at most $max container processes" at_max
k delete rs -n "$NS" many --wait=false >/dev/null 2>&1

# ---------------------------------------------------------------- cleanup
k delete namespace "$NS" --wait=false >/dev/null 2>&1
ns_gone() { ! k get namespace "$NS" >/dev/null 2>&1; }
check "the namespace is deleted: every pod is finalised by the runtime" eventually ns_gone
no_procs() { ! ls "$STATE/pids/${NS}_"*.pid >/dev/null 2>&1; }
check "no container process of the namespace is left" eventually no_procs

finish
