#!/usr/bin/env bash
# librandd trusts only the real daemon (issue 26, items 1 and 8): a setuid program never takes
# bytes from a daemon named in a stranger's $RANDD_SOCKET, and its randd_random differs from
# run to run; a daemon another user could have put in place is refused before a byte is read;
# root's and one in its owner's private directory are believed; connect() keeps the timeout.
# The attacker is nobody (setpriv); trust-probe (tests/integration/trust_probe.c) is the client
# and the fake daemon, which answers every request with 0x41 bytes.
. "$(dirname "$0")/common.sh"
PROBE=${TRUST_PROBE:-build/tests/trust-probe}
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null; then
    echo "SKIP: test_trust.sh needs root and setpriv (setuid root, another uid)"; exit 0
fi
AS_NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
as_nobody() { "${AS_NOBODY[@]}" "$@"; }
# The fake daemons are killed on exit, by their own pids: each is started without a function
# or subshell between, so $! is setpriv, which becomes trust-probe (a subshell's pid would
# die alone and leave its child running as nobody).
fakes=()
trap 'if [ "$BASHPID" = "$test_shell" ]; then
          for f in "${fakes[@]}"; do kill "$f" 2>/dev/null; done
          [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work" "${private:-}"
      fi' EXIT
# start_fake SOCKET: nobody's fake daemon there, its requests logged to SOCKET.log.
start_fake() {
    "${AS_NOBODY[@]}" "$PROBE" fake-daemon "$1" >"$1.log" 2>&1 &
    fakes+=($!)
    wait_for "the fake daemon on $1" test -S "$1" || fail "no fake daemon: $(cat "$1.log")"
}
requests() { grep -c '^request' "$1.log"; }
fake_bytes=$(printf '41%.0s' $(seq 32))

# nobody's own directory, which only nobody (and root, above it) can write: a daemon there
# passes the peer rule, as one in an attacker's home directory would. Under /run, whose
# directories above are root's and not writable by others ($work is under /tmp).
private=$(mktemp -d /run/randd-trust.XXXXXX)
chmod 0755 "$private"
mkdir -m 0755 "$private/own"
chown nobody "$private/own"
start_fake "$private/own/fake.sock"

# --- a setuid program and a stranger's $RANDD_SOCKET ---------------------------------------
# The fake daemon is in nobody's private directory, so only secure_getenv stands between it
# and the program. The copy lives where nobody can reach it, on the same filesystem as the
# build (mounted without nosuid: a nosuid mount would make this test pass for no reason).
mkdir -m 0755 "$work/suid"
cp "$PROBE" "$work/suid/trust-probe"
chown root:root "$work/suid/trust-probe"
chmod 4755 "$work/suid/trust-probe"
if findmnt -n -o OPTIONS -T "$work/suid" | grep -qw nosuid; then
    fail "$work is on a nosuid filesystem: the setuid test cannot run here"
fi
suid() { as_nobody env RANDD_SOCKET="$private/own/fake.sock" "$work/suid/trust-probe" "$@" 2>&1; }
out=$(suid bytes)
[[ $out != *"$fake_bytes"* ]] && pass "setuid randd_bytes takes nothing from \$RANDD_SOCKET ($out)" ||
    fail "setuid randd_bytes returned the fake daemon's bytes: $out"
one=$(suid random) two=$(suid random)
[[ $one =~ ^[0-9a-f]{64}$ ]] && [ "$one" != "$two" ] && [[ $one != "$fake_bytes" ]] &&
    pass "setuid randd_random differs between runs" ||
    fail "setuid randd_random: \"$one\" then \"$two\""
[ "$(requests "$private/own/fake.sock")" = 0 ] &&
    pass "the setuid program never talked to the fake daemon" ||
    fail "the fake daemon was asked: $(cat "$private/own/fake.sock.log")"

# nobody's own program may use nobody's own daemon (it is theirs), yet even a daemon that
# answers the same bytes every time never fixes randd_random: getrandom() goes into the key.
one=$(as_nobody env RANDD_SOCKET="$private/own/fake.sock" "$PROBE" random 2>&1)
two=$(as_nobody env RANDD_SOCKET="$private/own/fake.sock" "$PROBE" random 2>&1)
[ "$(requests "$private/own/fake.sock")" -ge 2 ] && [[ $one =~ ^[0-9a-f]{64}$ ]] &&
    [ "$one" != "$two" ] &&
    pass "seeded by a daemon that always answers 0x41, randd_random still differs" ||
    fail "randd_random with a constant daemon: \"$one\" then \"$two\" ($(requests "$private/own/fake.sock") requests)"

# --- the peer rule ------------------------------------------------------------------------
# A daemon of nobody's in a directory anyone can write (as /tmp): refused, and not read.
mkdir -m 1777 "$work/shared"
start_fake "$work/shared/fake.sock"
out=$("$PROBE" bytes "$work/shared/fake.sock" 2>&1); rc=$?
[ $rc != 0 ] && [[ $out == *"-1: Operation not permitted: $work/shared/fake.sock: refused: the daemon there runs as uid 65534"*"writable by others"* ]] &&
    pass "root refuses nobody's daemon in a world-writable directory, saying why" ||
    fail "nobody's daemon in $work/shared: rc $rc: $out"
out=$(RANDD_SOCKET=$work/shared/fake.sock "$PROBE" bytes 2>&1); rc=$?
[ $rc != 0 ] && [[ $out == *"refused: the daemon there runs as uid 65534"* ]] &&
    pass "the same through \$RANDD_SOCKET" || fail "through \$RANDD_SOCKET: rc $rc: $out"
out=$("$RANDCTL" --socket "$work/shared/fake.sock" bytes 16 2>&1); rc=$?
[ $rc = 4 ] && [[ $out == "randctl: $work/shared/fake.sock: refused: the daemon there runs as uid 65534"* ]] &&
    pass "randctl refuses it, exit 4, saying why" || fail "randctl and the squatter: rc $rc: $out"
[ "$(requests "$work/shared/fake.sock")" = 0 ] && pass "not a request was sent to it" ||
    fail "the refused daemon was asked: $(cat "$work/shared/fake.sock.log")"

# OpenSSL's randd.so opens its socket through librandd, so it keeps the same rule: with
# fallback = none, `openssl rand` fails rather than seed from the refused daemon.
PROVIDER=${RANDD_PROVIDER:-build/randd.so}
if [ -e "$PROVIDER" ] && command -v openssl >/dev/null && [ -z "${RANDD_SANITIZED:-}" ]; then
    write_openssl_cnf "$work/openssl.cnf" "$work/shared/fake.sock" "fallback = none"
    out=$(OPENSSL_MODULES=$(cd "$(dirname "$PROVIDER")" && pwd) OPENSSL_CONF=$work/openssl.cnf \
          openssl rand -hex 16 2>&1); rc=$?
    [ $rc != 0 ] && [[ $out == *"Operation not permitted"* ]] &&
        [ "$(requests "$work/shared/fake.sock")" = 0 ] &&
        pass "randd.so refuses it too (openssl rand fails with fallback = none)" ||
        fail "randd.so and a refused daemon: rc $rc: $out"
else
    echo "SKIP: randd.so under the peer rule (needs $PROVIDER and openssl, no sanitizer)"
fi

# The real daemon, started by root (it listens before dropping privileges): believed by
# nobody, in a directory anyone can write. randd refuses to bind there itself, so its socket
# is moved there once bound (as anyone could rename a socket into such a directory).
printf 'hwrng_device = %s\n' "$work/hwrng" >"$work/randd.conf"
"$RANDD" --foreground --config "$work/randd.conf" --socket "$work/randd.sock" \
    2>"$work/log" &
pid=$!
wait_for "randd answering" answers "$work/randd.sock" || fail "randd: $(cat "$work/log")"
mv "$work/randd.sock" "$work/shared/randd.sock"
out=$(as_nobody env RANDD_SOCKET="$work/shared/randd.sock" "$PROBE" bytes 2>&1)
[[ $out =~ ^[0-9a-f]{64}$ ]] && [ "$out" != "$fake_bytes" ] &&
    pass "nobody believes root's randd in a world-writable directory" || fail "root's randd: $out"
kill "$pid"; wait "$pid" 2>/dev/null; pid=

# A daemon in its owner's own directory, which only that owner (and root, above it) can
# write: believed by root, until the directory or one above it lets others write.
out=$("$PROBE" bytes "$private/own/fake.sock" 2>&1)
[ "$out" = "$fake_bytes" ] && pass "root believes nobody's daemon in nobody's private directory" ||
    fail "nobody's daemon in its private directory: $out"

# The same daemon reached through a symlink nobody put in a shared directory: whoever made
# the name first decides where it leads, so the shared directory that holds the link counts
# as one on the way (the review's attack: root took nobody's bytes through it).
mkdir -m 1777 "$work/sticky"
mkdir -m 2775 "$work/group"; chgrp nogroup "$work/group"; chmod 2775 "$work/group"
asked=$(requests "$private/own/fake.sock")
for shared in sticky group; do
    as_nobody ln -s "$private/own" "$work/$shared/randd"
    as_nobody ln -s "$private/own/fake.sock" "$work/$shared/randd.sock"
    [ $shared = sticky ] && who=others || who="its group"
    out=$("$PROBE" bytes "$work/$shared/randd/fake.sock" 2>&1); rc=$?
    [ $rc != 0 ] && [[ $out == *"refused: the daemon there runs as uid 65534"* ]] &&
        [[ $out == *"$work/$shared is writable by $who"* ]] &&
        pass "refused through nobody's symlinked directory in $work/$shared, saying why" ||
        fail "through a symlinked directory in $work/$shared: rc $rc: $out"
    out=$("$PROBE" bytes "$work/$shared/randd.sock" 2>&1); rc=$?
    [ $rc != 0 ] && [[ $out == *"$work/$shared is writable by $who"* ]] &&
        pass "refused through nobody's symlink to the socket in $work/$shared" ||
        fail "through a symlinked socket in $work/$shared: rc $rc: $out"
done
[ "$(requests "$private/own/fake.sock")" = "$asked" ] &&
    pass "not a request was sent to it through those paths" ||
    fail "the fake daemon was asked: $(cat "$private/own/fake.sock.log")"

chmod 0775 "$private/own"
out=$("$PROBE" bytes "$private/own/fake.sock" 2>&1); rc=$?
[ $rc != 0 ] && [[ $out == *"$private/own is writable by its group"* ]] &&
    pass "refused once its group may write the directory" || fail "group-writable: rc $rc: $out"
chmod 0755 "$private/own"
chmod 0757 "$private"
out=$("$PROBE" bytes "$private/own/fake.sock" 2>&1); rc=$?
[ $rc != 0 ] && [[ $out == *"$private is writable by others"* ]] &&
    pass "refused once others may write a directory above it" || fail "parent writable: rc $rc: $out"

# --- connect() under the timeout ----------------------------------------------------------
# A listener whose backlog is full makes connect() wait for room: randd_open returns at once,
# and the call gives up with -ETIMEDOUT after its timeout (500 ms), not never.
out=$(timeout "$WAIT" "$PROBE" deadline "$work/full.sock" 500 2>&1); rc=$?
open_ms=$(sed -n 's/^open took \([0-9]*\) ms$/\1/p' <<<"$out")
bytes_ms=$(sed -n 's/^bytes took \([0-9]*\) ms: .*/\1/p' <<<"$out")
# The bounds below are loose for a loaded machine: without a deadline either call waits for
# ever (until $WAIT kills it).
[ $rc = 0 ] && [ "${open_ms:-99999}" -lt 2000 ] && [ "${bytes_ms:-0}" -ge 450 ] &&
    [ "${bytes_ms:-99999}" -lt 10000 ] && [[ $out == *"no room in the daemon's backlog"* ]] &&
    pass "connect() to a full backlog ends at the timeout ($open_ms ms, then $bytes_ms ms)" ||
    fail "connect() to a full backlog: rc $rc: $out"

finish test_trust.sh
