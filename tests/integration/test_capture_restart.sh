#!/usr/bin/env bash
# randd --capture SOURCE --restarts R --count N --output FILE: R rows of N samples, the source
# opened afresh before each row. Proven where a reopen shows: hwrng on a file starts again at
# the file's first byte, so every row is the file's first N bytes (without the reopen the rows
# would run on through the file). Jitter's rows, assessed by randctl assess --restart; a source
# the config turns off is refused; usage errors exit 2 and write nothing.
. "$(dirname "$0")/common.sh"
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }

printf 'hwrng_device = %s\n' "$work/hwrng" >"$work/randd.conf"
"$RANDD" --config "$work/randd.conf" --capture hwrng --restarts 7 --count 1000 \
    --output "$work/rows" 2>"$work/err"; rc=$?
check "hwrng, 7 restarts x 1000: exit 0, 7000 bytes, the log says so" \
    '[ $rc = 0 ] && [ "$(stat -c %s "$work/rows")" = 7000 ] &&
     grep -q "captured 7 restarts x 1000 raw samples of hwrng" "$work/err"'
head -c 1000 "$work/hwrng" >"$work/first"
same=0
for r in 0 1 2 3 4 5 6; do
    tail -c +$((r * 1000 + 1)) "$work/rows" | head -c 1000 | cmp -s - "$work/first" &&
        same=$((same + 1))
done
check "hwrng: every row starts again at the device's first byte ($same of 7 rows)" \
    '[ $same = 7 ]'

"$RANDD" --config "$work/randd.conf" --capture hwrng --count 7000 --output "$work/once" \
    2>/dev/null
check "hwrng without --restarts: one open, the file read on (the rows differ)" \
    '! cmp -s <(tail -c +1001 "$work/once" | head -c 1000) "$work/first"'

# A source the config turns off is not captured: exit 1 naming the key and the file, no
# output, and the device never opened (a FIFO there would hold a reader up).
mkfifo "$work/fifo"
for key in hwrng cpu_source rdseed jitter getrandom; do       # rdseed: cpu_source's old name
    name=$key; [ $key = cpu_source ] || [ $key = rdseed ] && name=cpu
    rm -f "$work/off"
    printf 'hwrng_device = %s\n%s = no\n' "$work/fifo" "$key" >"$work/off.conf"
    timeout 20 "$RANDD" --config "$work/off.conf" --capture $name --count 10 \
        --output "$work/off" >"$work/err" 2>&1; rc=$?
    check "$key = no: --capture $name refused, exit 1, naming $key = no and the file ($(head -c 200 "$work/err"))" \
        '[ $rc = 1 ] && grep -qF "$work/off.conf turns this source off ($key = no)" "$work/err" &&
         [ ! -e "$work/off" ]'
done

# Two rows: each starts jitter's worker afresh at idle priority, as randd does. check-loaded's
# CPU hogs (RANDD_TEST_CPU_HOGS) starve such a worker past the capture's minute of waiting.
if [ -n "${RANDD_TEST_CPU_HOGS:-}" ]; then
    echo "SKIP: jitter capture beside CPU hogs: its idle-priority worker gets no CPU"
else
    "$RANDD" --config "$work/randd.conf" --capture jitter --restarts 2 --count 1000 \
        --output "$work/jitter" 2>"$work/err"; rc=$?
    check "jitter, 2 restarts x 1000: exit 0, 2000 bytes" \
        '[ $rc = 0 ] && [ "$(stat -c %s "$work/jitter")" = 2000 ] ||
         { cat "$work/err" >&2; false; }'
fi

# Usage errors: exit 2, a message naming the problem, no file.
usage() {       # usage WHAT MESSAGE ARGS...
    local what=$1 msg=$2 rc
    shift 2
    rm -f "$work/bad"
    "$RANDD" "$@" >"$work/out" 2>&1; rc=$?
    check "$what: exit 2, \"$msg\", no file" \
        '[ $rc = 2 ] && grep -qF -- "$msg" "$work/out" && [ ! -e "$work/bad" ]'
}
usage "--restarts 0" '--restarts: not a number of restarts from 1 to 1000000: "0"' \
    --capture getrandom --restarts 0 --count 10 --output "$work/bad"
usage "--restarts 10x" '--restarts: not a number of restarts from 1 to 1000000: "10x"' \
    --capture getrandom --restarts 10x --count 10 --output "$work/bad"
usage "--restarts 1000001" "not a number of restarts from 1 to 1000000" \
    --capture getrandom --restarts 1000001 --count 10 --output "$work/bad"
usage "--restarts without --capture" "--restarts goes with --capture SOURCE" \
    --restarts 10 --count 10 --output "$work/bad"
usage "--restarts without --count" "--capture needs --count N" \
    --capture getrandom --restarts 10 --output "$work/bad"

finish test_capture_restart.sh
