#!/usr/bin/env bash
# randctl bytes --prediction-resistant / --full-entropy against a real build/randd, through
# librandd's randd_bytes_mode(): what each gives and the exit status scripts rely on for
# each way it can fail: 7 with no noise source (every one named with its whole reason when all
# are quarantined), 5 with --nonblock and not enough noise entropy now, 8 past --timeout.
# The noise source is a FIFO the test feeds as the hwrng device, so how much noise entropy
# exists is the test's to decide.
. "$(dirname "$0")/common.sh"
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }
export RANDD_SOCKET=$work/randd.sock
key() { status_key "$1"; }

# --- getrandom alone: no noise source, refused at once, saying why: exit 7 ------------------
start_with_config "cpu_source = no" "hwrng = no" "jitter = no"
for mode in --full-entropy --prediction-resistant; do
    out=$("$RANDCTL" bytes 32 $mode 2>"$work/err"); rc=$?
    check "getrandom alone: bytes 32 $mode: exit 7, no bytes, the reason on stderr ($(head -c 160 "$work/err"))" \
        '[ $rc = 7 ] && [ -z "$out" ] && grep -q "^randctl: bytes $mode: no healthy noise source" "$work/err" &&
         [ "$(grep -o "no healthy noise source" "$work/err" | wc -l)" = 1 ] &&
         grep -q "this mode: no noise source is configured (" "$work/err"'
done
out=$("$RANDCTL" bytes 32 2>/dev/null); rc=$?
check "getrandom alone: ordinary bytes are served as ever" '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{64}$ ]]'
stop_randd

# --- every noise source quarantined: each named with its whole reason, exit 7 ----------------
# Each APT reason is some 130 bytes: two of them once passed the 255 the reply kept, cut
# mid-word with no mark, a third lost. A source re-admitted before the request (a quarantine
# lasts a second or two) serves it: then again.
start_with_config "hwrng_device = $work/hwrng" "jitter = yes" "kernel_topup = no"
noise_sources=$(status_keys | awk -F': ' '$1 ~ /\.name$/ { n = $2 }
                                         $1 ~ /\.noise_source$/ && $2 == "true" { print n }')
healthy() { for s in $noise_sources; do field_is "$s" state healthy || return 1; done; }
rc=
for try in $(seq 10); do
    wait_for "every noise source healthy ($noise_sources)" healthy || break
    for s in $noise_sources; do "$RANDCTL" inject-failure "$s" apt >/dev/null; done
    "$RANDCTL" --nonblock bytes 32 --full-entropy >/dev/null 2>"$work/err"; rc=$?
    [ $rc = 7 ] && break
done
named=0
for s in $noise_sources; do
    grep -q "$s quarantined: adaptive proportion test: [^;]* (induced: randctl inject-failure)" \
        "$work/err" && named=$((named + 1))
done
check "$(echo $noise_sources) quarantined: exit 7, each named with its whole reason ($named; $(cat "$work/err"))" \
    '[ "$rc" = 7 ] && [ $named -ge 2 ] && [ $named = $(wc -w <<<"$noise_sources") ] &&
     [ "$(grep -o "(induced: randctl inject-failure)" "$work/err" | wc -l)" = $named ]'
stop_randd

# --- a noise source the test feeds -----------------------------------------------------------
# 48 KiB into the FIFO (within its 64 KiB buffer), the write end held open so that the source
# then blocks, healthy, with nothing more to give: at 2 credited bits a byte, less what the
# start-up test and the assessment read, a few KiB of full entropy at most.
mkfifo "$work/noise"
exec 7<>"$work/noise"
head -c 48K /dev/urandom >&7
start_with_config "cpu_source = no" "jitter = no" "kernel_topup = no" "hwrng_device = $work/noise"
wait_for "the FIFO hwrng healthy" field_is hwrng state healthy || fail "hwrng: $(cat "$work/log")"

full0=$(key requests.bytes_full); reseeds0=$(key noise.noise_reseeds)
out=$("$RANDCTL" bytes 64 --prediction-resistant 2>"$work/err"); rc=$?
check "bytes 64 --prediction-resistant: 128 hex digits, one noise reseed ($reseeds0 -> $(key noise.noise_reseeds))" \
    '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{128}$ ]] && [ "$(key noise.noise_reseeds)" = $((reseeds0 + 1)) ]' ||
    cat "$work/err"
# Four more: the status view counts the 5 requests answered, not the 1600 noise bits spent.
for i in 1 2 3 4; do "$RANDCTL" bytes 64 --prediction-resistant >/dev/null 2>>"$work/err"; done
view=$("$RANDCTL" status | grep "^noise")
check "status after 5 prediction-resistant requests: PR 5 (${view#noise })" \
    '[ "$(key noise.prediction_resistant.answered)" = 5 ] && [[ $view == *", PR 5 ("* ]]' ||
    cat "$work/err"
n=$("$RANDCTL" bytes 1000 --full-entropy --raw 2>"$work/err" | wc -c)
check "bytes 1000 --full-entropy --raw: 1000 bytes" '[ "$n" = 1000 ]' || cat "$work/err"

# Drained: with --nonblock, NOT_READY (exit 5) once the reservoir cannot cover a request.
for i in $(seq 40); do
    "$RANDCTL" --nonblock bytes 4096 --full-entropy --raw >/dev/null 2>"$work/err"; rc=$?
    [ $rc = 0 ] || break
done
check "--nonblock bytes 4096 --full-entropy past what the source gave: exit 5, saying why ($(head -c 200 "$work/err"))" \
    '[ $rc = 5 ] && grep -q "^randctl: bytes --full-entropy: not enough noise-source entropy ready now (--nonblock): " "$work/err"'
served=$(key noise.full_entropy.served_bytes); spent=$(key noise.full_entropy.consumed_bits)
check "STATUS: full entropy served $served bytes for $spent noise bits, at least 8 each and the margin" \
    '[ "$served" -ge 1000 ] && [ "$spent" -ge $((served * 8 + (served + 31) / 32 * 64)) ]'
check "STATUS: requests.bytes_full counts the mode's requests apart ($full0 -> $(key requests.bytes_full))" \
    '[ "$(key requests.bytes_full)" -ge $((full0 + 1)) ]'

# Waiting for entropy that does not come: --timeout bounds it (exit 8), and says so.
# Requests of 4096 bytes (each takes about 20 KiB of the FIFO) until one times out with the
# FIFO read dry: then nothing more can come (on a loaded machine one may time out before).
fifo_empty() {
    [ "$(python3 -c 'import array, fcntl, termios
a = array.array("i", [0]); fcntl.ioctl(7, termios.FIONREAD, a); print(a[0])')" = 0 ]
}
for i in $(seq 20); do
    start=$(date +%s%N)
    out=$("$RANDCTL" bytes 4096 --full-entropy --timeout 1000 2>"$work/err"); rc=$?
    took=$((($(date +%s%N) - start) / 1000000))
    [ $rc != 0 ] && fifo_empty && break
done
check "bytes 4096 --full-entropy --timeout 1000, the source dry: exit 8 after ${took} ms, no bytes" \
    '[ $rc = 8 ] && [ -z "$out" ] && [ "$took" -ge 1000 ] && [ "$took" -lt 30000 ] && grep -q "not served within the timeout (1000 ms)" "$work/err"'
# Still dry: four requests of this uid wait (the daemon's share for a uid); a fifth is BUSY
# at once (exit 6). 4096 bytes each: the blocks the timed-out request held went back to the
# reservoir, fewer than one such request needs. Fed again, the four are served: they were
# waited for, not given up on.
waiters=
for i in 1 2 3 4; do
    "$RANDCTL" bytes 4096 --full-entropy --raw --timeout 120000 >"$work/waiter$i" 2>&1 &
    waiters="$waiters $!"
done
waiting() { [ "$(key noise.waiting)" = 4 ]; }
wait_for "four full-entropy requests waiting" waiting || fail "noise.waiting: $(key noise.waiting)"
"$RANDCTL" bytes 64 --full-entropy --timeout 60000 >/dev/null 2>"$work/err"; rc=$?
check "a fifth waiting request of the uid: exit 6, saying why ($(head -c 160 "$work/err"))" \
    '[ $rc = 6 ] && grep -q "^randctl: bytes --full-entropy: busy: this user has as many requests waiting" "$work/err"'
# Four requests' worth (at 2 credited bits a byte, and what reseeds of the generator take),
# written in the background: the FIFO holds 64 KiB at a time.
head -c 400K /dev/urandom >&7 &
feeder=$!
served=0
for w in $waiters; do
    wait_exit "$w" && served=$((served + 1))
done
check "fed again: the four waiting requests are served ($served of 4)" \
    '[ $served = 4 ] && [ "$(cat "$work"/waiter? | wc -c)" = 16384 ]'
out=$("$RANDCTL" status)
check "status: a noise line with the bits ready and each mode's requests" \
    'grep -q "^noise  *[0-9]* bits ready, [0-9]* waiting, PR [1-9][0-9]* (.*), FE [1-9][0-9]* (" <<<"$out"' ||
    grep "^noise" <<<"$out"
stop_randd
kill $feeder 2>/dev/null; wait $feeder 2>/dev/null
exec 7>&-

finish test_randctl_modes.sh
