#!/usr/bin/env bash
# The source checks of every C file of the repository (as curl's checksrc; docs/STYLE.md):
#   - banned functions, which invite buffer overflows or silent parse errors: use snprintf,
#     memcpy with explicit lengths, strtol/strtoll and a tokenizer of our own (a line that
#     must name one anyway, e.g. in a comment, says banned-ok);
#   - lines of at most MAX_WIDTH characters (the width the code keeps; characters, not
#     bytes, so that an "é" in a test string counts once).
# Every *.c and *.h below the top is checked, build directories aside, so that a new
# daemon's directory cannot be skipped. Run by make (the $(BUILD)/.banned-ok rule) and
# `make banned`. Exit status 1 with the offending lines on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
MAX_WIDTH=120

mapfile -t files < <(find . \( -name '.git' -o -name 'build*' -o -name 'node_modules' \) -prune -o \
    -type f \( -name '*.c' -o -name '*.h' \) -print | sed 's#^\./##' | sort)
status=0

pattern='(^|[^A-Za-z0-9_])(sprintf|vsprintf|strcpy|strcat|strtok|sscanf|atoi|atol|gets)[[:space:]]*\('
hits=$(grep -nE "$pattern" "${files[@]}" /dev/null | grep -v 'banned-ok' || true)
if [ -n "$hits" ]; then
    echo "banned functions used (docs/STYLE.md, curl):" >&2
    echo "$hits" >&2
    status=1
fi

wide=$(LC_ALL=C.UTF-8 grep -nE "^.{$((MAX_WIDTH + 1)),}" "${files[@]}" /dev/null | cut -c1-160 || true)
if [ -n "$wide" ]; then
    echo "lines over $MAX_WIDTH characters:" >&2
    echo "$wide" >&2
    status=1
fi
exit $status
