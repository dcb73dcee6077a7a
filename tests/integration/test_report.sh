#!/usr/bin/env bash
# randctl assess --report (no daemon needed): one self-contained HTML page (no script, nothing
# fetched), rendered by headless Chromium: the screenshot is not blank and shows the verdict
# in its colour (green for IID or a supported claim, red against), and the rendered DOM's
# verdict reads as randctl printed it. Without chromium or python3 it skips those checks.
. "$(dirname "$0")/common.sh"
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }
vectors=tests/vectors/sp800-90b

# page NAME ARGS...: writes $work/NAME.html with randctl assess ARGS --report; exits 0, or
# want_rc (a claim the data do not support exits 1, its page written all the same).
page() {
    local name=$1 rc
    shift
    "$RANDCTL" assess "$@" --report "$work/$name.html" >"$work/$name.out" 2>"$work/$name.err"
    rc=$?
    check "report $name: exit ${want_rc:-0}, page written" \
        '[ $rc = "${want_rc:-0}" ] && [ -s "$work/$name.html" ]'
    check "report $name: self-contained (no script, no link, nothing fetched)" \
        '! grep -qiE "<script|<link|<img|<iframe|src=|href=|url\(|@import|https?:" \
            "$work/$name.html"'
    check "report $name: histogram, autocorrelation and estimates drawn in SVG" \
        '[ "$(grep -o "<svg " "$work/$name.html" | wc -l)" -ge 3 ]'
}
page iid-pass "$vectors/rand1_short.bin" --iid
page iid-fail "$vectors/rand8_short.bin" --iid
want_rc=1 page claim-too-high "$vectors/rand4_short.bin" --claim 3.5
check "report iid-fail: the permutation counts are on the page" \
    'grep -q "numDirectionalRuns</td>" "$work/iid-fail.html"'
page restart-pass "$vectors/restart/restart_pass_1bit.bin" --restart --h-initial 0.95
page restart-fail "$vectors/restart/restart_fail_4bit.bin" --restart --h-initial 3.9
check "report restart-pass: the sanity counts, H_r and H_c are on the page" \
    'grep -q "X_cutoff 587)</td><td>556</td><td>555</td>" "$work/restart-pass.html" &&
     grep -q "H_r, H_c</strong></td><td><strong>0.8297</strong></td><td><strong>0.8497<" \
        "$work/restart-pass.html"'
# A million 1-bit samples: counts near 500,000 label the axis as round, short values (they
# once printed as 526013, clipped at the card's edge).
check "report restart-pass: the histogram's count axis reads 0, 200k, 400k, 600k" \
    '[ "$(sed -n "s/.*Histogram of the samples\(.*\)/\1/p" "$work/restart-pass.html" |
          sed "s/<rect.*//" | grep -o ">[^<]*</text>" | tr -d "<>/text" | tr "\n" " ")" \
        = "0 200k 400k 600k " ]'
check "report restart-fail: the column over X_cutoff is on the page" \
    'grep -q "X_cutoff 109)</td><td>96</td><td>666</td></tr><tr><td>over X_cutoff</td><td>0</td><td>1</td>" \
        "$work/restart-fail.html"'

if ! command -v chromium >/dev/null || ! command -v python3 >/dev/null; then
    echo "SKIP: rendering needs chromium and python3 (make deps installs chromium)"
    finish test_report.sh
    exit
fi
# The verdict is near the top: its colour is counted in the first rows only, where nothing
# else uses it.
TOP=450
# render NAME: the screenshot and DOM of $work/NAME.html from one Chromium run, and the
# screenshot's pixel counts (png_pixels.py) in $work/NAME.pixels.
render() {
    local name=$1
    timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --user-data-dir="$work/chromium-$name" --window-size=1100,1400 \
        --screenshot="$work/$name.png" --dump-dom "file://$work/$name.html" \
        2>/dev/null >"$work/$name.dom"
    python3 tests/report/png_pixels.py "$work/$name.png" $TOP >"$work/$name.pixels"
}
pages=("iid-pass|IID|green" "iid-fail|Not IID|red" "claim-too-high|Claim not supported|red"
       "restart-pass|Restart tests passed|green" "restart-fail|Restart tests failed|red")
# The pages are rendered side by side: each Chromium mostly waits on its own start-up.
for t in "${pages[@]}"; do render "${t%%|*}" & done
wait
for t in "${pages[@]}"; do
    IFS='|' read -r name headline colour <<<"$t"
    read -r differ green red <"$work/$name.pixels" || differ=0 green=0 red=0
    check "report $name: the screenshot is not blank ($differ pixels off the background)" \
        '[ "${differ:-0}" -gt 100000 ]'
    want=$([ "$colour" = green ] && echo "$green" || echo "$red")
    other=$([ "$colour" = green ] && echo "$red" || echo "$green")
    check "report $name: the verdict in $colour ($want pixels of it, $other of the other)" \
        '[ "${want:-0}" -gt 1000 ] && [ "${other:-0}" -lt 50 ]'
    verdict=$(sed -n 's/.*<div class="big">\([^<]*\)<\/div>.*/\1/p' "$work/$name.dom")
    check "report $name: the rendered verdict reads \"$verdict\"" '[ "$verdict" = "$headline" ]'
done
grep -q "^verdict: IID " "$work/iid-pass.out" &&
    grep -q "^verdict: not IID " "$work/iid-fail.out" &&
    grep -q "^restart tests: passed$" "$work/restart-pass.out" &&
    grep -q "^restart tests: FAILED$" "$work/restart-fail.out" &&
    pass "report: the verdicts are those randctl printed" ||
    fail "report: the verdicts are those randctl printed"

finish test_report.sh
