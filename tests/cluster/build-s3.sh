#!/usr/bin/env bash
# Builds the pinned S3-compatible server of the S3 tests (s3.env, module mods/s3:
# github.com/versity/versitygw) into the cache of the control-plane binaries, OUTSIDE the
# checkout:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/cluster/s3-<key>/bin/versitygw
# <key> = sha256 of s3.env, mods/s3/go.mod, mods/s3/go.sum, this script and `go version`.
# A key of its own, as build-helm.sh's: a bump of the S3 server never rebuilds the control
# plane or Helm, and theirs never rebuild it. A module of its own for the same reason as
# Helm's (MVS would move its dependencies or the control plane's). s3.sh starts it.
#
#   build-s3.sh            build if needed, print the binary's path on the last line
#   build-s3.sh --path     only print the path (no build)
#   build-s3.sh --force    rebuild even if cached
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/s3.env"
export PATH="/usr/local/go/bin:$PATH" GOTOOLCHAIN=local GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
command -v go >/dev/null || { echo "build-s3.sh: go not found (expected /usr/local/go/bin/go)" >&2; exit 1; }

key=$( { cat "$here/s3.env" "$here/build-s3.sh" "$here/mods/s3/go.mod" "$here/mods/s3/go.sum"
         go version; } | sha256sum | cut -c1-16)
root="${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/cluster"
dest="$root/s3-$key"
bin="$dest/bin/versitygw"

case "${1:-}" in
  --path) echo "$bin"; exit 0 ;;
  --force) rm -f "$dest/.complete" ;;
  "") ;;
  *) echo "usage: build-s3.sh [--path|--force]" >&2; exit 2 ;;
esac

mkdir -p "$root"
exec 9>"$root/.lock-s3-$key"
flock 9
if [ -f "$dest/.complete" ] && [ -x "$bin" ]; then echo "build-s3.sh: cached: $bin" >&2; echo "$bin"; exit 0; fi
start=$(date +%s)
tmp="$dest/bin.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
echo "build-s3.sh: building versitygw $VERSITYGW_VERSION into $dest" >&2
# versitygw's own ldflags (its Makefile): the version `versitygw --version` prints.
ld="-s -w -X main.Version=$VERSITYGW_VERSION -X main.Build=module-proxy"
( cd "$here/mods/s3" && go build -p "${RDC_BUILD_JOBS:-$(nproc)}" -trimpath -ldflags "$ld" \
    -o "$tmp/versitygw" github.com/versity/versitygw/cmd/versitygw )
"$tmp/versitygw" --version | grep -q "^Version *: $VERSITYGW_VERSION\$" ||
  { echo "build-s3.sh: the built versitygw says $("$tmp/versitygw" --version | head -1), not $VERSITYGW_VERSION" >&2; exit 1; }
rm -rf "$dest/bin"; mv "$tmp" "$dest/bin"; trap - EXIT
{ echo "VERSITYGW_VERSION=$VERSITYGW_VERSION"; echo "GO=$(go version)"; echo "BUILD_SECONDS=$(( $(date +%s) - start ))"; } >"$dest/build-info"
touch "$dest/.complete"
echo "build-s3.sh: built in $(( $(date +%s) - start ))s: $bin" >&2
echo "$bin"
