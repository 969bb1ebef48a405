#!/usr/bin/env bash
# End to end: the fault soak (tests/soak/soak.sh, issue 37) in its short form: two
# operator replicas under ASan and UBSan, a Standalone, a Replication and a Cluster-mode
# RedisCluster with checked writers, RDC_SOAK_SECONDS (default 120) of random faults from
# a printed seed (RDC_SOAK_SEED to replay one). The long form is `SOAK_SECONDS=1800 make soak`.
SOAK_SECONDS=${RDC_SOAK_SECONDS:-120} SOAK_SEED=${RDC_SOAK_SEED:-} \
    exec bash "$(dirname "$0")/../soak/soak.sh"
