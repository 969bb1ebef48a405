#!/usr/bin/env bash
# Local Kubernetes control plane for the rdc-operator tests (see README.md here).
#
#   cluster.sh build    build the pinned binaries into the cache (no-op when cached)
#   cluster.sh up       build if needed, start etcd, kube-apiserver, kube-controller-manager,
#                       kube-scheduler, kwok (3 fake nodes) and the fake PV provisioner;
#                       wait until /readyz is ok and the nodes are Ready. Idempotent.
#   cluster.sh down     stop exactly the processes `up` started (TERM, wait, KILL) and
#                       remove the state dir
#   cluster.sh status   pid + liveness of each component and the apiserver /readyz
#   cluster.sh env      print `export KUBECONFIG=...; export PATH=...` lines for eval
#   cluster.sh restart-apiserver   stop and start kube-apiserver (watches break)
#   cluster.sh restart-etcd        stop and start etcd (same data; the API server's
#                                  requests fail meanwhile, its watches resume)
#   cluster.sh compact  compact etcd at its current revision (old watches get 410 Gone)
#
# Process nodes (RDC_CLUSTER_PROCESS_NODES=N at `up`, default 0 = none): N more nodes
# proc-node-0..N-1 whose pods run as real local processes (runtime/, see README.md):
#   cluster.sh pin-namespace NS     every pod of NS lands on the process nodes
#   cluster.sh pod-kill NS/POD [C]  SIGKILL the container's process (a crash)
#   cluster.sh pod-freeze NS/POD [C]   SIGSTOP it (a hung process); pod-thaw: SIGCONT
#   cluster.sh node-lose NODE       the node "dies": heartbeats stop, its processes are killed
#   cluster.sh node-restore NODE    it comes back (its pods' containers start again)
#
# State dir: ${RDC_CLUSTER_DIR:-/tmp/rdc-cluster} (ports are picked free on 127.0.0.1 at
# `up`, so two clusters with different RDC_CLUSTER_DIR can run side by side).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="${RDC_CLUSTER_DIR:-/tmp/rdc-cluster}"
DIR="${DIR%/}"
UP_TIMEOUT="${RDC_UP_TIMEOUT:-120}"     # seconds for each wait in `up`
NODES="${RDC_CLUSTER_NODES:-3}"
# 0 lifts the client-side rate limits of kube-controller-manager (default 20 QPS / 30
# burst) and kube-scheduler (50 / 100), as `kwokctl --disable-qps-limits` does: with
# hundreds of fake pods those limits, not the code under test, set the pace. The tests
# keep the defaults; the benchmarks lift them.
QPS_LIMITS="${RDC_CLUSTER_QPS_LIMITS:-1}"
QPS_FLAGS=()
if [ "$QPS_LIMITS" = 0 ]; then QPS_FLAGS=(--kube-api-qps=5000 --kube-api-burst=10000); fi
BASE_COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok provisioner)
COMPONENTS=("${BASE_COMPONENTS[@]}")   # + runtime with process nodes (process_mode)
SERVICE_CIDR=10.96.0.0/16
SERVICE_IP=10.96.0.1
# Fake pod IPs handed out by kwok. Loopback on purpose: nothing listens there, and if
# code under test dials a pod IP the packet never leaves this machine.
# Each state dir gets its own range (/tmp/rdc-cluster keeps 127.10.0.0/16), so two
# clusters side by side never hand out the same pod IP: with process nodes, a test of one
# would otherwise reach the other's Redis at the same address.
if [ "$DIR" = /tmp/rdc-cluster ]; then pod_octet=10
else pod_octet=$((11 + $(printf '%s' "$DIR" | cksum | cut -d' ' -f1) % 240)); fi
POD_CIDR="${RDC_POD_CIDR:-127.$pod_octet.0.0/16}"
ISSUER=https://kubernetes.default.svc.cluster.local
PROC_NODES="${RDC_CLUSTER_PROCESS_NODES:-0}"   # process nodes (0: none, the cluster as before)
MAX_PODS="${RDC_RUNTIME_MAX_PODS:-30}"          # pods the runtime runs at once, over all its nodes
PROC_LABEL=rdc.local/process-node

log() { echo "cluster.sh: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

bindir() { "$here/build.sh" --bin-dir; }

# ------------------------------------------------------------------ pids
pidfile() { echo "$DIR/pids/$1.pid"; }
# A pid file holds "<pid> <marker>"; the marker (binary path) must still be in the
# process' cmdline, so a recycled pid is never signalled.
pid_of() {
  local f; f=$(pidfile "$1")
  [ -f "$f" ] || return 1
  local pid marker
  read -r pid marker <"$f" || return 1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$marker" || return 1
  echo "$pid"
}
alive() { pid_of "$1" >/dev/null 2>&1; }

# start NAME MARKER CMD...  -- own session/process group (pid == pgid), own log file
start() {
  local name=$1 marker=$2; shift 2
  setsid "$@" >"$DIR/logs/$name.log" 2>&1 </dev/null 8>&- &
  local pid=$!
  echo "$pid $marker" >"$(pidfile "$name")"
  log "started $name (pid $pid, log $DIR/logs/$name.log)"
}

stop_one() {
  local name=$1 pid i
  pid=$(pid_of "$name") || { rm -f "$(pidfile "$name")"; return 0; }
  # the component was started with setsid: its pid is the id of a process group
  # that holds only it (and, for the provisioner, its kubectl/jq children)
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do
    [ -d "/proc/$pid" ] || break
    grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null && break
    sleep 0.1
  done
  if [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then
    log "$name (pid $pid) ignored TERM for 10s: KILL"
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  fi
  kill -KILL -- "-$pid" 2>/dev/null || true   # leftovers of the group (provisioner pipes)
  rm -f "$(pidfile "$name")"
  log "stopped $name (pid $pid)"
}

# ------------------------------------------------------------------ helpers
free_ports() { # print N free TCP ports on 127.0.0.1
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks: s.close()
PY
}

wait_for() { # DESC TIMEOUT CMD...   (fails at once if a started component died)
  local desc=$1 timeout=$2; shift 2
  local deadline=$(( $(date +%s) + timeout )) c f
  until "$@" >/dev/null 2>&1; do
    for f in "$DIR"/pids/*.pid; do
      [ -e "$f" ] || continue
      c=$(basename "$f" .pid)
      if ! alive "$c"; then
        log "$c died while waiting for $desc; last lines of $DIR/logs/$c.log:"
        tail -n 15 "$DIR/logs/$c.log" >&2; return 1
      fi
    done
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "timed out after ${timeout}s waiting for $desc"; return 1
    fi
    sleep 0.3
  done
}

need() { command -v "$1" >/dev/null || die "$1 is required (apt-get install $2)"; }

readyz() { # prints the body of /readyz, fails unless 200
  curl -sf --max-time 5 --cacert "$DIR/pki/ca.crt" --cert "$DIR/pki/admin.crt" --key "$DIR/pki/admin.key" \
    "https://127.0.0.1:$APISERVER_PORT/readyz"
}

load_ports() { [ -f "$DIR/ports.env" ] && . "$DIR/ports.env"; }

# ------------------------------------------------------------------ pki
gen_pki() {
  local p="$DIR/pki"; mkdir -p "$p"; chmod 700 "$p"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -keyout "$p/ca.key" -out "$p/ca.crt" -days 3650 \
    -subj "/CN=rdc-test-ca" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
  # sign NAME SUBJECT EXT_FILE_CONTENT
  sign() {
    printf '%s\n' "$3" >"$p/$1.ext"
    openssl req -new "${ec[@]}" -keyout "$p/$1.key" -out "$p/$1.csr" -subj "$2" 2>/dev/null
    openssl x509 -req -in "$p/$1.csr" -CA "$p/ca.crt" -CAkey "$p/ca.key" -CAcreateserial \
      -out "$p/$1.crt" -days 3650 -extfile "$p/$1.ext" 2>/dev/null
    rm -f "$p/$1.csr" "$p/$1.ext"
  }
  local client="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  sign apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:$SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  sign admin "/O=system:masters/CN=kubernetes-admin" "$client"
  # front proxy (aggregation layer / requestheader auth): its own CA, as kubeadm does
  openssl req -x509 "${ec[@]}" -keyout "$p/front-proxy-ca.key" -out "$p/front-proxy-ca.crt" -days 3650 \
    -subj "/CN=rdc-test-front-proxy-ca" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
  printf '%s\n' "$client" >"$p/fp.ext"
  openssl req -new "${ec[@]}" -keyout "$p/front-proxy-client.key" -out "$p/fp.csr" -subj "/CN=front-proxy-client" 2>/dev/null
  openssl x509 -req -in "$p/fp.csr" -CA "$p/front-proxy-ca.crt" -CAkey "$p/front-proxy-ca.key" -CAcreateserial \
    -out "$p/front-proxy-client.crt" -days 3650 -extfile "$p/fp.ext" 2>/dev/null
  rm -f "$p/fp.csr" "$p/fp.ext"
  sign controller-manager "/CN=system:kube-controller-manager" "$client"
  sign scheduler "/CN=system:kube-scheduler" "$client"
  # service-account token signing key pair
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$p/sa.key" 2>/dev/null
  openssl pkey -in "$p/sa.key" -pubout -out "$p/sa.pub" 2>/dev/null
  chmod 600 "$p"/*.key
}

write_kubeconfig() { # FILE USER(cert name)
  local b64="base64 -w0"
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: rdc-test
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $($b64 <"$DIR/pki/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $($b64 <"$DIR/pki/$2.crt")
    client-key-data: $($b64 <"$DIR/pki/$2.key")
contexts:
- name: rdc-test
  context:
    cluster: rdc-test
    user: $2
current-context: rdc-test
EOF
  chmod 600 "$1"
}

# start_apiserver BIN -- kube-apiserver with this cluster's certificates and ports
# start_etcd BIN: etcd on its ports with its data dir (kept across a restart: the
# initial-cluster flags apply only to an empty data dir).
start_etcd() {
  local bin=$1
  start etcd "$bin/etcd" "$bin/etcd" --name=rdc --data-dir="$DIR/etcd" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="rdc=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state=new \
    --unsafe-no-fsync=true --quota-backend-bytes=2147483648 --log-level=warn
}

start_apiserver() {
  local BIN=$1 P="$DIR/pki"
  start kube-apiserver "$BIN/kube-apiserver" "$BIN/kube-apiserver" \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$APISERVER_PORT" \
    --cert-dir="$P" --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
    --client-ca-file="$P/ca.crt" \
    --requestheader-client-ca-file="$P/front-proxy-ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$P/front-proxy-client.crt" --proxy-client-key-file="$P/front-proxy-client.key" \
    --authorization-mode=Node,RBAC \
    --service-account-issuer="$ISSUER" --api-audiences="$ISSUER" \
    --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --endpoint-reconciler-type=none \
    --allow-privileged=true --profiling=false --event-ttl=30m ${APISERVER_EXTRA[@]+"${APISERVER_EXTRA[@]}"}
}

# Flags and components that exist only with process nodes (PROCESS_NODES from ports.env).
APISERVER_EXTRA=()
process_mode() {
  APISERVER_EXTRA=(); COMPONENTS=("${BASE_COMPONENTS[@]}")
  if [ "${PROCESS_NODES:-0}" -gt 0 ]; then
    # pin-namespace: a namespace annotation adds the nodeSelector and the toleration
    APISERVER_EXTRA=(--enable-admission-plugins=PodNodeSelector,PodTolerationRestriction)
    COMPONENTS+=(runtime)
  fi
}

# ------------------------------------------------------------------ commands
cmd_build() {
  "$here/build.sh" >/dev/null; log "binaries: $(bindir)"
  "$here/build-runtime.sh" >/dev/null; log "process runtime: $("$here/build-runtime.sh" --path)"
}

all_alive() { local c; for c in "${COMPONENTS[@]}"; do alive "$c" || return 1; done; }

cmd_up() {
  need openssl openssl; need curl curl; need jq jq; need python3 python3; need setsid util-linux
  if [ -d "$DIR/pids" ]; then
    load_ports || true; process_mode
    if [ -n "${RDC_CLUSTER_PROCESS_NODES:-}" ] && [ "${PROCESS_NODES:-0}" != "$PROC_NODES" ]; then
      log "the cluster in $DIR has ${PROCESS_NODES:-0} process nodes, $PROC_NODES asked for: restarting it"
      cmd_down
    elif all_alive && readyz >/dev/null 2>&1; then
      log "already up ($DIR, apiserver https://127.0.0.1:$APISERVER_PORT)"; return 0
    else
      log "state dir $DIR exists but the cluster is not (fully) up: tearing it down first"
      cmd_down
    fi
  fi
  local t0; t0=$(date +%s.%N)
  local BIN; BIN=$("$here/build.sh")
  [ -x "$BIN/kube-apiserver" ] || die "build failed"
  local RT_BIN=""
  if [ "$PROC_NODES" -gt 0 ]; then
    need redis-server "redis-server (scripts/deps.sh)"; need redis-cli "redis-tools (scripts/deps.sh)"
    RT_BIN=$("$here/build-runtime.sh"); [ -x "$RT_BIN" ] || die "runtime build failed"
  fi
  if [ -e "$DIR" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ] && [ ! -f "$DIR/ports.env" ]; then
    die "$DIR exists, is not empty and is not a cluster state dir: refusing to use it (set RDC_CLUSTER_DIR)"
  fi
  rm -rf "$DIR"; mkdir -p "$DIR"/{pids,logs,pki,etcd,kwok-home}; chmod 700 "$DIR/etcd"
  # shellcheck disable=SC2046
  set -- $(free_ports 7)
  cat >"$DIR/ports.env" <<EOF
ETCD_PORT=$1
ETCD_PEER_PORT=$2
APISERVER_PORT=$3
CONTROLLER_MANAGER_PORT=$4
SCHEDULER_PORT=$5
KWOK_PORT=$6
KWOK_NODE_PORT=$7
BIN_DIR=$BIN
PROCESS_NODES=$PROC_NODES
RUNTIME_BIN=$RT_BIN
EOF
  load_ports; process_mode
  gen_pki
  write_kubeconfig "$DIR/kubeconfig" admin
  write_kubeconfig "$DIR/controller-manager.kubeconfig" controller-manager
  write_kubeconfig "$DIR/scheduler.kubeconfig" scheduler
  local P="$DIR/pki"
  UP_OK=0
  trap '[ "$UP_OK" = 1 ] || { log "up failed; logs are in $DIR/logs (state kept for debugging; run down to clean)"; }' EXIT

  start_etcd "$BIN"
  wait_for "etcd /health" "$UP_TIMEOUT" curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"

  start_apiserver "$BIN"
  wait_for "kube-apiserver /readyz" "$UP_TIMEOUT" readyz

  local K0=("$BIN/kubectl" --kubeconfig="$DIR/kubeconfig" --request-timeout=20s)
  start kube-controller-manager "$BIN/kube-controller-manager" "$BIN/kube-controller-manager" \
    --kubeconfig="$DIR/controller-manager.kubeconfig" \
    --authentication-kubeconfig="$DIR/controller-manager.kubeconfig" \
    --authorization-kubeconfig="$DIR/controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$CONTROLLER_MANAGER_PORT" --cert-dir="$DIR/pki/controller-manager-serving" \
    --leader-elect=false --controllers='*' \
    --root-ca-file="$P/ca.crt" --service-account-private-key-file="$P/sa.key" \
    --use-service-account-credentials=true \
    --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
    --service-cluster-ip-range="$SERVICE_CIDR" --profiling=false ${QPS_FLAGS[@]+"${QPS_FLAGS[@]}"}
  start kube-scheduler "$BIN/kube-scheduler" "$BIN/kube-scheduler" \
    --kubeconfig="$DIR/scheduler.kubeconfig" \
    --authentication-kubeconfig="$DIR/scheduler.kubeconfig" \
    --authorization-kubeconfig="$DIR/scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" --cert-dir="$DIR/pki/scheduler-serving" \
    --leader-elect=false --profiling=false ${QPS_FLAGS[@]+"${QPS_FLAGS[@]}"}
  # Process nodes: kwok serves `kubectl logs/exec` of their pods from per-pod Logs/Exec
  # objects the runtime writes; kwok runs exec'd commands by name from its own PATH, so
  # the runtime's wrappers (redis-cli: localhost is the pod) come first on it.
  local KWOK_EXTRA=() KWOK_PATH=$PATH
  if [ "$PROC_NODES" -gt 0 ]; then
    "${K0[@]}" apply -f "$here/kwok/crds/" >/dev/null
    wait_for "kwok CRDs established" "$UP_TIMEOUT" "${K0[@]}" wait --for=condition=Established --timeout=5s \
      crd/logs.kwok.x-k8s.io crd/execs.kwok.x-k8s.io
    KWOK_EXTRA=(--enable-crds=Logs,Exec); KWOK_PATH="$DIR/runtime/bin:$PATH"
  fi
  # HOME points kwok away from a user's ~/.kwok/kwok.yaml: only our stages apply
  start kwok "$BIN/kwok" env HOME="$DIR/kwok-home" PATH="$KWOK_PATH" "$BIN/kwok" ${KWOK_EXTRA[@]+"${KWOK_EXTRA[@]}"} \
    --kubeconfig="$DIR/kubeconfig" --config="$here/kwok/stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --node-ip=127.0.0.1 --node-port="$KWOK_NODE_PORT" --cidr="$POD_CIDR" --node-lease-duration-seconds=40 \
    --server-address="127.0.0.1:$KWOK_PORT"

  local K=("$BIN/kubectl" --kubeconfig="$DIR/kubeconfig" --request-timeout=20s)
  # default StorageClass served by provisioner.sh
  "${K[@]}" apply -f - >/dev/null <<'EOF'
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: rdc.local/fake-hostpath
reclaimPolicy: Delete
volumeBindingMode: Immediate
allowVolumeExpansion: true
---
# the same provisioner, without volume expansion: the API server refuses to grow its
# claims (tests/e2e/test_scale.sh)
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fixed
provisioner: rdc.local/fake-hostpath
reclaimPolicy: Delete
volumeBindingMode: Immediate
allowVolumeExpansion: false
EOF
  start provisioner "$here/provisioner.sh" env KUBECONFIG="$DIR/kubeconfig" KUBECTL="$BIN/kubectl" \
    SC="standard fixed" PROVISIONER=rdc.local/fake-hostpath bash "$here/provisioner.sh"

  local i nodes=""
  for i in $(seq 0 $((NODES - 1))); do
    nodes+="apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: \"0\"
  labels:
    type: kwok
    kubernetes.io/hostname: kwok-node-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    node-role.kubernetes.io/worker: \"\"
---
"
  done
  "${K[@]}" apply -f - >/dev/null <<<"$nodes"

  nodes_ready() {
    [ "$("${K[@]}" get nodes -l type=kwok -o json |
      jq '[.items[] | select(.status.conditions[]? | select(.type=="Ready" and .status=="True"))] | length')" = "$NODES" ]
  }
  wait_for "$NODES kwok nodes Ready" "$UP_TIMEOUT" nodes_ready
  if [ "$PROC_NODES" -gt 0 ]; then
    local pn; pn=$(seq -s, -f 'proc-node-%g' 0 $((PROC_NODES - 1)))
    mkdir -p "$DIR/runtime"
    start runtime "$RT_BIN" "$RT_BIN" --kubeconfig="$DIR/kubeconfig" --nodes="$pn" \
      --state-dir="$DIR/runtime" --max-pods="$MAX_PODS" --pod-cidr="$POD_CIDR" \
      --kubelet-port="$KWOK_PORT" --apiserver-port="$APISERVER_PORT" \
      --operator-bin-dir="${RDC_OPERATOR_BIN_DIR:-$(cd "$here/../.." && pwd)/build/bin}"
    proc_ready() {
      [ "$("${K[@]}" get nodes -l "$PROC_LABEL=true" -o json |
        jq '[.items[] | select(.status.conditions[]? | select(.type=="Ready" and .status=="True"))] | length')" = "$PROC_NODES" ]
    }
    wait_for "$PROC_NODES process nodes Ready" "$UP_TIMEOUT" proc_ready
  fi
  wait_for "kube-controller-manager /healthz" "$UP_TIMEOUT" curl -skf --max-time 2 "https://127.0.0.1:$CONTROLLER_MANAGER_PORT/healthz"
  wait_for "kube-scheduler /healthz" "$UP_TIMEOUT" curl -skf --max-time 2 "https://127.0.0.1:$SCHEDULER_PORT/healthz"
  # pods can only be created once the serviceaccount controller made "default"
  wait_for "serviceaccount default/default" "$UP_TIMEOUT" "${K[@]}" get serviceaccount default -n default
  wait_for "apiserver /readyz" "$UP_TIMEOUT" readyz
  all_alive || { cmd_status; die "a component died during up (see $DIR/logs)"; }
  UP_OK=1; trap - EXIT
  local secs; secs=$(python3 -c "import time,sys; print('%.1f' % (time.time()-float(sys.argv[1])))" "$t0")
  echo "$secs" >"$DIR/up-seconds"
  log "up in ${secs}s: apiserver https://127.0.0.1:$APISERVER_PORT, state $DIR"
  log "use it with: eval \"\$($0 env)\""
}

cmd_down() {
  if [ ! -d "$DIR" ]; then log "not up ($DIR does not exist)"; return 0; fi
  local i
  # reverse start order: clients first, etcd last
  load_ports || true; process_mode
  for ((i=${#COMPONENTS[@]}-1; i>=0; i--)); do stop_one "${COMPONENTS[$i]}"; done
  sweep_containers
  # only remove what looks like our state dir
  if [ -f "$DIR/ports.env" ] || [ -d "$DIR/pids" ]; then rm -rf "$DIR"; log "removed $DIR"
  else log "$DIR does not look like a cluster state dir; not removing it"; fi
}

cmd_status() {
  if [ ! -d "$DIR/pids" ]; then echo "cluster: down ($DIR)"; return 3; fi
  load_ports || true; process_mode
  local c pid rc=0 rss port total=0
  printf '%-24s %-8s %-6s %-7s %s\n' COMPONENT PID STATE RSS_MB PORT
  for c in "${COMPONENTS[@]}"; do
    port=""
    case $c in
      etcd) port=${ETCD_PORT:-} ;; kube-apiserver) port=${APISERVER_PORT:-} ;;
      kube-controller-manager) port=${CONTROLLER_MANAGER_PORT:-} ;; kube-scheduler) port=${SCHEDULER_PORT:-} ;;
      kwok) port=${KWOK_PORT:-} ;;
      runtime) port="($(find "$DIR/runtime/pids" -name '*.pid' 2>/dev/null | wc -l) container processes; their RSS is not counted here)" ;;
    esac
    if pid=$(pid_of "$c"); then
      # RSS of the component's whole session (the provisioner has kubectl/jq children)
      rss=$(ps -o rss= --sid "$pid" | awk '{s+=$1} END {printf "%d", s/1024}')
      total=$((total + rss))
      printf '%-24s %-8s %-6s %-7s %s\n' "$c" "$pid" alive "$rss" "$port"
    else
      printf '%-24s %-8s %-6s %-7s %s\n' "$c" "-" DEAD "-" "$port"; rc=1
    fi
  done
  echo "total RSS: ${total} MB   state dir: $DIR   logs: $DIR/logs/<component>.log"
  if [ -n "${APISERVER_PORT:-}" ] && out=$(readyz 2>/dev/null); then
    echo "apiserver https://127.0.0.1:$APISERVER_PORT /readyz: $out"
  else
    echo "apiserver /readyz: NOT OK"; rc=1
  fi
  return $rc
}

# For the informer's tests: a restart of kube-apiserver under live watches, and a
# compaction of etcd past every watch's resourceVersion (which forces 410 Gone).
cmd_restart_apiserver() {
  load_ports || die "not up ($DIR)"; process_mode
  stop_one kube-apiserver
  start_apiserver "$BIN_DIR"
  wait_for "kube-apiserver /readyz" "$UP_TIMEOUT" readyz
  log "kube-apiserver restarted"
}

cmd_restart_etcd() {
  load_ports || die "not up ($DIR)"; process_mode
  stop_one etcd
  start_etcd "$BIN_DIR"
  wait_for "etcd /health" "$UP_TIMEOUT" curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"
  wait_for "kube-apiserver /readyz" "$UP_TIMEOUT" readyz
  log "etcd restarted"
}

cmd_compact() {
  load_ports || die "not up ($DIR)"
  local rev
  rev=$(curl -sf --max-time 5 -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/range" -d '{"key":"AA=="}' | jq -r .header.revision)
  [ -n "$rev" ] && [ "$rev" != null ] || die "cannot read the etcd revision"
  curl -sf --max-time 30 -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/compaction" \
    -d "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null || die "compaction failed"
  log "etcd compacted at revision $rev"
}

# ------------------------------------------------------------------ process nodes
# The PID files of container processes: <state>/runtime/pids/<ns>_<pod>_<container>.pid
# holding "<pid> <start time>"; the pid is also the process group of the container.
sweep_containers() {
  local f pid st now
  for f in "$DIR"/runtime/pids/*.pid; do
    [ -e "$f" ] || continue
    read -r pid st <"$f" || continue
    now=$(awk '{sub(/^.*\) /, ""); print $20}' "/proc/$pid/stat" 2>/dev/null) || now=""
    if [ -n "$pid" ] && [ "$pid" -gt 1 ] && [ "$now" = "$st" ]; then
      kill -KILL -- "-$pid" 2>/dev/null || true
      log "killed leftover container process group $pid ($(basename "$f" .pid))"
    fi
    rm -f "$f"
  done
}

# container_pid NS/POD [CONTAINER]: the pid of a running container (its process group)
container_pid() {
  local ref=$1 ctr=${2:-} ns pod f pid st now
  ns=${ref%%/*}; pod=${ref#*/}
  [ "$ns" != "$ref" ] && [ -n "$pod" ] || die "expected NAMESPACE/POD, got '$ref'"
  if [ -n "$ctr" ]; then f="$DIR/runtime/pids/${ns}_${pod}_${ctr}.pid"
  else f=$(ls "$DIR/runtime/pids/${ns}_${pod}_"*.pid 2>/dev/null | head -n1); fi
  [ -n "$f" ] && [ -f "$f" ] || die "no running container for $ref${ctr:+ ($ctr)} (is it on a process node?)"
  read -r pid st <"$f"
  now=$(awk '{sub(/^.*\) /, ""); print $20}' "/proc/$pid/stat" 2>/dev/null) || now=""
  [ "$now" = "$st" ] || die "the process of $ref is gone (stale $f)"
  echo "$pid"
}

cmd_signal() { # SIGNAL NS/POD [CONTAINER]
  local sig=$1 pid; shift
  [ $# -ge 1 ] || die "usage: $0 pod-kill|pod-freeze|pod-thaw NAMESPACE/POD [CONTAINER]"
  pid=$(container_pid "$@")
  kill "-$sig" -- "-$pid"
  log "SIG$sig to container process group $pid ($1${2:+ $2})"
}

cmd_node_lose() { # NODE: heartbeats and Lease renewals stop, its processes are SIGKILLed
  [ -n "${1:-}" ] || die "usage: $0 node-lose NODE"
  [ -d "$DIR/runtime/lost" ] || die "no process nodes in $DIR"
  touch "$DIR/runtime/lost/$1"
  log "node $1 lost: no more heartbeats; its processes are being killed"
}

cmd_node_restore() {
  [ -n "${1:-}" ] || die "usage: $0 node-restore NODE"
  rm -f "$DIR/runtime/lost/$1"
  log "node $1 restored: heartbeats resume, its pods' containers start again"
}

cmd_pin_namespace() { # NS: every new pod of NS selects and tolerates the process nodes
  [ -n "${1:-}" ] || die "usage: $0 pin-namespace NAMESPACE"
  load_ports || die "not up ($DIR)"
  [ "${PROCESS_NODES:-0}" -gt 0 ] || die "the cluster in $DIR has no process nodes (RDC_CLUSTER_PROCESS_NODES=N at up)"
  "$BIN_DIR/kubectl" --kubeconfig="$DIR/kubeconfig" annotate --overwrite namespace "$1" \
    "scheduler.alpha.kubernetes.io/node-selector=$PROC_LABEL=true" \
    "scheduler.alpha.kubernetes.io/defaultTolerations=[{\"key\":\"$PROC_LABEL\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]" >/dev/null
  log "namespace $1: its pods now land on the process nodes"
}

cmd_env() {
  local bin; bin=$(bindir)
  echo "export KUBECONFIG=$DIR/kubeconfig"
  echo "export PATH=$bin:\$PATH"
  echo "export RDC_CLUSTER_DIR=$DIR"
}

case "$DIR" in ""|/|/tmp|/root|/home|"$HOME") die "RDC_CLUSTER_DIR=$DIR is not a dedicated directory" ;; esac
# one up/down at a time per state dir
lock() { exec 8>"$DIR.lock"; flock -w "$UP_TIMEOUT" 8 || die "another cluster.sh holds $DIR.lock"; }

case "${1:-}" in
  build) cmd_build ;;
  up) lock; cmd_up ;;
  down) lock; cmd_down ;;
  status) cmd_status ;;
  env) cmd_env ;;
  restart-apiserver) lock; cmd_restart_apiserver ;;
  restart-etcd) lock; cmd_restart_etcd ;;
  compact) cmd_compact ;;
  pod-kill) shift; cmd_signal KILL "$@" ;;
  pod-freeze) shift; cmd_signal STOP "$@" ;;
  pod-thaw) shift; cmd_signal CONT "$@" ;;
  node-lose) shift; cmd_node_lose "$@" ;;
  node-restore) shift; cmd_node_restore "$@" ;;
  pin-namespace) shift; cmd_pin_namespace "$@" ;;
  *) echo "usage: $0 build|up|down|status|env|restart-apiserver|compact|pin-namespace|pod-kill|pod-freeze|pod-thaw|node-lose|node-restore   (state dir: \$RDC_CLUSTER_DIR, default /tmp/rdc-cluster)" >&2; exit 2 ;;
esac
