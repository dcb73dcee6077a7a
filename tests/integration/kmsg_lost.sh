#!/usr/bin/env bash
# A kernel log record randd did not read before it was overwritten may have been the kernel's
# "crng reseeded due to virtual machine fork": randd must then act as on a fork (its state
# may now be every clone's). A local user can overwrite the whole ring on their own: in a
# user and network namespace of their own, every bridge port state change is a kernel log
# line, unratelimited (~7500 records a second here, from nobody). So while randd is not
# reading (stopped here; in life: descheduled, busy, just resumed), nobody floods the ring
# past randd's position, and the test wants the loss counted AND the VM generation moved.
# Not in `make check` (named so its wildcard misses it): it fills the shared kernel log with a
# few ten thousand lines. `make check-kmsg-lost` runs it.
. "$(dirname "$0")/common.sh"
if [ "$(id -u)" != 0 ]; then echo "SKIP: kmsg_lost.sh needs root"; exit 0; fi
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
if ! as_nobody unshare -rn ip link add br0 type bridge 2>/dev/null; then
    echo "SKIP: nobody cannot make a bridge in a user namespace of its own"; exit 0
fi
json_field() {   # KEY: vmgenid.KEY or pool.KEY from STATUS
    "$RANDCTL" --socket "$work/randd.sock" status --json | python3 -c "
import json, sys
s = json.load(sys.stdin)
print(s.get('vmgenid', {}).get('$1', s.get('pool', {}).get('$1', '')))"
}
python3 -c "
for i in range(20000): print('link set v0 down'); print('link set v0 up')" >"$work/batch"
chmod 644 "$work/batch"
flood() {
    as_nobody unshare -rn sh -c "ip link add br0 type bridge && ip link add v0 type veth \
        peer name v1 && ip link set v0 master br0 && ip link set br0 up && \
        ip -batch $work/batch" >"$work/flood.log" 2>&1 || fail "flood: $(cat "$work/flood.log")"
}
# Whether a reader that stopped at the flood's start has been overrun: its next read fails
# with EPIPE. Reads one record otherwise, which keeps it behind the flood.
overrun() { python3 -c "
import os, sys
fd = int(sys.argv[1])
try:
    os.read(fd, 8192)
except BrokenPipeError:
    sys.exit(0)
except BlockingIOError:
    pass
sys.exit(1)" "$1"; }

: >"$work/randd.conf"
"$RANDD" --config "$work/randd.conf" --socket "$work/randd.sock" 2>"$work/log" &
pid=$!
wait_for "randd to answer STATUS" answers "$work/randd.sock" ||
    fail "randd did not start: $(cat "$work/log")"
if [ "$(json_field kernel_log)" != True ]; then
    fail "randd does not watch /dev/kmsg: $(cat "$work/log")"; finish "$0"; exit
fi
gen0=$(json_field vm_generations)
lost0=$(json_field kernel_log_lost)

exec 7</dev/kmsg
python3 -c "import os; os.lseek(7, 0, os.SEEK_END)"
kill -STOP "$pid"
overran=
for i in 1 2 3 4 5 6; do
    flood
    overrun 7 && overran=yes && break
done
kill -CONT "$pid"
[ -n "$overran" ] || { fail "six floods did not overrun the kernel log"; finish "$0"; exit; }
lost_more() { [ "$(json_field kernel_log_lost)" -gt "$lost0" ]; }
wait_for "randd to count the lost records" lost_more &&
    pass "randd counted the overwritten records"
gen1=$(json_field vm_generations)
[ "$gen1" -gt "$gen0" ] && pass "a lost kernel log record is taken as a possible VM fork" ||
    fail "records were lost unread (the VM fork line may have been one), but" \
        "vm_generations stayed $gen1"
finish "$0"
