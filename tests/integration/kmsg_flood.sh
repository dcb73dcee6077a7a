#!/usr/bin/env bash
# A kernel-log flood cannot stop service. Any local user can make the kernel lose log records
# (bridge port lines from a user and network namespace of their own), and randd must take a
# loss as a possible VM fork: the records may have held the kernel's fork line. Such a loss,
# unlike the kernel's own line, must not halt ordinary output: randd rekeys its generator from
# getrandom at once and serves on (daemon/pool.c, pool_vm_maybe_cloned). Here jitter is the
# only source randd credits (getrandom = no: no kernel credit to reseed from), randd is
# stopped while nobody overruns the ring, and then:
#   - NONBLOCK requests that waited in the socket through the stop are answered, none
#     NOT_READY (the old halt answered them NOT_READY until jitter had 256 fresh bits);
#   - at least 90% of ordinary requests made after the loss are served within 100 ms;
#   - the generator was rekeyed (pool.vm_rekeys) and the generation word clients map moved, so
#     neither randd nor a client's in-process generator serves the state from before the loss.
#     That a rekeyed pool serves no byte of the old state's stream is shown on the generator
#     itself, by twin pools (tests/test_pool.c, a_possible_vm_fork_rekeys_at_once_...).
# Not in `make check` (named so its wildcard misses it): it writes a few thousand lines to the
# shared kernel log. `make check-kmsg-lost` runs it, as root.
. "$(dirname "$0")/common.sh"
PROBE=${LATENCY_PROBE:-build/tests/latency-probe}
BURST=200               # NONBLOCK requests waiting through the stop
REQUESTS=100            # ordinary requests after it, 10 ms apart
if [ "$(id -u)" != 0 ]; then echo "SKIP: kmsg_flood.sh needs root"; exit 0; fi
[ -x "$PROBE" ] || { echo "SKIP: kmsg_flood.sh: no $PROBE (make $PROBE)"; exit 0; }
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
if ! as_nobody unshare -rn ip link add br0 type bridge 2>/dev/null; then
    echo "SKIP: nobody cannot make a bridge in a user namespace of its own"; exit 0
fi
export RANDD_SOCKET=$work/randd.sock
generation_word() {
    python3 -c "import struct, sys; print(struct.unpack('=Q', open(sys.argv[1], 'rb').read(8))[0])" \
        "$RANDD_SOCKET.generation"
}
ready() { [ "$(status_key ready)" = true ]; }

start_with_config "cpu_source = no" "hwrng_device = $work/missing" "jitter = yes" "getrandom = no"
wait_for "randd to be ready on jitter alone" ready || { fail "$(cat "$work/log")"; finish "$0"; exit; }
if [ "$(status_key vmgenid.kernel_log)" != true ]; then
    fail "randd does not watch /dev/kmsg: $(cat "$work/log")"; finish "$0"; exit
fi
gen0=$(status_key pool.vm_generations)
rekeys0=$(status_key pool.vm_rekeys)
lost0=$(status_key vmgenid.kernel_log_lost)
word0=$(generation_word) || { fail "no generation word beside the socket"; finish "$0"; exit; }

python3 -c "
for i in range(1000): print('link set v0 down'); print('link set v0 up')" >"$work/batch"
chmod 644 "$work/batch"
kill -STOP "$pid"
"$PROBE" --nonblock-burst "$RANDD_SOCKET" $BURST 32 >"$work/burst" 2>"$work/burst.err" &
burst=$!
wait_for "the NONBLOCK requests to wait in the socket" in_log '^sent$' "$work/burst"
# nobody floods, a batch of about a thousand records at a time, until a reader parked at the
# log's end when randd stopped is overrun: randd's next read then fails with EPIPE too.
python3 - "$work/batch" >"$work/flood" 2>&1 <<'EOF'
import os, subprocess, sys
parked = os.open('/dev/kmsg', os.O_RDONLY | os.O_NONBLOCK)
os.lseek(parked, 0, os.SEEK_END)
for batch in range(1, 41):
    subprocess.run(['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups', 'unshare',
                    '-rn', 'sh', '-c', 'ip link add br0 type bridge && ip link add v0 type veth '
                    'peer name v1 && ip link set v0 master br0 && ip link set br0 up && '
                    'ip -batch ' + sys.argv[1]], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    try:
        os.read(parked, 8192)
    except BrokenPipeError:
        print(f"overrun after {batch} batches"); sys.exit(0)
    except BlockingIOError:
        pass
print("40 batches did not overrun the kernel log"); sys.exit(1)
EOF
flooded=$?
kill -CONT "$pid"
if [ $flooded != 0 ]; then fail "$(cat "$work/flood")"; finish "$0"; exit; fi
echo "flood: $(cat "$work/flood")"
"$PROBE" "$RANDD_SOCKET" $REQUESTS 10 4096 >"$work/times" 2>"$work/probe.err" ||
    fail "latency-probe: $(cat "$work/probe.err")"
wait_exit $burst || fail "the NONBLOCK burst: $(cat "$work/burst.err")"

lost_more() { [ "$(status_key vmgenid.kernel_log_lost)" -gt "$lost0" ]; }
wait_for "randd to count the lost records" lost_more || fail "no loss counted after the flood"
read -r ok not_ready < <(awk '$1 == "ok" { print $2, $4 }' "$work/burst")
echo "NONBLOCK requests waiting through the loss: ${ok:-?} served, ${not_ready:-?} NOT_READY"
[ "${ok:-0}" = $BURST ] && [ "${not_ready:-1}" = 0 ] &&
    pass "a kernel log loss does not stop output: all $BURST waiting NONBLOCK requests served" ||
    fail "a kernel log loss stopped output: of $BURST NONBLOCK requests ${ok:-?} served," \
        "${not_ready:-?} NOT_READY; randd: $(grep -E 'not serving|kernel log' "$work/log" | head -3)"
read -r served fast max < <(awk '{ n++; if ($2 <= 0.1) f++; if ($2 > m) m = $2 }
    END { printf "%d %d %.3f\n", n, f, m }' "$work/times")
echo "after the loss: $fast of $served ordinary requests within 100 ms (slowest $max s)"
[ "$served" = $REQUESTS ] && [ $((fast * 10)) -ge $((served * 9)) ] &&
    pass "at least 90% of ordinary requests served within 100 ms after a kernel log loss" ||
    fail "$fast of $served ordinary requests within 100 ms after the loss (wanted 90% of" \
        "$REQUESTS); slowest $max s"
in_log 'not serving' "$work/log" &&
    fail "randd stopped serving: $(grep 'not serving' "$work/log" | head -1)"
gen1=$(status_key pool.vm_generations)
rekeys1=$(status_key pool.vm_rekeys)
word1=$(generation_word)
[ "$rekeys1" -gt "$rekeys0" ] && [ "$gen1" -gt "$gen0" ] && [ "$word1" -gt "$word0" ] &&
    pass "the loss rekeyed the generator (vm_rekeys $rekeys0 -> $rekeys1) and moved the" \
        "generation clients see ($word0 -> $word1): nothing served from the state before" ||
    fail "after the loss: vm_rekeys $rekeys0 -> $rekeys1, vm_generations $gen0 -> $gen1," \
        "generation word $word0 -> $word1 (each should have moved)"
# The operator sees it: the metric and the status view's vmgenid line.
"$RANDCTL" metrics | grep -qx "randd_vm_rekeys_total $rekeys1" &&
    pass "randd_vm_rekeys_total reads $rekeys1" ||
    fail "metrics: $("$RANDCTL" metrics | grep vm_rekeys)"
"$RANDCTL" status | grep -q "the generator rekeyed at once $rekeys1 time" &&
    pass "randctl status says the generator rekeyed at once" ||
    fail "status view: $("$RANDCTL" status | grep vmgenid)"
finish "$0"
