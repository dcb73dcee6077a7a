#!/usr/bin/env bash
# randd started as root drops privileges once everything is open: one thread, the kernel
# feed's (randd-kernel), holds CAP_SYS_ADMIN and no other capability; every other thread,
# the main one (which serves clients with workers = 1) included, holds none, so that the
# kernel's limits (descriptors in flight) apply to them; CAP_SYS_ADMIN alone is left in the
# bounding set (nothing without the kernel feed); the configured user, NoNewPrivs, and
# non-dumpable (/proc/PID files owned by root).
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

# check_threads PRM_EFF BND [KERNEL [MIN]]: every thread beside the main one and randd-kernel
# has CapPrm and CapEff matching the regex PRM_EFF, CapBnd matching BND, and NoNewPrivs; and
# there are at least MIN (4) of them. With KERNEL, there is one randd-kernel thread and its CapPrm and
# CapEff are KERNEL; without, there is none.
check_threads() {
    local threads=0 kernel=0 task name status caps
    for task in /proc/"$pid"/task/*; do
        [ "${task##*/}" = "$pid" ] && continue
        # A thread that ended since the glob (a start-up assessment) has nothing to read.
        name=$(cat "$task/comm" 2>/dev/null) && status=$(cat "$task/status" 2>/dev/null) &&
            [ -n "$status" ] || continue
        caps=$(sed -n 's/^\(CapPrm\|CapEff\|CapBnd\|NoNewPrivs\):[[:space:]]*//p' <<<"$status" | tr '\n' ' ')
        if [ "$name" = randd-kernel ]; then
            kernel=$((kernel + 1))
            [[ $caps =~ ^${3:-none}\ ${3:-none}\ $2\ 1\ $ ]] &&
                pass "thread randd-kernel: CAP_SYS_ADMIN alone, NoNewPrivs" ||
                fail "thread randd-kernel: CapPrm CapEff CapBnd NoNewPrivs = $caps"
            continue
        fi
        threads=$((threads + 1))
        [[ $caps =~ ^$1\ $1\ $2\ 1\ $ ]] && pass "thread $name: CapPrm, CapEff, CapBnd and NoNewPrivs as wanted" ||
            fail "thread $name: CapPrm CapEff CapBnd NoNewPrivs = $caps"
    done
    [ "$threads" -ge "${4:-4}" ] && pass "$threads threads beside the main one checked" ||
        fail "only $threads threads beside the main one: $(cat /proc/"$pid"/task/*/comm | tr '\n' ' ')"
    [ "$kernel" = "$([ -n "${3:-}" ] && echo 1 || echo 0)" ] &&
        pass "$kernel randd-kernel thread" || fail "$kernel randd-kernel threads"
}
# check_main: the main thread, which serves EGD (and protocol v1 with workers = 1), holds no
# capability; only CAP_SYS_ADMIN (or nothing: BND) is left in its bounding set.
check_main() {
    for set in CapPrm CapEff; do
        [ "$(field $set)" = 0000000000000000 ] && pass "main thread: $set empty" ||
            fail "main thread: $set = $(field $set)"
    done
    [ "$(field CapBnd)" = "$1" ] && pass "main thread: CapBnd = $1" || fail "CapBnd = $(field CapBnd)"
}

sys_admin=0000000000200000     # 1 << CAP_SYS_ADMIN (21)
# Jitter's worker, the PRIME worker and two serving loops are threads beside the main one.
start "user = nobody\nhwrng_device = $work/hwrng\njitter = yes\nworkers = 2\n"
check_main $sys_admin
[ "$(field CapInh)" = 0000000000000000 ] && [ "$(field CapAmb)" = 0000000000000000 ] &&
    pass "no inheritable or ambient capabilities" || fail "CapInh $(field CapInh) CapAmb $(field CapAmb)"
[ "$(field NoNewPrivs)" = 1 ] && pass "NoNewPrivs" || fail "NoNewPrivs = $(field NoNewPrivs)"
# Capabilities and no-new-privs are each thread's own: every thread but the main loop's,
# even one started before the drop, holds none at all. (A serving loop starts after the drop,
# so its bounding set is the main thread's: CAP_SYS_ADMIN or nothing, which only an exec
# would use, and NoNewPrivs forbids that gaining anything.)
check_threads '0{16}' "(0{16}|$sys_admin)" $sys_admin
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

# The defaults: workers = 1, so the main thread serves protocol v1 clients, and holds nothing
# still; the kernel feed works from its own thread.
start "hwrng_device = $work/hwrng\njitter = yes\n"
grep -q "replacing a stale socket" "$work/log" && pass "the next randd replaces the left socket" ||
    fail "no stale socket replaced: $(cat "$work/log")"
check_main $sys_admin
# No serving loop beside the main one: jitter's worker and the PRIME worker (the start-up
# assessment's thread may have ended already). No `user`: no thread keeps CAP_SETUID or
# CAP_SETGID either, as no switch would ever clear them.
check_threads '0{16}' "(0{16}|$sys_admin)" $sys_admin 2
wait_for "a kernel top-up in STATUS" topped_up || fail "workers = 1: no top-up: $json"
stop

start "kernel_topup = no\njitter = yes\nworkers = 2\n"
check_main 0000000000000000
# Still root, and no `user`: threads hold no capability at all.
check_threads '0{16}' '0{16}'
stop

finish test_privileges.sh
