#!/usr/bin/env bash
# Fast key erasure, checked on the running daemon: gdb records the key at the start of one
# generate call; after that request, a dump of every writable mapping of the daemon must not
# contain it. Positive control: the generator's current state, read the same way, must be
# found in the same dump, so the search can find what is there.
. "$(dirname "$0")/common.sh"

if [ "$(id -u)" != 0 ] || ! command -v gdb >/dev/null || [ -n "${RANDD_SANITIZED:-}" ]; then
    echo "SKIP: test_secrets.sh needs root, gdb and a plain build"; exit 0
fi
export RANDD_SOCKET=$work/randd.sock
: >"$work/randd.conf"
"$RANDD" --config "$work/randd.conf" --socket "$RANDD_SOCKET" 2>/dev/null &
pid=$!
wait_for "randd to answer STATUS" answers || fail "randd did not start"

hexbytes() { tr -d '{} \n' | tr ',' '\n' | sed 's/^0x//; s/^\(.\)$/0\1/' | tr -d '\n'; }

# Stop at the next generate call and print the key it is about to use. A 2048-byte request
# (the batch size) is exactly one generate call, so the key recorded is the last one used
# before the dump: a stray copy of it could not have been overwritten by later calls. gdb
# says when the breakpoint is set, while the daemon is still stopped: a request sent then
# waits in the socket and is the first the daemon serves once it continues.
gdb -q -batch -p "$pid" -ex 'break randd_cymric_generate' -ex "shell touch $work/armed" \
    -ex continue -ex 'output/x *(unsigned char (*)[32])g->state' -ex detach >"$work/gdb1" 2>&1 &
gdbpid=$!
wait_for "gdb to attach and set its breakpoint" test -e "$work/armed"
"$RANDCTL" bytes 2048 --raw >/dev/null
wait "$gdbpid"
old_key=$(grep -o '{0x[^}]*}' "$work/gdb1" | tail -1 | hexbytes)
[ ${#old_key} = 64 ] || { fail "could not read the key with gdb: $(tail -3 "$work/gdb1")"; exit 1; }

# From here to the end of the dump the daemon is stopped (SIGSTOP), so the state read and the
# memory dumped are of one moment: a reseed in between (its timer, a source coming online on a
# slow machine) would otherwise move the state the positive control looks for.
kill -STOP "$pid"
gdb -q -batch -p "$pid" -ex 'output/x main::r.pool.secret->engine.cymric.state' -ex detach \
    >"$work/gdb2" 2>&1
now_state=$(grep -o '{0x[^}]*}' "$work/gdb2" | tail -1 | hexbytes)
[ ${#now_state} = 128 ] || { kill -CONT "$pid"; fail "could not read the current state: $(tail -3 "$work/gdb2")"; exit 1; }

# Dump every writable mapping of the stopped daemon.
: >"$work/dump"
while read -r range perms _; do
    case $perms in rw*) ;; *) continue ;; esac
    start=$((16#${range%-*})); end=$((16#${range#*-}))
    dd if=/proc/$pid/mem of="$work/part" bs=65536 skip=$start \
       count=$((end - start)) iflag=skip_bytes,count_bytes status=none 2>/dev/null &&
        cat "$work/part" >>"$work/dump"
done <"/proc/$pid/maps"
kill -CONT "$pid"
# found HEX: the bytes are somewhere in the dump, searched as one string (grep would split
# lines at any 0x0a in a key; the dump as hex text took seconds of od).
found() {
    perl -0777 -ne 'BEGIN { $key = pack("H*", shift) } exit(index($_, $key) < 0)' "$1" \
        "$work/dump"
}
if found "${now_state:0:64}"; then
    pass "positive control: the current key is found in the memory dump"
else
    fail "the current key is not in the dump: the search cannot be trusted"
fi
if found "$old_key"; then
    fail "an earlier generator key is still in the daemon's memory"
else
    pass "no copy of the earlier generator key in $(($(stat -c %s "$work/dump") / 1024)) KiB of writable memory"
fi

# Output, once served, is wiped: a raw BYTES reply of 64 KiB + 1000 bytes is generated in two
# pieces into one buffer (server.c), the second shorter than the first, so the first piece's
# tail is not overwritten by the second and must be wiped on its own. Raw BYTES (randctl
# would use BYTES_MEMFD) and the search in Python, which takes a second where od takes ten.
if command -v python3 >/dev/null; then
    python3 - "$RANDD_SOCKET" >"$work/served" <<'EOF'
import socket, struct, sys
n = 65536 + 1000
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(struct.pack(">BBHII", 1, 1, 0, 4, n))      # version 1, BYTES, no flags, n
reply = b""
while len(reply) < 8 + n:
    piece = s.recv(1 << 20)
    if not piece:
        break
    reply += piece
sys.stdout.buffer.write(reply[8:] if reply[:2] == b"\x01\x00" else b"")
EOF
    "$RANDCTL" status >/dev/null      # one loop: the reply was let go before this answer
    if [ "$(stat -c %s "$work/served")" != 66536 ]; then
        fail "a raw BYTES request of 66536 bytes was not answered with them"
    else
        kill -STOP "$pid"
        # 32 bytes from the first piece's tail, and the last 32 of the reply, in any writable
        # mapping of the stopped daemon.
        left=$(python3 - "$pid" "$work/served" <<'EOF'
import re, sys
served = open(sys.argv[2], "rb").read()
wanted = [served[40000:40032], served[-32:]]
with open(f"/proc/{sys.argv[1]}/maps") as maps, open(f"/proc/{sys.argv[1]}/mem", "rb") as mem:
    for line in maps:
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) rw", line)
        if not m:
            continue
        start, end = int(m[1], 16), int(m[2], 16)
        try:
            mem.seek(start)
            data = mem.read(end - start)
        except OSError:
            continue
        if any(w in data for w in wanted):
            print(line.strip())
EOF
)
        kill -CONT "$pid"
        if [ -n "$left" ]; then
            fail "bytes served in a raw BYTES reply are still in the daemon's memory: $left"
        else
            pass "no bytes of a two-piece raw BYTES reply left in the daemon's memory"
        fi
    fi
else
    echo "SKIP: the served-output check needs python3"
fi

finish test_secrets.sh
