# Shared by the integration tests (sourced, not run): the binaries under test, a scratch
# directory removed on exit with any daemon the test started ($pid), and the ok/FAIL
# bookkeeping that `finish` turns into the exit status.
set -u
RANDD=${RANDD:-build/randd}
RANDCTL=${RANDCTL:-build/randctl}
work=$(mktemp -d)
chmod 755 "$work"                 # tests that drop to nobody reach sockets in here
pid=
# A subshell killed by a signal (a FIFO's writer, a deadline guard) runs the EXIT trap too:
# only the test's own shell may clean up, or the scratch directory vanishes mid-test.
test_shell=$BASHPID
trap 'if [ "$BASHPID" = "$test_shell" ]; then [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; fi' EXIT
failures=0

# A stand-in hardware RNG for hwrng_device: a file of random bytes. The kernel does not read
# it itself, so randd credits it to the kernel, and the kernel feed has a source to work with
# on any machine (with or without RDSEED, whatever /dev/hwrng the kernel already consumes).
head -c 4M /dev/urandom >"$work/hwrng"

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
pass() { echo "ok: $*"; }

# How long a test waits for a state before it gives up. Generous on purpose: a wait that is
# met returns at once, and one that is not must not fail only because both cores are busy or
# the daemon runs under ASan or valgrind.
WAIT=${RANDD_TEST_WAIT:-60}

# wait_for WHAT COMMAND...: runs COMMAND until it succeeds, for at most $WAIT seconds. On
# time-out it prints what it waited for and returns 1, so a test never goes on by luck.
wait_for() {
    local what=$1 deadline=$((SECONDS + WAIT))
    shift
    until "$@"; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "timed out after $WAIT s waiting for $what"
            return 1
        fi
        sleep 0.05      # polling interval, not synchronisation: the command decides
    done
}

# The states tests wait for: randd answering STATUS on $RANDD_SOCKET (or on $1), a line in
# a log file.
# wait_exit PID: waits for a child to exit and returns its status. One still running after
# $WAIT seconds is killed, so the test fails (status 137) instead of hanging. tail watches the
# process, so no background job of the shell's own stands between it and its child's status.
wait_exit() {
    timeout "$WAIT" tail --pid="$1" -s 0.1 -f /dev/null
    [ $? = 124 ] && kill -9 "$1" 2>/dev/null
    wait "$1"
}

answers() { RANDD_SOCKET=${1:-$RANDD_SOCKET} "$RANDCTL" status >/dev/null 2>&1; }
in_log() { grep -qE -- "$1" "$2"; }
# status_keys: STATUS as `randctl status --keys` prints it, or, while $status_snapshot names
# a file, that one reading of it: checks that several fields agree at one moment (a source
# quarantined for a second or two) read them from a snapshot, not one STATUS each.
status_snapshot=
status_keys() {
    if [ -n "$status_snapshot" ]; then cat "$status_snapshot"; else
        "$RANDCTL" status --keys 2>/dev/null; fi
}
# status_of SOURCE FIELD: the field of the named source in STATUS (empty when absent);
# field_is SOURCE FIELD VALUE: whether it is VALUE.
status_of() {
    status_keys | awk -F': ' -v s="$1" -v f="$2" '
        $1 ~ /^sources\[[0-9]+\]\.name$/ && $2 == s { split($1, a, "."); p = a[1] }
        p != "" && $1 == p "." f { print $2; exit }'
}
field_is() { [ "$(status_of "$1" "$2")" = "$3" ]; }
# status_key KEY: a key of STATUS outside sources[] (selftest.runs, ready), empty when absent.
# The whole value, though it hold ": " itself (a reason).
status_key() {
    status_keys |
        awk -F': ' -v k="$1" '$1 == k { print substr($0, length(k) + 3); exit }'
}
# start_with_config LINE...: randd in the foreground on $RANDD_SOCKET with a config of these
# lines, its log in $work/log, as $pid once it answers; stop_randd ends it.
start_with_config() {
    printf '%s\n' "$@" >"$work/randd.conf"
    : >"$work/log"
    "$RANDD" --foreground --config "$work/randd.conf" --socket "$RANDD_SOCKET" 2>"$work/log" &
    pid=$!
    wait_for "randd answering" answers || fail "randd did not answer: $(cat "$work/log")"
}
stop_randd() { kill "$pid"; wait "$pid" 2>/dev/null; pid=; }
# daemon_post_mortem: after a failure, what a daemon that vanished left behind: how it ended
# (a status over 128 is a signal, which the kernel's log names for a crash) and its log's last
# lines. randd is not dumpable, so there is no core: this is all the evidence there is.
daemon_post_mortem() {
    [ -n "$pid" ] || return 0
    if ! kill -0 "$pid" 2>/dev/null; then
        wait "$pid" 2>/dev/null
        echo "randd (pid $pid) is gone: exit status $?"
    fi
    [ -s "$work/log" ] && { echo "randd's log, last lines:"; tail -n 20 "$work/log"; }
    return 0
}

# write_openssl_cnf FILE SOCKET [LINE...]: an openssl.cnf in FILE, as conf/openssl-randd.cnf
# sets one up: the default provider for everything else, randd.so (found on OPENSSL_MODULES)
# as OpenSSL's seed source, talking to the daemon on SOCKET, with LINEs added to its section
# ("fallback = none", "timeout = 1000").
write_openssl_cnf() {
    local file=$1 socket=$2
    shift 2
    {
        printf '%s\n' "openssl_conf = openssl_init" "" "[openssl_init]" \
            "providers = provider_sect" "random = random_sect" "" "[provider_sect]" \
            "default = default_sect" "randd = randd_sect" "" "[default_sect]" \
            "activate = 1" "" "[randd_sect]" "activate = 1" "socket = $socket"
        [ $# -gt 0 ] && printf '%s\n' "$@"
        printf '%s\n' "" "[random_sect]" "seed = RANDD" "seed_properties = provider=randd"
    } >"$file"
}

# finish NAME: prints the summary and returns non-zero if anything failed.
finish() {
    if [ "$failures" = 0 ]; then echo "$1: all passed"; else echo "$1: $failures failed"; fi
    [ "$failures" = 0 ] || daemon_post_mortem
    [ "$failures" = 0 ]
}
