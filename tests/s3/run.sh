#!/usr/bin/env bash
# make s3-check: the S3 client's suite against a real server. Builds (once, cached) and
# starts the pinned versitygw (tests/cluster/s3.sh), runs the suite with its S3_* env,
# stops the server by its PID whatever happened. A server that cannot be built or
# started FAILS the check: it never skips.
#   tests/s3/run.sh build/s3/test_s3_server
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
suite="$1"
state=$(mktemp -d "${TMPDIR:-/tmp}/rdc-s3-check.XXXXXX")
trap '"$here/../cluster/s3.sh" stop "$state" || true' EXIT
start=$(date +%s.%N)
if ! env_lines=$("$here/../cluster/s3.sh" start "$state"); then
    echo "s3-check: FAILED: the S3 server could not be built or started" >&2
    exit 1
fi
ready=$(date +%s.%N)
set -a
eval "$env_lines"
set +a
"$suite"
rc=$?
end=$(date +%s.%N)
printf 's3-check: server up in %.1f s, suite %.1f s\n' "$(echo "$ready - $start" | bc)" "$(echo "$end - $ready" | bc)"
exit $rc
