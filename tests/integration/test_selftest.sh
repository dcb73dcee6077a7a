#!/usr/bin/env bash
# The running daemon's self-checks (issue 30): the self-tests run again every
# selftest_interval and on root's randctl selftest, and STATUS and the metrics show the last
# one; a self-test forced to fail (libfault's kat=blake2b seam, a test build's) stops all
# output and says why, and a clean re-test resumes it; randctl inject-failure makes each
# health test fail on each kind of source in the shipped binary, with quarantine, log line,
# STATUS reason, metric and re-admission; nobody may do either.
. "$(dirname "$0")/common.sh"
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }

LIBFAULT=${LIBFAULT:-build/libfault.so}
[ -e "$LIBFAULT" ] && LIBFAULT=$(cd "$(dirname "$LIBFAULT")" && pwd)/$(basename "$LIBFAULT")
export RANDD_SOCKET=$work/randd.sock
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
metric() { "$RANDCTL" metrics | awk -v m="$1" '$1 == m { print $2; exit }'; }
key_is() { [ "$(status_key "$1")" = "$2" ]; }
key_at_least() { [ "$(status_key "$1")" -ge "$2" ] 2>/dev/null; }
in_log_n() { [ "$(grep -cE -- "$1" "$work/log")" -ge "$2" ]; }
BASE=("hwrng_device = $work/hwrng" "kernel_topup = no")

# --- periodic, and visible -------------------------------------------------------------------
periodic() {
    start_with_config "${BASE[@]}" "selftest_interval = 1" "jitter = no"
    wait_for "three self-test runs" key_at_least selftest.runs 3 ||
        fail "runs: $(status_key selftest.runs)"
    check "periodic self-test: STATUS says pass, periodic, every 1 s" \
        'key_is selftest.last_result pass && key_is selftest.last_trigger periodic &&
         key_is selftest.interval_seconds 1 && key_is selftest.failures 0'
    now=$(date +%s); last=$(metric randd_selftest_last_timestamp_seconds)
    check "metrics: runs, last time (within 30 s of now), success 1, alpha 2^-40" \
        '[ "$(metric randd_selftest_runs_total)" -ge 3 ] && [ $((now - last)) -le 30 ] &&
         [ "$(metric randd_selftest_last_success)" = 1 ] &&
         [ "$(metric randd_health_alpha)" = 9.09495e-13 ] && key_is health.alpha_log2 -40'
    check "log: the periodic self-test passes" \
        'in_log "self-test \(periodic\) passed" "$work/log"'
    stop_randd
}

# --- on demand: root's alone ------------------------------------------------------------------
on_demand() {
    start_with_config "${BASE[@]}" "selftest_interval = 0" "jitter = no" \
        "trusted_group = nogroup"
    runs=$(status_key selftest.runs)
    out=$("$RANDCTL" selftest 2>&1); rc=$?
    check "randctl selftest as root: exit 0, passed in a time a reader can read ($out)" \
        '[ $rc = 0 ] && [[ $out =~ ^"self-tests passed in "[1-9][0-9.]*" "(us|ms|s)$ ]] &&
         key_is selftest.runs $((runs + 1)) && key_is selftest.last_trigger request'
    out=$(as_nobody "$RANDCTL" selftest 2>&1); rc=$?
    check "randctl selftest as nobody: refused (exit 4, SELFTEST needs uid 0) in one line, no run" \
        '[ $rc = 4 ] && [ "$out" = "randctl: selftest: not permitted: SELFTEST needs uid 0" ] &&
         key_is selftest.runs $((runs + 1))'
    # The trusted_group may ADD_ENTROPY, not run self-tests or induce failures.
    out=$(setpriv --reuid=nobody --regid=nogroup --init-groups "$RANDCTL" selftest 2>&1); rc=$?
    check "randctl selftest in the trusted_group: refused (exit 4)" '[ $rc = 4 ]'
    stop_randd

    # Served by worker threads (workers = 2), the requests reach the main thread's pool.
    start_with_config "${BASE[@]}" "selftest_interval = 0" "jitter = no" "workers = 2"
    wait_for "ready" key_is ready true
    out=$("$RANDCTL" selftest 2>&1); rc=$?
    check "workers = 2: randctl selftest as root runs it" \
        '[ $rc = 0 ] && key_is selftest.runs 2 && key_is selftest.last_trigger request'
    out=$(as_nobody "$RANDCTL" inject-failure getrandom rct 2>&1); rc=$?
    check "workers = 2: inject-failure as nobody refused" '[ $rc = 4 ]'
    n=$(grep -c "source getrandom: start-up test passed" "$work/log")
    out=$("$RANDCTL" inject-failure getrandom rct 2>&1); rc=$?
    # failed_test and the count outlast the quarantine's 1 s, which a loaded machine outran.
    check "workers = 2: inject-failure getrandom rct quarantines it (exit $rc: $out)" \
        '[ $rc = 0 ] && field_is getrandom failed_test rct &&
         field_is getrandom injected_failures 1 &&
         in_log "source getrandom: quarantined: repetition count test.*induced" "$work/log"'
    wait_for "getrandom re-admitted" readmitted getrandom $((n + 1))
    check "workers = 2: getrandom re-admitted after a fresh start-up test" \
        'readmitted getrandom $((n + 1))'
    stop_randd
}

# --- a forced failure stops all output until a clean re-test ---------------------------------
halted() {
    key_is ready false && [[ $(status_key not_ready_reason) == "self-test failed: BLAKE2b"* ]]
}
forced_failure() {
    printf '%s\n' "${BASE[@]}" "selftest_interval = $1" "jitter = no" >"$work/randd.conf"
    : >"$work/log"; rm -f "$work/kat-broken"
    RANDD_FAULTS=kat=blake2b RANDD_FAULTS_SWITCH=$work/kat-broken LD_PRELOAD=$LIBFAULT \
        "$RANDD" --foreground --config "$work/randd.conf" --socket "$RANDD_SOCKET" \
        2>"$work/log" &
    pid=$!
    if ! wait_for "randd ready" key_is ready true; then
        fail "not ready: $(cat "$work/log")"; stop_randd; return
    fi
    # A prediction-resistant reply of 16 MiB begun before the failure, read slowly: its own
    # generator must stop with the pool's, not send the rest after output stopped.
    if [ "$1" = 0 ]; then
        rm -f "$work/read-on"
        "$FAIR_HOG" slow-read "$RANDD_SOCKET" 2 16777216 "$work/read-on" >"$work/slow" 2>&1 &
        reader=$!
        wait_for "a prediction-resistant reply begun" grep -q '^reading' "$work/slow" ||
            fail "slow-read: $(cat "$work/slow")"
    fi
    touch "$work/kat-broken"
    if [ "$1" = 0 ]; then
        out=$("$RANDCTL" selftest 2>&1); rc=$?
        check "selftest_interval 0, randctl selftest, BLAKE2b broken: exit 1, says which" \
            '[ $rc = 1 ] && [[ $out == *"self-test failed: BLAKE2b-512 known answer"* ]]'
    fi
    wait_for "output halted" halted
    if [ "$1" = 0 ]; then
        touch "$work/read-on"
        wait_exit "$reader"
        check "failed self-test: a prediction-resistant reply begun before it is cut, not sent on ($(tail -1 "$work/slow"))" \
            '[[ $(cat "$work/slow") =~ received\ ([0-9]+)\ of\ 16777216 ]] &&
             [ "${BASH_REMATCH[1]}" -lt 4194304 ]'
    fi
    kat="BLAKE2b-512 known answer (RFC 7693) does not match"
    check "failed self-test ($1): STATUS names the test, the log says output stopped" \
        'key_is selftest.last_result fail && key_is selftest.failed_test "$kat" &&
         in_log "self-test \((periodic|request)\) failed: BLAKE2b-512 .*all output stopped" \
            "$work/log"'
    out=$("$RANDCTL" --nonblock bytes 16 --hex 2>&1); rc=$?
    check "failed self-test ($1): no output (NOT_READY, exit 5)" \
        '[ $rc = 5 ] && [[ ! $out =~ [0-9a-f]{32} ]]'
    out=$(timeout 2 "$RANDCTL" bytes 16 --hex 2>/dev/null); rc=$?
    check "failed self-test ($1): a blocking request waits, gets nothing" \
        '[ $rc = 124 ] && [ -z "$out" ]'
    check "failed self-test ($1): metrics say 0, not ready, a failure counted" \
        '[ "$(metric randd_selftest_last_success)" = 0 ] && [ "$(metric randd_ready)" = 0 ] &&
         [ "$(metric randd_selftest_failures_total)" -ge 1 ]'
    rm "$work/kat-broken"
    if [ "$1" = 0 ]; then
        check "failed self-test, primitives mended: still halted without a re-test" halted
        out=$("$RANDCTL" selftest 2>&1); rc=$?
        check "randctl selftest after the mend: passes, output resumes" \
            '[ $rc = 0 ] && [[ $out == *"output resumes"* ]]'
    fi
    wait_for "output resumed" key_is ready true
    out=$(timeout "$WAIT" "$RANDCTL" bytes 16 --hex); rc=$?
    check "clean re-test ($1): serving again, the log says so" \
        '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{32}$ ]] && key_is selftest.last_result pass &&
         in_log "self-test \((periodic|request)\) passed: output resumes" "$work/log"'
    stop_randd
}

# --- induced health test failures on every kind of source -------------------------------------
source_present() { "$RANDCTL" status --keys | grep -q "^sources\[[0-9]*\]\.name: $1$"; }
runs_test() { "$RANDCTL" status --keys | awk -F': ' -v s="$1" -v t="$2" '
    $1 ~ /^sources\[[0-9]+\]\.name$/ { split($1, a, "."); p = ($2 == s) ? a[1] : "" }
    p != "" && index($1, p ".health_tests[") == 1 && $2 == t { found = 1 }
    END { exit !found }'; }
# The source's reason, whole (status_of stops at its first ": ").
reason_of() { status_keys | awk -v s="$1" '
    $1 ~ /^sources\[[0-9]+\]\.name:$/ { split($1, a, "."); p = ($2 == s) ? a[1] : "" }
    p != "" && $1 == p ".reason:" { sub(/^[^:]*: /, ""); print; exit }'; }
# quarantined_since SOURCE R: STATUS (the snapshot) shows SOURCE quarantined, or, read after
# its 1 s back-off on a loaded machine, the log shows its retry number R + 1 begun.
quarantined_since() {
    field_is "$1" state quarantined || in_log_n "source $1: retrying after quarantine" $(($2 + 1))
}
readmitted() { field_is "$1" state healthy && in_log_n "source $1: start-up test passed" "$2"; }
inject_each() {
    local s=$1 t expected n
    for t in rct apt lag stuck; do
        if ! runs_test "$s" "$t"; then
            out=$("$RANDCTL" inject-failure "$s" "$t" 2>&1); rc=$?
            check "inject-failure $s $t: refused, the source runs no such test" \
                '[ $rc = 1 ] && [[ $out == *"source $s runs no $t test"* ]] &&
                 ! field_is "$s" state quarantined'
            continue
        fi
        wait_for "$s healthy" field_is "$s" state healthy || continue
        n=$(grep -c "source $s: start-up test passed" "$work/log")
        r=$(grep -c "source $s: retrying after quarantine" "$work/log")
        injected=$(status_of "$s" injected_failures); hf=$(status_of "$s" health_failures)
        out=$("$RANDCTL" inject-failure "$s" "$t" 2>&1); rc=$?
        # One reading of STATUS for all its fields: the quarantine lasts 1 or 2 s (backoff),
        # and five readings on a loaded machine took longer.
        "$RANDCTL" status --keys >"$work/status" 2>&1
        status_snapshot=$work/status
        case $t in
        rct) expected="repetition count test" ;; apt) expected="adaptive proportion test" ;;
        lag) expected="lag test" ;; stuck) expected="stuck test" ;;
        esac
        check "inject-failure $s $t: quarantined by that test, STATUS says so and why" \
            '[ $rc = 0 ] && quarantined_since "$s" "$r" && field_is "$s" failed_test "$t" &&
             [[ $(reason_of "$s") == "$expected"*"(induced: randctl inject-failure)" ]] &&
             field_is "$s" injected_failures $((injected + 1)) &&
             field_is "$s" health_failures $((hf + 1))'
        status_snapshot=
        want="randd_source_injected_failures_total{source=\"$s\"} $((injected + 1))"
        check "inject-failure $s $t: the log line, the metric" \
            'in_log "source $s: quarantined: $expected.*induced" "$work/log" &&
             "$RANDCTL" metrics | grep -qx "$want"'
        wait_for "$s re-admitted after a fresh start-up test" readmitted "$s" $((n + 1))
        check "inject-failure $s $t: re-admitted after a fresh start-up test" \
            'readmitted "$s" $((n + 1))'
    done
}

induced() {
    start_with_config "${BASE[@]}" "jitter = yes" "selftest_interval = 0" \
        "trusted_group = nogroup"
    wait_for "ready" key_is ready true
    # The CPU source by its name here (rdseed, rndrrs, darn or trng).
    cpu=$("$RANDCTL" status --keys | sed -n 's/^cpu_source\.name: //p')
    for s in ${cpu:-rdseed} getrandom hwrng jitter; do
        if ! source_present "$s"; then
            echo "SKIP: inject-failure on $s: this machine has no $s source" \
                 "($(grep "$s" "$work/log" | head -1))"
            continue
        fi
        wait_for "$s healthy" field_is "$s" state healthy
        out=$(as_nobody "$RANDCTL" inject-failure "$s" rct 2>&1); rc=$?
        check "inject-failure $s as nobody: refused (exit 4), the source untouched" \
            '[ $rc = 4 ] && [[ $out == *"INJECT_FAILURE needs uid 0"* ]] &&
             field_is "$s" state healthy && field_is "$s" injected_failures 0'
        out=$(setpriv --reuid=nobody --regid=nogroup --init-groups \
              "$RANDCTL" inject-failure "$s" apt 2>&1); rc=$?
        check "inject-failure $s by the trusted_group: refused (exit 4)" \
            '[ $rc = 4 ] && field_is "$s" injected_failures 0'
        inject_each "$s"
    done
    out=$("$RANDCTL" inject-failure nosuch rct 2>&1); rc=$?
    check "inject-failure on no such source: refused, the sources listed" \
        '[ $rc = 1 ] && [[ $out == *"no source named nosuch; sources: "* ]]'
    out=$("$RANDCTL" inject-failure getrandom often 2>&1); rc=$?
    check "inject-failure of no such test: usage (exit 2)" '[ $rc = 2 ]'
    stop_randd
}

periodic
on_demand
if [ -n "${RANDD_SANITIZED:-}" ]; then
    echo "SKIP: forced self-test failure: LD_PRELOAD fault injection does not mix with ASan"
elif [ ! -e "$LIBFAULT" ]; then
    echo "SKIP: forced self-test failure: $LIBFAULT not built"
else
    # At start a failure is fatal: randd refuses to serve at all.
    printf '%s\n' "${BASE[@]}" >"$work/randd.conf"
    RANDD_FAULTS=kat=blake2b LD_PRELOAD=$LIBFAULT "$RANDD" --foreground \
        --config "$work/randd.conf" --socket "$RANDD_SOCKET" 2>"$work/log" &
    wait_exit $!; rc=$?
    check "a failed self-test at start: randd exits 1 and says which test" \
        '[ $rc = 1 ] &&
         in_log "self-test failed: BLAKE2b-512 known answer .*refusing to serve" "$work/log"'
    forced_failure 1
    forced_failure 0
fi
induced
finish test_selftest
