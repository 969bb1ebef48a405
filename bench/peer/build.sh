#!/usr/bin/env bash
# Builds rdc-peer (the controller-runtime operator of the side-by-side bench) with the
# machine's Go into a cache OUTSIDE the checkout, as tests/cluster/build-runtime.sh does:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/bench-peer-<key>/rdc-peer
# <key> = sha256 of main.go, go.mod, go.sum, this script and `go version`. Prints the
# binary's path on the last line.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export PATH="/usr/local/go/bin:$PATH" GOTOOLCHAIN=local GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
command -v go >/dev/null || { echo "peer/build.sh: go not found" >&2; exit 1; }
key=$( { cat "$here/build.sh" "$here/go.mod" "$here/go.sum" "$here/main.go"; go version; } | sha256sum | cut -c1-16)
root="${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator"
dest="$root/bench-peer-$key"
bin="$dest/rdc-peer"
mkdir -p "$root"
exec 9>"$root/.lock-bench-peer-$key"
flock 9
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi
tmp="$dest.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
echo "peer/build.sh: building rdc-peer (controller-runtime) into $dest" >&2
( cd "$here" && go build -p "${RDC_BUILD_JOBS:-2}" -trimpath -ldflags "-s -w" -o "$tmp/rdc-peer" . )
rm -rf "$dest"; mv "$tmp" "$dest"; trap - EXIT
echo "peer/build.sh: built in $(( $(date +%s) - start ))s" >&2
echo "$bin"
