#!/usr/bin/env bash
# Integration test of "only the kernel's word": with getrandom the only credited source, STATUS
# (kernel_only, kernel_only_reason), randctl metrics (randd_kernel_only), the status view (its
# trust line) and the log say so; with a credited noise source (hwrng) none of them does, and
# they say so again once that source is quarantined. require_noise_source = yes holds output
# back in that state (NONBLOCK: NOT_READY with a message naming the key; blocking requests
# wait) and serves once a noise source is credited; a bad value is a file:line error.
. "$(dirname "$0")/common.sh"

export RANDD_SOCKET=$work/randd.sock
key() { status_key "$1"; }
key_is() { [ "$(key "$1")" = "$2" ]; }
metric() { "$RANDCTL" metrics | sed -n "s/^$1 //p"; }
view() { COLUMNS=200 NO_COLOR=1 "$RANDCTL" status; }
WORD="only the kernel's word: getrandom is the only credited source, so randd's output is exactly as unpredictable as the kernel's"
REFUSED="only the kernel's getrandom is credited, and require_noise_source = yes"

# A bad value names the file, the line and the key.
printf 'jitter = no\nrequire_noise_source = maybe\n' >"$work/bad.conf"
out=$("$RANDD" --check-config --config "$work/bad.conf" 2>&1)
rc=$?
[ $rc = 1 ] && [[ $out == *"$work/bad.conf:2: require_noise_source: not yes or no"* ]] &&
    pass "require_noise_source = maybe: exit 1, $out" || fail "bad value: exit $rc, '$out'"

# With no noise source on, the option refuses everything, so the file that says both is an
# error (cpu_source = yes on a CPU without one is the same at run time, which no file shows).
printf '%s\n' "cpu_source = no" "hwrng = no" "jitter = no" "require_noise_source = yes" >"$work/none.conf"
out=$("$RANDD" --check-config --config "$work/none.conf" 2>&1)
rc=$?
[ $rc = 1 ] && [[ $out == *"$work/none.conf:4: require_noise_source = yes, but no noise source is on"*"could never serve"* ]] &&
    pass "--check-config refuses a file that could never serve" || fail "exit $rc: '$out'"

# --- getrandom alone ---------------------------------------------------------------------
start_with_config "cpu_source = no" "hwrng = no" "jitter = no" "kernel_topup = no"
wait_for "STATUS kernel_only" key_is kernel_only true &&
    pass "getrandom alone: STATUS kernel_only is true" || fail "kernel_only: '$(key kernel_only)'"
[[ $(key kernel_only_reason) == "none is configured ("*"hwrng or jitter)" ]] &&
    pass "kernel_only_reason: $(key kernel_only_reason)" ||
    fail "kernel_only_reason: '$(key kernel_only_reason)'"
[ "$(metric randd_kernel_only)" = 1 ] && pass "metrics: randd_kernel_only 1" ||
    fail "randd_kernel_only: '$(metric randd_kernel_only)'"
view >"$work/view"
grep -q "^trust  *only the kernel's word: getrandom alone is credited, output is exactly as unpredictable as the kernel's" "$work/view" &&
    pass "the status view has its trust line" || fail "no trust line in: $(cat "$work/view")"
wait_for "the log's warning" in_log "$WORD; no noise source is credited: none is configured" "$work/log" &&
    pass "the log says so, once" || fail "log: $(cat "$work/log")"
[ "$(grep -cF "$WORD" "$work/log")" = 1 ] || fail "more than one line: $(cat "$work/log")"
key_is ready true && "$RANDCTL" bytes 16 --nonblock --raw | [ "$(wc -c)" = 16 ] &&
    pass "without require_noise_source, output is served" || fail "not served: $(key not_ready_reason)"

# The option turned on by a reload: output held back at once, served again when turned off.
# The file names an hwrng (it waits for a restart): one saying no noise source at all and the
# option both would be refused, as above.
printf '%s\n' "cpu_source = no" "hwrng_device = /dev/null" "jitter = no" "kernel_topup = no" \
    "require_noise_source = yes" >"$work/randd.conf"
kill -HUP "$pid"
wait_for "not ready after the reload" key_is ready false || fail "still ready: $(cat "$work/log")"
err=$("$RANDCTL" bytes 16 --nonblock --raw 2>&1 >/dev/null)
rc=$?
[ $rc = 5 ] && [[ $err == *"$REFUSED"* ]] &&
    pass "reloaded with require_noise_source = yes: exit 5, $err" || fail "exit $rc: '$err'"
[[ $(key not_ready_reason) == "$REFUSED"* ]] && pass "STATUS not_ready_reason says why" ||
    fail "not_ready_reason: '$(key not_ready_reason)'"
# Ready again at the reload's own harvest, not the next timer's (reseed_interval, 60 s).
sed -i '/require_noise_source/d' "$work/randd.conf"
reloaded=$SECONDS
kill -HUP "$pid"
wait_for "ready after turning it off" key_is ready true && [ $((SECONDS - reloaded)) -lt 30 ] &&
    pass "turned off again: ready in $((SECONDS - reloaded)) s" ||
    fail "ready $(key ready) after $((SECONDS - reloaded)) s: $(key not_ready_reason)"
stop_randd

# --- a credited noise source: a file standing in for the hwrng --------------------------------
# Rewritten in place (no truncation: randd's read offset stays where it was), it gives from
# its next read what was written: zeros, then random bytes again.
head -c 1M /dev/urandom >"$work/noise"
rewrite() { head -c 1M "$1" 1<>"$work/noise"; }
# reseed_interval = 1: a harvest, and so a read of the hwrng, every second.
start_with_config "cpu_source = no" "jitter = no" "kernel_topup = no" \
    "hwrng_device = $work/noise" "reseed_interval = 1"
wait_for "hwrng healthy" field_is hwrng state healthy || fail "hwrng: $(cat "$work/log")"
key_is kernel_only false && key_is kernel_only_reason null &&
    pass "hwrng credited: kernel_only false, no reason" ||
    fail "kernel_only '$(key kernel_only)': $(key kernel_only_reason)"
[ "$(metric randd_kernel_only)" = 0 ] && pass "metrics: randd_kernel_only 0" ||
    fail "randd_kernel_only: '$(metric randd_kernel_only)'"
view >"$work/view"
! grep -q "^trust" "$work/view" && pass "no trust line in the status view" ||
    fail "trust line: $(grep "^trust" "$work/view")"
! in_log "only the kernel's word" "$work/log" && pass "nothing in the log" ||
    fail "log: $(grep "only the kernel's word" "$work/log")"

# Zeros: hwrng quarantined, and kept there (each retry's start-up test reads zeros too), so
# getrandom is alone again; then random bytes: hwrng re-admitted at its next retry.
rewrite /dev/zero
wait_for "kernel_only after the quarantine" key_is kernel_only true &&
    [[ $(key kernel_only_reason) == "hwrng quarantined: "* ]] &&
    pass "hwrng quarantined: kernel_only, $(key kernel_only_reason)" ||
    fail "kernel_only '$(key kernel_only)': '$(key kernel_only_reason)'"
[ "$(metric randd_kernel_only)" = 1 ] && pass "metrics: randd_kernel_only 1" ||
    fail "randd_kernel_only: '$(metric randd_kernel_only)'"
wait_for "the log's warning" in_log "$WORD; no noise source is credited: hwrng quarantined" "$work/log" &&
    pass "the log says so" || fail "log: $(cat "$work/log")"
rewrite /dev/urandom
wait_for "hwrng re-admitted" key_is kernel_only false &&
    wait_for "the log's notice" in_log "a noise source is credited again" "$work/log" &&
    pass "hwrng re-admitted: kernel_only false, and the log says so" ||
    fail "after re-admission: $(key kernel_only), $(cat "$work/log")"
stop_randd

# --- require_noise_source = yes: held back, then served once hwrng is credited ------------
mkfifo "$work/fifo"
exec 7<>"$work/fifo"              # held open: the source never reads end-of-file
start_with_config "cpu_source = no" "jitter = no" "kernel_topup = no" \
    "hwrng_device = $work/fifo" "require_noise_source = yes"
refused() { key_is ready false && [[ $(key not_ready_reason) == "$REFUSED"* ]]; }
wait_for "getrandom healthy, and output refused" refused && key_is kernel_only true &&
    pass "an hwrng with nothing to give: not ready, kernel_only" ||
    fail "ready $(key ready): '$(key not_ready_reason)', kernel_only $(key kernel_only)"
err=$("$RANDCTL" bytes 16 --nonblock --raw 2>&1 >/dev/null)
rc=$?
[ $rc = 5 ] && [[ $err == *"$REFUSED"* ]] && pass "NONBLOCK: exit 5, $err" ||
    fail "NONBLOCK: exit $rc: '$err'"
"$RANDCTL" bytes 16 --raw >"$work/waited" 2>"$work/waited.err" &
waiter=$!
wait_for "the blocking request counted" eval '[ "$(key requests.bytes)" -ge 2 ]' ||
    fail "requests.bytes $(key requests.bytes)"
kill -0 "$waiter" 2>/dev/null && [ ! -s "$work/waited" ] &&
    pass "a blocking request waits" || fail "served while held back: $(cat "$work/waited.err")"
while :; do head -c 4096 /dev/urandom || exit; sleep 0.05; done >"$work/fifo" 2>/dev/null &
feeder=$!
wait_exit "$waiter"
rc=$?
[ $rc = 0 ] && [ "$(wc -c <"$work/waited")" = 16 ] &&
    pass "hwrng credited: the waiting request is served" ||
    fail "waiting request: exit $rc, $(cat "$work/waited.err"), $(cat "$work/log")"
key_is ready true && key_is kernel_only false && pass "STATUS: ready, kernel_only false" ||
    fail "ready $(key ready), kernel_only $(key kernel_only): $(key not_ready_reason)"
"$RANDCTL" bytes 16 --nonblock --raw | [ "$(wc -c)" = 16 ] && pass "NONBLOCK served too" ||
    fail "NONBLOCK not served"
stop_randd
kill "$feeder"
wait "$feeder" 2>/dev/null
finish test_kernel_only.sh
