#!/usr/bin/env bash
# Fetches the CRDs of the pinned cert-manager (certmanager.env) from the Go module proxy
# into the cache of the control plane's binaries, OUTSIDE the checkout:
#   ${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/cluster/cert-manager-<version>/crds/
# (the module's deploy/crds/cert-manager.io_*.yaml: Certificate, CertificateRequest,
# Issuer, ClusterIssuer), and prints that directory on the last line. Cached: a second
# run only prints it. The module is downloaded with `go mod download` (checksummed by the
# Go checksum database, as every module of tests/cluster is), nothing is built.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
. "$here/certmanager.env"
export PATH="/usr/local/go/bin:$PATH" GOTOOLCHAIN=local GOFLAGS=-mod=mod GOWORK=off
command -v go >/dev/null || { echo "certmanager-crds.sh: go not found (expected /usr/local/go/bin/go)" >&2; exit 1; }
root="${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/cluster"
dest="$root/cert-manager-$CERT_MANAGER_VERSION"
mkdir -p "$root"
exec 9>"$root/.lock-cert-manager-$CERT_MANAGER_VERSION"
flock 9
if [ -f "$dest/.complete" ]; then echo "$dest/crds"; exit 0; fi
rm -rf "$dest"; mkdir -p "$dest/crds"
export GOMODCACHE="$dest/modcache" GOPATH="$dest/gopath"
src=$(cd "$dest" && go mod download -json "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$src" ] && [ -d "$src/deploy/crds" ] || { echo "certmanager-crds.sh: no deploy/crds in the module" >&2; exit 1; }
cp "$src"/deploy/crds/cert-manager.io_*.yaml "$dest/crds/"
chmod -R u+w "$dest/modcache" && rm -rf "$dest/modcache" "$dest/gopath"
[ "$(ls "$dest/crds" | wc -l)" -ge 4 ] || { echo "certmanager-crds.sh: expected 4 CRDs in $dest/crds" >&2; exit 1; }
touch "$dest/.complete"
echo "certmanager-crds.sh: cert-manager $CERT_MANAGER_VERSION CRDs in $dest/crds" >&2
echo "$dest/crds"
