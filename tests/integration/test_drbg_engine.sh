#!/usr/bin/env bash
# engine = ctr_drbg (hash_drbg where the CPU lacks hardware AES), issue 40: the daemon starts
# with an SP 800-90A DRBG serving ordinary output, its known-answer self-test passed first;
# it serves short and long reads, from the pool and from serving loops (workers = 2); STATUS,
# randctl status and the metrics name the engine and its mechanism; a DRBG self-test forced
# to fail (libfault's kat=drbg) in mode = approved stops all output until a clean re-test;
# mode = approved serves every kind of output from DRBGs, conditioned with SHA-512.
. "$(dirname "$0")/common.sh"
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }

LIBFAULT=${LIBFAULT:-build/libfault.so}
[ -e "$LIBFAULT" ] && LIBFAULT=$(cd "$(dirname "$LIBFAULT")" && pwd)/$(basename "$LIBFAULT")
export RANDD_SOCKET=$work/randd.sock
metric() { "$RANDCTL" metrics | awk -v m="$1" '$1 == m { print $2; exit }'; }
key_is() { [ "$(status_key "$1")" = "$2" ]; }
BASE=("hwrng_device = $work/hwrng" "kernel_topup = no" "jitter = no")

engine=ctr_drbg mechanism="CTR_DRBG AES-256 (df)"
if grep -q "does not do AES in hardware" <(printf 'engine = ctr_drbg\n' >"$work/probe.conf"
        "$RANDD" --check-config --config "$work/probe.conf" 2>&1); then
    echo "SKIP: engine = ctr_drbg: this CPU does not do AES in hardware; testing hash_drbg"
    engine=hash_drbg mechanism="Hash_DRBG SHA-512"
fi

serves() {
    local what=$1 out n
    out=$(timeout "$WAIT" "$RANDCTL" bytes 16 --hex); rc=$?
    check "$what: randctl bytes 16 serves ($out)" '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{32}$ ]]'
    n=$(timeout "$WAIT" "$RANDCTL" bytes 300000 --raw | wc -c)
    check "$what: randctl bytes 300000 (five generates of at most 64 KiB) serves all" \
        '[ "$n" = 300000 ]'
}

# The modes and primes on the DRBG (pr_generator.c, primes.c): a prediction-resistant reply
# (one noise reseed, of a DRBG of the engine's mechanism), a full-entropy one (the loop's DRBG
# output XOR noise blocks) and a prime, each served. hwrng (the file) is the noise source.
noise_modes() {
    local what=$1 pr_bytes=$2 out reseeds0
    wait_for "hwrng healthy" field_is hwrng state healthy || fail "$what: hwrng: $(cat "$work/log")"
    reseeds0=$(status_key noise.noise_reseeds)
    out=$(timeout "$WAIT" "$RANDCTL" bytes $pr_bytes --prediction-resistant --raw | wc -c)
    check "$what: bytes $pr_bytes --prediction-resistant: all served, one noise reseed ($reseeds0 -> $(status_key noise.noise_reseeds))" \
        '[ "$out" = $pr_bytes ] && [ "$(status_key noise.noise_reseeds)" = $((reseeds0 + 1)) ]'
    out=$(timeout "$WAIT" "$RANDCTL" bytes 64 --full-entropy --hex)
    check "$what: bytes 64 --full-entropy serves ($out)" '[[ $out =~ ^[0-9a-f]{128}$ ]]'
    out=$(timeout "$WAIT" "$RANDCTL" prime 256 --hex)
    check "$what: prime 256 serves ($out)" '[[ $out =~ ^0x[0-9A-F]{64}$ ]]'
}

# --- a daemon serving from the DRBG ----------------------------------------------------------
start_with_config "${BASE[@]}" "engine = $engine"
wait_for "ready" key_is ready true || fail "not ready: $(cat "$work/log")"
serves "engine = $engine"
check "STATUS names the engine and its mechanism; the start self-test ran the DRBG's" \
    'key_is pool.engine $engine && key_is pool.drbg.mechanism "$mechanism" &&
     key_is selftest.last_result pass &&
     [ "$(status_key pool.drbg.requests_since_seed)" -ge 1 ] 2>/dev/null'
check "randctl status shows engine $engine" \
    '"$RANDCTL" status | head -1 | grep -q "engine $engine, "'
check "metrics: randd_engine{engine=\"$engine\",drbg=\"$mechanism\"} 1" \
    '"$RANDCTL" metrics | grep -qxF "randd_engine{engine=\"$engine\",drbg=\"$mechanism\"} 1"'
check "log: the generator line says what is not approved yet" \
    'in_log "generator: $engine \(SP 800-90A .*not approved" "$work/log"'
noise_modes "engine = $engine" 65528
stop_randd

start_with_config "${BASE[@]}" "engine = $engine" "workers = 2"
wait_for "ready" key_is ready true || fail "workers = 2: not ready: $(cat "$work/log")"
serves "engine = $engine, workers = 2"
stop_randd

# --- a DRBG known answer forced wrong in mode = approved: output stops until a clean re-test -
# (LD_PRELOAD fault injection, as test_selftest.sh: not under ASan, whose runtime must come
# first in the library list.)
fault_injection() {
halted() {
    key_is ready false &&
        [[ $(status_key not_ready_reason) == "self-test failed: ${mechanism%% *}"* ]]
}
printf '%s\n' "${BASE[@]}" "mode = approved" "selftest_interval = 0" >"$work/randd.conf"
: >"$work/log"; rm -f "$work/kat-broken"
RANDD_FAULTS=kat=drbg RANDD_FAULTS_SWITCH=$work/kat-broken LD_PRELOAD=$LIBFAULT \
    "$RANDD" --foreground --config "$work/randd.conf" --socket "$RANDD_SOCKET" 2>"$work/log" &
pid=$!
wait_for "randd ready" key_is ready true || fail "kat=drbg: not ready: $(cat "$work/log")"
touch "$work/kat-broken"
out=$("$RANDCTL" selftest 2>&1); rc=$?
check "DRBG known answer broken: randctl selftest exits 1 and names the DRBG ($out)" \
    '[ $rc = 1 ] && [[ $out == *"self-test failed: ${mechanism%% *}"*"self-test"* ]]'
wait_for "output halted" halted
check "STATUS: not ready, the failed test is the DRBG's; the log says output stopped" \
    'halted && key_is selftest.last_result fail &&
     in_log "self-test \(request\) failed: ${mechanism%% *}.*all output stopped" "$work/log"'
out=$("$RANDCTL" --nonblock bytes 16 --hex 2>&1); rc=$?
check "DRBG self-test failed: no output (NOT_READY, exit 5)" \
    '[ $rc = 5 ] && [[ ! $out =~ [0-9a-f]{32} ]]'
rm "$work/kat-broken"
check "mended, but not re-tested: still halted" halted
out=$("$RANDCTL" selftest 2>&1); rc=$?
check "randctl selftest after the mend: passes, output resumes" \
    '[ $rc = 0 ] && [[ $out == *"output resumes"* ]]'
wait_for "output resumed" key_is ready true
serves "after a clean re-test"
stop_randd

# Broken from the start: the start self-test fails before the first instantiation, and randd
# refuses to serve at all.
printf '%s\n' "${BASE[@]}" "mode = approved" >"$work/randd.conf"
: >"$work/log"
RANDD_FAULTS=kat=drbg LD_PRELOAD=$LIBFAULT \
    "$RANDD" --foreground --config "$work/randd.conf" --socket "$RANDD_SOCKET" 2>"$work/log" &
pid=$!
wait_exit "$pid"; rc=$?; pid=
check "DRBG known answer broken at start: randd exits ($rc), refusing to serve" \
    '[ $rc != 0 ] && in_log "self-test failed: ${mechanism%% *}.*refusing to serve" "$work/log"'

}
if [ -n "${RANDD_SANITIZED:-}" ]; then
    echo "SKIP: DRBG known answer forced wrong: LD_PRELOAD fault injection does not mix with ASan"
elif [ ! -e "$LIBFAULT" ]; then
    echo "SKIP: DRBG known answer forced wrong: $LIBFAULT not built"
else
    fault_injection
fi

# --- mode = approved -------------------------------------------------------------------------
# The engine follows the CPU (ctr_drbg with hardware AES), the pool conditions with SHA-512 and
# credits it as vetted, only noise sources' credit seeds; bytes, PR, full entropy and primes
# are served; STATUS, the status view, the metrics and the log name the mode.
# One loop, whose DRBG is the pool's (the RANGE count below reads its generates), and no
# timed reseed to reset that count in the middle.
start_with_config "${BASE[@]}" "mode = approved" "workers = 1" "reseed_interval = 3600"
wait_for "ready" key_is ready true || fail "mode = approved: not ready: $(cat "$work/log")"
serves "mode = approved"
noise_modes "mode = approved" 65528
# One generate after one reseed: the reply's first piece, 65528 bytes after the header. A
# longer request, written from lib/PROTOCOL.md (BYTES, flag PREDICTION_RESISTANT, n 65529),
# is refused saying why; librandd splits a longer call into requests of 65528, a reseed each.
out=$(python3 - "$RANDD_SOCKET" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(struct.pack(">BBHI", 1, 1, 2, 4) + struct.pack(">I", 65529))
head = b""
while len(head) < 8: head += s.recv(8 - len(head))
_, status, _, n = struct.unpack(">BBHI", head)
body = b""
while len(body) < n: body += s.recv(n - len(body))
print(status, body.decode())
PY
)
check "mode = approved: a 65529-byte PREDICTION_RESISTANT request is refused TOO_LARGE, saying why ($out)" \
    '[[ $out == "4 "*"at most 65528 bytes"* ]]'
reseeds0=$(status_key noise.noise_reseeds)
n=$(timeout "$WAIT" "$RANDCTL" bytes 65529 --prediction-resistant --raw | wc -c)
check "mode = approved: bytes 65529 --prediction-resistant served as two requests, a reseed each ($reseeds0 -> $(status_key noise.noise_reseeds))" \
    '[ "$n" = 65529 ] && [ "$(status_key noise.noise_reseeds)" = $((reseeds0 + 2)) ]'
h_in=$(status_key pool.conditioning.h_in)
check "STATUS: mode approved, engine $engine, SHA-512 conditioning (vetted), instantiated from 448 noise bits (h_in $h_in), noise sources only" \
    'key_is mode approved && key_is pool.engine $engine &&
     key_is pool.drbg.mechanism "$mechanism" &&
     key_is pool.conditioning.function SHA-512 && key_is pool.conditioning.vetted true &&
     key_is pool.drbg.instantiate_bits 448 && [ "${h_in%.*}" -ge 448 ] 2>/dev/null &&
     key_is config.require_noise_source true'
# RANGE draws its bytes a batch a generate: one value a generate (~2 us with a DRBG) let anyone
# hold a loop for seconds. 65535 values of [0, 200) take about 80 KB of draws.
gen0=$(status_key pool.drbg.requests_since_seed)
n=$(timeout "$WAIT" "$RANDCTL" range 200 --count 65535 | wc -l)
gen1=$(status_key pool.drbg.requests_since_seed)
check "mode = approved: range 200 --count 65535 serves $n values in $((gen1 - gen0)) DRBG generates (a batch each, not one a value)" \
    '[ "$n" = 65535 ] && [ $((gen1 - gen0)) -ge 1 ] && [ $((gen1 - gen0)) -lt 1000 ]'
check "randctl status shows approved mode" \
    '"$RANDCTL" status | head -1 | grep -q "approved mode, engine $engine, "'
check "metrics: randd_mode{mode=\"approved\"} 1" \
    '"$RANDCTL" metrics | grep -qxF "randd_mode{mode=\"approved\"} 1"'
check "log: mode approved, the generator, SHA-512, librandd outside" \
    'in_log "mode approved: generator $engine \(SP 800-90A .*\), seeded from noise sources only, through SHA-512 conditioning \(vetted\).*librandd" "$work/log"'
# A reload without the mode (the mode waits for a restart) must not let getrandom seed it.
printf '%s\n' "${BASE[@]}" "require_noise_source = no" >"$work/randd.conf"
kill -HUP "$pid"
wait_for "the reload's notice" in_log "require_noise_source = no does not apply while mode = approved" "$work/log"
check "reloaded without the mode: still approved, require_noise_source still on, and the log says so" \
    'key_is mode approved && key_is config.require_noise_source true &&
     in_log "require_noise_source = no does not apply while mode = approved" "$work/log"'
stop_randd
start_with_config "${BASE[@]}"
check "the default mode says so (STATUS mode default, randd_mode{mode=\"default\"} 1)" \
    'key_is mode default && "$RANDCTL" metrics | grep -qxF "randd_mode{mode=\"default\"} 1"'
stop_randd

printf '%s\n' "mode = approved" "engine = cymric" >"$work/approved.conf"
out=$("$RANDD" --check-config --config "$work/approved.conf" 2>&1); rc=$?
check "mode = approved with engine = cymric: refused at the engine's line (exit $rc)" \
    '[ $rc != 0 ] && [[ $out == *"approved.conf:2: engine = cymric: mode = approved (line 1)"* ]]'

finish test_drbg_engine.sh
