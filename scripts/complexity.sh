#!/usr/bin/env bash
# The complexity check of the product's C (issue 32; docs/STYLE.md, habit 8): no function of
# the directories given (`make complexity` gives common/, $(DAEMONS) and $(TOOLS): a new
# daemon is checked without touching this file) over MAX_LINES lines or cyclomatic
# complexity MAX_CCN, as counted by lizard (pinned LIZARD_VERSION, installed on first use
# into a virtualenv under ~/.cache/rdc-operator, outside the checkout). Run by `make
# complexity` and `make unit`.
# Exit status 1 with the functions over a bound, as lizard words them; 2 when lizard cannot
# be installed (the check did not run: that is not a pass).
set -euo pipefail
cd "$(dirname "$0")/.."
LIZARD_VERSION=1.24.3
MAX_LINES=80
MAX_CCN=30
dirs=("$@")
[ "${#dirs[@]}" -gt 0 ] || { echo "usage: $0 DIR... (make complexity names them)" >&2; exit 2; }

venv=${XDG_CACHE_HOME:-$HOME/.cache}/rdc-operator/lizard-$LIZARD_VERSION
if [ ! -x "$venv/bin/lizard" ]; then
    rm -rf "$venv"
    if ! { python3 -m venv "$venv" && "$venv/bin/pip" install -q "lizard==$LIZARD_VERSION"; } >&2; then
        echo "complexity: could not install lizard $LIZARD_VERSION into $venv: the check did not run" >&2
        rm -rf "$venv"
        exit 2
    fi
fi
for d in "${dirs[@]}"; do
    [ -d "$d" ] || { echo "complexity: no directory $d" >&2; exit 2; }
done
# lizard exits 1 when a function is over a bound, and then lists them after "!!!! Warnings".
rc=0
out=$("$venv/bin/lizard" -l c -C "$MAX_CCN" -L "$MAX_LINES" "${dirs[@]}") || rc=$?
if [ "$rc" -ne 0 ]; then
    echo "functions over $MAX_LINES lines or CCN $MAX_CCN (lizard $LIZARD_VERSION, exit $rc):" >&2
    sed -n '/^!!!! Warnings/,$p' <<<"$out" >&2
    exit 1
fi
# The totals line: nloc, mean nloc, mean CCN, mean tokens, functions, warnings, ...
n=$(awk '/^ *[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9]+ +[0-9]+/ {n = $5} END {print n + 0}' <<<"$out")
[ "$n" -gt 0 ] || { echo "complexity: lizard counted no function: the check did not run" >&2; exit 2; }
echo "complexity: $n functions, none over $MAX_LINES lines or CCN $MAX_CCN"
