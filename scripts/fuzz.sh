#!/usr/bin/env bash
# libFuzzer over every target in tests/fuzz/, bounded.
#
#   scripts/fuzz.sh run SECONDS   each target for SECONDS (make fuzz: 60, make fuzz-short: 20),
#                                 starting from its committed seeds; exits non-zero on a crash,
#                                 a leak, a sanitizer report or a timeout in any target
#   scripts/fuzz.sh cov RUNS      each target for exactly RUNS executions, once with no input
#                                 and once from the seeds, and prints the coverage (libFuzzer's
#                                 cov: and ft: figures) of both
#
# Seeds: tests/fuzz/corpus/<target>/ (committed; never written). New inputs found by a run go
# to build-fuzz/corpus/<target>/, which later runs read too. A crashing input is written to
# build-fuzz/crash-* and named in the output.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-run}
arg=${2:-}
out=build-fuzz

command -v clang >/dev/null || { echo "fuzz: clang is not installed (make deps)" >&2; exit 2; }
# The libFuzzer runtime ships apart from clang on Debian (libclang-rt-dev, see scripts/deps.sh).
if ! clang -print-file-name=libclang_rt.fuzzer-x86_64.a | grep -q /; then
    echo "fuzz: clang has no libFuzzer runtime (libclang_rt.fuzzer): run make deps" >&2
    exit 2
fi

# The same objects as the daemons (RDC_VERSION and all), instrumented; warnings are errors.
make -s BUILD="$out" CC=clang OPT=-O1 SAN="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" fuzz-targets

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# -timeout: one input taking this long is a finding; -rss_limit_mb: so is runaway memory.
common_flags=(-timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$out/")

# "cov: N ft: M" of the last status line libFuzzer printed in log $1.
cov_of() {
    grep -E '^#[0-9]+.*cov: ' "$1" | tail -1 | sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+).*/cov \1 ft \2/'
}

fail=0
for bin in "$out"/fuzz/fuzz_*; do
    name=$(basename "$bin")
    target=${name#fuzz_}
    seeds=tests/fuzz/corpus/$target
    [ -d "$seeds" ] && [ -n "$(ls -A "$seeds")" ] || { echo "fuzz: no seeds in $seeds" >&2; exit 2; }
    nseeds=$(ls "$seeds" | wc -l)
    log="$out/$name.log"
    case "$mode" in
    run)
        seconds=${arg:-60}
        work="$out/corpus/$target"
        mkdir -p "$work"
        echo "== $name: ${seconds}s from $nseeds seeds"
        if "$bin" "${common_flags[@]}" -max_total_time="$seconds" "$work" "$seeds" >"$log" 2>&1; then
            grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$log" | tr '\n' ' '
            echo "$(cov_of "$log")"
        else
            fail=1
            echo "FAIL $name: see $log" >&2
            grep -E 'ERROR|SUMMARY|Test unit written|runtime error|==[0-9]+==' "$log" | head -20 >&2
        fi
        ;;
    cov)
        runs=${arg:-200000}
        empty="$out/empty-$target"
        rm -rf "$empty" && mkdir -p "$empty"
        "$bin" "${common_flags[@]}" -runs="$runs" -seed=1 "$empty" >"$log.bare" 2>&1 || { fail=1; echo "FAIL $name (no seeds): $log.bare" >&2; }
        rm -rf "$empty" && mkdir -p "$empty"
        "$bin" "${common_flags[@]}" -runs="$runs" -seed=1 "$empty" "$seeds" >"$log.seeded" 2>&1 || { fail=1; echo "FAIL $name (seeds): $log.seeded" >&2; }
        rm -rf "$empty"
        printf '%-18s %8s runs  no seeds: %-18s  %3d seeds: %s\n' "$name" "$runs" "$(cov_of "$log.bare")" "$nseeds" "$(cov_of "$log.seeded")"
        ;;
    *)
        echo "usage: $0 run SECONDS | cov RUNS" >&2
        exit 2
        ;;
    esac
done
exit "$fail"
