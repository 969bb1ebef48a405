# Counted checks for the no-cluster check scripts of make unit (tests/olm/validate.sh,
# tests/olm/catalog.sh, tests/helm/check.sh). Source it after setting NAME (the summary
# line's word); it makes $tmp (removed on exit) and the counters.
#
#   ok / not_ok DESCRIPTION          count one check
#   check DESCRIPTION CMD...         CMD's output kept, shown (#-indented) when it fails
#   fails CMD...                     CMD fails
#   control_changed_deploy WHAT SED CMD...
#                                    a copy of deploy/ with SED applied to its Deployment
#                                    must fail CMD (run with --deploy COPY appended):
#                                    one check, "control: a changed deploy/ without WHAT"
#   finish                           "NAME: N passed, M failed", exit 0 only when none failed
passed=0 failed=0
tmp=$(mktemp -d "/tmp/rdc-$NAME.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
ok() { passed=$((passed + 1)); echo "ok - $*"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $*"; }
finish() { echo "$NAME: $passed passed, $failed failed"; [ "$failed" -eq 0 ]; exit; }
check() {
    local d=$1; shift
    if "$@" >"$tmp/last.log" 2>&1; then ok "$d"; else sed 's/^/#   /' "$tmp/last.log" | head -40; not_ok "$d"; fi
}
fails() { ! "$@"; }
control_changed_deploy() {
    local what=$1 expr=$2 dep=deploy/base/manager/deployment.yaml
    shift 2
    rm -rf "$tmp/deploy"; cp -r deploy "$tmp/deploy"
    sed -i "$expr" "$tmp/$dep"
    if cmp -s "$dep" "$tmp/$dep"; then
        not_ok "control: the copy of deploy/ was changed (the sed matched nothing)"
    elif "$@" --deploy "$tmp/deploy" >"$tmp/control.log" 2>&1; then
        not_ok "control: a changed deploy/ without $what fails the check"
    else
        ok "control: a changed deploy/ without $what fails the check ($(grep -c '^[-+] ' "$tmp/control.log") changed lines)"
    fi
}
