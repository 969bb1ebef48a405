#!/usr/bin/env bash
# Builds the pinned Helm (helm.env, module mods/helm: helm.sh/helm/v4) into the cache of
# the control-plane binaries, OUTSIDE the checkout:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/cluster/helm-<key>/bin/helm
# <key> = sha256 of helm.env, mods/helm/go.mod, mods/helm/go.sum, this script and
# `go version`. A key of its own, as build-runtime.sh's: a Helm bump never rebuilds the
# control plane, and the control plane's never rebuilds Helm. Helm keeps its own
# dependency graph (a module of its own: MVS would otherwise move it or Kubernetes onto
# the other's k8s.io versions). ~3-4 min on 2 cores with a cold Go build cache.
#
#   build-helm.sh            build if needed, print the binary's path on the last line
#   build-helm.sh --path     only print the path (no build)
#   build-helm.sh --force    rebuild even if cached
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/helm.env"
export PATH="/usr/local/go/bin:$PATH" GOTOOLCHAIN=local GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
command -v go >/dev/null || { echo "build-helm.sh: go not found (expected /usr/local/go/bin/go)" >&2; exit 1; }

key=$( { cat "$here/helm.env" "$here/build-helm.sh" "$here/mods/helm/go.mod" "$here/mods/helm/go.sum"
         go version; } | sha256sum | cut -c1-16)
root="${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/cluster"
dest="$root/helm-$key"
bin="$dest/bin/helm"

case "${1:-}" in
  --path) echo "$bin"; exit 0 ;;
  --force) rm -f "$dest/.complete" ;;
  "") ;;
  *) echo "usage: build-helm.sh [--path|--force]" >&2; exit 2 ;;
esac

mkdir -p "$root"
exec 9>"$root/.lock-helm-$key"
flock 9
if [ -f "$dest/.complete" ] && [ -x "$bin" ]; then echo "build-helm.sh: cached: $bin" >&2; echo "$bin"; exit 0; fi
start=$(date +%s)
tmp="$dest/bin.tmp.$$"
rm -rf "$tmp"; mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
echo "build-helm.sh: building helm $HELM_VERSION into $dest" >&2
# helm's own ldflags (its Makefile): the version `helm version` prints, and the Kubernetes
# version its capabilities default to (.Capabilities.KubeVersion without a cluster).
v=${HELM_VERSION#v}
ld="-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
( cd "$here/mods/helm" && go build -p "${RDC_BUILD_JOBS:-$(nproc)}" -trimpath -ldflags "$ld" \
    -o "$tmp/helm" helm.sh/helm/v4/cmd/helm )
"$tmp/helm" version --template '{{.Version}}' | grep -qx "v$v" ||
  { echo "build-helm.sh: the built helm says $("$tmp/helm" version --short), not $HELM_VERSION" >&2; exit 1; }
rm -rf "$dest/bin"; mv "$tmp" "$dest/bin"; trap - EXIT
{ echo "HELM_VERSION=$HELM_VERSION"; echo "GO=$(go version)"; echo "BUILD_SECONDS=$(( $(date +%s) - start ))"; } >"$dest/build-info"
touch "$dest/.complete"
echo "build-helm.sh: built in $(( $(date +%s) - start ))s: $bin" >&2
echo "$bin"
