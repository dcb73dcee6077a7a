#!/usr/bin/env bash
# randd.so, the OpenSSL provider, under clients nobody here wrote: `openssl rand`, Python's
# ssl module, and provider-fork (RAND_bytes in a parent and a forked child). Each runs with
# OPENSSL_CONF naming RANDD as the seed source; STATUS must show their SEED requests. Then
# randd stopped, hung (SIGSTOP) and unseeded, under each fallback: the kernel with one log
# line (stderr or syslog), or an error; never a wait past the timeout. Last, `openssl rand`
# and provider-fork under valgrind memcheck (or, in an ASan build, under ASan).
. "$(dirname "$0")/common.sh"
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }

PROVIDER=${RANDD_PROVIDER:-build/randd.so}
PROVIDER_FORK=${PROVIDER_FORK:-build/tests/provider-fork}
PROVIDER_PR=${PROVIDER_PR:-$(dirname "$PROVIDER_FORK")/provider-pr}
for f in "$PROVIDER" "$PROVIDER_FORK" "$PROVIDER_PR"; do
    [ -e "$f" ] || { echo "test_provider.sh: $f is missing (make all $PROVIDER_FORK)"; exit 1; }
done
if ! command -v openssl >/dev/null || ! command -v python3 >/dev/null; then
    echo "SKIP test_provider.sh: needs the openssl tool and python3"; exit 0
fi
export OPENSSL_MODULES
OPENSSL_MODULES=$(cd "$(dirname "$PROVIDER")" && pwd)
export RANDD_SOCKET=$work/randd.sock

# An ASan build's randd.so needs the sanitizer runtimes loaded first into programs built
# without them (openssl, python3); Python's own allocations are not ours to leak-check.
asan_preload=
if [ -n "${RANDD_SANITIZED:-}" ]; then
    asan_preload=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)
fi
ossl() { LD_PRELOAD=$asan_preload openssl "$@"; }
py() { LD_PRELOAD=$asan_preload ASAN_OPTIONS=detect_leaks=0 python3 "$@"; }

# openssl.cnf for the tests (common.sh), randd.so's section's extra lines after the file.
write_conf() { local file=$1; shift; write_openssl_cnf "$file" "$RANDD_SOCKET" "$@"; }
write_conf "$work/kernel.cnf"
write_conf "$work/none.cnf" "fallback = none"
write_conf "$work/kernel-1s.cnf" "timeout = 1000"
write_conf "$work/none-1s.cnf" "timeout = 1000" "fallback = none"
write_conf "$work/kernel-10s.cnf" "timeout = 10000"
write_conf "$work/none-10s.cnf" "timeout = 10000" "fallback = none"
write_conf "$work/syslog.cnf" "log = syslog"
write_conf "$work/typo.cnf" "fallback = kernal"

seeds() { "$RANDCTL" status --json | grep -o '"seed":[0-9]*' | cut -d: -f2; }
start_daemon() {
    printf '%s' "${1:-}" >"$work/randd.conf"
    "$RANDD" --config "$work/randd.conf" --socket "$RANDD_SOCKET" 2>>"$work/randd.log" &
    pid=$!
    wait_for "randd to answer STATUS" answers || fail "randd did not start: $(cat "$work/randd.log")"
}
stop_daemon() { kill "$pid"; wait "$pid" 2>/dev/null; pid=; }
ms_now() { echo $(($(date +%s%N) / 1000000)); }

# --- with randd serving: every client's seeds arrive, and show in STATUS and metrics ----
start_daemon
out=$(OPENSSL_CONF=$work/kernel.cnf ossl list -random-generators)
check "openssl lists RANDD @ randd among the seed sources" 'grep -q "RANDD @ randd" <<<"$out"'

n0=$(seeds)
out=$(OPENSSL_CONF=$work/kernel.cnf ossl rand -hex 32 2>"$work/err"); rc=$?
n1=$(seeds)
check "openssl rand -hex 32: 64 hex digits, nothing on stderr" \
    '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{64}$ ]] && [ ! -s "$work/err" ]'
check "openssl rand: its seed requests arrive in STATUS ($n0 -> $n1)" '[ "$n1" -gt "$n0" ]'

out=$(OPENSSL_CONF=$work/kernel.cnf py -c "import ssl; print(ssl.RAND_bytes(16).hex())" 2>"$work/err"); rc=$?
n2=$(seeds)
check "python3 ssl.RAND_bytes(16): 32 hex digits" '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{32}$ ]] && [ ! -s "$work/err" ]'
check "python3: its seed requests arrive in STATUS ($n1 -> $n2)" '[ "$n2" -gt "$n1" ]'
metric=$("$RANDCTL" metrics | sed -n 's/^randd_requests_total{op="seed"} //p')
check "metrics: randd_requests_total{op=\"seed\"} = $metric, as STATUS says" '[ "$metric" = "$n2" ]'

out=$(OPENSSL_CONF=$work/kernel.cnf LD_PRELOAD=$asan_preload "$PROVIDER_FORK" 2>"$work/err"); rc=$?
parent=$(sed -n 's/^parent //p' <<<"$out"); child=$(sed -n 's/^child //p' <<<"$out")
before=$(sed -n 's/^seeds before //p' <<<"$out")
after_parent=$(sed -n 's/^seeds after parent //p' <<<"$out")
after_child=$(sed -n 's/^seeds after child //p' <<<"$out")
check "provider-fork: parent and child draw with RAND_bytes" '[ $rc = 0 ] && [ -n "$parent" ] && [ -n "$child" ]' ||
    cat "$work/err"
check "provider-fork: the parent seeds through randd ($before -> $after_parent)" '[ "$after_parent" -gt "$before" ]'
check "provider-fork: the child reseeds through randd while the parent waits ($after_parent -> $after_child)" \
    '[ "$after_child" -gt "$after_parent" ]'
check "provider-fork: parent and child bytes differ after the fork" '[ "$parent" != "$child" ]'

out=$(OPENSSL_CONF=$work/typo.cnf ossl rand -hex 32 2>"$work/err"); rc=$?
check "a typo in the provider's section fails the seeding, naming the key" \
    '[ $rc != 0 ] && [ -z "$out" ] && grep -q "fallback: not kernel or none: \"kernal\"" "$work/err"'

# --- randd stopped: the kernel with one line, or an error; at once ----------------------------
stop_daemon
start=$(ms_now)
out=$(OPENSSL_CONF=$work/kernel.cnf ossl rand -hex 32 2>"$work/err"); rc=$?
took=$(($(ms_now) - start))
check "stopped, fallback = kernel: openssl rand succeeds from the kernel (${took} ms)" \
    '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{64}$ ]]'
check "stopped, fallback = kernel: one log line naming the socket and the reason" \
    '[ "$(wc -l <"$work/err")" = 1 ] && grep -q "^randd.so: $RANDD_SOCKET: No such file or directory; OpenSSL seeds from the kernel" "$work/err"'
out=$(OPENSSL_CONF=$work/kernel.cnf LD_PRELOAD=$asan_preload "$PROVIDER_FORK" 2>"$work/err"); rc=$?
check "stopped, fallback = kernel: a parent and its child still draw, with one line between them" \
    '[ $rc = 0 ] && [ "$(grep -c "^randd.so: " "$work/err")" = 1 ]'
out=$(OPENSSL_CONF=$work/kernel.cnf py -c "import ssl; print(ssl.RAND_bytes(16).hex())" 2>"$work/err"); rc=$?
check "stopped, fallback = kernel: python3 too, with one line" \
    '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{32}$ ]] && [ "$(wc -l <"$work/err")" = 1 ]'

out=$(OPENSSL_CONF=$work/none.cnf ossl rand -hex 32 2>"$work/err"); rc=$?
check "stopped, fallback = none: openssl rand fails with randd's reason, prints no bytes" \
    '[ $rc != 0 ] && [ -z "$out" ] && grep -q "randd could not give a seed.*$RANDD_SOCKET: No such file or directory" "$work/err"'
out=$(OPENSSL_CONF=$work/none.cnf py -c "import ssl; print(ssl.RAND_bytes(16).hex())" 2>"$work/err"); rc=$?
check "stopped, fallback = none: python3 gets an SSLError" '[ $rc != 0 ] && grep -q "SSLError: randd could not give a seed" "$work/err"'

# syslog: a listener on /dev/log in a mount namespace of its own (the real /dev is shared).
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    mkdir "$work/dev"
    cat >"$work/syslog.py" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
open(sys.argv[1] + ".ready", "w").close()
with open(sys.argv[1], "ab", buffering=0) as out:
    while True:
        out.write(s.recv(4096) + b"\n")
EOF
    export -f wait_for in_log ossl
    export work asan_preload WAIT
    unshare -m bash -c '
        mount --bind /dev "$work/dev" && mount -t tmpfs -o mode=755 tmpfs /dev &&
        touch /dev/null && mount --bind "$work/dev/null" /dev/null || exit 2
        python3 "$work/syslog.py" "$work/syslog" & listener=$!
        trap "kill $listener" EXIT
        wait_for "the syslog listener" test -e "$work/syslog.ready" || exit 2
        OPENSSL_CONF=$work/syslog.cnf ossl rand -hex 32 >"$work/out" 2>"$work/err" || exit 1
        wait_for "the fallback line in syslog" in_log "randd.so: .*kernel" "$work/syslog"
    '; rc=$?
    check "stopped, log = syslog: openssl rand succeeds and says so once in syslog, not on stderr" \
        '[ $rc = 0 ] && [ "$(wc -l <"$work/syslog")" = 1 ] && grep -q "^<12>" "$work/syslog" && [ ! -s "$work/err" ]' ||
        echo "syslog: $(cat "$work/syslog" 2>/dev/null) stderr: $(cat "$work/err")"
else
    echo "SKIP: log = syslog needs root and mount namespaces"
fi

# --- randd hung (SIGSTOP): one timeout, then the fallback or the error ----------------------
start_daemon
kill -STOP "$pid"
for mode in kernel none; do
    start=$(ms_now)
    out=$(OPENSSL_CONF=$work/$mode-1s.cnf ossl rand -hex 32 2>"$work/err"); rc=$?
    took=$(($(ms_now) - start))
    # At least the 1000 ms timeout (it did wait), and bounded: 5 s more leaves room for a
    # busy machine (check-loaded) or a sanitizer, and is nowhere near a hang.
    check "hung, fallback = $mode: openssl rand returns after the 1000 ms timeout (${took} ms)" \
        '[ "$took" -ge 1000 ] && [ "$took" -lt 6000 ]'
    if [ $mode = kernel ]; then
        check "hung, fallback = kernel: bytes from the kernel, and the timeout logged" \
            '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{64}$ ]] && grep -q "Connection timed out; OpenSSL seeds from the kernel" "$work/err"'
    else
        check "hung, fallback = none: an error naming the timeout" \
            '[ $rc != 0 ] && [ -z "$out" ] && grep -q "Connection timed out (fallback = none)" "$work/err"'
    fi
done
kill -CONT "$pid"
stop_daemon

# --- randd unseeded (its one source, an hwrng, reads end-of-file): not waited for ----------
# A 10 s timeout: a request that waited for randd to seed would take all of it.
start_daemon "$(printf 'cpu_source = no\ngetrandom = no\njitter = no\nhwrng_device = /dev/null\n')"
for mode in kernel none; do
    start=$(ms_now)
    out=$(OPENSSL_CONF=$work/$mode-10s.cnf ossl rand -hex 32 2>"$work/err"); rc=$?
    took=$(($(ms_now) - start))
    if [ $mode = kernel ]; then
        check "unseeded, fallback = kernel: openssl rand does not wait for randd (${took} ms) and says why" \
            '[ $rc = 0 ] && [ "$took" -lt 10000 ] && grep -q "daemon not ready.*; OpenSSL seeds from the kernel" "$work/err"'
    else
        check "unseeded, fallback = none: an error at once (${took} ms) saying randd is not ready" \
            '[ $rc != 0 ] && [ "$took" -lt 10000 ] && grep -q "daemon not ready" "$work/err"'
    fi
done
stop_daemon

# --- prediction resistance: OpenSSL's own DRBGs on randd.so ---------------------------------
# A noise source of the test's own (the hwrng stand-in; no RDSEED, no jitter): each generate
# with prediction resistance takes one prediction-resistant seed, counted apart in STATUS, and
# the daemon one reseed from the noise source for it; the
# ordinary generates after it take none of either kind (the DRBG needs no reseed).
start_daemon "$(printf 'cpu_source = no\njitter = no\nhwrng_device = %s\n' "$work/hwrng")"
wait_for "the hwrng stand-in healthy" field_is hwrng state healthy ||
    fail "hwrng not healthy: $(cat "$work/randd.log")"
for drbg in HASH-DRBG CTR-DRBG; do
    out=$(OPENSSL_CONF=$work/kernel-10s.cnf LD_PRELOAD=$asan_preload "$PROVIDER_PR" $drbg 2>"$work/err"); rc=$?
    check "$drbg on RANDD, prediction_resistance = 1: one prediction-resistant seed and one noise reseed a generate ($(head -1 <<<"$out"))" \
        '[ $rc = 0 ] && grep -q "^prediction-resistant: 3 generates, seed_pr +3, seed +0, noise reseeds +3$" <<<"$out"' ||
        cat "$work/err"
    check "$drbg on RANDD, prediction_resistance = 0: no seed of either kind ($(tail -1 <<<"$out"))" \
        '[ $rc = 0 ] && grep -q "^ordinary: 3 generates, seed_pr +0, seed +0, noise reseeds +0$" <<<"$out"'
done
stop_daemon
# getrandom alone: no noise source. The prediction-resistant seed fails at once with the
# daemon's reason, even with fallback = kernel; ordinary seeding still works (openssl rand).
start_daemon "$(printf 'cpu_source = no\nhwrng = no\njitter = no\n')"
start=$(ms_now)
out=$(OPENSSL_CONF=$work/kernel-10s.cnf LD_PRELOAD=$asan_preload "$PROVIDER_PR" 2>"$work/err"); rc=$?
took=$(($(ms_now) - start))
check "no noise source: prediction resistance fails at once (${took} ms), no fallback, saying why" \
    '[ $rc = 1 ] && [ "$took" -lt 10000 ] && grep -q "randd could not give a prediction-resistant seed.*noise source" "$work/err" && ! grep -q "seeds from the kernel" "$work/err"' ||
    cat "$work/err"
out=$(OPENSSL_CONF=$work/kernel-10s.cnf ossl rand -hex 32 2>"$work/err"); rc=$?
check "no noise source: openssl rand still seeds from randd, nothing on stderr" \
    '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{64}$ ]] && [ ! -s "$work/err" ]'
stop_daemon

# --- memory checkers on the provider inside real clients --------------------------------------
start_daemon
if [ -n "${RANDD_SANITIZED:-}" ]; then
    # Leaks are checked too: openssl frees what it holds at exit.
    out=$(OPENSSL_CONF=$work/kernel.cnf ASAN_OPTIONS=detect_leaks=1 ossl rand -hex 32 2>"$work/err"); rc=$?
    check "ASan: openssl rand with an instrumented randd.so, no report" '[ $rc = 0 ] && [ ! -s "$work/err" ]' ||
        head -30 "$work/err"
elif command -v valgrind >/dev/null; then
    vg() { valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite "$@"; }
    out=$(OPENSSL_CONF=$work/kernel.cnf vg openssl rand -hex 32 2>"$work/err"); rc=$?
    check "valgrind: openssl rand with randd.so, no error and no definite leak" \
        '[ $rc = 0 ] && [[ $out =~ ^[0-9a-f]{64}$ ]] && [ ! -s "$work/err" ]' || head -30 "$work/err"
    out=$(OPENSSL_CONF=$work/kernel.cnf vg "$PROVIDER_FORK" 2>"$work/err"); rc=$?
    check "valgrind: provider-fork, parent and child, no error and no definite leak" \
        '[ $rc = 0 ] && [ ! -s "$work/err" ]' || head -30 "$work/err"
    stop_daemon
    out=$(OPENSSL_CONF=$work/kernel.cnf vg openssl rand -hex 32 2>"$work/err"); rc=$?
    check "valgrind: openssl rand falling back to the kernel, nothing but the one line" \
        '[ $rc = 0 ] && [ "$(wc -l <"$work/err")" = 1 ]' || head -30 "$work/err"
else
    echo "SKIP: valgrind is not installed"
fi

finish test_provider.sh
