#!/usr/bin/env bash
# randd started as root drops privileges once everything is open: /proc/PID/status of the
# running daemon shows only CAP_SYS_ADMIN (none without the kernel feed) in every set, the
# configured user, NoNewPrivs, and non-dumpable (/proc/PID files owned by root).
. "$(dirname "$0")/common.sh"
if [ "$(id -u)" != 0 ]; then echo "SKIP: test_privileges.sh needs root"; exit 0; fi
field() { sed -n "s/^$1:[[:space:]]*//p" "/proc/$pid/status"; }

start() {   # config text
    printf '%b' "$1" >"$work/randd.conf"
    : >"$work/log"      # here, not in the child: never the last daemon's log
    "$RANDD" --config "$work/randd.conf" --socket "$work/randd.sock" 2>>"$work/log" &
    pid=$!
    wait_for "randd to answer STATUS" answers "$work/randd.sock" || fail "randd did not start: $(cat "$work/log")"
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null; pid=; }

# check_threads PRM_EFF BND: every thread beside the main one has CapPrm and CapEff matching
# the regex PRM_EFF, CapBnd matching BND, and NoNewPrivs; and there are at least 4 of them.
check_threads() {
    local threads=0 task name status caps
    for task in /proc/"$pid"/task/*; do
        [ "${task##*/}" = "$pid" ] && continue
        # A thread that ended since the glob (a start-up assessment) has nothing to read.
        name=$(cat "$task/comm" 2>/dev/null) && status=$(cat "$task/status" 2>/dev/null) &&
            [ -n "$status" ] || continue
        caps=$(sed -n 's/^\(CapPrm\|CapEff\|CapBnd\|NoNewPrivs\):[[:space:]]*//p' <<<"$status" | tr '\n' ' ')
        threads=$((threads + 1))
        [[ $caps =~ ^$1\ $1\ $2\ 1\ $ ]] && pass "thread $name: CapPrm, CapEff, CapBnd and NoNewPrivs as wanted" ||
            fail "thread $name: CapPrm CapEff CapBnd NoNewPrivs = $caps"
    done
    [ "$threads" -ge 4 ] && pass "$threads threads beside the main one checked" ||
        fail "only $threads threads beside the main one: $(cat /proc/"$pid"/task/*/comm | tr '\n' ' ')"
}

sys_admin=0000000000200000     # 1 << CAP_SYS_ADMIN (21)
# Jitter's worker, the PRIME worker and two serving loops are threads beside the main one.
start "user = nobody\nhwrng_device = $work/hwrng\njitter = yes\nworkers = 2\n"
for set in CapPrm CapEff CapBnd; do
    [ "$(field $set)" = $sys_admin ] && pass "$set = CAP_SYS_ADMIN only" || fail "$set = $(field $set)"
done
[ "$(field CapInh)" = 0000000000000000 ] && [ "$(field CapAmb)" = 0000000000000000 ] &&
    pass "no inheritable or ambient capabilities" || fail "CapInh $(field CapInh) CapAmb $(field CapAmb)"
[ "$(field NoNewPrivs)" = 1 ] && pass "NoNewPrivs" || fail "NoNewPrivs = $(field NoNewPrivs)"
# Capabilities and no-new-privs are each thread's own: every thread but the main loop's,
# even one started before the drop, holds none at all. (A serving loop starts after the drop,
# so its bounding set is the main thread's: CAP_SYS_ADMIN or nothing, which only an exec
# would use, and NoNewPrivs forbids that gaining anything.)
check_threads '0{16}' "(0{16}|$sys_admin)"
[ "$(field Uid | cut -f1)" = 65534 ] && pass "runs as nobody" || fail "Uid $(field Uid)"
[ "$(stat -c %U "/proc/$pid/environ")" = root ] && pass "not dumpable (/proc/PID owned by root)" ||
    fail "dumpable: /proc/$pid/environ owned by $(stat -c %U "/proc/$pid/environ")"
# The stand-in hwrng (common.sh) is kernel-creditable, so a top-up must happen on any machine.
topped_up() {
    json=$(RANDD_SOCKET=$work/randd.sock "$RANDCTL" status --json)
    grep -q '"kernel":{"enabled":true,"initialised":true,"topups":[1-9]' <<<"$json"
}
wait_for "a kernel top-up in STATUS" topped_up
grep -q '"kernel":{"enabled":true,"initialised":true,"topups":[1-9]' <<<"$json" &&
    pass "kernel fed after the drop (CAP_SYS_ADMIN kept works)" ||
    fail "no top-up after the drop: $json"
if [ -n "${RANDD_SANITIZED:-}" ]; then
    echo "SKIP: AddressSanitizer makes mlock a no-op"
else
    grep -q 'VmLck:[[:space:]]*[1-9]' "/proc/$pid/status" && pass "generator state locked in memory" ||
        fail "nothing locked: $(grep VmLck /proc/$pid/status)"
fi
stop
# As nobody, randd cannot remove its socket from a directory root owns: it says so, and the
# next randd replaces the socket as stale.
[ -S "$work/randd.sock" ] && grep -q "$work/randd.sock: socket left in place: Permission denied" \
    "$work/log" && pass "user = nobody: the socket left behind is logged" ||
    fail "user = nobody: socket left ($(ls -l "$work/randd.sock" 2>&1)) without the log line: $(cat "$work/log")"

start "kernel_topup = no\njitter = yes\nworkers = 2\n"
grep -q "replacing a stale socket" "$work/log" && pass "the next randd replaces the left socket" ||
    fail "no stale socket replaced: $(cat "$work/log")"
for set in CapPrm CapEff CapBnd; do
    [ "$(field $set)" = 0000000000000000 ] && pass "kernel_topup = no: $set empty" || fail "$set = $(field $set)"
done
# Still root: threads keep CAP_SETUID and CAP_SETGID at most (a user switch needs them in
# every thread), never CAP_SYS_ADMIN or the rest of root's.
check_threads '(0{16}|00000000000000c0)' '0{16}'
stop

finish test_privileges.sh
