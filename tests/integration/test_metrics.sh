#!/usr/bin/env bash
# randctl metrics: Prometheus text that promtool accepts, counters that move with requests,
# the VM generation watches as randd has them, and --output writing the file atomically (no
# temp file left, readable by the collector).
. "$(dirname "$0")/common.sh"
export RANDD_SOCKET=$work/randd.sock
metric() { "$RANDCTL" metrics | sed -n "s/^$1 //p"; }

: >"$work/randd.conf"
"$RANDD" --config "$work/randd.conf" --socket "$RANDD_SOCKET" 2>/dev/null &
pid=$!
wait_for "randd to answer STATUS" answers || fail "randd did not start"

"$RANDCTL" metrics >"$work/out"; rc=$?
[ $rc = 0 ] && grep -q '^randd_ready 1$' "$work/out" && pass "metrics: randd_ready 1" || fail "metrics: $(head -5 "$work/out")"
grep -q '^# TYPE randd_requests_total counter$' "$work/out" && pass "HELP and TYPE lines" || fail "no TYPE line"
if command -v promtool >/dev/null; then
    out=$(promtool check metrics <"$work/out" 2>&1) && pass "promtool check metrics" || fail "promtool: $out"
else
    echo "SKIP: promtool (Debian package prometheus) not installed"
fi

before_req=$(metric 'randd_requests_total{op="bytes"}')
before_bytes=$(metric randd_served_bytes_total)
"$RANDCTL" bytes 32 >/dev/null
"$RANDCTL" bytes 100 >/dev/null
after_req=$(metric 'randd_requests_total{op="bytes"}')
after_bytes=$(metric randd_served_bytes_total)
[ $((after_req - before_req)) = 2 ] && pass "requests counter moved by 2" || fail "requests: $before_req -> $after_req"
[ $((after_bytes - before_bytes)) = 132 ] && pass "served bytes moved by 132" || fail "bytes: $before_bytes -> $after_bytes"
grep -q '^randd_source_state{source="getrandom",state="healthy"} 1$' "$work/out" &&
    pass "per-source state labelled by source" || fail "no per-source state"

# The CPU source: 1 or 0 as STATUS has it in use, labelled by its name on this CPU.
cpu_name=$("$RANDCTL" status --keys | sed -n 's/^cpu_source\.name: //p')
cpu_in_use=$("$RANDCTL" status --keys | sed -n 's/^cpu_source\.in_use: //p')
[ -n "$cpu_name" ] && [ "$(metric "randd_cpu_source_in_use{source=\"$cpu_name\"}")" = \
    "$([ "$cpu_in_use" = true ] && echo 1 || echo 0)" ] &&
    pass "randd_cpu_source_in_use{source=\"$cpu_name\"} follows STATUS (in use: $cpu_in_use)" ||
    fail "randd_cpu_source_in_use: $(grep cpu_source "$work/out"); STATUS in use: $cpu_in_use"

# randd as root opens both VM generation watches; no announcement has come.
for watch in kernel_log uevent; do
    [ "$(metric "randd_vm_generation_watch{watch=\"$watch\"}")" = 1 ] &&
        [ "$(metric "randd_vm_generation_announcements_total{watch=\"$watch\"}")" = 0 ] &&
        pass "VM generation watch $watch: 1, no announcement" ||
        fail "VM generation watch $watch: $(grep "watch=\"$watch\"" "$work/out")"
done
[ "$(metric randd_vm_generation_kernel_log_lost_total)" = 0 ] &&
    pass "no kernel log records lost" || fail "kernel log lost: $(grep _lost_ "$work/out")"

# Every op STATUS counts, and every status it counts replies by, is exported: a list of names
# of randctl's own once lacked "prime".
"$RANDCTL" status --keys >"$work/status"
"$RANDCTL" metrics >"$work/out"
for set in "requests op" "replies status"; do
    set -- $set
    names=$(sed -n "s/^$1\.\([A-Za-z_]*\): .*/\1/p" "$work/status")
    missing=
    for name in $names; do
        grep -q "^randd_$1_total{$2=\"$name\"} " "$work/out" || missing="$missing $name"
    done
    [ -n "$names" ] && [ -z "$missing" ] && pass "every $2 STATUS counts is in metrics:" $names ||
        fail "$2s STATUS counts that metrics lacks:${missing:- (STATUS counts none)}"
done

# randctl(1)'s METRICS list: every metric it names is exported with the type it gives, every
# exported metric is in it, and the STATUS field it names as the origin exists.
man=$(dirname "$0")/../../man/randctl.1
sed -n '/^\.SH METRICS/,/^\.SH /{/^\.B randd_/{s/^\.B //;N;s/\n/ /;p}}' "$man" >"$work/documented"
documented=$(sed 's/[{ ].*//' "$work/documented" | sort)
exported=$(sed -n 's/^# TYPE \([a-z_]*\) .*/\1/p' "$work/out" | sort)
[ -n "$documented" ] && [ "$documented" = "$exported" ] &&
    pass "randctl(1) lists exactly the $(wc -l <<<"$exported") metrics exported" ||
    fail "randctl(1)'s METRICS and randctl metrics differ: $(diff <(echo "$documented") <(echo "$exported"))"
while read -r name type rest; do
    name=${name%%\{*}
    origin=$(sed 's/^[^:]*: *//; s/ .*//; s/\\fI.*//; s/\[\]/[0]/' <<<"$rest")
    grep -q "^# TYPE $name ${type%,}\$" "$work/out" ||
        fail "randctl(1) says $name is a ${type%,}: $(grep "^# TYPE $name " "$work/out")"
    grep -q "^${origin//[/\\[}" "$work/status" ||
        fail "randctl(1) says $name comes from STATUS's $origin, which STATUS lacks"
done <"$work/documented"
pass "randctl(1)'s metric types and STATUS origins checked"

mkdir "$work/textfile"
"$RANDCTL" metrics --output "$work/textfile/randd.prom" && [ -f "$work/textfile/randd.prom" ] &&
    [ "$(ls "$work/textfile")" = randd.prom ] && [ "$(stat -c %a "$work/textfile/randd.prom")" = 644 ] &&
    pass "--output writes one 0644 file, no temp left" || fail "--output: $(ls -l "$work/textfile")"
"$RANDCTL" metrics --output "$work/missing-dir/randd.prom" 2>/dev/null; rc=$?
[ $rc = 1 ] && pass "--output into a missing directory fails (exit 1)" || fail "--output missing dir: exit $rc"

kill "$pid"; wait "$pid" 2>/dev/null; pid=
"$RANDCTL" metrics --output "$work/textfile/randd.prom" 2>/dev/null; rc=$?
[ $rc = 3 ] && pass "daemon down: exit 3" || fail "daemon down: exit $rc"
# Down is not stale: the file is rewritten to say so, for RanddDown (not RanddMetricsStale).
[ "$(grep -v '^#' "$work/textfile/randd.prom")" = "randd_up 0" ] &&
    pass "daemon down: the file holds randd_up 0 alone" ||
    fail "daemon down: the file holds $(grep -v '^#' "$work/textfile/randd.prom" | head -3)"

# Nothing watched (ProtectKernelLogs=yes and no AF_NETLINK, as libfault fakes): both watches 0.
if [ -n "${RANDD_SANITIZED:-}" ]; then
    echo "SKIP: no VM generation watch: LD_PRELOAD fault injection does not mix with ASan"
elif [ -n "${LIBFAULT:-}" ] && [ -f "$LIBFAULT" ]; then
    LD_PRELOAD=$LIBFAULT RANDD_FAULTS=vmgenid=none \
        "$RANDD" --config "$work/randd.conf" --socket "$RANDD_SOCKET" 2>/dev/null &
    pid=$!
    wait_for "randd to answer STATUS" answers || fail "randd did not start"
    "$RANDCTL" metrics >"$work/out"
    [ "$(grep -c '^randd_vm_generation_watch{watch="[a-z_]*"} 0$' "$work/out")" = 2 ] &&
        pass "no VM generation watch: both 0" ||
        fail "no VM generation watch: $(grep '^randd_vm_generation_watch' "$work/out")"
    kill "$pid"; wait "$pid" 2>/dev/null; pid=
else
    echo "SKIP: no VM generation watch (needs LIBFAULT)"
fi

# cpu_source = no: 0 on any CPU, the source still named.
printf 'cpu_source = no\n' >"$work/no-cpu.conf"
"$RANDD" --config "$work/no-cpu.conf" --socket "$RANDD_SOCKET" 2>/dev/null &
pid=$!
wait_for "randd to answer STATUS" answers || fail "randd did not start"
[ "$(metric "randd_cpu_source_in_use{source=\"$cpu_name\"}")" = 0 ] &&
    pass "cpu_source = no: randd_cpu_source_in_use{source=\"$cpu_name\"} 0" ||
    fail "cpu_source = no: $("$RANDCTL" metrics | grep cpu_source)"
kill "$pid"; wait "$pid" 2>/dev/null; pid=

finish test_metrics.sh
