#!/usr/bin/env bash
# Builds the process runtime (runtime/, rdc-pod-runtime) into a cache OUTSIDE the checkout:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/cluster/runtime-<key>/bin/rdc-pod-runtime
# <key> = sha256 of runtime/*.go, runtime/go.mod, runtime/go.sum, this script and
# `go version`. A separate key from build.sh's on purpose: changing the runtime never
# rebuilds the control plane. Its k8s.io modules are the pinned Kubernetes' (v0.37.x, the
# versions mods/k8s builds), so after build.sh the Go build cache holds most of it: ~10 s
# then, ~1-2 min on a cold Go build cache.
#
#   build-runtime.sh            build if needed, print the binary's path on the last line
#   build-runtime.sh --path     only print the path (no build)
#   build-runtime.sh --force    rebuild even if cached
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PATH="/usr/local/go/bin:$PATH" GOTOOLCHAIN=local GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
command -v go >/dev/null || { echo "build-runtime.sh: go not found (expected /usr/local/go/bin/go)" >&2; exit 1; }

key=$( { cat "$here/build-runtime.sh" "$here/runtime/go.mod" "$here/runtime/go.sum"
         for f in "$here"/runtime/*.go; do case $f in *_test.go) ;; *) cat "$f" ;; esac; done
         go version; } | sha256sum | cut -c1-16)
root="${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/cluster"
dest="$root/runtime-$key"
bin="$dest/bin/rdc-pod-runtime"

case "${1:-}" in
  --path) echo "$bin"; exit 0 ;;
  --force) rm -f "$dest/.complete" ;;
  "") ;;
  *) echo "usage: build-runtime.sh [--path|--force]" >&2; exit 2 ;;
esac

mkdir -p "$root"
exec 9>"$root/.lock-runtime-$key"
flock 9
if [ -f "$dest/.complete" ] && [ -x "$bin" ]; then echo "build-runtime.sh: cached: $bin" >&2; echo "$bin"; exit 0; fi
start=$(date +%s)
tmp="$dest/bin.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
echo "build-runtime.sh: building rdc-pod-runtime into $dest" >&2
( cd "$here/runtime" && go build -p "${RDC_BUILD_JOBS:-$(nproc)}" -trimpath -ldflags "-s -w" -o "$tmp/rdc-pod-runtime" . )
rm -rf "$dest/bin"; mv "$tmp" "$dest/bin"; trap - EXIT
echo "BUILD_SECONDS=$(( $(date +%s) - start ))" >"$dest/build-info"
touch "$dest/.complete"
echo "build-runtime.sh: built in $(( $(date +%s) - start ))s: $bin" >&2
echo "$bin"
