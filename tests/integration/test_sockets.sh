#!/usr/bin/env bash
# The socket paths randd binds (socket, egd_socket): a path that is not a socket (a file, a
# symlink) is refused and left as it was, a socket another daemon listens on is refused and
# left to it, and on exit a daemon removes a path only while it is still the socket it bound.
# (A stale socket left by a killed daemon is replaced: test_faults.sh, test_lifecycle.c.) EGD
# sockets systemd passes are held to egd_listen's rule: Unix or loopback TCP, else refused.
. "$(dirname "$0")/common.sh"
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }

printf 'kernel_topup = no\n' >"$work/plain.conf"
printf 'kernel_topup = no\negd_socket = %s\n' "$work/egd.sock" >"$work/egd.conf"

# refused NAME CONFIG SOCKET: randd must refuse to start (exit 1) and say why in $work/out. A
# randd that starts instead is stopped after $WAIT s (timeout's exit 124).
refused() {
    timeout "$WAIT" "$RANDD" --config "$2" --socket "$3" >"$work/out" 2>&1; rc=$?
    check "$1: refused (exit 1)" \
        '[ $rc = 1 ] || { echo "exit $rc: $(cat "$work/out")"; false; }'
}

# listening SOCKET: waits for a daemon to answer STATUS there.
listening() { wait_for "a daemon to answer STATUS on $1" answers "$1"; }

inode() { stat -c %d:%i "$1" 2>/dev/null; }

# --- what is not a socket is never deleted ---------------------------------------------
echo important >"$work/f"
refused "--socket on a regular file" "$work/plain.conf" "$work/f"
check "--socket on a regular file: the message names it" \
    'grep -q "$work/f: exists and is not a socket" "$work/out"'
check "--socket on a regular file: the file still holds its contents" \
    '[ "$(cat "$work/f")" = important ]'

printf 'kernel_topup = no\negd_socket = %s\n' "$work/f" >"$work/egd-file.conf"
refused "egd_socket on a regular file" "$work/egd-file.conf" "$work/main.sock"
check "egd_socket on a regular file: the message names it" \
    'grep -q "egd_socket $work/f: exists and is not a socket" "$work/out"'
check "egd_socket on a regular file: the file still holds its contents" \
    '[ "$(cat "$work/f")" = important ]'
check "egd_socket on a regular file: the main socket it bound is removed" \
    '[ ! -e "$work/main.sock" ]'

ln -s "$work/f" "$work/link"
refused "--socket on a symlink" "$work/plain.conf" "$work/link"
check "--socket on a symlink: the message names it" \
    'grep -q "$work/link: is a symbolic link" "$work/out"'
check "--socket on a symlink: link and target left alone" \
    '[ -L "$work/link" ] && [ "$(cat "$work/f")" = important ]'

# --- a live EGD socket is not taken over -------------------------------------------------
"$RANDD" --config "$work/egd.conf" --socket "$work/a.sock" 2>"$work/log" &
pid=$!
listening "$work/a.sock" || fail "first randd did not start: $(cat "$work/log")"
egd=$(inode "$work/egd.sock")
refused "a second randd on a live egd_socket" "$work/egd.conf" "$work/b.sock"
check "live egd_socket: the message names it" \
    'grep -q "egd_socket $work/egd.sock: another randd is already listening there" "$work/out"'
check "live egd_socket: the first daemon's socket is left alone" \
    '[ -S "$work/egd.sock" ] && [ "$(inode "$work/egd.sock")" = "$egd" ] && kill -0 $pid'
check "live egd_socket: the refused daemon removed the main socket it bound" \
    '[ ! -e "$work/b.sock" ]'

# --- on exit, a daemon removes only its own socket files -----------------------------------
# Both of the first daemon's paths are removed under it and a second daemon binds them. The
# first one stopping must leave the second's sockets in place.
rm -f "$work/a.sock" "$work/egd.sock"
first=$pid
"$RANDD" --config "$work/egd.conf" --socket "$work/a.sock" 2>"$work/log2" &
second=$!
listening "$work/a.sock" || fail "second randd did not start: $(cat "$work/log2")"
main=$(inode "$work/a.sock") egd=$(inode "$work/egd.sock")
kill -TERM "$first"; wait "$first"
pid=$second
check "a stopping daemon leaves the socket another bound at its path" \
    '[ -S "$work/a.sock" ] && [ "$(inode "$work/a.sock")" = "$main" ]'
check "a stopping daemon leaves the egd socket another bound at its path" \
    '[ -S "$work/egd.sock" ] && [ "$(inode "$work/egd.sock")" = "$egd" ]'
check "the other daemon still serves" 'RANDD_SOCKET=$work/a.sock "$RANDCTL" status >/dev/null'
kill -TERM "$pid"; wait "$pid"; pid=
check "a stopping daemon removes its own sockets" \
    '[ ! -e "$work/a.sock" ] && [ ! -e "$work/egd.sock" ]'

# --- a missing socket directory is created, and the log says so --------------------------
"$RANDD" --config "$work/plain.conf" --socket "$work/new/randd.sock" 2>"$work/log" &
pid=$!
listening "$work/new/randd.sock" || fail "randd in a new directory did not start: $(cat "$work/log")"
check "a missing socket directory is created with mode 0755" \
    '[ "$(stat -c %a "$work/new")" = 755 ]'
check "creating the socket directory is logged" \
    'grep -q "socket: created the directory $work/new (mode 0755)" "$work/log"'
kill -TERM "$pid"; wait "$pid"; pid=
check "a clean exit logs no socket left behind" '! grep -q "left in place" "$work/log"'

# --- EGD sockets systemd passes: Unix or loopback, or randd refuses to start ---------------
# systemd-socket-activate passes the client socket and a TCP one named egd, as randd-egd.socket
# would with a ListenStream= of its own, and execs randd at the first connection.
activate=$(command -v systemd-socket-activate || ls /lib/systemd/systemd-socket-activate \
           2>/dev/null)

# A TCP port nothing listens on (a race with another program is possible, not likely).
free_port() {
    local port
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        port=$((20000 + RANDOM % 40000))
        [ -z "$(ss -ltnH "sport = :$port" 2>/dev/null)" ] && break
    done
    echo "$port"
}

# activated ADDR: randd started by systemd-socket-activate with an EGD socket on ADDR (one
# of "$work"/act.sock's first caller wakes it); $act is its pid.
activated() {
    rm -f "$work/act.sock"
    "$activate" -l "$work/act.sock" -l "$1" --fdname=randd:egd "$RANDD" \
        --config "$work/plain.conf" >"$work/out" 2>&1 &
    act=$!
    wait_for "systemd-socket-activate listening" test -S "$work/act.sock"
    RANDD_SOCKET=$work/act.sock timeout "$WAIT" "$RANDCTL" status >/dev/null 2>&1 &
}

# refused_activated ADDR SHOWN: randd exits 1 at start, naming the socket and its address.
refused_activated() {
    shown=$2                    # check's eval has positional parameters of its own
    activated "$1"
    wait_exit "$act"; rc=$?
    check "a passed EGD socket on $1: refused (exit 1)" \
        '[ $rc = 1 ] || { echo "exit $rc: $(cat "$work/out")"; false; }'
    check "a passed EGD socket on $1: the message names it" \
        'grep -qF "EGD socket (descriptor 4, FileDescriptorName=egd) listens on $shown, not \
loopback" "$work/out" || { cat "$work/out"; false; }'
}

# accepted_activated ADDR: randd serves with the socket, until stopped.
accepted_activated() {
    activated "$1"
    check "a passed EGD socket on $1: randd serves" \
        'wait_for "randd answering" answers "$work/act.sock" || { cat "$work/out"; false; }'
    kill -TERM "$act"; wait "$act"
}

if [ -z "$activate" ]; then
    echo "SKIP: passed EGD sockets: no systemd-socket-activate (the systemd package)"
else
    port=$(free_port)
    refused_activated "0.0.0.0:$port" "0.0.0.0:$port"
    accepted_activated "127.0.0.1:$port"
    if ip -6 addr show lo 2>/dev/null | grep -q '::1/128'; then
        refused_activated "[::]:$port" "[::]:$port"
        accepted_activated "[::1]:$port"
    else
        echo "SKIP: passed EGD sockets over IPv6: no ::1 on lo"
    fi
fi

finish test_sockets.sh
