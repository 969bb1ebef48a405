#!/usr/bin/env bash
# Run each CUnit suite, show its report, and close with one line that counts the tests
# of every suite together: "unit: N passed, M failed". A suite that crashes or exits
# non-zero without a CUnit summary counts as one failed test.
set -u
passed=0 failed=0 bad=()
for t in "$@"; do
    name=$(basename "$t")
    echo "== $name"
    out=$(mktemp)
    "$t" 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    # CUnit's run summary: "               tests     12     12     12      0      0"
    read -r p f < <(awk '$1 == "tests" && NF >= 5 { print $4, $5 }' "$out")
    rm -f "$out"
    if [ -z "${p:-}" ]; then
        p=0 f=1
    elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
    fi
    passed=$((passed + p)) failed=$((failed + f))
    [ "$f" -gt 0 ] && bad+=("$name")
    p='' f=''
done
echo
[ "${#bad[@]}" -gt 0 ] && echo "failing suites: ${bad[*]}"
echo "unit: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
