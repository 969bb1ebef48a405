# syntax=docker/dockerfile:1
# The rdc-operator image: every daemon in /usr/local/bin, supervisor as the entrypoint
# (deploy/base/manager/deployment.yaml runs `supervisor --leader-elect --webhook ...`).
#
#   docker build -t rediscluster-operator:0.1.0 .
#
# Not built by this repository's CI or on the development machine: neither has a container
# engine. The stages below use only Debian 12 (bookworm) packages, the same the build
# machine uses (scripts/deps.sh), so `make` here and `make` in the build stage agree.

# ---- build: the -dev packages and the compiler -------------------------------------------
FROM debian:bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential ca-certificates \
      libcurl4-openssl-dev libjson-c-dev libyaml-dev libssl-dev libzmq3-dev \
      libmicrohttpd-dev libevent-dev libhiredis-dev \
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
RUN make -j"$(nproc)" all \
 && install -d /out \
 && install -s -m 0755 build/bin/* /out/

# ---- runtime: the shared libraries only, no shell tools beyond the slim base ---------------
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates \
      libcurl4 libjson-c5 libyaml-0-2 libssl3 libzmq5 libmicrohttpd12 \
      libevent-2.1-7 libevent-openssl-2.1-7 libhiredis0.14 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /usr/local/bin/
# The runtime directory for `docker run` without a volume (Kubernetes mounts an emptyDir).
RUN install -d -o 65532 -g 65532 -m 0700 /run/rdc
# The same non-root user as distroless' "nonroot"; the Deployment also says runAsUser 65532
# and mounts an emptyDir at $XDG_RUNTIME_DIR (the root filesystem is read-only there).
USER 65532:65532
ENV XDG_RUNTIME_DIR=/run/rdc
EXPOSE 8443 8081 9443
ENTRYPOINT ["/usr/local/bin/supervisor"]
CMD ["--leader-elect", "--webhook"]
