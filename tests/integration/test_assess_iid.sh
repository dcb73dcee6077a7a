#!/usr/bin/env bash
# randctl assess --iid (no daemon needed): on NIST's reference files it prints every figure
# `ea_iid -i -a -v` prints before its shuffles (tests/vectors/sp800-90b/iid/*.iid.txt) and
# exits 0, whatever the verdict; the verdict is NIST's where NIST's own runs always agree.
# Bad input gets a message and exit 1 or 2, as for assess.
. "$(dirname "$0")/common.sh"
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }
vectors=tests/vectors/sp800-90b

# close OURS NIST: relative 1e-6, or half a unit of the last digit NIST printed.
close() { awk -v a="$1" -v b="$2" 'BEGIN {
    if (a == "" || b == "") exit 1
    d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b
    s = b; e = 0
    if (match(s, /e[-+]?[0-9]+$/)) {
        e = substr(s, RSTART + 1) + 0; s = substr(s, 1, RSTART - 1) }
    dec = index(s, ".") ? length(s) - index(s, ".") : 0
    exit !(d <= 1e-6 * m || d <= 0.5 * 10 ^ (e - dec) * (1 + 1e-9)) }'; }
# nist FILE REGEX: the first number after REGEX in NIST's output (after the first LINE match
# of the optional third argument).
nist() { awk -v p="$2" -v after="${3:-}" 'after != "" && index($0, after) { on = 1 }
    (after == "" || on) && match($0, p) {
    s = substr($0, RSTART + RLENGTH); sub(/^[ \t]*/, "", s)
    split(s, w, /[ ,]/); print w[1]; exit }' "$1"; }
# ours REGEX [AFTER]: the same from our output.
ours() { awk -v p="$1" 'match($0, p) { s = substr($0, RSTART + RLENGTH); sub(/^[ \t]*/, "", s)
    split(s, w, /[ ,]/); print w[1]; exit }' <<<"$out"; }

for name in rand1_short rand4_short rand8_short ringOsc-nist; do
    ref=$vectors/iid/$name.iid.txt
    extra=()
    # ringOsc's chi-square and LRS tests already fail: ea_iid's shuffles ran for 25 minutes
    [ "$name" = ringOsc-nist ] && extra=(--no-permutations)
    start=$(date +%s.%N)
    out=$("$RANDCTL" assess "$vectors/$name.bin" --iid "${extra[@]}" 2>"$work/err"); rc=$?
    secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
    check "assess --iid $name: exit 0 after $secs s" '[ $rc = 0 ]'
    bad=
    pair() {    # pair LABEL OURS NIST
        close "$2" "$3" || bad="$bad [$1: ours ${2:-none}, NIST ${3:-none}]"
    }
    pair "literal p-hat" "$(ours '^literal MCV: .*p-hat ')" \
        "$(nist "$ref" '^Literal MCV.*p-hat = ')"
    pair "literal p_u" "$(ours '^literal MCV: .*p_u ')" "$(nist "$ref" '^Literal MCV.*p_u = ')"
    pair "H_original" "$(ours '^H_original: ')" "$(nist "$ref" '^H_original: ')"
    if grep -q '^H_bitstring' "$ref"; then
        pair "bitstring p_u" "$(ours '^bitstring MCV: .*p_u ')" \
            "$(nist "$ref" '^Bitstring MCV.*p_u = ')"
        pair "H_bitstring" "$(ours '^H_bitstring: ')" "$(nist "$ref" '^H_bitstring: ')"
    else
        [ -z "$(ours '^H_bitstring: ')" ] || bad="$bad [H_bitstring on binary data]"
    fi
    for t in "independence|Chi square independence" \
             "goodness of fit|Chi square goodness of fit"; do
        o=${t%|*} n=${t#*|}
        pair "$o score" "$(ours "^chi-square $o [^:]*: score ")" \
            "$(nist "$ref" 'score = ' "$n")"
        pair "$o df" "$(ours "^chi-square $o .*score [0-9.]*, ")" \
            "$(nist "$ref" 'degrees of freedom = ' "$n")"
        pair "$o p-value" "$(ours "^chi-square $o .*p-value ")" \
            "$(nist "$ref" 'p-value = ' "$n")"
    done
    pair "LRS length" "$(ours '^longest repeated substring [^:]*: length ')" \
        "$(nist "$ref" 'Length of LRS: ')"
    pair "LRS P_col" "$(ours '^longest repeated.*P_col ')" "$(nist "$ref" 'P_col: ')"
    pair "LRS Pr(X >= 1)" "$(ours '^longest repeated.*Pr\(X >= 1\) ')" \
        "$(nist "$ref" 'Pr\(X >= 1\): ')"
    for s in excursion numDirectionalRuns lenDirectionalRuns numIncreasesDecreases \
             numRunsMedian lenRunsMedian avgCollision maxCollision 'periodicity(1)' \
             'periodicity(2)' 'periodicity(8)' 'periodicity(16)' 'periodicity(32)' \
             'covariance(1)' 'covariance(2)' \
             'covariance(8)' 'covariance(16)' 'covariance(32)' compression; do
        re=${s//(/\\(}; re=${re//)/\\)}
        pair "$s" "$(ours "^$re ")" "$(nist "$ref" "^ *$re: ")"
    done
    check "assess --iid $name: every figure agrees with ea_iid${bad:+:$bad}" '[ -z "$bad" ]'
    # the length count stood in for libbz2 on the shuffles: it agreed with it (entropy_iid.h)
    [ "$name" = ringOsc-nist ] ||
        check "assess --iid $name: the compression statistic counted" \
            '! grep -q "^compression statistic: libbz2 compressed every shuffle" <<<"$out"'
    for t in "chi-square tests|chi square tests" \
             "longest repeated substring|longest repeated substring test"; do
        o=${t%|*} n=${t#*|}
        want=$(grep -q "Passed.*$n" "$ref" && echo passed || echo FAILED)
        check "assess --iid $name: $o $want as for ea_iid" \
            'grep -q "^$o.*: $want$" <<<"$out"'
    done
    case $name in
    rand1_short)    # ea_iid: passed; every statistic far from an extreme of its shuffles
        check "assess --iid $name: permutation tests passed, verdict IID" \
            'grep -q "^permutation tests (5.1): passed" <<<"$out" &&
             grep -q "^verdict: IID " <<<"$out"' ;;
    rand4_short)    # ea_iid's own verdict varies from run to run: only the form is checked
        check "assess --iid $name: permutation counts and a verdict" \
            'grep -q "^permutation tests (5.1): \(passed\|FAILED\), [0-9]* of 19" <<<"$out" &&
             grep -q "^verdict: \(IID\|not IID\) " <<<"$out"' ;;
    *)
        check "assess --iid $name: verdict not IID" 'grep -q "^verdict: not IID (" <<<"$out"' ;;
    esac
done

"$RANDCTL" assess "$vectors/rand4_short.bin" --iid --progress 2>"$work/err" >/dev/null; rc=$?
check "assess --iid --progress: lines on stderr through the permutation tests" \
    '[ $rc = 0 ] && grep -q "^assess: .*% permutation tests$" "$work/err"'
out=$("$RANDCTL" assess - --iid --bits 4 <"$vectors/rand4_short.bin" 2>/dev/null); rc=$?
check "assess --iid - reads stdin" '[ $rc = 0 ] && grep -q "^H_original: 3.790037" <<<"$out"'

# The seed a run prints repeats its shuffles: the same counts, line for line.
first=$("$RANDCTL" assess "$vectors/rand4_short.bin" --iid 2>/dev/null)
seed=$(sed -n 's/^shuffle seed: \([0-9a-f]\{64\}\) .*/\1/p' <<<"$first")
again=$("$RANDCTL" assess "$vectors/rand4_short.bin" --iid --seed "$seed" 2>/dev/null); rc=$?
check "assess --iid --seed (the seed a run printed): the same counts and verdict" \
    '[ -n "$seed" ] && [ $rc = 0 ] && [ "$first" = "$again" ]'
out=$("$RANDCTL" assess "$vectors/rand1_short.bin" --iid --report "$work/page.html" 2>/dev/null)
seed=$(sed -n 's/^shuffle seed: \([0-9a-f]\{64\}\) .*/\1/p' <<<"$out")
check "assess --iid --report: the page gives the seed the run printed" \
    '[ -n "$seed" ] && grep -q "assess --iid --seed.*>$seed<" "$work/page.html"'

bad_input() {       # bad_input WHAT WANT_RC WANT_MESSAGE ARGS...
    local what=$1 want_rc=$2 want_msg=$3 rc
    shift 3
    "$RANDCTL" assess "$@" >"$work/out" 2>"$work/err"; rc=$?
    check "assess $what: exit $want_rc, \"$want_msg\"" \
        '[ $rc = "$want_rc" ] && grep -qF -- "$want_msg" "$work/err" && [ ! -s "$work/out" ]'
}
head -c 2000 /dev/zero | tr '\0' '\7' >"$work/same"
printf '\1' >"$work/one"
bad_input "--iid on one value" 2 "one value only: the IID tests cannot run" "$work/same" --iid
bad_input "--iid on one sample" 2 "one sample: the IID tests need more" "$work/one" --iid
bad_input "--iid on a missing file" 1 "$work/missing: No such file or directory" \
    "$work/missing" --iid
bad_input "--iid --bits 3 on 4-bit values" 2 "values up to 4 bits wide, wider than --bits 3" \
    "$vectors/rand4_short.bin" --iid --bits 3
bad_input "--no-permutations without --iid" 2 "--no-permutations: only with --iid" \
    "$vectors/rand1_short.bin" --no-permutations
bad_input "--iid --truncate" 2 "--truncate: not with --iid" \
    "$vectors/rand1_short.bin" --iid --truncate
bad_input "--report without a value" 2 "--report needs a value" \
    "$vectors/rand1_short.bin" --report
# A claim on the IID track rests on the samples passing as IID: without the shuffles they are
# not shown to be, so the track credits nothing and the claim is not supported (exit 1).
out=$("$RANDCTL" assess "$vectors/rand1_short.bin" --iid --no-permutations --claim 0.5 \
      2>/dev/null); rc=$?
check "assess --iid --no-permutations --claim 0.5: exit 1, not supported, credits nothing" \
    '[ $rc = 1 ] && tail -1 <<<"$out" | grep -q "^claim: 0.5000 bits per sample: NOT SUPPORTED: the IID track credits nothing"'
bad_input "--claim 9" 2 "--claim: not a number of bits from 0 to 8: 9" \
    "$vectors/rand1_short.bin" --claim 9
bad_input "--seed of 63 hex digits" 2 "--seed: not 64 hex digits" \
    "$vectors/rand1_short.bin" --iid --seed "${seed%?}"
bad_input "--seed with --no-permutations" 2 "--seed: only with --iid and its shuffles" \
    "$vectors/rand1_short.bin" --iid --no-permutations --seed "$seed"
bad_input "--stop-when-settled without the shuffles" 2 \
    "--stop-when-settled: only with --iid and its shuffles" \
    "$vectors/rand1_short.bin" --iid --no-permutations --stop-when-settled

# A random walk (2,000 steps of 0, 1 or 2 over 16 values) fails chi-square and LRS: the
# verdict is settled before the shuffles end. They run on by default, and the output says
# the verdict was already settled; --stop-when-settled stops them there.
awk 'BEGIN { srand(7); x = 0
             for (i = 0; i < 2000; i++) { x = (x + int(rand() * 3)) % 16; printf "%c", 65 + x } }' \
    >"$work/walk"
out=$("$RANDCTL" assess "$work/walk" --iid --seed "$seed" 2>/dev/null); rc=$?
check "a random walk: settled by chi-square; the shuffles ran on, and the output says so" \
    '[ $rc = 0 ] && grep -q "^chi-square tests: FAILED" <<<"$out" &&
     grep -q "^verdict settled here: not IID, whatever the shuffles say; the shuffles ran on" <<<"$out" &&
     grep -qE "^permutation tests \(5.1\): (FAILED|passed), .* [0-9]+ shuffles" <<<"$out"'
out=$("$RANDCTL" assess "$work/walk" --iid --stop-when-settled 2>/dev/null); rc=$?
check "--stop-when-settled: the shuffles stop once the verdict is settled" \
    '[ $rc = 0 ] && grep -q "the shuffles were stopped (--stop-when-settled)" <<<"$out" &&
     grep -q "^permutation tests (5.1): stopped once the verdict was settled" <<<"$out" &&
     grep -q "^verdict: not IID (chi-square failed.*permutation tests stopped once it was settled)" <<<"$out"'

finish test_assess_iid.sh
