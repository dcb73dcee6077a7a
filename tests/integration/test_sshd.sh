#!/usr/bin/env bash
# A real program that forks into a sandbox, seeded through randd.so: Debian's OpenSSH sshd,
# with OPENSSL_CONF naming RANDD as the seed source and fallback = none, so that any seed
# randd did not give fails sshd (it exits when OpenSSL cannot seed) or the login. sshd seeds
# at start, re-executes itself for each connection and forks a pre-auth child that reseeds
# OpenSSL and then runs under seccomp; the key exchange (ECDH on P-256) and the host key's
# ECDSA signature take OpenSSL's random bytes in that child. The test's own sshd (its own
# config, host key, port on 127.0.0.1 and authorized_keys) must accept a key login, and
# randd's STATUS must count the seeds.
. "$(dirname "$0")/common.sh"
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }

PROVIDER=${RANDD_PROVIDER:-build/randd.so}
SSHD=${SSHD:-/usr/sbin/sshd}
[ -e "$PROVIDER" ] || { echo "test_sshd.sh: $PROVIDER is missing (make all)"; exit 1; }
# An ASan build's randd.so needs the sanitizer's runtime loaded first, which an sshd that
# re-executes itself and sandboxes its children with seccomp does not allow for.
if [ -n "${RANDD_SANITIZED:-}" ]; then
    echo "SKIP test_sshd.sh: sshd cannot load a sanitizer build of randd.so"; exit 0
fi
for tool in "$SSHD" ssh ssh-keygen python3; do
    if ! command -v "$tool" >/dev/null; then
        echo "SKIP test_sshd.sh: needs $tool (make deps-sshd installs openssh-server and -client; .ci/run does)"
        exit 0
    fi
done
# The provider is an OpenSSL 3 module: an sshd linked to anything else would not load it.
if ! ldd "$SSHD" | grep -q 'libcrypto\.so\.3 '; then
    echo "SKIP test_sshd.sh: $SSHD is not linked to OpenSSL 3's libcrypto"; exit 0
fi
export RANDD_SOCKET=$work/randd.sock
user=$(id -un)

# Run as root, sshd chroots its pre-auth child into /run/sshd, which Debian's unit makes at
# start; made here when missing, and removed again if so.
made_privsep_dir=
if [ "$(id -u)" = 0 ] && [ ! -d /run/sshd ]; then
    mkdir -m 0755 /run/sshd && made_privsep_dir=1
fi
# sshd and every process it started: a connection's sshd leaves the listener's session, and a
# login that hangs would outlive it.
descendants() {
    local c
    for c in $(ps -o pid= --ppid "$1"); do echo "$c"; descendants "$c"; done
}
cleanup_sshd() {
    if [ -n "${sshd_pid:-}" ]; then
        kill $(descendants "$sshd_pid") "$sshd_pid" 2>/dev/null
        wait "$sshd_pid" 2>/dev/null
    fi
    [ -n "$made_privsep_dir" ] && rmdir /run/sshd 2>/dev/null
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    rm -rf "$work"
}
trap 'if [ "$BASHPID" = "$test_shell" ]; then cleanup_sshd; fi' EXIT

write_openssl_cnf "$work/openssl.cnf" "$RANDD_SOCKET" "fallback = none"

ssh-keygen -q -t ecdsa -b 256 -N '' -C "test_sshd host" -f "$work/host_key" &&
    ssh-keygen -q -t ecdsa -b 256 -N '' -C "test_sshd client" -f "$work/id" &&
    cp "$work/id.pub" "$work/authorized_keys" ||
    { fail "ssh-keygen"; finish test_sshd.sh; exit; }

seeds() { "$RANDCTL" status --json | grep -o '"seed":[0-9]*' | cut -d: -f2; }
start_with_config ""

# A free port: asked of the kernel, then given to sshd; taken meanwhile, the next is tried.
sshd_pid=
for attempt in 1 2 3 4 5; do
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
    cat >"$work/sshd_config" <<EOF
ListenAddress 127.0.0.1:$port
HostKey $work/host_key
PidFile none
UsePAM no
StrictModes no
AuthorizedKeysFile $work/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowUsers $user
KexAlgorithms ecdh-sha2-nistp256
LogLevel DEBUG3
EOF
    n0=$(seeds)
    : >"$work/sshd.log"
    # -D: in the foreground, as the test's child; -e: its log (the pre-auth child's too,
    # through the monitor) on stderr.
    OPENSSL_CONF=$work/openssl.cnf OPENSSL_MODULES=$(cd "$(dirname "$PROVIDER")" && pwd) \
        "$SSHD" -D -e -f "$work/sshd_config" 2>"$work/sshd.log" &
    sshd_pid=$!
    listening() { in_log "Server listening on 127.0.0.1 port $port" "$work/sshd.log" ||
                  ! kill -0 "$sshd_pid" 2>/dev/null; }
    wait_for "sshd to listen" listening
    kill -0 "$sshd_pid" 2>/dev/null && break
    wait "$sshd_pid" 2>/dev/null; sshd_pid=
    in_log "Bind to port $port .* failed|Address already in use" "$work/sshd.log" || break
done
check "sshd starts, seeding from randd (fallback = none)" '[ -n "$sshd_pid" ]' ||
    tail -20 "$work/sshd.log"
n1=$(seeds)
check "sshd's start seeds OpenSSL through randd ($n0 -> $n1)" '[ "$n1" -gt "$n0" ]'

out=$(timeout "$WAIT" ssh -F /dev/null -i "$work/id" -o BatchMode=yes -o IdentitiesOnly=yes \
      -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
      -o KexAlgorithms=ecdh-sha2-nistp256 -o HostKeyAlgorithms=ecdsa-sha2-nistp256 \
      -p "$port" "$user@127.0.0.1" 'echo logged in as $(id -un)' 2>"$work/ssh.err"); rc=$?
n2=$(seeds)
check "ssh -i key logs in to the test's sshd as $user" \
    '[ $rc = 0 ] && [ "$out" = "logged in as $user" ]' ||
    { cat "$work/ssh.err"; tail -30 "$work/sshd.log"; }
# The connection's sshd (re-executed) seeds, and its pre-auth child reseeds after the fork:
# at least two.
check "the login's processes seed through randd ($n1 -> $n2)" '[ "$n2" -ge $((n1 + 2)) ]'
check "the pre-auth child ran under seccomp" \
    'in_log "ssh_sandbox_child: attaching seccomp filter program \[preauth\]" "$work/sshd.log"'
failed_seed="randd.so:|PRNG is not seeded|RAND_bytes failed|randd could not give a seed"
check "sshd logged no seeding failure and no fallback" \
    '! in_log "$failed_seed" "$work/sshd.log"'
check "sshd serves on after the login" 'kill -0 "$sshd_pid" 2>/dev/null'

finish test_sshd.sh
