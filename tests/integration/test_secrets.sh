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
gdb -q -batch -p "$pid" -ex 'output/x main::r.pool.secret->gen.state' -ex detach \
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

finish test_secrets.sh
