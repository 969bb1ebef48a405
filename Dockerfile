# syntax=docker/dockerfile:1
# The rdc-operator image: every daemon (and rdc-backup) in /usr/local/bin, supervisor as the entrypoint
# (deploy/base/manager/deployment.yaml runs `supervisor --leader-elect --webhook ...`).
#
#   make docker-build IMG=rediscluster-operator:0.1.0      (scripts/image.sh)
#   docker build -t rediscluster-operator:0.1.0 .
#
# Built on the development machine without Docker or a registry: scripts/image.sh makes
# the debian:bookworm base with mmdebstrap, imports it and runs `buildah bud --isolation
# chroot` on this file (BASE_IMAGE names the imported base). With Docker or Podman, the
# default BASE_IMAGE is Docker Hub's debian:bookworm.
#
# The runtime image is FROM scratch, distroless-style: the stripped daemons, exactly the
# shared libraries they load (ldd, with their Debian copyright files), the CA bundle,
# /etc/passwd and /etc/group naming the non-root user 65532, and the runtime directory.
# No shell, no package manager, nothing else.
ARG BASE_IMAGE=debian:bookworm

# ---- build: the -dev packages and the compiler -------------------------------------------
FROM ${BASE_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential ca-certificates \
      libcurl4-openssl-dev libjson-c-dev libyaml-dev libssl-dev libzmq3-dev \
      libmicrohttpd-dev libevent-dev libhiredis-dev libexpat1-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what `make all` reads (see .dockerignore): a change to the tests or docs does not
# invalidate this layer.
COPY Makefile ./
COPY scripts/check-banned.sh scripts/
COPY common/ common/
COPY supervisor/ supervisor/
COPY informerd/ informerd/
COPY workerd/ workerd/
COPY electord/ electord/
COPY webhookd/ webhookd/
COPY observerd/ observerd/
COPY metricsd/ metricsd/
COPY backup/ backup/
RUN make -j"$(nproc)" all \
 && install -d /out \
 && install -s -m 0755 build/bin/* /out/

# ---- rootfs: the runtime tree, assembled from the build stage ------------------------------
FROM build AS rootfs
RUN set -eu; r=/rootfs; \
    install -d -m 0755 $r/usr/local/bin $r/usr/lib/x86_64-linux-gnu $r/usr/lib64 $r/etc/ssl/certs $r/usr/share/doc $r/run; \
    install -d -m 1777 $r/tmp; \
    install -d -o 65532 -g 65532 -m 0700 $r/run/rdc; \
    ln -s usr/lib $r/lib; ln -s usr/lib64 $r/lib64; \
    cp /out/* $r/usr/local/bin/; \
    interp=$(readelf -l /out/supervisor | sed -n 's/.*interpreter: \(.*\)\]/\1/p'); \
    for lib in $(ldd /out/* | awk '/=> \// {print $3}' | sort -u) "$interp"; do \
      real=$(readlink -f "$lib"); \
      cp "$real" $r/usr/lib/x86_64-linux-gnu/; \
      base=$(basename "$lib"); [ "$base" = "$(basename "$real")" ] || ln -sf "$(basename "$real")" $r/usr/lib/x86_64-linux-gnu/"$base"; \
      pkg=$(dpkg -S "$real" 2>/dev/null | head -1 | cut -d: -f1) || pkg=; \
      if [ -n "$pkg" ] && [ -f /usr/share/doc/$pkg/copyright ]; then install -D -m 0644 /usr/share/doc/$pkg/copyright $r/usr/share/doc/$pkg/copyright; fi; \
    done; \
    ln -s ../lib/x86_64-linux-gnu/"$(basename "$interp")" $r/usr/lib64/; \
    [ -e $r$interp ]; \
    ldconfig -r $r; \
    cp /etc/ssl/certs/ca-certificates.crt $r/etc/ssl/certs/; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > $r/etc/passwd; \
    printf 'root:x:0:\nnonroot:x:65532:\n' > $r/etc/group; \
    printf 'hosts: files dns\n' > $r/etc/nsswitch.conf

# ---- runtime --------------------------------------------------------------------------------
FROM scratch
COPY --from=rootfs /rootfs/ /
COPY --from=rootfs --chown=65532:65532 /rootfs/run/rdc /run/rdc
# Same non-root user as distroless' "nonroot"; the Deployment also says runAsUser 65532
# and mounts an emptyDir at $XDG_RUNTIME_DIR (the root filesystem is read-only there).
USER 65532:65532
ENV XDG_RUNTIME_DIR=/run/rdc
# GnuTLS comes with libcurl's dependencies and is never used: no implicit initialisation
# in the supervisor either (it sets the same for its children; docs/memory.md).
ENV GNUTLS_NO_IMPLICIT_INIT=1
EXPOSE 8443 8081 9443
ENTRYPOINT ["/usr/local/bin/supervisor"]
CMD ["--leader-elect", "--webhook"]
