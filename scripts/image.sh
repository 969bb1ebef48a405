#!/usr/bin/env bash
# scripts/image.sh: the container images, with whichever tool works here
# (CONTAINER_TOOL: docker with a daemon, podman, or buildah; see the Makefile).
#
#   image.sh build IMG           the operator image from Dockerfile   (make docker-build)
#   image.sh build-bundle IMG    the bundle image from bundle.Dockerfile (make bundle-build)
#   image.sh base                make or reuse the debian:bookworm base; print its name
#   image.sh size IMG            the image's size in bytes (the sum of its layers)
#
# With buildah (this machine: no Docker daemon, no registry), the Dockerfile's base
# image is made locally: mmdebstrap builds a Debian bookworm root filesystem from the
# Debian archive, which becomes the image localhost/rdc-debian:bookworm-<key> (podman
# import when podman is there, else buildah add + commit), and `buildah bud --isolation
# chroot --layers` builds with BASE_IMAGE set to it. <key> hashes the base's recipe and the
# candidate versions apt knows for the packages the images contain (the pins): the
# tarball is kept in ~/.cache/rdc-operator/image/<key>/ and the image in buildah's
# storage, so a rebuild happens only when Debian ships a new version of one of them.
set -euo pipefail
cd "$(dirname "$0")/.."
tool=${CONTAINER_TOOL:-buildah}
SUITE=bookworm
MIRRORS=("deb http://deb.debian.org/debian $SUITE main"
         "deb http://deb.debian.org/debian $SUITE-updates main"
         "deb http://deb.debian.org/debian-security $SUITE-security main")
# What the images hold: the base's apt and libc, the Dockerfile's build packages (and so
# the runtime libraries, which they depend on).
PINNED=(base-files libc6 apt dpkg ca-certificates build-essential gcc make
        libcurl4-openssl-dev libcurl4 libjson-c-dev libyaml-dev libssl-dev libssl3 libzmq3-dev libzmq5
        libmicrohttpd-dev libmicrohttpd12 libgnutls30 libevent-dev libhiredis-dev libexpat1-dev)

log() { echo "image.sh: $*" >&2; }

# How the base is made: part of its key (a change to the rest of this script keeps it).
MMDEBSTRAP_ARGS=(--quiet --format=tar --variant=apt --include=ca-certificates)

base_key() {
    { printf '%s\n' "$SUITE" "${MIRRORS[@]}" "${MMDEBSTRAP_ARGS[@]}"
      apt-cache policy "${PINNED[@]}" 2>/dev/null | awk '/^[^ ]/ {p=$1} /^ *Candidate:/ {print p $2}'
    } | sha256sum | cut -c1-16
}

cmd_base() {
    local key name cache tar
    command -v mmdebstrap >/dev/null || { log "mmdebstrap is missing (make deps)"; return 1; }
    key=$(base_key)
    name=localhost/rdc-debian:$SUITE-$key
    if buildah inspect --type image "$name" >/dev/null 2>&1; then log "base image cached: $name"; echo "$name"; return 0; fi
    cache="${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/image/$key"
    tar=$cache/debian-$SUITE.tar
    mkdir -p "$cache"
    exec 8>"$cache.lock"; flock 8
    if [ ! -s "$tar" ]; then
        log "making the $SUITE root filesystem with mmdebstrap into $tar"
        local start=$SECONDS
        mmdebstrap "${MMDEBSTRAP_ARGS[@]}" "$SUITE" "$tar.tmp" "${MIRRORS[@]}"
        mv "$tar.tmp" "$tar"
        log "root filesystem made in $((SECONDS - start)) s ($(du -h "$tar" | cut -f1))"
    fi
    if command -v podman >/dev/null; then
        podman import --quiet "$tar" "$name" >/dev/null
    else
        local ctr; ctr=$(buildah from --quiet scratch)
        buildah add --quiet "$ctr" "$tar" / >/dev/null
        buildah commit --quiet --rm "$ctr" "$name" >/dev/null
    fi
    # Older bases (other pins) and the build layers made on them go: storage stays bounded.
    local old
    for old in $(buildah images --format '{{.Name}}:{{.Tag}}' | grep "^localhost/rdc-debian:" | grep -vx "$name"); do
        buildah rmi "$old" >/dev/null 2>&1 || true
        rm -rf "${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/image/${old##*-}"
    done
    buildah rmi --prune >/dev/null 2>&1 || true
    log "base image: $name"
    echo "$name"
}

cmd_build() {
    local img=$1 file=${2:-Dockerfile} ctx=.
    if [ "$file" = bundle.Dockerfile ]; then
        # Its own context: .dockerignore (the operator's) leaves bundle/ out.
        ctx=$(mktemp -d /tmp/rdc-bundle-ctx.XXXXXX)
        bundle_ctx=$ctx
        trap 'rm -rf "$bundle_ctx"' EXIT
        cp -r bundle bundle.Dockerfile "$ctx/"
        file=$ctx/bundle.Dockerfile
    fi
    case $tool in
    docker|podman)
        "$tool" build -f "$file" -t "$img" "$ctx" ;;
    buildah)
        local args=()
        [ "$file" = Dockerfile ] && args=(--build-arg "BASE_IMAGE=$(cmd_base)")
        local start=$SECONDS
        buildah bud --quiet --isolation chroot --layers --pull=never -f "$file" "${args[@]}" -t "$img" "$ctx" >/dev/null
        log "built $img in $((SECONDS - start)) s: $(cmd_size "$img") bytes unpacked" ;;
    *) log "unknown CONTAINER_TOOL $tool"; return 2 ;;
    esac
}

cmd_size() {
    case $tool in
    buildah) # the unpacked tree, in bytes
        local ctr mnt; ctr=$(buildah from --quiet --pull=never "$1"); mnt=$(buildah mount "$ctr")
        du -sb "$mnt" | cut -f1
        buildah umount "$ctr" >/dev/null; buildah rm "$ctr" >/dev/null ;;
    *) "$tool" image inspect -f '{{.Size}}' "$1" ;;
    esac
}

case ${1:-} in
    base) cmd_base ;;
    build) cmd_build "${2:?image.sh build IMG}" Dockerfile ;;
    build-bundle) cmd_build "${2:?image.sh build-bundle IMG}" bundle.Dockerfile ;;
    size) cmd_size "${2:?image.sh size IMG}" ;;
    *) echo "usage: image.sh build IMG | build-bundle IMG | base | size IMG" >&2; exit 2 ;;
esac
