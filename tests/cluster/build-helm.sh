#!/usr/bin/env bash
# Builds the pinned Helm (helm.env, module mods/helm: helm.sh/helm/v4) into the cache of
# the control-plane binaries, OUTSIDE the checkout:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/cluster/helm-<key>/bin/helm
# <key> = sha256 of helm.env, mods/helm/go.mod, mods/helm/go.sum, this script,
# lib_gobuild.sh (the build steps it shares with build-runtime.sh) and `go version`. A key
# of its own, as build-runtime.sh's: a Helm bump never rebuilds the control plane, and the
# control plane's never rebuilds Helm. Helm keeps its own
# dependency graph (a module of its own: MVS would otherwise move it or Kubernetes onto
# the other's k8s.io versions). ~3-4 min on 2 cores with a cold Go build cache.
#
#   build-helm.sh            build if needed, print the binary's path on the last line
#   build-helm.sh --path     only print the path (no build)
#   build-helm.sh --force    rebuild even if cached
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/helm.env"
# shellcheck source=lib_gobuild.sh
. "$here/lib_gobuild.sh"
gb_mod_begin build-helm.sh helm helm "helm $HELM_VERSION" "${1:-}"
# helm's own ldflags (its Makefile): the version `helm version` prints, and the Kubernetes
# version its capabilities default to (.Capabilities.KubeVersion without a cluster).
v=${HELM_VERSION#v}
ld="-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
gb_build "$here/mods/helm" "$ld" helm helm.sh/helm/v4/cmd/helm
"$tmp/helm" version --template '{{.Version}}' | grep -qx "v$v" ||
  { echo "build-helm.sh: the built helm says $("$tmp/helm" version --short), not $HELM_VERSION" >&2; exit 1; }
gb_install build-helm.sh "HELM_VERSION=$HELM_VERSION" "GO=$(go version)"
