#!/usr/bin/env bash
# randctl assess (no daemon needed): on NIST's reference files it prints every SP 800-90B
# estimate, H_original, H_bitstring and the assessed min-entropy as ea_non_iid's -vv output
# (the .res beside each file) gives them, and exits 0; bad input gets a message and exit 1
# (the file cannot be read) or 2 (a bad argument).
. "$(dirname "$0")/common.sh"
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }
vectors=tests/vectors/sp800-90b

# close OURS NIST: equal to NIST's to a relative 1e-6, or within the rounding of the 8
# decimals randctl prints.
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b
                                           exit !(a != "" && b != "" && d <= 1e-6 * m + 5e-9) }'; }
# nist FILE PREFIX: the number after PREFIX on the line of the .res that starts with it.
nist() { awk -v p="$2" 'index($0, p) == 1 { print substr($0, length(p) + 1); exit }' "$1"; }

# Each row randctl prints, and how ea_non_iid's output names the estimator.
rows=("most common value (6.3.1)|Most Common Value" "collision (6.3.2)|Collision"
      "Markov (6.3.3)|Markov" "compression (6.3.4)|Compression" "t-tuple (6.3.5)|t-Tuple"
      "LRS (6.3.6)|LRS" "MultiMCW prediction (6.3.7)|MultiMCW Prediction"
      "lag prediction (6.3.8)|Lag Prediction" "MultiMMC prediction (6.3.9)|MultiMMC Prediction"
      "LZ78Y prediction (6.3.10)|LZ78Y Prediction")

# make check-assess-long adds ringOsc-nist (1,000,000 samples) through ASSESS_VECTORS.
for name in ${ASSESS_VECTORS:-rand1_short rand4_short rand8_short}; do
    res=$vectors/$name.res
    start=$(date +%s.%N)
    out=$("$RANDCTL" assess "$vectors/$name.bin" 2>"$work/err"); rc=$?
    check "assess $name: exit 0 after $(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }') s" \
        '[ $rc = 0 ]'
    if [ "$(wc -c <"$vectors/$name.bin")" -lt 1000000 ]; then
        check "assess $name: warns that SP 800-90B asks for 1,000,000 samples" \
            'grep -q "asks for at least 1000000" "$work/err"'
    fi
    bad=
    for row in "${rows[@]}"; do
        label=${row%|*} nist_name=${row#*|}
        line=$(grep -F "$label " <<<"$out") || { bad="$bad [$label: no row]"; continue; }
        # literal, then bitstring columns: a number, or "-" where ea_non_iid did not run it
        read -r -a cols <<<"${line#"$label"}"
        col=0
        for track in Literal Bitstring; do
            want=$(nist "$res" "$track $nist_name Estimate: min entropy = ")
            got=${cols[$col]:-}
            col=$((col + 1))
            if [ -z "$want" ]; then
                [ -z "$got" ] || [ "$got" = - ] || bad="$bad [$track $label: $got, NIST did not run it]"
            else
                close "$got" "$want" || bad="$bad [$track $label: $got, NIST $want]"
            fi
        done
    done
    check "assess $name: every estimate agrees with ea_non_iid${bad:+:$bad}" '[ -z "$bad" ]'
    got=$(sed -n 's/^H_original: \([0-9.]*\) .*/\1/p' <<<"$out")
    check "assess $name: H_original $got" 'close "$got" "$(nist "$res" "H_original: ")"'
    want=$(nist "$res" "H_bitstring = ")
    got=$(sed -n 's/^H_bitstring: \([0-9.]*\) .*/\1/p' <<<"$out")
    check "assess $name: H_bitstring ${got:-(none)}" \
        'if [ -n "$want" ]; then close "$got" "$want"; else [ -z "$got" ]; fi'
    got=$(sed -n 's/^assessed min-entropy: \([0-9.]*\) .*/\1/p' <<<"$out")
    check "assess $name: assessed min-entropy $got" \
        'close "$got" "$(nist "$res" "Assessed min entropy: ")"'
done

out=$("$RANDCTL" assess - --bits 4 <"$vectors/rand4_short.bin" 2>/dev/null); rc=$?
check "assess - reads stdin; --bits 4 as inferred" \
    '[ $rc = 0 ] && grep -q "^assessed min-entropy: 3.2154882[0-9] " <<<"$out"'
"$RANDCTL" assess "$vectors/rand1_short.bin" --progress 2>"$work/err" >/dev/null; rc=$?
check "assess --progress: a line per estimator on stderr" \
    '[ $rc = 0 ] && grep -q "^assess: .*% literal LZ78Y prediction$" "$work/err"'
head -c 2000 /dev/zero | tr '\0' '\7' >"$work/same"
out=$("$RANDCTL" assess "$work/same" 2>/dev/null); rc=$?
check "assess: one value only: exit 0, no entropy" \
    '[ $rc = 0 ] && grep -q "^assessed min-entropy: 0 " <<<"$out"'

# --claim H, with or without --report: a last line with the verdict, and the exit code says
# it (rand4_short assesses 3.2155 bits a sample).
out=$("$RANDCTL" assess "$vectors/rand4_short.bin" --claim 3 2>/dev/null); rc=$?
check "assess --claim 3 (below the assessed 3.2155): exit 0, the verdict line" \
    '[ $rc = 0 ] && [ "$(tail -1 <<<"$out")" = \
        "claim: 3.0000 bits per sample: supported (assessed 3.2155)" ]'
out=$("$RANDCTL" assess "$vectors/rand4_short.bin" --claim 3.5 2>/dev/null); rc=$?
check "assess --claim 3.5 (above the assessed 3.2155): exit 1, the verdict line" \
    '[ $rc = 1 ] && [ "$(tail -1 <<<"$out")" = \
        "claim: 3.5000 bits per sample: NOT SUPPORTED: above the 3.2155 assessed" ]'
out=$("$RANDCTL" assess "$vectors/rand4_short.bin" 2>/dev/null); rc=$?
check "assess without --claim: no verdict line" '[ $rc = 0 ] && ! grep -q "^claim:" <<<"$out"'

# Bad input: a message naming the problem, nothing on stdout, the exit code scripts expect.
bad_input() {       # bad_input WHAT WANT_RC WANT_MESSAGE ARGS...
    local what=$1 want_rc=$2 want_msg=$3 rc
    shift 3
    "$RANDCTL" assess "$@" >"$work/out" 2>"$work/err"; rc=$?
    check "assess $what: exit $want_rc, \"$want_msg\"" \
        '[ $rc = "$want_rc" ] && grep -qF -- "$want_msg" "$work/err" && [ ! -s "$work/out" ]'
}
: >"$work/empty"
bad_input "a missing file" 1 "$work/missing: No such file or directory" "$work/missing"
bad_input "an empty file" 2 "empty: no samples" "$work/empty"
! grep -q '^usage:' "$work/err" && pass "assess an empty file: a data error, no usage line" ||
    fail "assess an empty file printed the usage: $(cat "$work/err")"

bad_input "--bits 9" 2 "--bits: not a number from 1 to 8: 9" "$vectors/rand4_short.bin" --bits 9
bad_input "--bits 0" 2 "--bits: not a number from 1 to 8: 0" "$vectors/rand4_short.bin" --bits 0
bad_input "values wider than --bits" 2 "values up to 4 bits wide, wider than --bits 3" \
    "$vectors/rand4_short.bin" --bits 3
bad_input "--claim above the samples' 4 bits" 2 \
    "--claim 6: more than the 4 bits a sample of $vectors/rand4_short.bin holds" \
    "$vectors/rand4_short.bin" --claim 6
bad_input "--claim above --bits" 2 "--claim 5: more than the 4 bits a sample holds (--bits 4)" \
    "$vectors/rand4_short.bin" --bits 4 --claim 5
bad_input "without a file" 2 "FILE is missing"
bad_input "an unknown option" 2 "bad argument: --frob" "$vectors/rand1_short.bin" --frob
"$RANDCTL" assess --help | grep -q "^usage: randctl assess FILE" && pass "assess --help" ||
    fail "assess --help"

finish test_assess.sh
