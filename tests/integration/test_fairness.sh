#!/usr/bin/env bash
# No local user denies another anything, resource by resource (issue 42). For each resource
# a client can hold or spend, user nobody holds or spends all it can, and a second uid
# (65533), a third (65532) and root are each still served within a stated bound. One matrix
# line a resource: resource | hog | who was served | what was measured (the bound).
# - connections on the Unix socket: nobody holds every place not kept for root and keeps
#   retaking them; max-min fairness (daemon/listener.c) gives each newcomer its fair share,
#   the place of one of nobody's idle connections at a time;
# - connections over EGD TCP: TCP peers have no uid, so they count as one uid between them;
#   nobody holds every place as TCP peers, and uids over the Unix sockets still get in;
# - memfd arenas: nobody asks BYTES_MEMFD on many connections and never reads (memfd-hoarder);
#   the others each still get an arena (a descriptor);
# - PRIME and RANGE work: nobody keeps its 4 PRIME lanes busy with 4096-bit searches and
#   streams RANGE values; the others' PRIME 256 waits for at most the search running;
# - noise-queue places and the non-blocking reserve: nobody keeps its 4 full-entropy requests
#   waiting on a slow noise source (a FIFO as hwrng_device, as test_noise_reserve.sh); the
#   others' blocking full-entropy requests are answered, and so are most of their NONBLOCK
#   prediction-resistant ones (from the reserve);
# - EGD blocking reads (egd_full_entropy): nobody parks blocking reads on many EGD
#   connections; the others' blocking reads are answered.
# The connections' daemon runs two serving loops, so that a place is often made on a loop
# other than the one accepting. Bounds are generous (CPU hogs beside, check-loaded); waits
# are for states.
. "$(dirname "$0")/common.sh"
if [ "$(id -u)" != 0 ]; then echo "SKIP: test_fairness.sh needs root (setpriv to other uids)"; exit 0; fi
FAIR_HOG=${FAIR_HOG:-build/tests/fair-hog}
LATENCY_PROBE=${LATENCY_PROBE:-build/tests/latency-probe}
MEMFD_HOARDER=${MEMFD_HOARDER:-build/tests/memfd-hoarder}
for helper in "$FAIR_HOG" "$LATENCY_PROBE" "$MEMFD_HOARDER"; do
    [ -x "$helper" ] || { fail "no $helper: make $helper"; finish test_fairness.sh; exit; }
done
export RANDD_SOCKET=$work/randd.sock
EGD_SOCKET=$work/egd.sock
UID2=65533 UID3=65532
MAX_CLIENTS=32 ROOTS=4          # config_clients_for_root: an eighth of max_clients
PLACES=$((MAX_CLIENTS - ROOTS))
CONNECT_BOUND_MS=2000           # connect to last byte, a request of 32 bytes, beside CPU hogs
ARENA_BOUND_MS=5000             # a memfd-hoarder started, its one arena granted
PRIME_BOUND_MS=$((WAIT * 1000)) # waits for one of nobody's 4096-bit searches: seconds
NOISE_BOUND_MS=10000            # a block of a slow feed, in the noise queue's turn
RESERVE_TRIES=5 RESERVE_BOUND=2 # NONBLOCK PR requests each, and how many must be answered

hogs=()
trap 'if [ "$BASHPID" = "$test_shell" ]; then
          for h in "${hogs[@]}"; do kill "$h" 2>/dev/null; done
          [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; fi' EXIT
matrix=()
row() { matrix+=("$1 | $2 | $3 | $4"); }

# The commands that run the rest of a command line as nobody, as a uid: programs, not shell
# functions, so that a hog's $! is the hog itself (setpriv execs it) and a kill reaches it.
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
as_nobody() { "${NOBODY[@]}" "$@"; }
# as WHO COMMAND...: WHO is a uid, or root; AS_ARGV WHO sets AS to its prefix.
AS_ARGV() { if [ "$1" = root ]; then AS=(env); else AS=(setpriv --reuid="$1" --regid="$1" --clear-groups); fi; }
as() { AS_ARGV "$1"; shift; "${AS[@]}" "$@"; }
name_of() { [ "$1" = root ] && echo root || echo "uid $1"; }
key() { status_key "$1"; }
now_ns() { date +%s%N; }
max_of() { awk -v a="$1" -v b="$2" 'BEGIN { print (a + 0 > b + 0 ? a : b) }'; }
within() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }

# hog OUT LINE COMMAND...: COMMAND in the background (added to hogs), once OUT has LINE.
hog() {
    local out=$1 line=$2
    shift 2
    : >"$out"
    "$@" >"$out" 2>&1 &
    hogs+=($!)
    wait_for "$line in $out" in_log "$line" "$out" || fail "hog: $*: $(cat "$out")"
}
unhog() {
    for h in "${hogs[@]}"; do kill "$h" 2>/dev/null; wait "$h" 2>/dev/null; done
    hogs=()
}
held() { sed -n 's/^holding \([0-9]*\) connections.*/\1/p' "$1"; }
# probe WHO: one 32-byte BYTES of WHO's on a new connection (latency-probe), in ms; empty
# if refused.
probe() { as "$1" "$LATENCY_PROBE" "$RANDD_SOCKET" 1 0 32 2>>"$work/probe.err" | awk '{ printf "%.1f", $2 * 1000 }'; }
connected_below() { [ "$(key clients.connected)" -le "$1" ]; }

# --- connections ----------------------------------------------------------------------
echo "-- ${SECONDS} s: connections"
egd_port=$("$FAIR_HOG" free-port)
start_with_config "jitter = no" "workers = 2" "max_clients = $MAX_CLIENTS" "egd_socket = $EGD_SOCKET" \
    "egd_listen = 127.0.0.1:$egd_port"
chmod 666 "$EGD_SOCKET" 2>/dev/null

hog "$work/hog1" '^holding' "${NOBODY[@]}" "$FAIR_HOG" hold v1 "$RANDD_SOCKET" 64
[ "$(held "$work/hog1")" = $PLACES ] &&
    pass "nobody alone holds every place not kept for root ($PLACES of $MAX_CLIENTS)" ||
    fail "nobody holds $(held "$work/hog1") places, wanted $PLACES: $(cat "$work/hog1")"
worst=0 served= shares=
for who in $UID2 $UID3 root; do
    ms=$(probe "$who")
    if [ -n "$ms" ] && within "$ms" $CONNECT_BOUND_MS; then
        served="$served${served:+, }$(name_of "$who")"; worst=$(max_of "$worst" "$ms")
    else
        fail "connections(unix): $(name_of "$who") not served within $CONNECT_BOUND_MS ms while nobody held its places (${ms:-refused}: $(tail -1 "$work/probe.err"))"
    fi
    [ "$who" = root ] && continue
    # Then it holds all it can too: its fair share, with nobody (and uid 65533) still trying.
    AS_ARGV "$who"
    hog "$work/hog-$who" '^holding' "${AS[@]}" "$FAIR_HOG" hold v1 "$RANDD_SOCKET" 64
    n=$(held "$work/hog-$who") users=$([ "$who" = $UID2 ] && echo 2 || echo 3)
    shares="$shares${shares:+, }$(name_of "$who") holds $n"
    [ "$n" = $((PLACES / users)) ] &&
        pass "connections(unix): $(name_of "$who") holds $n, its fair share of $PLACES among $users uids" ||
        fail "connections(unix): $(name_of "$who") holds ${n:-?}, wanted its fair share $((PLACES / users)) of $PLACES among $users uids"
done
ms=$(probe root)
[ -n "$ms" ] && worst=$(max_of "$worst" "$ms") || fail "connections(unix): root not served while three uids held every place they could"
echo "evicted: $(key clients.evicted); refused over the fair share: $(key clients.over_uid_share)"
row "connections(unix)" "nobody holds $(held "$work/hog1") of $PLACES, retaking" \
    "${served:-nobody} served; then $shares; root served" "max $worst ms (bound $CONNECT_BOUND_MS ms)"
unhog
echo "hogs at the end: $(tail -qn1 "$work/hog1" "$work/hog-$UID2" "$work/hog-$UID3" | paste -sd';')"
wait_for "the hogs' connections closed" connected_below 1 || fail "connections still open: $(key clients.connected)"

# Replies nobody never reads: a 16 MiB BYTES reply on each place, stalled by nobody, not by
# randd. Such a connection is evictable as an idle one is (closed with no word, mid-reply),
# or one slow reader could keep every place.
echo "-- ${SECONDS} s: stalled replies"
hog "$work/hog-stall" '^holding' "${NOBODY[@]}" "$FAIR_HOG" hold stall "$RANDD_SOCKET" 64
[ "$(held "$work/hog-stall")" = $PLACES ] &&
    pass "nobody holds every place not kept for root with a reply it never reads ($PLACES)" ||
    fail "nobody holds $(held "$work/hog-stall") stalled replies, wanted $PLACES: $(cat "$work/hog-stall")"
AS_ARGV $UID2
hog "$work/hog-stall2" '^holding' "${AS[@]}" "$FAIR_HOG" hold v1 "$RANDD_SOCKET" 64
n=$(held "$work/hog-stall2")
[ "$n" = $((PLACES / 2)) ] &&
    pass "stalled replies: uid $UID2 holds $n, its fair share, in place of nobody's stalled ones" ||
    fail "stalled replies: uid $UID2 holds ${n:-?}, wanted $((PLACES / 2)) (evicted: $(key clients.evicted))"
ms=$(probe root)
[ -n "$ms" ] || fail "stalled replies: root not served"
row "stalled replies" "nobody holds $(held "$work/hog-stall") of $PLACES, 16 MiB replies unread" \
    "uid $UID2 took its fair share ($n); root served" "root ${ms:-refused} ms (bound $CONNECT_BOUND_MS ms)"
unhog
wait_for "the hogs' connections closed" connected_below 1 || fail "connections still open: $(key clients.connected)"

# EGD over TCP: its peers have no uid, and count as one between them.
echo "-- ${SECONDS} s: EGD over TCP"
hog "$work/hog2" '^holding' "${NOBODY[@]}" "$FAIR_HOG" hold egd "127.0.0.1:$egd_port" 64
[ "$(held "$work/hog2")" = $PLACES ] &&
    pass "nobody as TCP peers holds every place not kept for root ($PLACES)" ||
    fail "nobody over EGD TCP holds $(held "$work/hog2") places, wanted $PLACES"
worst=0 served= waiters=
for who in $UID2 $UID3 root; do
    if [ "$who" = $UID3 ]; then
        ms=$(probe "$who") how="v1"
    else
        ms=$(as "$who" "$FAIR_HOG" egd-read "$EGD_SOCKET" 32 2>>"$work/probe.err") how="EGD Unix"
    fi
    if [ -n "$ms" ] && within "$ms" $CONNECT_BOUND_MS; then
        served="$served${served:+, }$(name_of "$who") ($how)"; worst=$(max_of "$worst" "$ms")
    else
        fail "connections(egd tcp): $(name_of "$who") over $how not served within $CONNECT_BOUND_MS ms (${ms:-refused}: $(tail -1 "$work/probe.err"))"
    fi
done
row "connections(egd tcp)" "nobody as TCP peers holds $(held "$work/hog2") of $PLACES" \
    "$served served" "max $worst ms (bound $CONNECT_BOUND_MS ms)"
unhog
wait_for "the hogs' connections closed" connected_below 1 || fail "connections still open: $(key clients.connected)"

# --- memfd arenas ---------------------------------------------------------------------
echo "-- ${SECONDS} s: memfd arenas"
hog "$work/hog3" '^holding' "${NOBODY[@]}" "$MEMFD_HOARDER" connect "$RANDD_SOCKET" 16
nobody_arenas=$(sed -n 's/^holding [0-9]* connections: \([0-9]*\) with a descriptor.*/\1/p' "$work/hog3")
worst=0 served= waiters=
for who in $UID2 $UID3 root; do
    start=$(now_ns)
    AS_ARGV "$who"
    hog "$work/arena-$who" '^holding' "${AS[@]}" "$MEMFD_HOARDER" connect "$RANDD_SOCKET" 1
    ms=$(( ($(now_ns) - start) / 1000000 ))
    if grep -q '^holding 1 connections: 1 with a descriptor' "$work/arena-$who" &&
        within "$ms" $ARENA_BOUND_MS; then
        served="$served${served:+, }$(name_of "$who")"; worst=$(max_of "$worst" "$ms")
    else
        fail "memfd arenas: $(name_of "$who") got no arena within $ARENA_BOUND_MS ms ($ms ms): $(cat "$work/arena-$who")"
    fi
done
row "memfd arenas" "nobody holds ${nobody_arenas:-?} (its cap), 16 replies unread" \
    "$served each got one" "max $worst ms, hoarder start included (bound $ARENA_BOUND_MS ms)"
unhog

# --- PRIME and RANGE work -------------------------------------------------------------
echo "-- ${SECONDS} s: PRIME and RANGE"
primes0=$(key requests.prime)
for i in 1 2 3 4; do
    (while :; do as_nobody "$RANDCTL" prime 4096 >/dev/null 2>&1; done) &
    hogs+=($!)
done
(while :; do as_nobody "$RANDCTL" range 1000 --count 1000000 >/dev/null 2>&1; done) &
hogs+=($!)
primes_running() { [ $(( $(key requests.prime) - primes0 )) -ge 4 ]; }
wait_for "nobody's four PRIME 4096 searches" primes_running || fail "PRIME: nobody's searches never came"
worst=0 served= waiters=
for who in $UID2 $UID3 root; do
    (start=$(now_ns)
     as "$who" "$RANDCTL" prime 256 >/dev/null 2>"$work/prime-$who.err" &&
         as "$who" "$RANDCTL" range 100 --count 10 >/dev/null 2>>"$work/prime-$who.err" &&
         echo $(( ($(now_ns) - start) / 1000000 )) >"$work/prime-$who") &
    waiters="${waiters:-} $!"
done
for w in $waiters; do wait_exit "$w"; done
for who in $UID2 $UID3 root; do
    ms=$(cat "$work/prime-$who" 2>/dev/null)
    if [ -n "$ms" ] && within "$ms" $PRIME_BOUND_MS; then
        served="$served${served:+, }$(name_of "$who")"; worst=$(max_of "$worst" "$ms")
    else
        fail "PRIME and RANGE: $(name_of "$who") not served within $PRIME_BOUND_MS ms: $(cat "$work/prime-$who.err")"
    fi
done
row "PRIME and RANGE work" "nobody runs 4 PRIME 4096 (its lanes) and streams RANGE" \
    "$served served PRIME 256 and RANGE" "max $worst ms, at once (bound $PRIME_BOUND_MS ms)"
unhog
echo "-- ${SECONDS} s: stopping randd"
stop_randd

# --- the noise queue, the reserve, EGD blocking reads --------------------------------
echo "-- ${SECONDS} s: the noise queue"
mkfifo "$work/noise"
exec 7<>"$work/noise"             # held open: the source never reads end-of-file
# About 250 blocks a second (test_noise_reserve.sh): nobody's four 4 KiB requests, 512
# blocks, keep waiting while the others ask.
(while :; do head -c 4096 /dev/urandom || exit; sleep 0.1; done >"$work/noise" 2>/dev/null) &
hogs+=($!)
start_with_config "cpu_source = no" "jitter = no" "kernel_topup = no" \
    "hwrng_device = $work/noise" "egd_socket = $EGD_SOCKET" "egd_full_entropy = yes"
chmod 666 "$EGD_SOCKET" 2>/dev/null
wait_for "the FIFO hwrng healthy" field_is hwrng state healthy || fail "hwrng: $(cat "$work/log")"
echo "-- ${SECONDS} s: the FIFO hwrng healthy"
for i in 1 2 3 4; do
    (while :; do as_nobody "$RANDCTL" bytes 67108864 --full-entropy --raw --timeout 120000 >/dev/null 2>&1; done) &
    hogs+=($!)
done
nobody_waits() { [ "$(key noise.waiting)" -ge 4 ]; }
wait_for "nobody's four full-entropy requests waiting" nobody_waits || fail "noise.waiting: $(key noise.waiting)"
hog "$work/hog4" '^waiting' "${NOBODY[@]}" "$FAIR_HOG" egd-wait "$EGD_SOCKET" 16
echo "-- ${SECONDS} s: nobody waits"

worst=0 served= waiters=
for who in $UID2 $UID3 root; do
    start=$(now_ns)
    if as "$who" "$RANDCTL" bytes 32 --full-entropy >/dev/null 2>"$work/fe.err"; then
        ms=$(( ($(now_ns) - start) / 1000000 ))
        within "$ms" $NOISE_BOUND_MS && served="$served${served:+, }$(name_of "$who")" ||
            fail "noise queue: $(name_of "$who")'s full-entropy request took $ms ms (bound $NOISE_BOUND_MS)"
        worst=$(max_of "$worst" "$ms")
    else
        fail "noise queue: $(name_of "$who")'s full-entropy request failed: $(cat "$work/fe.err")"
    fi
done
waiting=$(key noise.waiting)
row "noise-queue places" "nobody keeps 4 FULL_ENTROPY waiting (its places; ${waiting} waiting after)" \
    "$served served FULL_ENTROPY" "max $worst ms, randctl start included (bound $NOISE_BOUND_MS ms)"

echo "-- ${SECONDS} s: the reserve"
answered= askers=
for who in $UID2 $UID3 root; do        # the three at once: each at its own pace
    (ok=0
     for i in $(seq $RESERVE_TRIES); do
         as "$who" "$RANDCTL" --nonblock bytes 32 --prediction-resistant >/dev/null 2>"$work/pr-$who.err" &&
             ok=$((ok + 1))
         sleep 0.1                # the asker's pace, not synchronisation
     done
     echo $ok >"$work/pr-$who") &
    askers="$askers $!"
done
for a in $askers; do wait_exit "$a"; done
for who in $UID2 $UID3 root; do
    ok=$(cat "$work/pr-$who" 2>/dev/null)
    answered="$answered${answered:+, }$(name_of "$who") ${ok:-?}/$RESERVE_TRIES"
    [ "${ok:-0}" -ge $RESERVE_BOUND ] ||
        fail "noise reserve: $(name_of "$who")'s NONBLOCK prediction-resistant requests: ${ok:-?} of $RESERVE_TRIES answered (bound $RESERVE_BOUND): $(cat "$work/pr-$who.err")"
done
# randctl asks for its 64 MiB a full-entropy request at a time, so one of nobody's four may be
# between two requests at any instant: still waiting means all four back in the queue soon.
wait_for "nobody's four full-entropy requests still waiting" nobody_waits ||
    fail "noise reserve: nobody's requests stopped waiting: the row proves nothing"
row "noise reserve (NONBLOCK PR)" "nobody keeps 4 FULL_ENTROPY waiting" \
    "answered: $answered" "at least $RESERVE_BOUND of $RESERVE_TRIES each"

echo "-- ${SECONDS} s: EGD blocking reads"
worst=0 served=
for who in $UID2 $UID3 root; do
    ms=$(as "$who" "$FAIR_HOG" egd-read "$EGD_SOCKET" 32 2>"$work/egd.err")
    if [ -n "$ms" ] && within "$ms" $NOISE_BOUND_MS; then
        served="$served${served:+, }$(name_of "$who")"; worst=$(max_of "$worst" "$ms")
    else
        fail "EGD blocking reads: $(name_of "$who") not served within $NOISE_BOUND_MS ms: ${ms:-$(cat "$work/egd.err")}"
    fi
done
row "EGD blocking reads" "nobody parks 16 blocking reads of 255 (egd_full_entropy)" \
    "$served served 32 bytes" "max $worst ms (bound $NOISE_BOUND_MS ms)"
unhog
stop_randd
exec 7>&-

echo "-- ${SECONDS} s: done"
echo "== fairness matrix: resource | hog | served | measured (bound)"
printf '%s\n' "${matrix[@]}"
finish test_fairness.sh
