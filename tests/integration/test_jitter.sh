#!/usr/bin/env bash
# Integration test of the CPU timing-jitter source in the real daemon: with no RDSEED and no
# hwrng but getrandom on, jitter = auto turns it on, it passes its start-up test, assesses its
# own samples and credits a margin below the figure, the kernel is credited from it (as root),
# and it stops once nothing wants its credit; auto leaves it off when another source covers
# the kernel, and jitter = no always does.
. "$(dirname "$0")/common.sh"

export RANDD_SOCKET=$work/randd.sock

field_above() { awk -v v="$(status_of "$1" "$2")" -v m="$3" 'BEGIN { exit !(v != "" && v > m) }'; }
field_numeric() { [[ $(status_of "$1" "$2") =~ ^[0-9.e+-]+$ ]]; }
# The credit per sample is at most the assessed figure less the 0.5-bit margin, and at most the
# 1-bit claim, over jitter_oversampling (4); and it is not nothing.
# STATUS prints both to 4 significant digits (%.4g): the assessed figure may read up to
# 0.0005 low, so a credit of exactly (assessed - 0.5) / 4 may read up to 0.000125 + 0.00005
# above the bound computed from it.
credit_under_assessed() {
    awk -v c="$(status_of jitter entropy_per_byte)" -v h="$(status_of jitter assessed_entropy_per_byte)" \
        'BEGIN { m = h - 0.5 < 1 ? h - 0.5 : 1; exit !(c > 0 && c <= m / 4 + 0.000175) }'
}
# The jitter worker's scheduling policy and nice value from /proc (stat fields 41 and 19):
# "5 19" is SCHED_IDLE at nice 19.
worker_policy() {
    local stat
    for stat in /proc/"$pid"/task/*/stat; do
        if [ "$(cat "${stat%stat}comm" 2>/dev/null)" = randd-jitter ]; then
            sed 's/^.*) //' "$stat" | awk '{ print $39, $17 }'
            return
        fi
    done
}
worker_idle() { [ "$(worker_policy)" = "5 19" ]; }
kernel_topups_above_zero() { "$RANDCTL" status --keys 2>/dev/null | grep -qE '^kernel\.topups: [1-9]'; }


# No RDSEED, no hwrng, getrandom on: jitter is all the kernel can be given.
start_with_config "cpu_source = no" "hwrng_device = $work/no-such-hwrng"
if wait_for "jitter healthy in STATUS" field_is jitter state healthy; then
    pass "jitter = auto turns jitter on without RDSEED or hwrng, and it passes its start-up test"
else
    fail "jitter not healthy: $(cat "$work/log")"
fi
in_log 'source jitter: on, crediting nothing until its samples are assessed' "$work/log" &&
    pass "the log says jitter is on and credits nothing unassessed" || fail "no jitter line: $(cat "$work/log")"
field_is jitter kernel_creditable true && pass "jitter is creditable to the kernel" ||
    fail "jitter not kernel-creditable"
if wait_for "a numeric assessed_entropy_per_byte for jitter" field_numeric jitter assessed_entropy_per_byte; then
    pass "STATUS shows jitter's assessed min-entropy ($(status_of jitter assessed_entropy_per_byte) bits a sample)"
else
    fail "assessed_entropy_per_byte: $(status_of jitter assessed_entropy_per_byte): $(cat "$work/log")"
fi
credit_under_assessed &&
    pass "jitter credits $(status_of jitter entropy_per_byte) a sample: at most (assessed - 0.5) / 4" ||
    fail "credit $(status_of jitter entropy_per_byte) against assessed $(status_of jitter assessed_entropy_per_byte)"
in_log 'source jitter: assessed [0-9.]+ bits a byte \(lowest [0-9.]+\): crediting [0-9.]+' "$work/log" &&
    pass "the log gives the assessed figure and the credit" || fail "no assessment line: $(cat "$work/log")"
if [ "$(id -u)" = 0 ]; then
    if wait_for "a kernel top-up" kernel_topups_above_zero; then
        pass "the kernel is credited from jitter"
    else
        fail "no kernel top-up: $("$RANDCTL" status --keys | grep '^kernel')"
    fi
    field_above jitter credited_bits 255 && pass "jitter credited $(status_of jitter credited_bits) bits" ||
        fail "jitter credited $(status_of jitter credited_bits) bits"
else
    echo "SKIP: kernel credit from jitter (needs root for RNDADDENTROPY)"
fi
# Its start-up work done (the start-up test's samples and the first assessment), the worker
# runs only on CPU no one else wants.
wait_for "the jitter worker at SCHED_IDLE" worker_idle &&
    pass "after its start-up work the jitter worker runs at SCHED_IDLE, nice 19" ||
    fail "jitter worker's policy and nice: '$(worker_policy)' (want 5 19: SCHED_IDLE at nice 19)"
field_above jitter cpu_seconds 0 && pass "STATUS shows jitter's CPU time ($(status_of jitter cpu_seconds) s)" ||
    fail "no CPU time for jitter"
if wait_for "jitter to stop once its credit is covered" field_is jitter running false; then
    pass "the jitter worker stops when nothing wants its credit"
fi
# SIGHUP reaches the event loop, never the jitter worker (whose default action would end
# the daemon): the reload is logged and randd still answers.
kill -HUP "$pid"
wait_for "the reload in the log" in_log 'reload: .* applied' "$work/log" &&
    answers && pass "SIGHUP with the jitter worker's thread up: reloaded, still serving" ||
    fail "SIGHUP: $(tail -3 "$work/log")"
"$RANDCTL" metrics | grep -q '^randd_source_cpu_seconds_total{source="jitter"} ' &&
    pass "metrics carry jitter's CPU time" || fail "no jitter CPU metric"
"$RANDCTL" metrics | grep -q '^randd_source_assessed_ratio{source="jitter"} 0\.[0-9]' &&
    pass "metrics carry jitter's assessed figure" || fail "no jitter assessed metric"
"$RANDCTL" metrics | grep -q 'randd_source_assessed_ratio{source="getrandom"' &&
    fail "metrics print getrandom's assessed figure, which is null" || pass "metrics leave out unassessed figures"
stop_randd

# Another kernel-creditable source (a file standing in for a USB TRNG): auto leaves it off.
start_with_config "cpu_source = no" "hwrng_device = $work/hwrng"
if wait_for "the jitter = auto off line" in_log 'source jitter: off \(jitter = auto' "$work/log"; then
    pass "jitter = auto stays off when another source covers the kernel feed"
fi
[ -z "$(status_of jitter state)" ] && pass "no jitter source in STATUS then" || fail "jitter listed"
stop_randd

start_with_config "jitter = no" "cpu_source = no" "hwrng_device = $work/no-such-hwrng"
if wait_for "the jitter = no line" in_log 'source jitter: off \(jitter = no\)' "$work/log"; then
    pass "jitter = no keeps it off"
fi
stop_randd

finish test_jitter.sh
