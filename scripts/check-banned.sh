#!/usr/bin/env bash
# Refuse functions that invite buffer overflows or silent parse errors (see STYLE.md):
# use snprintf, memcpy with explicit lengths, strtol/strtoll and a tokenizer of our own.
set -euo pipefail
cd "$(dirname "$0")/.."
pattern='(^|[^A-Za-z0-9_])(sprintf|vsprintf|strcpy|strcat|strtok|sscanf|atoi|atol|gets)[[:space:]]*\('
hits=$(grep -rnE "$pattern" --include='*.c' --include='*.h' \
    common supervisor informerd workerd electord webhookd observerd tests/unit tests/fuzz bench 2>/dev/null | \
    grep -v 'banned-ok' || true)
if [ -n "$hits" ]; then
    echo "banned functions used (see STYLE.md):" >&2
    echo "$hits" >&2
    exit 1
fi
