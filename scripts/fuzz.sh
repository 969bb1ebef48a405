#!/usr/bin/env bash
# Run every libFuzzer target in tests/fuzz/ for a bounded time each (default 60 s).
# Not part of CI: fuzzing is open-ended; run it before touching a parser.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
out=build-fuzz
mkdir -p "$out"
common=$(ls common/*.c)
for src in tests/fuzz/fuzz_*.c; do
    name=$(basename "$src" .c)
    echo "== $name (${seconds}s)"
    clang -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -Icommon \
        "$src" $common -lcurl -ljson-c -lyaml -lssl -lcrypto -lzmq -lmicrohttpd -lm -lpthread \
        -o "$out/$name"
    corpus="tests/fuzz/corpus-$name"
    mkdir -p "$corpus"
    "$out/$name" -max_total_time="$seconds" -print_final_stats=1 "$corpus" 2>&1 | tail -5
done
