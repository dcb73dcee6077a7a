# Shared by the integration tests (sourced, not run): the binaries under test, a scratch
# directory removed on exit with any daemon the test started ($pid), and the ok/FAIL
# bookkeeping that `finish` turns into the exit status.
set -u
RANDD=${RANDD:-build/randd}
RANDCTL=${RANDCTL:-build/randctl}
work=$(mktemp -d)
chmod 755 "$work"                 # tests that drop to nobody reach sockets in here
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# finish NAME: prints the summary and returns non-zero if anything failed.
finish() {
    if [ "$failures" = 0 ]; then echo "$1: all passed"; else echo "$1: $failures failed"; fi
    [ "$failures" = 0 ]
}
