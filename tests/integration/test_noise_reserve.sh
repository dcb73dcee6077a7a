#!/usr/bin/env bash
# The noise reserve's share for uids with nothing waiting (issue 42, lib/PROTOCOL.md "The
# reserve's share"): nobody keeps four 4 KiB full-entropy requests waiting on a noise source
# the test feeds (a FIFO as the hwrng device), and root's prediction-resistant NONBLOCK
# requests, one every 0.1 s, are still answered from the reserve. Before the reserve took its
# turn in the noise queue, nearly all were NOT_READY: the reserve refilled only once nothing
# waited, and each of nobody's requests that came with nothing of nobody's waiting emptied
# it. Three cases: a slow feed (nobody's requests wait seconds); the slow feed beside the CPU
# noise source, where the CPU has one (RDSEED, RNDRRS...); and a feed as fast as RDSEED, for
# CPUs without one (each of nobody's requests is answered in milliseconds, its next sent at
# once on the same connection). What is not tested, because it does not hold: a uid polling
# with NONBLOCK requests takes the reserve's blocks first come, and root's share then falls
# (lib/PROTOCOL.md says how far). That blocking requests of a uid with nothing waiting no
# longer draw on the reserve once it is owed: tests/test_noise.c.
. "$(dirname "$0")/common.sh"
if [ "$(id -u)" != 0 ]; then echo "SKIP: test_noise_reserve.sh needs root (setpriv to nobody)"; exit 0; fi
export RANDD_SOCKET=$work/randd.sock
key() { status_key "$1"; }
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

ROOT_REQUESTS=20
# The bound: root's first request may find the reserve empty (nothing was owed to it until a
# uid with nothing waiting asked), and each later one finds a block if the reserve was given
# one since the last: it gets one block in two while nobody alone waits and it is short, and
# the slow feed gives about 250 blocks a second (fewer under CPU hogs, still dozens). On the
# fast feed a request of nobody's that comes with nothing of nobody's waiting takes what the
# reserve holds (16 of its 128 blocks): root's finds it empty only until the reserve's next
# turn, a block or two later.
ROOT_BOUND=15

mkfifo "$work/noise"
exec 7<>"$work/noise"             # held open: the source never reads end-of-file

# run_case NAME CPU_SOURCE FEED: FEED slow (4 KiB every 0.1 s, at about 2 credited bits a
# byte about 250 blocks a second, so nobody's four 4 KiB requests, 512 blocks, keep waiting
# while root asks) or fast (64 KiB every 0.04 s: nobody gets hundreds of 4 KiB requests
# answered in the 3 s, at least RDSEED's rate).
run_case() {
    local name=$1 cpu=$2 feed=$3 feeder hogs= ok=0 waited=0 i
    rm -f "$work/stop"
    if [ "$feed" = slow ]; then
        while :; do head -c 4096 /dev/urandom || exit; sleep 0.1; done >"$work/noise" 2>/dev/null &
    else
        while :; do head -c 64K /dev/urandom || exit; sleep 0.04; done >"$work/noise" 2>/dev/null &
    fi
    feeder=$!
    start_with_config "cpu_source = $cpu" "jitter = no" "kernel_topup = no" \
        "hwrng_device = $work/noise"
    wait_for "the FIFO hwrng healthy" field_is hwrng state healthy || fail "$name: hwrng: $(cat "$work/log")"
    if [ "$cpu" = yes ] && [ "$(key cpu_source.in_use)" != true ]; then
        echo "SKIP: $name: the CPU noise source is not in use here ($(key cpu_source.name): $(key cpu_source.reason))"
        stop_randd; kill "$feeder"; wait "$feeder" 2>/dev/null
        return
    fi
    # Four long-lived clients: randctl sends a large --full-entropy request as 4 KiB ones,
    # one after another on one connection, so on the fast feed each has its next request in
    # line a round trip after the last was answered, not after a new setpriv and randctl
    # started (which two CPU hogs can stretch past the milliseconds a request takes). The
    # loop only restarts one that ended (its 64 MiB done, or timed out); stop_randd ends them.
    for i in 1 2 3 4; do
        (while [ ! -e "$work/stop" ]; do
            as_nobody "$RANDCTL" bytes 67108864 --full-entropy --raw --timeout 120000 >/dev/null 2>>"$work/nobody.err"
        done) &
        hogs="$hogs $!"
    done
    # All four wait on the slow feed; on the fast one, one at least.
    nobody_waits() { [ "$(key noise.waiting)" -ge $([ "$feed" = slow ] && echo 4 || echo 1) ]; }
    wait_for "nobody's full-entropy requests waiting" nobody_waits ||
        fail "$name: noise.waiting $(key noise.waiting): $(tail -3 "$work/nobody.err")"
    for i in $(seq $ROOT_REQUESTS); do
        if "$RANDCTL" --nonblock bytes 32 --prediction-resistant >/dev/null 2>"$work/root.err"
        then ok=$((ok + 1)); else cp "$work/root.err" "$work/root.refused"; fi
        # nobody still had requests waiting: the reserve was not merely left alone
        [ "$(key noise.waiting)" -ge 1 ] && waited=$((waited + 1))
        sleep 0.1                 # root's pace, not synchronisation: one request each 0.1 s
    done
    touch "$work/stop"
    served=$(key noise.full_entropy.answered)
    stop_randd
    for i in $hogs; do wait_exit "$i"; done
    kill "$feeder"; wait "$feeder" 2>/dev/null
    echo "$name: root's NONBLOCK prediction-resistant requests answered: $ok of $ROOT_REQUESTS;" \
        "nobody had requests waiting at $waited of $ROOT_REQUESTS samples ($served of" \
        "its 4 KiB requests answered meanwhile)"
    [ $ok -lt $ROOT_REQUESTS ] && echo "  root's last refusal: $(cat "$work/root.refused")"
    [ "$waited" -ge $((ROOT_REQUESTS / 2)) ] &&
        pass "$name: nobody kept its requests waiting throughout ($waited of $ROOT_REQUESTS samples)" ||
        fail "$name: nobody's requests were not kept waiting ($waited of $ROOT_REQUESTS samples): the test proves nothing"
    [ $ok -ge $ROOT_BOUND ] &&
        pass "$name: root's NONBLOCK prediction-resistant requests: $ok of $ROOT_REQUESTS answered (bound: $ROOT_BOUND)" ||
        fail "$name: root's NONBLOCK prediction-resistant requests: only $ok of $ROOT_REQUESTS answered (bound: $ROOT_BOUND) while nobody kept requests waiting"
}

run_case "slow hwrng alone" no slow
run_case "slow hwrng and the CPU source" yes slow
run_case "fast hwrng alone" no fast
exec 7>&-

finish test_noise_reserve.sh
