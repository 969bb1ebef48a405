#!/usr/bin/env bash
# Install the Debian packages the build and the tests need. Idempotent, and quiet when
# everything is already there. Go (for the local control plane) comes with the machine;
# see tests/cluster/README.md.
set -euo pipefail
pkgs=(
    build-essential pkg-config
    libcurl4-openssl-dev   # REST client (libcurl with OpenSSL)
    libjson-c-dev          # JSON
    libyaml-dev            # kubeconfig
    libssl-dev             # TLS, base64, certificates
    libzmq3-dev            # process links (ZeroMQ)
    libcunit1-dev          # unit tests
    libmicrohttpd-dev      # HTTP server for /healthz /readyz /metrics
    libevent-dev           # HTTPS server of the admission webhooks (evhttp over OpenSSL)
    libhiredis-dev         # RESP for the Redis transport (command formatting, the reply reader)
    libexpat1-dev          # S3's XML answers (common/s3_xml.c): errors, listings, multipart
    clang                  # make fuzz (libFuzzer)
    libclang-rt-dev        # make fuzz: libclang_rt.fuzzer/asan for the default clang
    openssl curl jq        # certificates, probes and JSON for the local control plane
    prometheus             # promtool: check and unit-test the alerts of deploy/overlays/monitoring
    python3-yaml           # tests/monitoring and scripts/bundle.py read deploy/'s YAML
    python3-venv           # make complexity: lizard (PyPI, pinned) in a cached virtualenv
    buildah mmdebstrap     # make docker-build here: mmdebstrap makes the Debian base image,
                           # buildah builds the Dockerfile and runs the image (test_image.sh)
    redis-server redis-tools   # real Redis behind the pods of the process nodes (tests/cluster);
                               # observerd's unit tests run real redis-server on loopback
)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ "${#missing[@]}" -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}"
SUDO=
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
