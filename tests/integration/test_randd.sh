#!/usr/bin/env bash
# Integration test of build/randd's entropy side: command line and exit codes, config errors
# with file:line, start-up to ready, SIGHUP with a bad file keeping the old config, SIGHUP
# applying live keys and leaving restart-only ones pending in STATUS, SIGUSR1 status, and a
# clean SIGTERM. Runs without root; the kernel feed is checked when root.
. "$(dirname "$0")/common.sh"

expect_exit() {   # expected-code description command...
    local want=$1 what=$2; shift 2
    "$@" >"$work/out" 2>&1; local got=$?
    if [ "$got" = "$want" ]; then pass "$what"; else fail "$what: exit $got, wanted $want: $(cat "$work/out")"; fi
}

expect_output() {   # pattern description
    if grep -qE -- "$1" "$work/out"; then pass "$2"; else fail "$2: no /$1/ in: $(cat "$work/out")"; fi
}

wait_for_log() {   # pattern
    wait_for "/$1/ in randd's log" in_log "$1" "$work/log"
}

expect_exit 0 "--version" "$RANDD" --version
expect_output '^randd [0-9]' "--version prints the version"
expect_exit 0 "--help" "$RANDD" --help
expect_exit 2 "unknown option is a usage error" "$RANDD" --bogus
expect_exit 2 "stray argument is a usage error" "$RANDD" stray

printf 'reseed_interval = 30\nkernel_topup = no\n' >"$work/good.conf"
expect_exit 0 "--check-config accepts a good file" "$RANDD" --check-config --config "$work/good.conf"
printf '# comment\nreseed_interval = often\n' >"$work/bad.conf"
expect_exit 1 "--check-config refuses a bad value" "$RANDD" --check-config --config "$work/bad.conf"
expect_output "$work/bad.conf:2: reseed_interval: " "bad value reported as file:line: key"
printf 'no_such_key = 1\n' >"$work/unknown.conf"
expect_exit 1 "--check-config refuses an unknown key" "$RANDD" --check-config --config "$work/unknown.conf"
expect_output "$work/unknown.conf:1: no_such_key: unknown key" "unknown key reported with file:line"
printf '\ncipher = aes\n' >"$work/cipher.conf"
expect_exit 1 "--check-config refuses an unknown cipher" \
    "$RANDD" --check-config --config "$work/cipher.conf"
expect_output "$work/cipher.conf:2: cipher: not auto, chacha20 or aes256ctr: \"aes\"" \
    "an unknown cipher reported with file:line"
printf 'cipher = aes256ctr\n' >"$work/aes.conf"
# "aes" is a word of x86's flags and of arm64's Features.
if grep -qw aes /proc/cpuinfo && [ -z "${OPENSSL_ia32cap+set}${OPENSSL_armcap+set}" ]; then
    expect_exit 0 "--check-config accepts cipher = aes256ctr with hardware AES" \
        "$RANDD" --check-config --config "$work/aes.conf"
else
    echo "SKIP: no hardware AES: cipher = aes256ctr is accepted only with it"
fi
# OPENSSL_ia32cap (x86) and OPENSSL_armcap (arm64) may hide AES from OpenSSL: randd then
# counts AES as absent, and refuses aes256ctr rather than run table AES or ChaCha20 in its place.
OPENSSL_ia32cap='~0x200000200000000' OPENSSL_armcap=0 expect_exit 1 \
    "--check-config refuses cipher = aes256ctr without hardware AES" \
    "$RANDD" --check-config --config "$work/aes.conf"
expect_output "$work/aes.conf:1: cipher: (OPENSSL_[a-z0-9]+cap is set|this CPU does not do AES)" \
    "aes256ctr without hardware AES reported with file:line"
expect_exit 1 "a missing explicit config is an error" "$RANDD" --check-config --config "$work/none.conf"
# A config that can never be ready is refused; one that can never serve full entropy or PR
# passes with one warning line saying so.
printf 'cpu_source = no\nhwrng = no\ngetrandom = no\n\njitter = no\n' >"$work/nothing.conf"
expect_exit 1 "--check-config refuses a config with every source off" \
    "$RANDD" --check-config --config "$work/nothing.conf"
expect_output "^randd: $work/nothing.conf:5: every source is off .*could never seed" \
    "every source off reported with file:line (the line that turned off the last)"
printf 'cpu_source = no\nhwrng = no\njitter = no\n' >"$work/no-noise.conf"
expect_exit 0 "--check-config accepts getrandom alone" \
    "$RANDD" --check-config --config "$work/no-noise.conf"
expect_output "^randd: $work/no-noise.conf: no noise source is on .*full-entropy and prediction-resistant request will be refused" \
    "getrandom alone: one warning line, full entropy and PR never served"
[ "$(wc -l <"$work/out")" = 2 ] && pass "getrandom alone: the warning and the OK line, nothing else" ||
    fail "getrandom alone: $(cat "$work/out")"
expect_exit 0 "--check-config accepts a good file without the noise warning" \
    "$RANDD" --check-config --config "$work/good.conf"
! grep -q "no noise source" "$work/out" && pass "a good file: no noise warning" ||
    fail "a good file warned: $(cat "$work/out")"
# Every problem in the file, not only the first.
printf 'reseed_interval = 0\nno_such_key = 1\nmax_clients = many\n' >"$work/three.conf"
expect_exit 1 "--check-config refuses a file with three errors" "$RANDD" --check-config --config "$work/three.conf"
[ "$(grep -cE "^randd: $work/three.conf:[123]: " "$work/out")" = 3 ] &&
    pass "--check-config reports all three errors, each with file:line" ||
    fail "--check-config did not report all three errors: $(cat "$work/out")"
# Without --config a missing /etc/randd.conf means the built-in defaults, and says so.
if [ ! -e /etc/randd.conf ]; then
    expect_exit 0 "--check-config without /etc/randd.conf is valid (defaults)" "$RANDD" --check-config
    expect_output '^/etc/randd.conf: no such file: the built-in defaults apply' \
        "--check-config says the defaults apply when /etc/randd.conf is missing"
else
    echo "SKIP: /etc/randd.conf exists; the defaults-only --check-config case needs it absent"
fi
# --capture's usage errors exit 2 whatever else is given.
expect_exit 2 "--capture with an unknown source is a usage error" \
    "$RANDD" --capture bogus --count 10 --output "$work/capture"
expect_output 'bogus.*not a source' "--capture names the unknown source"
expect_exit 2 "--capture without --count is a usage error" "$RANDD" --capture getrandom --output "$work/capture"
expect_exit 2 "--count 10x is a usage error" "$RANDD" --capture getrandom --count 10x --output "$work/capture"
[ ! -e "$work/capture" ] && pass "a usage error writes no capture file" || fail "$work/capture written"

# On a terminal --capture shows how far it is and how long is left; into a pipe or a log it
# prints only its summary. A FIFO stands in for a slow hwrng: 40 KiB over about 2 s.
mkfifo "$work/slow-hwrng"
printf 'cpu_source = no\njitter = no\nhwrng_device = %s\n' "$work/slow-hwrng" >"$work/capture.conf"
slow_writer() { for _ in $(seq 40); do head -c 1024 /dev/urandom; sleep 0.05; done >"$work/slow-hwrng"; }
slow_writer & writer=$!
script -qec "$RANDD --config $work/capture.conf --capture hwrng --count 40960 --output $work/tty.bin" \
    /dev/null >"$work/tty.out" 2>&1 </dev/null
wait "$writer"
grep -qE 'capture: [0-9]+ of 40960 samples \([0-9]+%\), about [0-9]+ s left' "$work/tty.out" &&
    pass "--capture on a terminal shows progress and the time left" ||
    fail "no progress on a terminal: $(tr '\r' '\n' <"$work/tty.out")"
slow_writer & writer=$!
"$RANDD" --config "$work/capture.conf" --capture hwrng --count 40960 --output "$work/pipe.bin" \
    >"$work/pipe.out" 2>&1
wait "$writer"
! grep -q 'left' "$work/pipe.out" && grep -q 'captured 40960 raw samples of hwrng' "$work/pipe.out" &&
    pass "--capture into a file prints its summary alone" || fail "capture into a file: $(cat "$work/pipe.out")"

# Under systemd (JOURNAL_STREAM naming stderr) lines carry sd-daemon priority prefixes.
( exec 2>"$work/journal"; JOURNAL_STREAM=$(stat -L -c '%d:%i' /dev/stderr) \
    "$RANDD" --config "$work/none.conf" ) || true
grep -q '^<3>/' "$work/journal" && pass "journal lines carry <N> priorities" || fail "no journal prefix: $(cat "$work/journal")"

# Start it and wait for readiness.
cp "$work/good.conf" "$work/randd.conf"
"$RANDD" --foreground --config "$work/randd.conf" --socket "$work/randd.sock" 2>"$work/log" &
pid=$!
if wait_for_log 'ready: generator seeded'; then pass "daemon seeds and reports ready"; else fail "no readiness: $(cat "$work/log")"; fi
grep -q 'source getrandom: start-up test passed' "$work/log" && pass "getrandom admitted after start-up test" || fail "getrandom not admitted"
# The CPU's noise source, where /proc/cpuinfo lists it: RDSEED (x86 "flags"), RNDRRS (arm64
# "Features": rng).
cpu_source=
grep -qw rdseed /proc/cpuinfo && cpu_source=rdseed
grep -q '^Features.* rng\b' /proc/cpuinfo && cpu_source=rndrrs
if [ -n "$cpu_source" ]; then
    grep -q "source $cpu_source: start-up test passed" "$work/log" && pass "$cpu_source admitted" ||
        fail "$cpu_source not admitted: $(cat "$work/log")"
else
    echo "SKIP: this CPU has no noise source /proc/cpuinfo lists (rdseed, rng)"
fi
# STATUS names the CPU source whether or not it is in use, and says why not. Where
# /proc/cpuinfo names it (x86, arm64) the two must agree; elsewhere (DARN and the TRNG are
# not listed there) in use and a reason must not both hold.
"$RANDCTL" --socket "$work/randd.sock" status --keys >"$work/out" 2>&1
cpu_name=$(sed -n 's/^cpu_source\.name: //p' "$work/out")
cpu_in_use=$(sed -n 's/^cpu_source\.in_use: //p' "$work/out")
cpu_reason=$(sed -n 's/^cpu_source\.reason: //p' "$work/out")
cpu_lists=unknown
case $(uname -m) in x86_64|aarch64) cpu_lists=${cpu_source:-no} ;; esac
if [ "$cpu_lists" != unknown ] && [ "$cpu_lists" != no ]; then
    [ "$cpu_in_use" = true ] && [ "$cpu_name" = "$cpu_source" ] &&
        pass "STATUS: cpu_source $cpu_source in use where /proc/cpuinfo lists it" ||
        fail "STATUS: cpu_source where /proc/cpuinfo lists $cpu_source: $(grep cpu_source "$work/out")"
elif [ "$cpu_lists" = no ]; then
    [ "$cpu_in_use" = false ] && [[ $cpu_reason == "CPU has no "* ||
                                   $cpu_reason == "kernel does not list "* ]] &&
        pass "STATUS: cpu_source $cpu_name not in use, and why ($cpu_reason)" ||
        fail "STATUS: cpu_source on a CPU whose /proc/cpuinfo lists none: $(grep cpu_source "$work/out")"
else
    { [ "$cpu_in_use" = true ] && [ "$cpu_reason" = null ]; } ||
        { [ "$cpu_in_use" = false ] && [ -n "$cpu_reason" ] && [ "$cpu_reason" != null ]; } &&
        pass "STATUS: cpu_source $cpu_name: in use $cpu_in_use, reason $cpu_reason" ||
        fail "STATUS: cpu_source in use and reason disagree: $(grep cpu_source "$work/out")"
fi
if [ "$cpu_in_use" = false ]; then
    "$RANDCTL" --socket "$work/randd.sock" status >"$work/out" 2>&1
    expect_output "^cpu +$cpu_name not in use, " "randctl status explains the absent CPU source"
fi
# --capture takes the CPU source as cpu and by its own name: samples, or its reason (exit 1),
# never a usage error. (--force: the second replaces the first's file.)
for name in cpu "$cpu_name"; do
    "$RANDD" --capture "$name" --count 64 --output "$work/cpu.bin" --force \
        --config "$work/good.conf" >"$work/out" 2>&1
    rc=$?
    if [ "$cpu_in_use" = true ]; then
        [ $rc = 0 ] && [ "$(stat -c %s "$work/cpu.bin")" = 64 ] &&
            pass "--capture $name: 64 samples of the CPU source" ||
            fail "--capture $name: exit $rc, $(cat "$work/out")"
    else
        [ $rc = 1 ] && grep -qF "$cpu_reason" "$work/out" &&
            pass "--capture $name: exit 1 with the CPU source's reason" ||
            fail "--capture $name: exit $rc (wanted 1 and '$cpu_reason'): $(cat "$work/out")"
    fi
done

# A broken config on SIGHUP is rejected and the daemon keeps running on the old one.
printf 'reseed_interval = 0\n' >"$work/randd.conf"
kill -HUP "$pid"
if wait_for_log 'rejected, keeping the running configuration'; then pass "SIGHUP with a bad file keeps the old config"; else fail "bad reload not reported: $(cat "$work/log")"; fi
grep -q "$work/randd.conf:1: reseed_interval: " "$work/log" && pass "reload error names file:line" || fail "reload error lacks file:line"
kill -0 "$pid" 2>/dev/null && pass "daemon alive after a bad reload" || fail "daemon died on a bad reload"
printf 'reseed_interval = 45\nkernel_topup = no\n' >"$work/randd.conf"
kill -HUP "$pid"
wait_for_log 'reload: .* applied' && pass "SIGHUP with a good file applies it" || fail "good reload not applied"

# randd --reload PID, the unit's ExecReload=: a good file is checked, then the daemon re-reads
# it; a bad one exits 1 with file:line and nothing is sent. A stand-in process shows what was
# sent: kill() leaves SIGHUP pending before --reload exits, and a pending SIGHUP is delivered
# before the SIGTERM sent after it, so the stand-in's status names the first signal it got.
"$RANDD" --config "$work/randd.conf" --reload "$pid" >"$work/out" 2>&1 &&
    pass "--reload with a good file exits 0" || fail "--reload with a good file: $(cat "$work/out")"
is_sleep() { [ "$(cat "/proc/$1/comm" 2>/dev/null)" = sleep ]; }
applied_twice() { [ "$(grep -c 'reload: .* applied' "$work/log")" = 2 ]; }
wait_for "a second 'applied' line in randd's log" applied_twice &&
    pass "--reload PID makes the daemon re-read its config" || fail "--reload not applied: $(cat "$work/log")"
# The stand-in's command line names randd and its config, as the daemon's does: --reload
# reads them from /proc/PID/cmdline. It takes SIGHUP's default back, so that a test run under
# nohup (SIGHUP ignored, and inherited) still sees it die of the signal.
is_sleep() { [ "$(cat "/proc/$1/comm" 2>/dev/null)" = perl ]; }
standin() {
    perl -e '$SIG{HUP} = "DEFAULT"; sleep 600' randd --foreground --config "$@" &
    standin=$!
}
standin "$work/randd.conf"
wait_for "the stand-in to be sleep (a signal before its exec is lost)" is_sleep "$standin"
printf 'reseed_interval = often\n' >"$work/randd.conf"
expect_exit 1 "--reload refuses a bad file" "$RANDD" --config "$work/randd.conf" --reload "$standin"
expect_output "$work/randd.conf:1: reseed_interval: " "--reload names the bad file's line"
expect_output "rejected; randd \(pid $standin\) keeps its configuration" "--reload says the old config stays"
kill -TERM "$standin" 2>/dev/null; { wait "$standin"; } 2>/dev/null; rc=$?
[ "$rc" = 143 ] && pass "--reload sends nothing when the file is bad" || fail "the process got signal $((rc - 128)), not SIGTERM"
printf 'reseed_interval = 45\n' >"$work/randd.conf"
standin "$work/randd.conf"
wait_for "the stand-in to be sleep (a signal before its exec is lost)" is_sleep "$standin"
expect_exit 0 "--reload with a good file exits 0 (stand-in)" "$RANDD" --config "$work/randd.conf" --reload "$standin"
kill -TERM "$standin" 2>/dev/null; { wait "$standin"; } 2>/dev/null; rc=$?
[ "$rc" = 129 ] && pass "--reload sends SIGHUP when the file is good" || fail "the process got signal $((rc - 128)), not SIGHUP"
expect_exit 2 "--reload 1 is a usage error (never init)" "$RANDD" --reload 1

# Without --config, --reload checks the file the daemon was started with (its command line),
# not /etc/randd.conf: a broken one fails with file:line and nothing is sent.
printf 'reseed_interval = 0\n' >"$work/own.conf"
standin "$work/own.conf"
wait_for "the stand-in to be perl" is_sleep "$standin"
expect_exit 1 "--reload PID checks the daemon's own --config file" "$RANDD" --reload "$standin"
expect_output "$work/own.conf:1: reseed_interval: " "--reload PID names the daemon's file:line"
kill -TERM "$standin" 2>/dev/null; { wait "$standin"; } 2>/dev/null; rc=$?
[ "$rc" = 143 ] && pass "--reload PID sends nothing when the daemon's file is bad" ||
    fail "the process got signal $((rc - 128)), not SIGTERM"
# A relative --config is the daemon's directory's; a --config that is not the daemon's file
# is refused rather than checked in its place.
printf 'reseed_interval = 45\n' >"$work/own.conf"
( cd "$work" && exec perl -e '$SIG{HUP} = "DEFAULT"; sleep 600' randd -c own.conf ) & standin=$!
wait_for "the stand-in to be perl" is_sleep "$standin"
expect_exit 1 "--reload refuses a --config that is not the daemon's" \
    "$RANDD" --config "$work/good.conf" --reload "$standin"
expect_output "reads $work/own.conf, not $work/good.conf; nothing sent" \
    "--reload names the daemon's file and the one given"
expect_exit 0 "--reload PID resolves the daemon's relative -c against its directory" \
    "$RANDD" --reload "$standin"
expect_output "reload: $work/own.conf is valid" "--reload names the daemon's file, made absolute"
kill -TERM "$standin" 2>/dev/null; { wait "$standin"; } 2>/dev/null; rc=$?
[ "$rc" = 129 ] && pass "--reload PID sends SIGHUP when the daemon's file is good" ||
    fail "the process got signal $((rc - 128)), not SIGHUP"
# The daemon's command line is read with randd's own options: an abbreviated option that
# takes a value (--soc for --socket) swallows the next argument, whatever it looks like, and
# an abbreviated --config (--con) names the file, as the daemon's getopt_long read them.
printf 'reseed_interval = often\n' >"$work/decoy.conf"
( cd "$work" && exec perl -e '$SIG{HUP} = "DEFAULT"; sleep 600' randd --con own.conf \
      --soc --config=decoy.conf ) & standin=$!
wait_for "the stand-in to be perl" is_sleep "$standin"
expect_exit 0 "--reload PID reads abbreviated options as the daemon did" "$RANDD" --reload "$standin"
expect_output "reload: $work/own.conf is valid" "--reload names the file --con gave, not --soc's value"
kill -TERM "$standin" 2>/dev/null; { wait "$standin"; } 2>/dev/null
sleep 600 & standin=$!
wait_for "the stand-in to be sleep" eval '[ "$(cat /proc/$standin/comm 2>/dev/null)" = sleep ]'
expect_exit 1 "--reload refuses a process that is not randd" "$RANDD" --reload "$standin"
expect_output "pid $standin is not randd" "--reload says the process is not randd"
kill -TERM "$standin" 2>/dev/null; { wait "$standin"; } 2>/dev/null; rc=$?
[ "$rc" = 143 ] && pass "--reload sends nothing to a process that is not randd" ||
    fail "the process got signal $((rc - 128)), not SIGTERM"
# The real daemon, started with --config, and --reload PID alone.
printf 'reseed_interval = 0\n' >"$work/randd.conf"
expect_exit 1 "--reload PID alone refuses the running daemon's broken file" "$RANDD" --reload "$pid"
expect_output "$work/randd.conf:1: reseed_interval: " "--reload PID alone names its file:line"
printf 'reseed_interval = 45\nkernel_topup = no\n' >"$work/randd.conf"
expect_exit 0 "--reload PID alone accepts the running daemon's good file" "$RANDD" --reload "$pid"
applied_thrice() { [ "$(grep -c 'reload: .* applied' "$work/log")" = 3 ]; }
wait_for "a third 'applied' line in randd's log" applied_thrice &&
    pass "--reload PID alone makes the daemon re-read its file" || fail "no third reload: $(cat "$work/log")"
grep -q 'rejected, keeping' <(sed -n '/reload: .* applied/,$p' "$work/log" | tail -n +2) &&
    fail "the daemon was sent a broken file: $(cat "$work/log")" || pass "the daemon never saw the broken file"

kill -USR1 "$pid"
wait_for_log 'source getrandom: healthy' && pass "SIGUSR1 logs per-source status" || fail "no status on SIGUSR1: $(cat "$work/log")"

kill -TERM "$pid"
wait_exit "$pid"; rc=$?
[ "$rc" = 0 ] && pass "SIGTERM stops cleanly (exit 0)" || fail "SIGTERM: exit status $rc (137: still running after $WAIT s)"
pid=

# A reload that changes a restart-only key (socket, taken from the config: no --socket) leaves
# it in effect and lists the new value as pending; a live key (reseed_interval) applies at once.
log_count_at_least() { [ "$(grep -cE -- "$1" "$work/log")" -ge "$2" ]; }
wait_for_count() {   # pattern count: until the log has count lines matching pattern
    wait_for "$2 lines /$1/ in randd's log" log_count_at_least "$1" "$2"
}
json_has() {   # regex description: the last `randctl status --json` reply ($work/out) matches
    if grep -qE -- "$1" "$work/out"; then pass "$2"; else fail "$2: no /$1/ in: $(cat "$work/out")"; fi
}
literal() { sed 's/[][\.*^$/]/\\&/g' <<<"$1"; }   # a path as a regex matching just it
sock_a=$work/a.sock sock_b=$work/b.sock
printf 'socket = %s\nreseed_interval = 30\nkernel_topup = no\ncpu_source = no\n' "$sock_a" >"$work/reload.conf"
>"$work/log"   # emptied here, not in the child: never the last daemon's lines
"$RANDD" --foreground --config "$work/reload.conf" 2>>"$work/log" &
pid=$!
wait_for_log 'ready: generator seeded' || fail "awaited readiness on $sock_a: $(cat "$work/log")"
printf 'socket = %s\nreseed_interval = 45\nkernel_topup = no\ncpu_source = no\n' "$sock_b" >"$work/reload.conf"
kill -HUP "$pid"
wait_for_count 'reload: .* applied' 1 || fail "awaited the reload's 'applied' line: $(cat "$work/log")"
"$RANDCTL" --socket "$sock_a" status --json >"$work/out" 2>&1
json_has "\"config\":\\{[^}]*\"socket\":\"$(literal "$sock_a")\"" "after SIGHUP, STATUS reports the socket in effect"
json_has "\"pending_restart\":\\{\"socket\":\"$(literal "$sock_b")\"\\}" \
    "after SIGHUP, STATUS lists the new socket (and only it) as pending restart"
json_has '"config":\{[^}]*"reseed_interval":45[,}]' "after SIGHUP, STATUS reports the new reseed_interval"
json_has '"cpu_source":\{"name":"[a-z]+","in_use":false,"reason":"off \(cpu_source = no\)"\}' \
    "cpu_source = no: STATUS says the CPU source is off, and why"
"$RANDCTL" --socket "$sock_a" status --keys >"$work/out" 2>&1
expect_output "^pending_restart\.socket: $(literal "$sock_b")\$" "randctl status shows the pending socket"
grep -qE "reload: socket .*restart" "$work/log" && pass "the reload log names socket as waiting for a restart" ||
    fail "no reload line naming socket as waiting for a restart: $(cat "$work/log")"
"$RANDCTL" --socket "$sock_a" bytes 16 --hex >/dev/null 2>&1 && pass "still serving on the socket in effect" ||
    fail "not serving on $sock_a after SIGHUP"
[ ! -e "$sock_b" ] && pass "the pending socket is not created before a restart" || fail "$sock_b exists"
printf 'socket = %s\nreseed_interval = 45\nkernel_topup = no\ncpu_source = no\n' "$sock_a" >"$work/reload.conf"
kill -HUP "$pid"
wait_for_count 'reload: .* applied' 2 || fail "awaited the second reload's 'applied' line: $(cat "$work/log")"
"$RANDCTL" --socket "$sock_a" status --json >"$work/out" 2>&1
json_has '"pending_restart":\{\}' "a reload back to the socket in effect leaves nothing pending"
kill -TERM "$pid"; wait_exit "$pid" || fail "randd exit $? on SIGTERM after the reloads"; pid=

if [ "$(id -u)" = 0 ]; then
    # As root with the default kernel_topup = yes, the feed must work (not switch itself off).
    # The stand-in hwrng (common.sh) is kernel-creditable, whatever this CPU has.
    printf 'hwrng_device = %s\n' "$work/hwrng" >"$work/root.conf"
    : >"$work/log"      # here, not in the child: the wait below must not see the last daemon's log
    "$RANDD" --foreground --config "$work/root.conf" --socket "$work/root.sock" 2>>"$work/log" &
    pid=$!
    wait_for_log 'ready: generator seeded' || fail "the root daemon never became ready: $(cat "$work/log")"
    kill -USR1 "$pid"
    if wait_for_log 'kernel feed: kernel initialised, [1-9][0-9]* top-ups'; then pass "kernel topped up as root"
    else fail "kernel not topped up as root: $(grep -E 'kernel feed|hwrng' "$work/log")"; fi
    kill -TERM "$pid"; wait "$pid"; pid=
else
    echo "SKIP: kernel feed needs root (CAP_SYS_ADMIN)"
fi

finish test_randd.sh
