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

# A stand-in hardware RNG for hwrng_device: a file of random bytes. The kernel does not read
# it itself, so randd credits it to the kernel, and the kernel feed has a source to work with
# on any machine (with or without RDSEED, whatever /dev/hwrng the kernel already consumes).
head -c 4M /dev/urandom >"$work/hwrng"

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# finish NAME: prints the summary and returns non-zero if anything failed.
finish() {
    if [ "$failures" = 0 ]; then echo "$1: all passed"; else echo "$1: $failures failed"; fi
    [ "$failures" = 0 ]
}
