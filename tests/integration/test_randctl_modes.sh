#!/usr/bin/env bash
# randctl bytes --prediction-resistant / --full-entropy against a real build/randd, through
# librandd's randd_bytes_mode(): what each gives and the exit status scripts rely on for
# each way it can fail: 7 with no noise source, 5 with --nonblock and not enough noise
# entropy now, 8 past --timeout. The noise source is a FIFO the test feeds as the hwrng
# device, so how much noise entropy exists is the test's to decide.
. "$(dirname "$0")/common.sh"
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }
export RANDD_SOCKET=$work/randd.sock
key() { status_key "$1"; }

# --- getrandom alone: no noise source, refused at once, saying why: exit 7 ------------------
start_with_config "rdseed = no" "hwrng = no" "jitter = no"
for mode in --full-entropy --prediction-resistant; do
    out=$("$RANDCTL" bytes 32 $mode 2>"$work/err"); rc=$?
    check "getrandom alone: bytes 32 $mode: exit 7, no bytes, the reason on stderr ($(head -c 160 "$work/err"))" \
        '[ $rc = 7 ] && [ -z "$out" ] && grep -q "^randctl: bytes $mode: no healthy noise source" "$work/err"'
done
out=$("$RANDCTL" bytes 32 2>/dev/null); rc=$?
check "getrandom alone: ordinary bytes are served as ever" '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{64}$ ]]'
stop_randd

# --- a noise source the test feeds -----------------------------------------------------------
# 48 KiB into the FIFO (within its 64 KiB buffer), the write end held open so that the source
# then blocks, healthy, with nothing more to give: at 2 credited bits a byte, less what the
# start-up test and the assessment read, a few KiB of full entropy at most.
mkfifo "$work/noise"
exec 7<>"$work/noise"
head -c 48K /dev/urandom >&7
start_with_config "rdseed = no" "jitter = no" "kernel_topup = no" "hwrng_device = $work/noise"
wait_for "the FIFO hwrng healthy" field_is hwrng state healthy || fail "hwrng: $(cat "$work/log")"

full0=$(key requests.bytes_full); reseeds0=$(key noise.reseeds)
out=$("$RANDCTL" bytes 64 --prediction-resistant 2>"$work/err"); rc=$?
check "bytes 64 --prediction-resistant: 128 hex digits, one noise reseed ($reseeds0 -> $(key noise.reseeds))" \
    '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{128}$ ]] && [ "$(key noise.reseeds)" = $((reseeds0 + 1)) ]' ||
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

# Waiting for entropy that does not come: --timeout bounds it (exit 8), and says so. Requests
# of 4096 bytes until one finds the FIFO empty (each takes about 20 KiB of it).
for i in $(seq 10); do
    start=$(date +%s%N)
    out=$("$RANDCTL" bytes 4096 --full-entropy --timeout 1000 2>"$work/err"); rc=$?
    took=$((($(date +%s%N) - start) / 1000000))
    [ $rc = 0 ] || break
done
check "bytes 4096 --full-entropy --timeout 1000, the source dry: exit 8 after ${took} ms, no bytes" \
    '[ $rc = 8 ] && [ -z "$out" ] && [ "$took" -ge 1000 ] && [ "$took" -lt 30000 ] && grep -q "not served within the timeout (1000 ms)" "$work/err"'
# Fed again, the same request is served: the source was waited for, not given up on.
head -c 32K /dev/urandom >&7
out=$("$RANDCTL" bytes 64 --full-entropy --timeout 60000 2>"$work/err"); rc=$?
check "fed again: bytes 64 --full-entropy is served (128 hex digits)" \
    '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{128}$ ]]' || cat "$work/err"
out=$("$RANDCTL" status)
check "status: a noise line with the bits ready and each mode's requests" \
    'grep -q "^noise  *[0-9]* bits ready, [0-9]* waiting, PR [1-9][0-9]* (.*), FE [1-9][0-9]* (" <<<"$out"' ||
    grep "^noise" <<<"$out"
stop_randd
exec 7>&-

finish test_randctl_modes.sh
