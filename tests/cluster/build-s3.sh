#!/usr/bin/env bash
# Builds the pinned S3-compatible server of the S3 tests (s3.env, module mods/s3:
# github.com/versity/versitygw) into the cache of the control-plane binaries, OUTSIDE the
# checkout:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/cluster/s3-<key>/bin/versitygw
# <key> = sha256 of s3.env, mods/s3/go.mod, mods/s3/go.sum, this script, lib_gobuild.sh
# and `go version` (lib_gobuild.sh: the cache, lock and install build-helm.sh's share).
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
# shellcheck source=lib_gobuild.sh
. "$here/lib_gobuild.sh"
gb_mod_begin build-s3.sh s3 versitygw "versitygw $VERSITYGW_VERSION" "${1:-}"
# versitygw's own ldflags (its Makefile): the version `versitygw --version` prints.
ld="-s -w -X main.Version=$VERSITYGW_VERSION -X main.Build=module-proxy"
gb_build "$here/mods/s3" "$ld" versitygw github.com/versity/versitygw/cmd/versitygw
# (its output read whole first: grep -q leaving early would SIGPIPE it, and pipefail fail it)
said=$("$tmp/versitygw" --version)
grep -q "^Version *: $VERSITYGW_VERSION\$" <<<"$said" ||
  { echo "build-s3.sh: the built versitygw says $(head -1 <<<"$said"), not $VERSITYGW_VERSION" >&2; exit 1; }
gb_install build-s3.sh "VERSITYGW_VERSION=$VERSITYGW_VERSION" "GO=$(go version)"
