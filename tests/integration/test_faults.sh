#!/usr/bin/env bash
# Faults injected into the real daemon: through LD_PRELOAD (tests/fault/libfault.c) a kernel
# that gives nothing or is interrupted, RNDADDENTROPY refused, no memory for a reply; through
# a FIFO a hardware RNG that reads short, sticks and recovers; through signals SIGKILL under
# load with a restart over the stale socket, SIGHUP with a broken config under load.
. "$(dirname "$0")/common.sh"
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }

LIBFAULT=${LIBFAULT:-build/libfault.so}
[ -e "$LIBFAULT" ] && LIBFAULT=$(cd "$(dirname "$LIBFAULT")" && pwd)/$(basename "$LIBFAULT")
export RANDD_SOCKET=$work/randd.sock

# start "FAULTS" "config lines": a daemon with those faults (none: no shim), waiting until it
# listens.
start() {
    printf '%b' "$2" >"$work/randd.conf"
    : >"$work/log"      # here, not in the child: a wait must never match the last daemon's log
    if [ -n "$1" ]; then
        RANDD_FAULTS=$1 LD_PRELOAD=$LIBFAULT "$RANDD" --config "$work/randd.conf" \
            --socket "$RANDD_SOCKET" 2>>"$work/log" &
    else
        "$RANDD" --config "$work/randd.conf" --socket "$RANDD_SOCKET" 2>>"$work/log" &
    fi
    pid=$!
    wait_for "randd to answer STATUS on $RANDD_SOCKET" answers || { cat "$work/log"; return 1; }
}
stop() { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=; }

# with_shim SECTION: runs a section that needs the LD_PRELOAD shim. The shim replaces malloc,
# and so does ASan's runtime: the two cannot both be first, so under ASan it skips (make
# check runs it).
with_shim() {
    if [ -n "${RANDD_SANITIZED:-}" ]; then
        echo "SKIP: $1: LD_PRELOAD fault injection does not mix with ASan"
    elif [ ! -e "$LIBFAULT" ]; then
        echo "SKIP: $1: $LIBFAULT not built"
    else
        "$1"
    fi
}

# The kernel has nothing (getrandom EAGAIN forever) and it is the only source: never ready,
# nothing served, and STATUS says why.
getrandom_faults() {
    start getrandom=eagain 'cpu_source = no\nhwrng = no\njitter = no\nkernel_topup = no\n'
    out=$(timeout 2 "$RANDCTL" bytes 16); rc=$?
    check "getrandom EAGAIN forever, only source: no output (request waits)" '[ $rc = 124 ] && [ -z "$out" ]'
    json=$("$RANDCTL" status --json)
    check "getrandom EAGAIN forever: STATUS not ready, empty reads counted" \
        'grep -q "\"ready\":false" <<<"$json" && grep -qE "\"empty_reads\":[1-9]" <<<"$json"'
    stop

    # Interrupted every other call: the reads that work are enough.
    start getrandom=eintr 'cpu_source = no\nhwrng = no\njitter = no\nkernel_topup = no\n'
    wait_for "STATUS ready: true" ready
    out=$(timeout "$WAIT" "$RANDCTL" bytes 32 --hex)
    check "getrandom EINTR every other call: seeded and serving" '[[ $out =~ ^[0-9a-f]{64}$ ]]'
    stop
}

# Fields of STATUS: the hwrng's state and counters, the bytes served; the states waited for.
status_json() { "$RANDCTL" status --json; }
hwrng_field() { status_json | grep -o "\"name\":\"hwrng\",[^}]*" | grep -o "\"$1\":[^,]*" | cut -d: -f2 | tr -d '"'; }
served() { status_json | grep -o '"bytes_served":[0-9]*' | head -1 | cut -d: -f2; }
ready() { status_json | grep -q '"ready":true'; }
served_over() { [ "$(served)" -gt "$1" ] 2>/dev/null; }
hwrng_is() { [ "$(hwrng_field state)" = "$1" ]; }
writer_is() { [ "$(cat "$work/phase")" = "$1" ]; }

# A hardware RNG behind a FIFO is the only source. Its writer hands over 3 bytes at a time,
# so every read is short; then it sticks: one write of 32 KiB of zeros, all of it queued in
# the pipe at once, and it waits to be told to recover. randd must seed from the short
# reads, quarantine the device at runtime, answer NOT_READY while nothing healthy is left
# and serve nothing meanwhile, and at the retry discard the zeros still queued and re-admit
# the device after a fresh start-up test on what the writer gives after it recovered.
# Nothing here depends on how fast either side runs.
hwrng_fifo_faults() {
    mkfifo "$work/fifo"
    echo good >"$work/phase"
    # One process, not three forks a write: the start-up tests' samples come 3 bytes at a
    # time, and forking for each made this most of the test's time. It ends when randd
    # closes the FIFO (SIGPIPE).
    perl -e '
        my $phase = shift;
        open(my $random, "<", "/dev/urandom") or die "/dev/urandom: $!";
        sub phase { open(my $f, "<", $phase) or return ""; my $p = <$f> // ""; chomp $p; $p }
        while (1) {
            my $p = phase();
            if ($p eq "stick") {
                syswrite(STDOUT, "\0" x 32768) == 32768 or exit 0;
                open(my $f, ">", $phase) or die "$phase: $!"; print $f "stuck\n"; close $f;
            } elsif ($p eq "stuck") {
                select(undef, undef, undef, 0.01);      # until the test says recover
            } else {
                sysread($random, my $bytes, 3) == 3 or die "/dev/urandom: $!";
                syswrite(STDOUT, $bytes) or exit 0;
                select(undef, undef, undef, 0.001);     # pacing: many short reads
            }
        }' "$work/phase" >"$work/fifo" 2>/dev/null &
    writer=$!
    start '' "cpu_source = no\ngetrandom = no\njitter = no\nhwrng_device = $work/fifo\nkernel_topup = no\nreseed_interval = 1\n"
    wait_for "the FIFO hwrng healthy" hwrng_is healthy
    out=$(timeout "$WAIT" "$RANDCTL" bytes 32 --hex)
    check "hwrng giving 3-byte reads, only source: admitted, seeded and serving" \
        '[[ $out =~ ^[0-9a-f]{64}$ ]] && grep -q "source hwrng: start-up test passed" "$work/log"'
    echo stick >"$work/phase"
    wait_for "the writer to queue its zeros" writer_is stuck
    wait_for "the FIFO hwrng quarantined" hwrng_is quarantined
    before=$(served)
    check "hwrng stuck at zero at runtime: quarantined, reason logged" \
        'grep -q "source hwrng: quarantined: repetition count test" "$work/log"'
    out=$("$RANDCTL" --nonblock bytes 16 2>&1); rc=$?
    check "nothing healthy left: --nonblock gets NOT_READY (exit 5)" '[ $rc = 5 ] && grep -q "not ready" <<<"$out"'
    out=$("$RANDCTL" bytes 16 --nonblock 2>&1); rc=$?
    check "--nonblock after the command works too (exit 5)" '[ $rc = 5 ] && grep -q "not ready" <<<"$out"'
    out=$(timeout 1 "$RANDCTL" bytes 16); rc=$?
    check "nothing healthy left: a blocking request waits, nothing served" '[ $rc = 124 ] && [ -z "$out" ]'
    check "nothing served while quarantined (bytes_served unchanged)" '[ "$(served)" = "$before" ]'
    echo recover >"$work/phase"
    wait_for "the FIFO hwrng re-admitted (healthy)" hwrng_is healthy
    out=$(timeout "$WAIT" "$RANDCTL" bytes 32 --hex)
    check "hwrng recovers: re-admitted after a fresh start-up test and serving" \
        '[[ $out =~ ^[0-9a-f]{64}$ ]] && [ "$(grep -c "source hwrng: start-up test passed" "$work/log")" -ge 2 ]'
    check "the retry discarded the zeros queued while quarantined (stale_discarded > 0)" \
        '[ "$(hwrng_field stale_discarded)" -gt 0 ] && grep -q "source hwrng: discarded [1-9][0-9]* bytes queued" "$work/log"'
    stop
    kill "$writer" 2>/dev/null; wait "$writer" 2>/dev/null
}

# RNDADDENTROPY refused: the feed turns off once, with the reason; serving goes on. The
# stand-in hwrng is a kernel-creditable source, so the feed has something to offer.
kernel_faults() {
    for err in eperm einval; do
        start ioctl=$err "cpu_source = no\nhwrng_device = $work/hwrng\n"
        wait_for "\"kernel feed off\" in the log" in_log "kernel feed off" "$work/log"
        json=$("$RANDCTL" status --json)
        want=$([ $err = eperm ] && echo "CAP_SYS_ADMIN" || echo "RNDADDENTROPY: Invalid argument")
        check "RNDADDENTROPY $err: feed off with the reason in STATUS" \
            'grep -q "\"enabled\":false" <<<"$json" && grep -q "$want" <<<"$json"'
        out=$("$RANDCTL" bytes 32 --hex)
        check "RNDADDENTROPY $err: serving goes on" '[[ $out =~ ^[0-9a-f]{64}$ ]]'
        stop
    done
}

# No memory for a reply: that client gets a clean INTERNAL and is closed; once memory is back,
# everyone is served again.
allocation_faults() {
    export RANDD_FAULTS_SWITCH=$work/oom
    start malloc=large ''
    touch "$RANDD_FAULTS_SWITCH"
    out=$("$RANDCTL" bytes 16 2>&1); rc=$?
    check "allocation failure: INTERNAL, exit 1, the reason named" '[ $rc = 1 ] && grep -q "internal error" <<<"$out"'
    check "allocation failure: the daemon is still running" 'kill -0 $pid'
    rm "$RANDD_FAULTS_SWITCH"
    out=$("$RANDCTL" bytes 32 --hex)
    check "allocation failure: served again once memory is back" '[[ $out =~ ^[0-9a-f]{64}$ ]]'
    json=$("$RANDCTL" status --json)
    check "allocation failure: counted as an INTERNAL reply" 'grep -qE "\"INTERNAL\":[1-9]" <<<"$json"'
    stop
    unset RANDD_FAULTS_SWITCH
}

# A kernel without memfd_create: BYTES_MEMFD is answered UNKNOWN_OP, and librandd takes the
# bytes over the socket instead, asking once per handle (randctl bytes: 1 MiB calls, one
# handle).
memfd_faults() {
    start memfd_create=enosys ''
    n=$("$RANDCTL" bytes 3145728 --raw | wc -c)
    check "memfd_create ENOSYS: 3 MiB served all the same" '[ "$n" = 3145728 ]'
    json=$("$RANDCTL" status --json)
    check "memfd_create ENOSYS: BYTES_MEMFD asked once, answered UNKNOWN_OP, then BYTES" \
        'grep -q "\"bytes\":3," <<<"$json" && grep -qE "\"bytes_memfd\":1[,}]" <<<"$json" &&
         grep -q "\"UNKNOWN_OP\":1," <<<"$json"'
    check "memfd_create ENOSYS: the daemon is still running" 'kill -0 $pid'
    stop
}

# SIGKILL under load: the socket file stays behind; a new daemon replaces it and serves (a
# librandd handle that lives through it: test_lifecycle.c).
signal_faults() {
    start '' ''
    "$RANDCTL" stream >/dev/null 2>&1 &
    load=$!
    wait_for "the stream under way (bytes_served over 1 MB)" served_over 1000000
    kill -9 "$pid"; wait "$pid" 2>/dev/null; pid=
    wait "$load" 2>/dev/null
    check "SIGKILL: the socket file is left behind" '[ -S "$RANDD_SOCKET" ]'
    start '' ''; rc=$?
    out=$("$RANDCTL" bytes 32 --hex)
    check "restart over the stale socket: serving" '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{64}$ ]]'

    # SIGHUP with a broken config while a client streams: the old config stays and the stream
    # is not dropped. The reader holds off until the reload is over, so the stream is sure to
    # be mid-reply (its pipe full) when it happens.
    "$RANDCTL" stream 2>"$work/stream.err" |
        (wait_for "the reload to be over" test -e "$work/reloaded"; head -c 50000000 | wc -c) \
        >"$work/stream.out" &
    load=$!
    wait_for "the stream under way (bytes_served over 1 MB)" served_over 1000000
    printf 'max_clients = many\n' >"$work/randd.conf"
    kill -HUP "$pid"
    wait_for "the reload's rejection in the log" \
        in_log "rejected, keeping the running configuration" "$work/log"
    touch "$work/reloaded"
    wait "$load"
    check "SIGHUP with a broken config under load: the stream delivered all 50 MB" \
        '[ "$(cat "$work/stream.out")" = 50000000 ] && [ ! -s "$work/stream.err" ]'
    check "SIGHUP with a broken config: rejected with file:line, old config kept" \
        'grep -q "randd.conf:1: max_clients" "$work/log" && grep -q "rejected, keeping the running configuration" "$work/log"'
    out=$("$RANDCTL" bytes 32 --hex)
    check "after the rejected reload: serving" '[[ $out =~ ^[0-9a-f]{64}$ ]]'
    stop
}

with_shim getrandom_faults
hwrng_fifo_faults
with_shim kernel_faults
with_shim allocation_faults
with_shim memfd_faults
signal_faults

finish test_faults.sh
