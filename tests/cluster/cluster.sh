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
#   cluster.sh compact  compact etcd at its current revision (old watches get 410 Gone)
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
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok provisioner)
SERVICE_CIDR=10.96.0.0/16
SERVICE_IP=10.96.0.1
# Fake pod IPs handed out by kwok. Loopback on purpose: nothing listens there, and if
# code under test dials a pod IP the packet never leaves this machine.
POD_CIDR="${RDC_POD_CIDR:-127.10.0.0/16}"
ISSUER=https://kubernetes.default.svc.cluster.local

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
    --allow-privileged=true --profiling=false --event-ttl=30m
}

# ------------------------------------------------------------------ commands
cmd_build() { "$here/build.sh" >/dev/null; log "binaries: $(bindir)"; }

all_alive() { local c; for c in "${COMPONENTS[@]}"; do alive "$c" || return 1; done; }

cmd_up() {
  need openssl openssl; need curl curl; need jq jq; need python3 python3; need setsid util-linux
  if [ -d "$DIR/pids" ]; then
    if all_alive && load_ports && readyz >/dev/null 2>&1; then
      log "already up ($DIR, apiserver https://127.0.0.1:$APISERVER_PORT)"; return 0
    fi
    log "state dir $DIR exists but the cluster is not (fully) up: tearing it down first"
    cmd_down
  fi
  local t0; t0=$(date +%s.%N)
  local BIN; BIN=$("$here/build.sh")
  [ -x "$BIN/kube-apiserver" ] || die "build failed"
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
EOF
  load_ports
  gen_pki
  write_kubeconfig "$DIR/kubeconfig" admin
  write_kubeconfig "$DIR/controller-manager.kubeconfig" controller-manager
  write_kubeconfig "$DIR/scheduler.kubeconfig" scheduler
  local P="$DIR/pki"
  UP_OK=0
  trap '[ "$UP_OK" = 1 ] || { log "up failed; logs are in $DIR/logs (state kept for debugging; run down to clean)"; }' EXIT

  start etcd "$BIN/etcd" "$BIN/etcd" --name=rdc --data-dir="$DIR/etcd" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="rdc=http://127.0.0.1:$ETCD_PEER_PORT" --initial-cluster-state=new \
    --unsafe-no-fsync=true --quota-backend-bytes=2147483648 --log-level=warn
  wait_for "etcd /health" "$UP_TIMEOUT" curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"

  start_apiserver "$BIN"
  wait_for "kube-apiserver /readyz" "$UP_TIMEOUT" readyz

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
  # HOME points kwok away from a user's ~/.kwok/kwok.yaml: only our stages apply
  start kwok "$BIN/kwok" env HOME="$DIR/kwok-home" "$BIN/kwok" \
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
EOF
  start provisioner "$here/provisioner.sh" env KUBECONFIG="$DIR/kubeconfig" KUBECTL="$BIN/kubectl" \
    SC=standard PROVISIONER=rdc.local/fake-hostpath bash "$here/provisioner.sh"

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
  for ((i=${#COMPONENTS[@]}-1; i>=0; i--)); do stop_one "${COMPONENTS[$i]}"; done
  # only remove what looks like our state dir
  if [ -f "$DIR/ports.env" ] || [ -d "$DIR/pids" ]; then rm -rf "$DIR"; log "removed $DIR"
  else log "$DIR does not look like a cluster state dir; not removing it"; fi
}

cmd_status() {
  if [ ! -d "$DIR/pids" ]; then echo "cluster: down ($DIR)"; return 3; fi
  load_ports || true
  local c pid rc=0 rss port total=0
  printf '%-24s %-8s %-6s %-7s %s\n' COMPONENT PID STATE RSS_MB PORT
  for c in "${COMPONENTS[@]}"; do
    port=""
    case $c in
      etcd) port=${ETCD_PORT:-} ;; kube-apiserver) port=${APISERVER_PORT:-} ;;
      kube-controller-manager) port=${CONTROLLER_MANAGER_PORT:-} ;; kube-scheduler) port=${SCHEDULER_PORT:-} ;;
      kwok) port=${KWOK_PORT:-} ;;
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
  load_ports || die "not up ($DIR)"
  stop_one kube-apiserver
  start_apiserver "$BIN_DIR"
  wait_for "kube-apiserver /readyz" "$UP_TIMEOUT" readyz
  log "kube-apiserver restarted"
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
  compact) cmd_compact ;;
  *) echo "usage: $0 build|up|down|status|env|restart-apiserver|compact   (state dir: \$RDC_CLUSTER_DIR, default /tmp/rdc-cluster)" >&2; exit 2 ;;
esac
