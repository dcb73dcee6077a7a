#!/usr/bin/env bash
# randctl status's view for people: on a healthy host it fits 24 lines of 100 columns and
# shows every source; a quarantined source's reason is shown whole, at 100 columns and on
# narrow ones, and no line passes the width (COLUMNS, or a terminal's own: tmux); colour on a
# terminal only, and not with NO_COLOR; the vmgenid line says which VM generation watches are
# open, and warns when none is; --watch refreshes with rates, on a pipe and in a terminal;
# --keys and --json stay what scripts read.
. "$(dirname "$0")/common.sh"
export RANDD_SOCKET=$work/randd.sock
unset COLUMNS NO_COLOR

widest() { awk '{ if (length > w) w = length } END { print w + 0 }' "$1"; }
# The reason of source $1 as --keys gives it.
reason_of() { status_of "$1" reason; }
# Every source STATUS lists starts a line of the view in $1.
every_source_shown() {
    local name missing=
    for name in $("$RANDCTL" status --keys | sed -n 's/^sources\[[0-9]*\]\.name: //p'); do
        grep -q "^$name  *\(healthy\|startup\|quarantined\) " "$1" || missing="$missing $name"
    done
    [ -z "$missing" ] || { echo "missing:$missing"; return 1; }
}

start_with_config "hwrng_device = $work/hwrng"
"$RANDCTL" status >"$work/view"; rc=$?
lines=$(wc -l <"$work/view")
[ $rc = 0 ] && [ "$lines" -le 24 ] && [ "$(widest "$work/view")" -le 100 ] &&
    pass "healthy host: $lines lines, $(widest "$work/view") columns at most (24 x 100)" ||
    fail "healthy host: exit $rc, $lines lines, $(widest "$work/view") columns:
$(cat "$work/view")"
out=$(every_source_shown "$work/view") && pass "healthy host: every source in the table" ||
    fail "healthy host: $out"
grep -q $'\033' "$work/view" && fail "colour on a pipe" || pass "no colour on a pipe"
grep -q "^randd  *[0-9.]*, up [0-9]" "$work/view" && grep -q "^pool " "$work/view" &&
    grep -q "^kernel " "$work/view" && grep -q "^clients " "$work/view" &&
    pass "the daemon line, the pool, the kernel feed and the clients" ||
    fail "a line is missing: $(cat "$work/view")"
# The daemon line names the Cymric keystream STATUS gives: AES-256-CTR with hardware AES.
cipher=$(status_key pool.cipher)
want=chacha20
grep -qw aes /proc/cpuinfo && [ -z "${OPENSSL_ia32cap+set}${OPENSSL_armcap+set}" ] && want=aes256ctr
[ "$cipher" = "$want" ] && grep -q "^randd .*, engine cymric ($cipher), " "$work/view" &&
    pass "the daemon line shows the engine's keystream, $cipher (STATUS pool.cipher)" ||
    fail "keystream: STATUS pool.cipher '$cipher', wanted $want; view: $(head -1 "$work/view")"
# As root randd opens both VM generation watches; the line says so, with no change seen, and
# the vmgenid object is not also left to the generic line of every key.
grep -q "^vmgenid  *watching kernel log and uevent, 0 generation changes$" "$work/view" &&
    ! grep -q "kernel_log" "$work/view" &&
    pass "the vmgenid line: both watches, no generation change" ||
    fail "the vmgenid line: $(grep -A1 "^vmgenid" "$work/view")"
stop_randd

# Nothing watched (ProtectKernelLogs=yes and no AF_NETLINK, as libfault fakes): the vmgenid
# line warns, in yellow on a terminal (script(1) gives randctl one).
if [ -n "${RANDD_SANITIZED:-}" ]; then
    echo "SKIP: no VM generation watch: LD_PRELOAD fault injection does not mix with ASan"
elif [ -n "${LIBFAULT:-}" ] && [ -f "$LIBFAULT" ] && command -v script >/dev/null; then
    LD_PRELOAD=$LIBFAULT RANDD_FAULTS=vmgenid=none \
        start_with_config "hwrng_device = $work/hwrng"
    [ "$(status_key vmgenid.kernel_log) $(status_key vmgenid.uevent)" = "false false" ] ||
        fail "vmgenid=none: STATUS says kernel_log $(status_key vmgenid.kernel_log)," \
            "uevent $(status_key vmgenid.uevent)"
    script -qec "$RANDCTL status" /dev/null >"$work/view"
    warning='watching nothing: a clone is noticed only if the clock jumps'
    grep -q $'^vmgenid  *\033\[33m'"$warning" "$work/view" &&
        pass "no watch: the vmgenid line warns in yellow" ||
        fail "no watch: $(grep "^vmgenid" "$work/view" | cat -v)"
    stop_randd
else
    echo "SKIP: no VM generation watch (needs LIBFAULT and script(1))"
fi

# hwrng reads zeros: the repetition count test quarantines it at start-up. This daemon serves
# with Randen where the CPU has AES (Randen needs it): its line names Cymric's keystream apart,
# as Cymric then makes only the prediction-resistant replies and the primes.
head -c 1M /dev/zero >"$work/zeros"
engine=cymric
grep -qw aes /proc/cpuinfo && engine=randen
start_with_config "hwrng_device = $work/zeros" "kernel_topup = no" "engine = $engine"
if [ $engine = randen ]; then
    "$RANDCTL" status >"$work/view"
    grep -q "^randd .*, engine randen (Cymric: $cipher), " "$work/view" &&
        pass "under Randen the daemon line names Cymric's keystream apart" ||
        fail "under Randen: $(head -1 "$work/view")"
fi
wait_for "hwrng quarantined" field_is hwrng state quarantined || fail "hwrng not quarantined"
reason=$(reason_of hwrng)
[ -n "$reason" ] || fail "no reason in STATUS for the quarantined hwrng"
for width in 100 60 40; do
    COLUMNS=$width "$RANDCTL" status >"$work/view"
    flat=$(tr -s ' \n' '  ' <"$work/view")
    [ "$(widest "$work/view")" -le "$width" ] &&
        grep -q "^hwrng  *quarantined " "$work/view" && [[ $flat == *"$reason"* ]] &&
        out=$(every_source_shown "$work/view") &&
        pass "$width columns: no line wider, every source, hwrng's reason whole: $reason" ||
        fail "$width columns ($(widest "$work/view") used): $out $(cat "$work/view")"
done

# A terminal of 50 columns (tmux): the view follows its width (no line wrapped by the
# terminal: capture-pane -J joins what it wrapped), with colour unless NO_COLOR. Each command
# typed ends by printing a marker that the typed text never holds (printf 'VIEW%s\n' -DONE),
# and the test waits for the marker alone on a line: the command's echo, on screen as soon as
# it is typed, never ends the wait before the output is there (it did under load).
if command -v tmux >/dev/null; then
    tm() { tmux -L "randd-test-$$" -f /dev/null "$@"; }
    trap 'if [ "$BASHPID" = "$test_shell" ]; then tm kill-server 2>/dev/null
              [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; fi' EXIT
    tm new-session -d -x 50 -y 50 -e RANDD_SOCKET="$RANDD_SOCKET" "bash --norc --noprofile"
    screen() { tm capture-pane -p "$@"; }
    shown() { screen | grep -q -- "$1"; }
    tm send-keys "unset COLUMNS; clear; $RANDCTL status; printf 'VIEW%s\\n' -DONE" Enter
    wait_for "the view in tmux" shown '^VIEW-DONE$' || fail "no view in tmux: $(screen)"
    [ "$(screen | wc -l)" = "$(screen -J | wc -l)" ] && shown '^hwrng  *quarantined' &&
        pass "a 50-column terminal: no line wrapped by the terminal" ||
        fail "a 50-column terminal: $(screen)"
    screen -e | grep -q $'\033\[[0-9;]*3[12]m' && pass "colour on a terminal" ||
        fail "no colour on a terminal: $(screen -e | head -5)"
    tm send-keys "clear; NO_COLOR=1 $RANDCTL status; printf 'NOCOLOR%s\\n' -DONE" Enter
    wait_for "the view without colour" shown '^NOCOLOR-DONE$' || fail "no view: $(screen)"
    screen -e | grep -q $'\033\[[0-9;]*3[12]m' && fail "NO_COLOR: colour all the same" ||
        pass "NO_COLOR: no colour"
    tm send-keys "clear; $RANDCTL status --watch --interval 0.2; printf '\\nWATCH%s\\n' -ENDED" Enter
    # One capture judged whole: --watch redraws five times a second, and separate captures
    # (one for each check) can fall on either side of a redraw, or in the middle of one.
    one_view_with_rates() {
        local now
        now=$(screen)
        [ "$(grep -c '^SOURCE' <<<"$now")" = 1 ] && grep -q 'READ/s' <<<"$now" &&
            grep -q 'requests/s' <<<"$now"
    }
    wait_for "--watch on a terminal: one whole view with rates" one_view_with_rates &&
        pass "--watch on a terminal: one view at a time, with rates" ||
        fail "--watch on a terminal: $(screen)"
    tm send-keys C-c                  # the terminal echoes ^C: the marker's line starts anew
    wait_for "--watch to end on ^C" shown '^WATCH-ENDED$' && pass "--watch ends on ^C" ||
        fail "--watch did not end on ^C: $(screen)"
else
    echo "SKIP: a terminal's width and colour (tmux not installed)"
fi

# --watch on a pipe: views follow one another; the second has rates.
: >"$work/watch"
"$RANDCTL" status --watch --interval 0.2 >"$work/watch" 2>&1 &
watcher=$!
wait_for "--watch's second view" grep -q 'requests/s' "$work/watch" ||
    fail "$(cat "$work/watch")"
kill "$watcher"; wait "$watcher"; rc=$?
views=$(grep -c '^SOURCE' "$work/watch")
[ $rc = 0 ] && [ "$views" -ge 2 ] && grep -q 'READ/s' "$work/watch" &&
    pass "--watch on a pipe: views one after another, rates, exit 0 on SIGTERM" ||
    fail "--watch on a pipe: exit $rc, $(head -20 "$work/watch")"
# Nothing else asks this daemon anything now: --watch's own STATUS is not counted.
[ "$(grep -o '[0-9.]* requests/s' "$work/watch" | sort -u)" = "0.0 requests/s" ] &&
    pass "--watch does not count its own requests (0.0 requests/s on an idle daemon)" ||
    fail "--watch counted itself: $(grep -o '[0-9.]* requests/s' "$work/watch" | sort -u)"


# The self-tests and health settings in words: no Unix time, no raw key, no literal null.
"$RANDCTL" status >"$work/view"
grep -qE "^selftest +passed [0-9]+ (s|min) ago \(start\), every 10 min, 1 runs?, 0 failed$" \
    "$work/view" &&
    grep -qE "^health +false-alarm rate 2\^-40 a test \(SP 800-90B alpha\), start-up test of 1024 samples a source$" \
    "$work/view" && ! grep -qE "last_time|alpha_log2|null|[0-9]e-[0-9]" "$work/view" &&
    pass "the self-test and health lines are written for a reader" ||
    fail "self-test and health lines: $(grep -E '^(selftest|health)' "$work/view")"
# A key only a restart applies: the view says what is waiting and what applies it.
echo "workers = 2" >>"$work/randd.conf"         # only a restart adds a serving loop
kill -HUP "$pid"
wait_for "the reload's pending restart" sh -c '"$RANDCTL" status --keys | grep -q "^pending_restart\."'
"$RANDCTL" status >"$work/view"
grep -qE "^restart +workers = 2, in the file, not in effect: a restart of randd applies it$" \
    "$work/view" && pass "a pending restart says what waits and that a restart applies it" ||
    fail "pending restart: $(grep -E '^restart' "$work/view") $(cat "$work/log" | tail -3)"

# A source back in use after a quarantine: its last reason is shown as past, not as now.
if [ "$(id -u)" = 0 ]; then
    "$RANDCTL" inject-failure getrandom rct >/dev/null 2>&1 ||
        fail "inject-failure getrandom rct refused"
    wait_for "getrandom back in use" field_is getrandom state healthy
    "$RANDCTL" status >"$work/view"
    flat=$(tr -s ' \n' '  ' <"$work/view")      # beside the row, or wrapped under it
    reason=$(reason_of getrandom)
    [ -n "$reason" ] && grep -q "^getrandom  *healthy " "$work/view" &&
        [[ $flat == *"earlier: $reason"* ]] &&
        pass "a source back in use shows its last quarantine's reason as past" ||
        fail "re-admitted source ($reason): $(cat "$work/view")"
else
    echo "SKIP: a re-admitted source's past reason: inject-failure needs root"
fi

out=$("$RANDCTL" status --json)
[[ $out == '{"version":'*'}' ]] && pass "--json: the daemon's STATUS" || fail "--json: $out"
out=$("$RANDCTL" status --keys)
grep -q '^sources\[[0-9]\]\.state: quarantined$' <<<"$out" &&
    grep -q '^librandd.vm_generation_word: ' <<<"$out" && pass "--keys: path: value lines" ||
    fail "--keys: $(head -5 <<<"$out")"
for args in "--json --watch" "--keys --json" "--interval 0" "--interval x" "--bogus"; do
    "$RANDCTL" status $args >/dev/null 2>&1; rc=$?
    [ $rc = 2 ] && pass "status $args: exit 2" || fail "status $args: exit $rc"
done
stop_randd
"$RANDCTL" status >/dev/null 2>&1; rc=$?
[ $rc = 3 ] && pass "no daemon: exit 3" || fail "no daemon: exit $rc"
finish test_status_view.sh
