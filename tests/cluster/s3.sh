#!/usr/bin/env bash
# The S3-compatible server of the S3 tests: the pinned versitygw (build-s3.sh) over its
# POSIX backend on a temporary directory, on 127.0.0.1 and a free port, with a root
# access key and secret generated for this run. One server per state directory.
#
#   s3.sh start [STATE]   build if needed, start, wait until it answers; prints the env
#   s3.sh env [STATE]     print S3_ENDPOINT S3_REGION S3_ACCESS_KEY S3_SECRET_KEY S3_DATA S3_PID
#   s3.sh stop [STATE]    stop it by its PID (from STATE/pid) and remove STATE
#
# STATE defaults to $S3_STATE, else ${TMPDIR:-/tmp}/rdc-s3-$UID. The data lives in
# STATE/data (a bucket is a directory, an object a file, its metadata in xattrs: the
# filesystem must have user xattrs, as ext4 and tmpfs since Linux 6.6 do); the log in
# STATE/log. versitygw's command line (its cmd/versitygw and cmd/internal/gwcli/posix.go):
#   versitygw --access A --secret S --port 127.0.0.1:P --region R posix DIR
# `start` exits non-zero when the server cannot be built or does not answer in 30 s.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cmd="${1:-}"
state="${2:-${S3_STATE:-${TMPDIR:-/tmp}/rdc-s3-$(id -u)}}"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

running() {  # the PID in STATE/pid is alive and is our versitygw (not a recycled PID)
  [ -f "$state/pid" ] || return 1
  local pid; pid=$(cat "$state/pid")
  [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "versitygw.*$state/data"
}

alive() {  # the PID we started has not exited (it may not have exec'd versitygw yet)
  kill -0 "$(cat "$state/pid")" 2>/dev/null
}

case "$cmd" in
start)
  if running; then cat "$state/env"; exit 0; fi
  bin=$("$here/build-s3.sh" | tail -1)
  [ -x "$bin" ] || { echo "s3.sh: no versitygw binary ($bin)" >&2; exit 1; }
  rm -rf "$state"; mkdir -p "$state/data"; chmod 700 "$state"
  port=$(free_port)
  access=$(openssl rand -hex 10) secret=$(openssl rand -hex 20)
  # The secret reaches versitygw through its environment (ROOT_SECRET_ACCESS_KEY), not
  # its command line, which any local user can read in /proc.
  ROOT_ACCESS_KEY_ID="$access" ROOT_SECRET_ACCESS_KEY="$secret" \
    setsid "$bin" --port "127.0.0.1:$port" --region us-east-1 posix "$state/data" \
    >"$state/log" 2>&1 </dev/null &
  echo $! >"$state/pid"
  umask 077
  cat >"$state/env" <<EOE
S3_ENDPOINT=http://127.0.0.1:$port
S3_REGION=us-east-1
S3_ACCESS_KEY=$access
S3_SECRET_KEY=$secret
S3_DATA=$state/data
S3_PID=$(cat "$state/pid")
EOE
  for _ in $(seq 300); do
    if ! alive; then echo "s3.sh: versitygw exited; its log:" >&2; cat "$state/log" >&2; exit 1; fi
    # Any HTTP answer (403 to an anonymous request) means it serves.
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/" || true)
    [ "$code" != 000 ] && { cat "$state/env"; exit 0; }
    sleep 0.1
  done
  echo "s3.sh: versitygw did not answer on 127.0.0.1:$port in 30 s; its log:" >&2
  cat "$state/log" >&2
  kill "$(cat "$state/pid")" 2>/dev/null || true
  exit 1 ;;
env)
  running || { echo "s3.sh: no server running for $state" >&2; exit 1; }
  cat "$state/env" ;;
stop)
  if running; then
    pid=$(cat "$state/pid")
    kill "$pid"
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
  rm -rf "$state" ;;
*)
  echo "usage: s3.sh start|env|stop [STATE]" >&2; exit 2 ;;
esac
