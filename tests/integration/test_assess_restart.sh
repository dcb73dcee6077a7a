#!/usr/bin/env bash
# randctl assess --restart and --conditioning (no daemon needed): on NIST's reference files
# they print what ea_restart -n -v and ea_conditioning print (X_cutoff, X_max, every row and
# column estimate, H_r, H_c, min(H_r, H_c, H_I); Output_Entropy and h_out) and exit 0 for
# any verdict (a failing check is named); bad input gets a message and exit 1 (the file
# cannot be read) or 2 (a bad argument).
. "$(dirname "$0")/common.sh"
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }
vectors=tests/vectors/sp800-90b

# close OURS NIST: equal to a relative 1e-6, or within the rounding of NIST's 6 decimals.
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b
                                   exit !(a != "" && b != "" && d <= 1e-6 * m + 5e-7) }'; }
# nist FILE PREFIX: the rest of the first line of FILE that starts with PREFIX.
nist() { awk -v p="$2" 'index($0, p) == 1 { print substr($0, length(p) + 1); exit }' "$1"; }
# cutoff: X_cutoff from the alpha line of randctl's or ea_restart's output on stdin.
cutoff() { sed -n 's/^[Aa][Ll][Pp][Hh][Aa]: .*X_cutoff: //p'; }
# ours PREFIX: the first number after PREFIX at the start of a line of $out.
ours() { awk -v p="$1" 'index($0, p) == 1 { split(substr($0, length(p) + 1), f, /[ ,]/)
                                             print f[1]; exit }' <<<"$out"; }
# h_out: the figure of randctl's "h_out (...): N bits" line in $out.
h_out() { sed -n 's/^h_out ([^)]*): \([0-9.]*\).*/\1/p' <<<"$out"; }

# --- the passing 1-bit dataset ---------------------------------------------------------------
ref=$vectors/restart/restart_pass_1bit.restart.txt
start=$(date +%s.%N)
out=$("$RANDCTL" assess "$vectors/restart/restart_pass_1bit.bin" --restart --h-initial 0.95 \
      2>"$work/err"); rc=$?
secs=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
check "restart pass_1bit: exit 0 after $secs s (ea_restart: 22 s)" '[ $rc = 0 ]'
check "restart pass_1bit: X_cutoff $(cutoff <<<"$out")" \
    '[ "$(cutoff <<<"$out")" = "$(cutoff <"$ref")" ]'
check "restart pass_1bit: X_max $(ours "X_max: ")" \
    '[ "$(ours "X_max: ")" = "$(nist "$ref" "X_max: ")" ]'
check "restart pass_1bit: sanity check passed" \
    'grep -q "^sanity check (3.1.4.3): passed$" <<<"$out"'
rows=("most common value (6.3.1)|Most Common Value Estimate"
      "collision (6.3.2)|Collision Test Estimate" "Markov (6.3.3)|Markov Test Estimate"
      "compression (6.3.4)|Compression Test Estimate" "t-tuple (6.3.5)|T-Tuple Test Estimate"
      "LRS (6.3.6)|LRS Test Estimate"
      "MultiMCW prediction (6.3.7)|Multi Most Common in Window (MultiMCW) Prediction Test\
 Estimate"
      "lag prediction (6.3.8)|Lag Prediction Test Estimate"
      "MultiMMC prediction (6.3.9)|Multi Markov Model with Counting (MultiMMC) Prediction\
 Test Estimate"
      "LZ78Y prediction (6.3.10)|LZ78Y Prediction Test Estimate")
bad=
for row in "${rows[@]}"; do
    label=${row%|*} nist_name=${row#*|}
    line=$(grep -F "$label " <<<"$out") || { bad="$bad [$label: no row]"; continue; }
    read -r -a cols <<<"${line#"$label"}"
    for half in Rows Cols; do
        want=$(nist "$ref" "	$nist_name ($half) = " | cut -d' ' -f1)
        got=${cols[0]}; [ "$half" = Cols ] && got=${cols[1]}
        close "$got" "$want" || bad="$bad [$label $half: $got, NIST $want]"
    done
done
check "restart pass_1bit: every row and column estimate agrees with ea_restart${bad:+:$bad}" \
    '[ -z "$bad" ]'
for f in "H_r: " "H_c: " "min(H_r, H_c, H_I): "; do
    check "restart pass_1bit: $f$(ours "$f")" 'close "$(ours "$f")" "$(nist "$ref" "$f")"'
done

# --- the failing 4-bit dataset ---------------------------------------------------------------
ref=$vectors/restart/restart_fail_4bit.restart.txt
out=$("$RANDCTL" assess "$vectors/restart/restart_fail_4bit.bin" --restart --h-initial 3.9 \
      --bits 4 2>"$work/err"); rc=$?
check "restart fail_4bit: exit 0 (a verdict, as --iid's), FAILED, the sanity check named" \
    '[ $rc = 0 ] && grep -q "^restart tests: FAILED$" <<<"$out" &&
     grep -q "restart tests fail: the sanity check" "$work/err"'
check "restart fail_4bit: X_cutoff, X_max as ea_restart's (109, 666)" \
    '[ "$(cutoff <<<"$out")" = "$(cutoff <"$ref")" ] &&
     [ "$(ours "X_max: ")" = "$(nist "$ref" "X_max: ")" ] &&
     grep -q "^sanity check (3.1.4.3): FAILED$" <<<"$out" && ! grep -q "^H_r" <<<"$out"'
"$RANDCTL" assess "$vectors/restart/restart_pass_1bit.bin" --restart --h-initial 1 \
    >"$work/out" 2>"$work/err"; rc=$?
check "restart pass_1bit with H_I 1: the sanity check passes, exit 0" \
    '[ $rc = 0 ] && grep -q "^min(H_r, H_c, H_I): 0.829677" "$work/out"'
"$RANDCTL" assess - --restart --h-initial 0.95 --progress \
    <"$vectors/restart/restart_pass_1bit.bin" >"$work/out" 2>"$work/err"; rc=$?
check "restart: - reads stdin; --progress names rows and columns" \
    '[ $rc = 0 ] && grep -q "^assess: .*% columns: literal LZ78Y prediction$" "$work/err"'

# --- conditioning ----------------------------------------------------------------------------
cond() {        # cond FILE ARGS...: h_out and Output_Entropy as ea_conditioning's FILE
    local ref=$vectors/conditioning/$1 rc kind
    shift
    out=$("$RANDCTL" assess --conditioning "$@" 2>"$work/err"); rc=$?
    kind="(Non-vetted) h_out = "
    [ "$1" = --vetted ] && kind="(Vetted) h_out = "
    output_entropy=$(ours "Output_Entropy (3.1.5.1.2): ")
    check "conditioning $*: exit 0, Output_Entropy $output_entropy, h_out $(h_out)" \
        '[ $rc = 0 ] &&
         close "$output_entropy" "$(nist "$ref" "Output_Entropy(*) = " | cut -d";" -f1)" &&
         close "$(h_out)" "$(nist "$ref" "$kind")"'
}
cond cond-v_2048_512_512_511.txt --vetted 2048 512 512 511
cond cond-v_512_256_256_200.txt --vetted 512 256 256 200
cond cond-n_4096_512_1024_300_0p99.txt --non-vetted 4096 512 1024 300 0.99
# h' from a conditioned file: NIST's ringOsc bits, assessed as `randctl assess` would
out=$("$RANDCTL" assess --conditioning --non-vetted 4096 512 1024 480 \
      --conditioned-file "$vectors/rand1_short.bin" 2>/dev/null); rc=$?
hp=$("$RANDCTL" assess "$vectors/rand1_short.bin" 2>/dev/null |
     sed -n 's/^assessed min-entropy: \([0-9.]*\) .*/\1/p')
check "conditioning --conditioned-file: h' is the file's assessed min-entropy per bit ($hp)" \
    '[ $rc = 0 ] && close "$(ours "h'"'"': ")" "$hp" &&
     close "$(h_out)" "$(awk -v h="$hp" "BEGIN { print h * 512 }")"'

# --- bad input: a message naming the problem, nothing on stdout, the exit code ----------------
bad_input() {       # bad_input WHAT WANT_RC WANT_MESSAGE ARGS...
    local what=$1 want_rc=$2 want_msg=$3 rc
    shift 3
    "$RANDCTL" assess "$@" >"$work/out" 2>"$work/err"; rc=$?
    check "assess $what: exit $want_rc, \"$want_msg\"" \
        '[ $rc = "$want_rc" ] && grep -qF -- "$want_msg" "$work/err" && [ ! -s "$work/out" ]'
}
pass1=$vectors/restart/restart_pass_1bit.bin
head -c 999999 "$pass1" >"$work/short"
cat "$pass1" "$pass1" >"$work/long"
bad_input "--restart, a missing file" 1 "$work/missing: No such file or directory" \
    "$work/missing" --restart --h-initial 0.5
bad_input "--restart without --h-initial" 2 "--restart needs --h-initial H" "$pass1" --restart
bad_input "--restart --h-initial 9" 2 "--h-initial: not a number from 0 to 8: 9" "$pass1" \
    --restart --h-initial 9
bad_input "--restart --h-initial x" 2 "--h-initial: not a number from 0 to 8: x" "$pass1" \
    --restart --h-initial x
bad_input "--restart, H_I above the sample's bits" 2 "--h-initial 1.5: more than the 1 bit" \
    "$pass1" --restart --h-initial 1.5
bad_input "--restart, H_I above log2 k" 2 "more than log2(16) = 4.000000" \
    "$vectors/restart/restart_fail_4bit.bin" --restart --h-initial 4.5 --bits 8
bad_input "--restart, a short file" 2 "999999 samples; a restart matrix is 1000 restarts" \
    "$work/short" --restart --h-initial 0.5
bad_input "--restart, a long file" 2 "more than 1000000 samples; a restart matrix" \
    "$work/long" --restart --h-initial 0.5
bad_input "--restart, values wider than --bits" 2 \
    "values up to 4 bits wide, wider than --bits 2" \
    "$vectors/restart/restart_fail_4bit.bin" --restart --h-initial 1 --bits 2
bad_input "--restart --truncate" 2 "--restart: bad argument: --truncate" "$pass1" --restart \
    --h-initial 0.5 --truncate
bad_input "--conditioning without a kind" 2 "needs --vetted or --non-vetted" \
    --conditioning 1 2 3 1
bad_input "--conditioning, NW missing" 2 "NW is missing" --conditioning --vetted 512 256
bad_input "--conditioning, N_IN 0" 2 "N_IN: not a number of bits" \
    --conditioning --vetted 0 256 256 1
bad_input "--conditioning, H_IN above N_IN" 2 \
    "H_IN: not a number above 0 and at most N_IN (512)" \
    --conditioning --vetted 512 256 256 513
bad_input "--conditioning --vetted with H_PRIME" 2 "--vetted takes no H_PRIME" \
    --conditioning --vetted 512 256 256 200 0.5
bad_input "--conditioning --non-vetted without H_PRIME" 2 "--non-vetted needs H_PRIME or" \
    --conditioning --non-vetted 512 256 256 200
bad_input "--conditioning, H_PRIME 1.5" 2 "H_PRIME: not a number above 0 and at most 1: 1.5" \
    --conditioning --non-vetted 512 256 256 200 1.5
bad_input "--conditioned-file missing" 1 "$work/missing: No such file or directory" \
    --conditioning --non-vetted 512 256 256 200 --conditioned-file "$work/missing"

finish test_assess_restart.sh
