# tests/cluster/lib_gobuild.sh: what build-runtime.sh, build-helm.sh and build-s3.sh share, sourced by
# them (set -euo pipefail, $here set): a Go binary built once per key into the cache of
# the control-plane binaries, OUTSIDE the checkout,
#   ${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/cluster/<name>-<key>/bin/<binary>
# under a lock, installed whole (bin/ renamed into place, then .complete) or not at all.
#
#   gb_go SCRIPT                 the pinned Go on PATH (GOTOOLCHAIN=local, modules, no cgo);
#                                exit 1 when there is none
#   gb_key FILE...               the key: sha256 of the files, this library and `go version`
#   gb_begin SCRIPT NAME KEY BINARY WHAT ARG
#                                sets dest, bin and tmp; ARG is the script's argument:
#                                --path prints $bin and exits, --force forgets the cached
#                                build, "" builds if needed, anything else is a usage
#                                error (exit 2); a cached build prints $bin and exits 0;
#                                else the caller builds into $tmp (removed at exit)
#   gb_mod_begin SCRIPT NAME BINARY WHAT ARG
#                                gb_go, then gb_begin keyed by NAME.env, SCRIPT and the
#                                pinned module mods/NAME (its go.mod and go.sum): a tool
#                                built from its upstream module (NAME.env sourced first)
#   gb_build DIR LDFLAGS BINARY [PKG]
#                                go build in DIR of PKG (default .) into $tmp/BINARY
#   gb_install SCRIPT LINE...    $tmp installed as $dest/bin; $dest/build-info holds the
#                                LINEs and BUILD_SECONDS; prints $bin on the last line

gb_go() {
    export PATH="/usr/local/go/bin:$PATH" GOTOOLCHAIN=local GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0
    command -v go >/dev/null || { echo "$1: go not found (expected /usr/local/go/bin/go)" >&2; exit 1; }
}

gb_key() {
    { cat "$@" "${BASH_SOURCE[0]}"; go version; } | sha256sum | cut -c1-16
}

gb_begin() {
    local script=$1 name=$2 key=$3 binary=$4 what=$5 arg=$6 root
    root="${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/cluster"
    dest="$root/$name-$key"
    bin="$dest/bin/$binary"
    case "$arg" in
      --path) echo "$bin"; exit 0 ;;
      --force) rm -f "$dest/.complete" ;;
      "") ;;
      *) echo "usage: $script [--path|--force]" >&2; exit 2 ;;
    esac
    mkdir -p "$root"
    exec 9>"$root/.lock-$name-$key"
    flock 9
    if [ -f "$dest/.complete" ] && [ -x "$bin" ]; then echo "$script: cached: $bin" >&2; echo "$bin"; exit 0; fi
    gb_t0=$(date +%s)
    tmp="$dest/bin.tmp.$$"
    rm -rf "$tmp"; mkdir -p "$tmp"
    trap 'rm -rf "$tmp"' EXIT
    echo "$script: building $what into $dest" >&2
}

gb_mod_begin() {
    local script=$1 name=$2 key
    gb_go "$script"
    key=$(gb_key "$here/$name.env" "$here/$script" "$here/mods/$name/go.mod" "$here/mods/$name/go.sum")
    gb_begin "$script" "$name" "$key" "$3" "$4" "$5"
}

gb_build() {
    ( cd "$1" && go build -p "${RDC_BUILD_JOBS:-$(nproc)}" -trimpath -ldflags "$2" -o "$tmp/$3" "${4:-.}" )
}

gb_install() {
    local script=$1; shift
    rm -rf "$dest/bin"; mv "$tmp" "$dest/bin"; trap - EXIT
    { [ $# = 0 ] || printf '%s\n' "$@"; echo "BUILD_SECONDS=$(( $(date +%s) - gb_t0 ))"; } >"$dest/build-info"
    touch "$dest/.complete"
    echo "$script: built in $(( $(date +%s) - gb_t0 ))s: $bin" >&2
    echo "$bin"
}
