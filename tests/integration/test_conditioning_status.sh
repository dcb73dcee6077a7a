#!/usr/bin/env bash
# STATUS gives SP 800-90B 3.1.5.2's h_out for randd's own conditioning at the last seed (null
# figures before the first): n_in, h_in and h_out, where h_out is what
# `randctl assess --conditioning --non-vetted N_IN 512 512 H_IN H'` computes from the same
# figures, and the log's "generator seeded" line names the function and says it. This is the
# default, BLAKE2b-512; the pool's SHA-512 (vetted) is tests/test_pool.c's.
. "$(dirname "$0")/common.sh"
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }
export RANDD_SOCKET=$work/randd.sock
pool() { "$RANDCTL" status --keys 2>/dev/null | sed -n "s/^pool\.$1: //p"; }
seeded() { [ "$(pool seeded)" = true ]; }

start_with_config "kernel_topup = no"
wait_for "the first seed" seeded || fail "not seeded: $(cat "$work/log")"
n_in=$(pool conditioning.n_in) h_in=$(pool conditioning.h_in) h_out=$(pool conditioning.h_out)
h_prime=$(pool conditioning.h_prime)
check "STATUS: BLAKE2b-512, non-vetted, n_out 512, nw 512, h' $h_prime" \
    '[ "$(pool conditioning.function)" = BLAKE2b-512 ] &&
     [ "$(pool conditioning.vetted)" = false ] &&
     [ "$(pool conditioning.n_out)" = 512 ] && [ "$(pool conditioning.nw)" = 512 ] &&
     [ -n "$h_prime" ]'
check "STATUS: the seed took n_in $n_in bits crediting h_in $h_in >= 256, at most n_in" \
    'awk -v n="$n_in" -v h="$h_in" "BEGIN { exit !(h >= 256 && h <= n && n > 512) }"'
want=$("$RANDCTL" assess --conditioning --non-vetted "$n_in" 512 512 "$h_in" "$h_prime" |
       sed -n 's/^h_out ([^)]*): \([0-9.]*\).*/\1/p')
check "STATUS: h_out $h_out, randctl assess --conditioning's $want" \
    'awk -v a="$h_out" -v b="$want" \
         "BEGIN { d = a - b; exit !(a != \"\" && d < 0.051 && d > -0.051) }"'
check "the log's first seed names the function and h_out" \
    'grep -q "generator seeded with .* credited bits (SP 800-90B h_out of BLAKE2b-512 \
conditioning, non-vetted: $h_out bits)" "$work/log"'
stop_randd

finish test_conditioning_status.sh
