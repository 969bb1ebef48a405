#!/usr/bin/env bash
# tests/soak/run.sh: the soak (soak.sh) on the local control plane, brought up with three
# process nodes when it is not running (and taken down again afterwards), as
# tests/e2e/run.sh does for the suite. SOAK_SECONDS, SOAK_SEED, ... as soak.sh takes them.
#   SOAK_SECONDS=1800 make soak
set -uo pipefail
cd "$(dirname "$0")/../.."
cluster=tests/cluster/cluster.sh
export RDC_CLUSTER_DIR=${RDC_CLUSTER_DIR:-/tmp/rdc-cluster-soak}
export RDC_CLUSTER_PROCESS_NODES=${RDC_CLUSTER_PROCESS_NODES:-3}
started=0
"$cluster" status >/dev/null 2>&1 || started=1
cleanup() { [ "$started" = 1 ] && [ "${RDC_SOAK_KEEP:-0}" != 1 ] && "$cluster" down; }
trap cleanup EXIT
trap 'exit 130' INT TERM
"$cluster" up || { echo "soak: the local control plane did not come up"; exit 1; }
eval "$("$cluster" env)"
RDC_TOP=$(pwd) bash tests/soak/soak.sh
