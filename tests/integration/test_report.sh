#!/usr/bin/env bash
# randctl assess --report (no daemon needed): one self-contained HTML page (no script, nothing
# fetched), rendered by headless Chromium: the screenshot is not blank and shows the verdict
# in its colour (green for IID or a supported claim, red against), and the rendered DOM's
# verdict reads as randctl printed it. The page is checked as a reader would read it: every
# chart axis titled with round ticks, the restart chart's H_I and H_I/2 lines, an
# autocorrelation band one can see, a claim card only with a claim, an IID-failed page with
# nothing on it that reads as a pass, digits grouped. Without chromium or python3 it skips the
# checks that need them.
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
# Correlated samples, so the autocorrelation chart has a lag far outside its band: each of
# 5,000 4-bit samples twice (r(1) near 0.5, the band +-0.02).
perl -e 'local $/; $_ = <>; print map { $_ x 2 } split //, substr($_, 0, 5000)' \
    "$vectors/rand4_short.bin" >"$work/doubled4.bin"
want_rc=1 page claim-too-high "$work/doubled4.bin" --claim 3.5
check "report iid-fail: the permutation counts are on the page" \
    'grep -q "numDirectionalRuns</td>" "$work/iid-fail.html"'
page restart-pass "$vectors/restart/restart_pass_1bit.bin" --restart --h-initial 0.95
page restart-fail "$vectors/restart/restart_fail_4bit.bin" --restart --h-initial 3.9
# Restart rows far richer than H_I (a source that warms up as it runs, as jitter does): a
# pass, with a note that says why and where H_I must come from; restart-pass has none.
head -c 1000000 /dev/urandom >"$work/rich-restarts.bin"
page restart-rich "$work/rich-restarts.bin" --restart --h-initial 2.5 --bits 8
check "report restart-rich: the page and the text say the restarts assess above H_I, and why" \
    'grep -q "The restarts assess [0-9.]* bits a sample above H_I. A source that warms up" \
        "$work/restart-rich.html" &&
     grep -q "^note: the restarts assess [0-9.]* bits a sample above H_I" "$work/restart-rich.out" &&
     ! grep -q "above H_I" "$work/restart-pass.html" "$work/restart-pass.out"'
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
# SP 800-90B 3.1.4: the restarts are checked against the initial estimate H_I (the
# validation against H_I/2): the estimates chart draws both, labelled so, and no "claim".
check "report restart-pass: the estimates chart draws H_I and H_I/2, labelled so" \
    '[ "$(grep -o "<text class=\"mark\"[^>]*>[^<]*<" "$work/restart-pass.html" |
          sed "s/.*>//; s/<//" | tr "\n" "|")" = "H_I = 0.950|H_I/2 = 0.475|" ] &&
     ! grep -qi "claim" "$work/restart-pass.html"'
# A claim card only when a claim was made (--claim H).
check "report: the claim card only with --claim (claim-too-high has it, iid-pass, iid-fail not)" \
    'grep -q "id=\"claim\"><h2>Each estimate against the claim of 3.5 bits" \
        "$work/claim-too-high.html" &&
     ! grep -qi "claim" "$work/iid-pass.html" && ! grep -qi "claim" "$work/iid-fail.html"'
# The verdict card of an IID-failed page: nothing reads as a pass (no "pass", "IID" only as
# "not IID" or "non-IID"; --iid is a flag), and the failing test named; no green chip below.
verdict_text() { grep 'id="verdict"' "$1" | sed 's/<[^>]*>/ /g'; }
check "report iid-fail: the verdict names the failing test and nothing in it reads as a pass" \
    'verdict_text "$work/iid-fail.html" | grep -q "Failed: chi-square independence (5.2.1)" &&
     ! verdict_text "$work/iid-fail.html" | sed -E "s/(not |non-)IID//gi" |
         grep -qE "[Pp][Aa][Ss][Ss]|IID" &&
     ! grep -q "class=\"chip pass\"" "$work/iid-fail.html"'
# Digits grouped in the page's text: 1,000,000 samples, not 1000000 (the shuffles' seed, in
# <code>, is no number).
ungrouped() {
    local n
    for n in iid-pass iid-fail claim-too-high restart-pass restart-fail; do
        sed 's/<style>.*<\/style>//; s/<code[^<]*<\/code>//g; s/<[^>]*>/ /g' "$work/$n.html" |
            grep -oE '(^|[^0-9.,])[0-9]{4,}($|[^0-9-])' | sed "s/^/$n: /"
    done
}
ungrouped=$(ungrouped | head -3 | tr '\n' ' ')
check "report: numbers in the page text have their digits grouped${ungrouped:+ (not: $ungrouped)}" \
    '[ -z "$ungrouped" ]'
check "report restart-pass: 1,000,000 samples, grouped, in the subtitle and histogram note" \
    '[ "$(grep -o "1,000,000 samples of 1 bit" "$work/restart-pass.html" | wc -l)" = 2 ]'
if command -v python3 >/dev/null; then
    for n in iid-pass iid-fail claim-too-high restart-pass restart-fail; do
        check "report $n: every chart axis has a title and round ticks" \
            'python3 tests/report/chart_axes.py "$work/$n.html"'
    done
    printf '%s' '<svg aria-label="t"><text class="axis-title x"/><text class="axis-title y"/>' \
        '<text class="tick y">0</text><text class="tick y">158</text>' \
        '<text class="tick y">317</text></svg>' >"$work/bad-ticks.html"
    check "report: chart_axes.py finds ticks that are not round (0, 158, 317)" \
        '! python3 tests/report/chart_axes.py "$work/bad-ticks.html" >/dev/null'
fi
# The autocorrelation band is drawn at least 12 units tall (of the chart's 200), in a colour
# that stands off the white card, even where a lag's r(k) is 25 times the band (claim-too-high).
band_ok() {
    local rect fill height
    rect=$(grep -o "<rect class=\"band\"[^>]*>" "$1") || return 1
    height=$(sed -n 's/.* height="\([0-9.]*\)".*/\1/p' <<<"$rect")
    fill=$(sed -n 's/.* fill="#\([0-9a-f]\{6\}\)".*/\1/p' <<<"$rect")
    [ -n "$fill" ] && awk -v h="$height" 'BEGIN { exit !(h >= 12) }' &&
        [ $(( (255 - 16#${fill:0:2}) + (255 - 16#${fill:2:2}) + (255 - 16#${fill:4:2}) )) -ge 90 ]
}
for n in claim-too-high restart-pass; do
    check "report $n: the autocorrelation band is drawn, tall enough and dark enough to see" \
        'band_ok "$work/$n.html"'
done

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
    python3 tests/report/png_pixels.py "$work/$name.png" $TOP "$band" >"$work/$name.pixels"
}
pages=("iid-pass|IID|green" "iid-fail|Not IID|red" "claim-too-high|Claim not supported|red"
       "restart-pass|Restart tests passed|green" "restart-fail|Restart tests failed|red")
# The pages are rendered side by side: each Chromium mostly waits on its own start-up.
band=$(sed -n 's/.*<rect class="band"[^>]* fill="#\([0-9a-f]\{6\}\)".*/\1/p' \
    "$work/iid-pass.html")
band=${band:-}      # no band drawn: nothing to count
for t in "${pages[@]}"; do render "${t%%|*}" & done
wait
for t in "${pages[@]}"; do
    IFS='|' read -r name headline colour <<<"$t"
    read -r differ green red green_all band_pixels <"$work/$name.pixels" ||
        differ=0 green=0 red=0 green_all=0 band_pixels=0
    check "report $name: the screenshot is not blank ($differ pixels off the background)" \
        '[ "${differ:-0}" -gt 100000 ]'
    want=$([ "$colour" = green ] && echo "$green" || echo "$red")
    other=$([ "$colour" = green ] && echo "$red" || echo "$green")
    check "report $name: the verdict in $colour ($want pixels of it, $other of the other)" \
        '[ "${want:-0}" -gt 1000 ] && [ "${other:-0}" -lt 50 ]'
    check "report $name: the autocorrelation band shows in the screenshot ($band_pixels pixels)" \
        '[ "${band_pixels:-0}" -gt 4000 ]'
    [ "$colour" = red ] &&
        check "report $name: no pass green anywhere on the page ($green_all pixels of it)" \
            '[ "${green_all:-1}" = 0 ]'
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
