#!/usr/bin/env bash
# Descriptors in flight are bounded (lib/PROTOCOL.md, BYTES_MEMFD). An unprivileged user asks
# BYTES_MEMFD on thousands of connections and never reads the replies, so each arena's memfd
# would stay in flight, counted against randd's uid (past its RLIMIT_NOFILE, every later
# SCM_RIGHTS send fails) or, from a thread with CAP_SYS_ADMIN, growing the kernel's slab:
# - only its uid's share of arenas ever passes a descriptor to it, and a large randd_bytes of
#   another user still succeeds, with workers = 2 and with the defaults;
# - the share comes back once its connections are gone;
# - a descriptor the kernel refuses to pass (ETOOMANYREFS, forced by more in flight for
#   randd's uid than the daemon's descriptor limit) is answered with BUSY, never a close, and
#   librandd falls back to BYTES.
# Runs the daemon as root, as the unit's LimitNOFILE (4096), and the attacker as nobody.
. "$(dirname "$0")/common.sh"
if [ "$(id -u)" != 0 ]; then echo "SKIP: test_arenas.sh needs root (setpriv, prlimit)"; exit 0; fi
HOARDER=${MEMFD_HOARDER:-build/tests/memfd-hoarder}
[ -x "$HOARDER" ] || { fail "no $HOARDER: make $HOARDER"; finish test_arenas.sh; exit; }
export RANDD_SOCKET=$work/randd.sock
ATTACK=4200             # connections held: past the unit's LimitNOFILE of 4096
PER_UID=4               # MEMFD_ARENA_PER_UID
hoarder=
trap 'if [ "$BASHPID" = "$test_shell" ]; then
          [ -n "$hoarder" ] && kill "$hoarder" 2>/dev/null; [ -n "$pid" ] && kill "$pid" 2>/dev/null
          rm -rf "$work"; fi' EXIT

unreclaimable_slab_kb() { awk '$1 == "SUnreclaim:" { print $2 }' /proc/meminfo; }
# Every memfd is a shmem inode: the memfds alive on the host, randd's in flight included.
shmem_inodes() { awk '$1 == "shmem_inode_cache" { print $2 }' /proc/slabinfo 2>/dev/null; }

# hoard OUT ARGS...: the hoarder in the background as $hoarder, once it prints "holding".
hoard() {
    local out=$1
    shift
    : >"$out"
    "$@" >"$out" 2>&1 &
    hoarder=$!
    wait_for "the hoarder to hold what it asked for" in_log '^holding' "$out" ||
        fail "hoarder: $(cat "$out")"
}
unhoard() { [ -n "$hoarder" ] && kill "$hoarder" 2>/dev/null; wait "$hoarder" 2>/dev/null; hoarder=; }
# descriptors OUT: how many replies the connect hoarder found a descriptor with.
descriptors() { sed -n 's/^holding [0-9]* connections: \([0-9]*\) with a descriptor.*/\1/p' "$1"; }

# A 64 KiB randd_bytes (randctl bytes), as root: 65536 bytes come, whatever the attacker holds.
large_call_served() {
    local n
    n=$("$RANDCTL" bytes 65536 --raw 2>"$work/randctl.err" | wc -c)
    [ "$n" = 65536 ] && pass "$1: a 64 KiB randd_bytes is served" ||
        fail "$1: a 64 KiB randd_bytes gave $n bytes: $(cat "$work/randctl.err")"
}

attack() {   # label, config lines
    local label=$1 slab0 slab1 inodes0 inodes1 held
    shift
    start_with_config "$@"
    prlimit --pid "$pid" --nofile=4096:4096    # as the unit ships (LimitNOFILE=4096)
    slab0=$(unreclaimable_slab_kb) inodes0=$(shmem_inodes)
    hoard "$work/hoarder" prlimit --nofile=$((ATTACK + 64)) \
        setpriv --reuid=nobody --regid=nogroup --clear-groups \
        "$HOARDER" connect "$RANDD_SOCKET" "$ATTACK"
    slab1=$(unreclaimable_slab_kb) inodes1=$(shmem_inodes)
    echo "$label: $(cat "$work/hoarder")"
    echo "$label: SUnreclaim ${slab0} kB before, ${slab1} kB while $ATTACK are held;" \
         "shmem inodes ${inodes0:-?} before, ${inodes1:-?} while held"
    held=$(descriptors "$work/hoarder")
    [ -n "$held" ] && [ "$held" -le "$PER_UID" ] &&
        pass "$label: the attacker holds $held descriptors, within its share of $PER_UID" ||
        fail "$label: the attacker holds ${held:-?} descriptors in flight (share: $PER_UID)"
    if [ -n "$inodes0" ]; then
        # randd's memfds in flight would be one inode each; other tests' come and go.
        [ $((inodes1 - inodes0)) -lt 1000 ] &&
            pass "$label: memfds on the host grew by $((inodes1 - inodes0)), not by thousands" ||
            fail "$label: memfds on the host grew by $((inodes1 - inodes0)) while held"
    fi
    large_call_served "$label"
    unhoard
    # Its connections gone, the attacker's share is whole again: it is not lost for good.
    hoard "$work/again" setpriv --reuid=nobody --regid=nogroup --clear-groups \
        "$HOARDER" connect "$RANDD_SOCKET" "$PER_UID"
    [ "$(descriptors "$work/again")" = "$PER_UID" ] &&
        pass "$label: the share comes back once the connections are gone" ||
        fail "$label: after the attack, $PER_UID new connections: $(cat "$work/again")"
    unhoard
    stop_randd
}

attack "workers = 2" "workers = 2"
attack "defaults" ""

# The kernel refuses a descriptor when more are in flight for the sender's uid than its
# RLIMIT_NOFILE (unless the sending thread holds CAP_SYS_ADMIN or CAP_SYS_RESOURCE): randd's
# uid is root here, and root processes with all their capabilities can put any number in
# flight. With the defaults, the loop that serves is the main thread, and it holds none.
start_with_config ""
prlimit --pid "$pid" --nofile=64:4096
hoard "$work/inflight" "$HOARDER" inflight 200
: >"$work/refused"
"$HOARDER" connect "$RANDD_SOCKET" 1 >"$work/refused" 2>&1 & refused=$!
wait_for "a reply to BYTES_MEMFD" in_log '^holding' "$work/refused" ||
    fail "no reply to BYTES_MEMFD: $(cat "$work/refused")"
kill "$refused"; wait "$refused" 2>/dev/null
grep -q '^holding 1 connections: 0 with a descriptor, 1 answered BUSY' "$work/refused" &&
    pass "a descriptor the kernel refuses: BUSY, no descriptor, no close" ||
    fail "a descriptor the kernel refuses: $(cat "$work/refused")"
in_log 'the memfd could not be passed: Too many references' "$work/log" &&
    pass "the refusal is logged with its reason" || fail "no refusal in the log: $(cat "$work/log")"
# Counted as what was sent: one BUSY reply, and the OK reply it replaced never counts.
busy=$("$RANDCTL" metrics | awk '$1 == "randd_replies_total{status=\"BUSY\"}" { print $2 }')
[ "$busy" = 1 ] && pass "the refused call counts as one BUSY reply" ||
    fail "BUSY replies: '$busy': $("$RANDCTL" metrics | grep '^randd_replies_total')"
large_call_served "descriptors refused"
unhoard
prlimit --pid "$pid" --nofile=4096:4096
hoard "$work/after" "$HOARDER" connect "$RANDD_SOCKET" 1
[ "$(descriptors "$work/after")" = 1 ] && pass "descriptors pass again once fewer are in flight" ||
    fail "after the refusals: $(cat "$work/after")"
unhoard
stop_randd

finish test_arenas.sh
