#!/usr/bin/env bash
# Run every libFuzzer target in tests/fuzz/ for a bounded time each (default 60 s).
# Not part of CI: fuzzing is open-ended; run it before touching a parser.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
out=build-fuzz
mkdir -p "$out"
common=$(ls common/*.c)
# Each daemon's module files (everything but main.c), as the unit tests link them: the
# admission target reaches webhookd's core and cross-checks it with workerd's plan().
daemons="supervisor informerd workerd electord webhookd"
modules=$(for d in $daemons; do ls "$d"/*.c 2>/dev/null; done | grep -v '/main\.c$' || true)
incs=$(for d in $daemons; do printf -- '-I%s ' "$d"; done)
for src in tests/fuzz/fuzz_*.c; do
    name=$(basename "$src" .c)
    echo "== $name (${seconds}s)"
    clang -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -Icommon $incs \
        "$src" $common $modules -lcurl -ljson-c -lyaml -lssl -lcrypto -lzmq -lmicrohttpd \
        -levent -levent_openssl -lm -lpthread \
        -o "$out/$name"
    corpus="tests/fuzz/corpus-$name"
    mkdir -p "$corpus"
    "$out/$name" -max_total_time="$seconds" -print_final_stats=1 "$corpus" 2>&1 | tail -5
done
