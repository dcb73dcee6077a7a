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
    if [ -n "$1" ]; then
        RANDD_FAULTS=$1 LD_PRELOAD=$LIBFAULT "$RANDD" --config "$work/randd.conf" \
            --socket "$RANDD_SOCKET" 2>"$work/log" &
    else
        "$RANDD" --config "$work/randd.conf" --socket "$RANDD_SOCKET" 2>"$work/log" &
    fi
    pid=$!
    for _ in $(seq 100); do "$RANDCTL" status >/dev/null 2>&1 && return 0; sleep 0.05; done
    return 1
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
    start getrandom=eagain 'rdseed = no\nhwrng = no\nkernel_topup = no\n'
    out=$(timeout 2 "$RANDCTL" bytes 16); rc=$?
    check "getrandom EAGAIN forever, only source: no output (request waits)" '[ $rc = 124 ] && [ -z "$out" ]'
    json=$("$RANDCTL" status --json)
    check "getrandom EAGAIN forever: STATUS not ready, empty reads counted" \
        'grep -q "\"ready\":false" <<<"$json" && grep -qE "\"empty_reads\":[1-9]" <<<"$json"'
    stop

    # Interrupted every other call: the reads that work are enough.
    start getrandom=eintr 'rdseed = no\nhwrng = no\nkernel_topup = no\n'
    for _ in $(seq 100); do "$RANDCTL" status 2>/dev/null | grep -q "^ready: true" && break; sleep 0.1; done
    out=$(timeout 10 "$RANDCTL" bytes 32 --hex)
    check "getrandom EINTR every other call: seeded and serving" '[[ $out =~ ^[0-9a-f]{64}$ ]]'
    stop
}

# The hwrng's state and the bytes served, from STATUS; wait_state STATE SECONDS.
hwrng_state() { "$RANDCTL" status --json | grep -o '"name":"hwrng","state":"[a-z]*"' | cut -d'"' -f8; }
served() { "$RANDCTL" status --json | grep -o '"bytes_served":[0-9]*' | cut -d: -f2; }
wait_state() {
    for _ in $(seq $(($2 * 10))); do [ "$(hwrng_state)" = "$1" ] && return 0; sleep 0.1; done
    return 1
}

# A hardware RNG behind a FIFO is the only source. Its writer hands over 3 bytes at a time,
# so every read is short; then it sticks at zero; then it recovers. randd must seed from the
# short reads, quarantine the device at runtime, answer NOT_READY while nothing healthy is
# left and serve nothing meanwhile, and re-admit the device after a fresh start-up test.
hwrng_fifo_faults() {
    mkfifo "$work/fifo"
    ( while :; do
          if [ -e "$work/stuck" ]; then head -c 3 /dev/zero; else head -c 3 /dev/urandom; fi || exit 0
          sleep 0.001
      done >"$work/fifo" 2>/dev/null ) &
    writer=$!
    start '' "rdseed = no\ngetrandom = no\nhwrng_device = $work/fifo\nkernel_topup = no\nreseed_interval = 1\n"
    wait_state healthy 20
    out=$(timeout 10 "$RANDCTL" bytes 32 --hex)
    check "hwrng giving 3-byte reads, only source: admitted, seeded and serving" \
        '[[ $out =~ ^[0-9a-f]{64}$ ]] && grep -q "source hwrng: start-up test passed" "$work/log"'
    before=$(served)
    touch "$work/stuck"
    wait_state quarantined 10
    check "hwrng stuck at zero at runtime: quarantined, reason logged" \
        'grep -q "source hwrng: quarantined: repetition count test" "$work/log"'
    out=$("$RANDCTL" --nonblock bytes 16 2>&1); rc=$?
    check "nothing healthy left: --nonblock gets NOT_READY (exit 5)" '[ $rc = 5 ] && grep -q "not ready" <<<"$out"'
    out=$(timeout 1 "$RANDCTL" bytes 16); rc=$?
    check "nothing healthy left: a blocking request waits, nothing served" '[ $rc = 124 ] && [ -z "$out" ]'
    check "nothing served while quarantined (bytes_served unchanged)" '[ "$(served)" = "$before" ]'
    rm "$work/stuck"
    wait_state healthy 40
    out=$(timeout 10 "$RANDCTL" bytes 32 --hex)
    check "hwrng recovers: re-admitted after a fresh start-up test and serving" \
        '[[ $out =~ ^[0-9a-f]{64}$ ]] && [ "$(grep -c "source hwrng: start-up test passed" "$work/log")" -ge 2 ]'
    stop
    kill "$writer" 2>/dev/null; wait "$writer" 2>/dev/null
}

# RNDADDENTROPY refused: the feed turns off once, with the reason; serving goes on. The
# stand-in hwrng is a kernel-creditable source, so the feed has something to offer.
kernel_faults() {
    for err in eperm einval; do
        start ioctl=$err "rdseed = no\nhwrng_device = $work/hwrng\n"
        for _ in $(seq 50); do grep -q "kernel feed off" "$work/log" && break; sleep 0.1; done
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

# SIGKILL under load: the socket file stays behind; a new daemon replaces it and serves (a
# librandd handle that lives through it: test_service.c).
signal_faults() {
    start '' ''
    "$RANDCTL" stream >/dev/null 2>&1 &
    load=$!
    sleep 0.3
    kill -9 "$pid"; wait "$pid" 2>/dev/null; pid=
    wait "$load" 2>/dev/null
    check "SIGKILL: the socket file is left behind" '[ -S "$RANDD_SOCKET" ]'
    start '' ''; rc=$?
    out=$("$RANDCTL" bytes 32 --hex)
    check "restart over the stale socket: serving" '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{64}$ ]]'

    # SIGHUP with a broken config while a client streams: the old config stays and the stream
    # is not dropped.
    "$RANDCTL" stream 2>"$work/stream.err" | (sleep 1; head -c 50000000 | wc -c) >"$work/stream.out" &
    load=$!
    sleep 0.3
    printf 'max_clients = many\n' >"$work/randd.conf"
    kill -HUP "$pid"
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
signal_faults

finish test_faults.sh
