#!/usr/bin/env bash
# Builds the pinned control-plane binaries into a cache OUTSIDE the checkout:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/cluster/<key>/bin/
# <key> = sha256 of pins.env, mods/*/go.mod, mods/*/go.sum, mods/etcd/main.go, this
# script and `go version`. Same inputs => same directory => no rebuild (a fresh clone
# on the same machine reuses it).
#
#   build.sh            build if needed, print the bin dir on the last line
#   build.sh --bin-dir  only print the bin dir (no build)
#   build.sh --force    rebuild even if the cache dir is complete
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/pins.env"
export PATH="/usr/local/go/bin:$PATH" GOTOOLCHAIN=local GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
command -v go >/dev/null || { echo "build.sh: go not found (expected /usr/local/go/bin/go)" >&2; exit 1; }

BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok)

cache_key() {
  {
    cat "$here/pins.env" "$here/build.sh" "$here/mods/etcd/main.go"
    for m in k8s etcd kwok; do cat "$here/mods/$m/go.mod" "$here/mods/$m/go.sum"; done
    go version
  } | sha256sum | cut -c1-16
}
root="${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/cluster"
key=$(cache_key)
dest="$root/$key"
bindir="$dest/bin"

complete() { [ -f "$dest/.complete" ] && for b in "${BINARIES[@]}"; do [ -x "$bindir/$b" ] || return 1; done; }

case "${1:-}" in
  --bin-dir) echo "$bindir"; exit 0 ;;
  --force) rm -f "$dest/.complete" ;;
  "") ;;
  *) echo "usage: build.sh [--bin-dir|--force]" >&2; exit 2 ;;
esac

mkdir -p "$root"
exec 9>"$root/.lock-$key"
flock 9                                   # one build per key at a time
if complete; then echo "build.sh: cached: $bindir" >&2; echo "$bindir"; exit 0; fi

tmp="$dest/bin.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)
jobs="${RDC_BUILD_JOBS:-$(nproc)}"
minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)
k8s_ld="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ld+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  k8s_ld+=" -X $pkg.gitTreeState=clean -X $pkg.gitCommit=release-$K8S_VERSION -X $pkg.buildDate=$date_utc"
done

echo "build.sh: building into $bindir (k8s $K8S_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION, -p $jobs)" >&2
( cd "$here/mods/etcd" && go build -p "$jobs" -trimpath \
    -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=release-$ETCD_VERSION" -o "$tmp/etcd" . )
echo "build.sh: etcd done ($(( $(date +%s) - start ))s)" >&2
( cd "$here/mods/kwok" && go build -p "$jobs" -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" -o "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok )
echo "build.sh: kwok done ($(( $(date +%s) - start ))s)" >&2
# one invocation for the four k8s commands: shared packages are compiled once
( cd "$here/mods/k8s" && go build -p "$jobs" -trimpath -ldflags "$k8s_ld" -o "$tmp/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl )
secs=$(( $(date +%s) - start ))
echo "build.sh: k8s done (${secs}s)" >&2

rm -rf "$bindir"; mv "$tmp" "$bindir"; trap - EXIT
{ echo "K8S_VERSION=$K8S_VERSION"; echo "ETCD_VERSION=$ETCD_VERSION"; echo "KWOK_VERSION=$KWOK_VERSION"
  echo "GO=$(go version)"; echo "BUILT=$date_utc"; echo "BUILD_SECONDS=$secs"; echo "NPROC=$(nproc)"; } > "$dest/build-info"
touch "$dest/.complete"
echo "build.sh: built in ${secs}s: $bindir" >&2
echo "$bindir"
