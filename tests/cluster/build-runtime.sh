#!/usr/bin/env bash
# Builds the process runtime (runtime/, rdc-pod-runtime) into a cache OUTSIDE the checkout:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/cluster/runtime-<key>/bin/rdc-pod-runtime
# <key> = sha256 of runtime/*.go, runtime/go.mod, runtime/go.sum, this script,
# lib_gobuild.sh (the build steps it shares with build-helm.sh) and `go version`. A
# separate key from build.sh's on purpose: changing the runtime never rebuilds the control
# plane. Its k8s.io modules are the pinned Kubernetes' (v0.37.x, the
# versions mods/k8s builds), so after build.sh the Go build cache holds most of it: ~10 s
# then, ~1-2 min on a cold Go build cache.
#
#   build-runtime.sh            build if needed, print the binary's path on the last line
#   build-runtime.sh --path     only print the path (no build)
#   build-runtime.sh --force    rebuild even if cached
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib_gobuild.sh
. "$here/lib_gobuild.sh"
gb_go build-runtime.sh
srcs=()
for f in "$here"/runtime/*.go; do case $f in *_test.go) ;; *) srcs+=("$f") ;; esac; done
key=$(gb_key "$here/build-runtime.sh" "$here/runtime/go.mod" "$here/runtime/go.sum" "${srcs[@]}")
gb_begin build-runtime.sh runtime "$key" rdc-pod-runtime rdc-pod-runtime "${1:-}"
gb_build "$here/runtime" "-s -w" rdc-pod-runtime
gb_install build-runtime.sh
