#!/usr/bin/env bash
# The documents against the programs' own --help, both ways, so that neither falls behind
# the other unseen (as test_metrics.sh holds randctl(1)'s METRICS to `randctl metrics`):
#   - README.md's randctl command list and exit codes against `randctl --help`'s;
#   - every command synopsis of `randctl --help` against randctl(1)'s COMMANDS entries;
#   - `randd --help`'s usage against randd(8)'s SYNOPSIS and docs/operating.md's, and
#     `randctl benchmark --help` against docs/performance.md's;
#   - README.md at most 300 lines.
# A synopsis is compared whole, blanks collapsed; against a man page, case aside (the man
# pages write placeholders in lower-case italics, --help in capitals). Needs no daemon.
. "$(dirname "$0")/common.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)
readme=$repo/README.md

# same_sets WHAT LEFT_NAME LEFT_FILE RIGHT_NAME RIGHT_FILE: the two files' lines, as sets,
# are equal; else each line one lacks is named.
same_sets() {
    local what=$1 ln=$2 lf=$3 rn=$4 rf=$5 only
    if [ ! -s "$lf" ] || [ ! -s "$rf" ]; then
        fail "$what: nothing found in $([ -s "$lf" ] && echo "$rn" || echo "$ln")"
        return
    fi
    only=$(comm -23 <(sort -u "$lf") <(sort -u "$rf"))
    [ -z "$only" ] || fail "$what: in $ln, not in $rn:"$'\n'"$only"
    only=$(comm -13 <(sort -u "$lf") <(sort -u "$rf"))
    [ -z "$only" ] || fail "$what: in $rn, not in $ln:"$'\n'"$only"
    cmp -s <(sort -u "$lf") <(sort -u "$rf") && pass "$what: $(sort -u "$lf" | wc -l) alike"
}

# --- randctl --help ----------------------------------------------------------------------
if ! "$RANDCTL" --help >"$work/help" 2>&1; then
    fail "randctl --help exited non-zero: $(head -3 "$work/help")"
fi
# The commands' synopses: a line "  command ..." up to its summary (two blanks or more), one
# line per form: assess's " | " alternatives outside brackets are forms of their own, the
# command's name put before those that lack it.
awk '/^The socket is/ { exit }
     /^  [a-z]/ {
         line = substr($0, 3); sub(/  +.*/, "", line)
         name = line; sub(/ .*/, "", name)
         depth = 0; form = ""
         for (i = 1; i <= length(line); i++) {
             c = substr(line, i, 1)
             if (c == "[") depth++; else if (c == "]") depth--
             if (depth == 0 && substr(line, i, 3) == " | ") { print fix(form); form = ""; i += 2; continue }
             form = form c
         }
         print fix(form)
     }
     function fix(f) { return index(f, name " ") == 1 || f == name ? f : name " " f }' \
    "$work/help" >"$work/help-synopses"
# Exit codes: "Exit codes: 0 ok, 1 failed, ...", over several lines, one "N text" a line.
sed -n '/^Exit codes:/,$p' "$work/help" | tr '\n' ' ' |
    sed -E 's/^Exit codes: *//; s/[[:space:]]+/ /g; s/\. *$//; s/, ([0-9]+) /\n\1 /g' \
    >"$work/help-codes"
echo >>"$work/help-codes"

# --- README.md: the section "randctl commands and exit codes" ------------------------------
sed -n '/^#* randctl commands and exit codes/,/^#/p' "$readme" >"$work/readme-section"
sed -n 's/^    randctl \([a-z]\)/\1/p' "$work/readme-section" | sed -E 's/[[:space:]]+/ /g; s/ $//' \
    >"$work/readme-synopses"
# "- N text", continued on lines indented by two blanks.
awk '/^- [0-9]+ / { if (item != "") print item; item = substr($0, 3); next }
     item != "" && /^  [^ ]/ { item = item " " substr($0, 3); next }
     { if (item != "") print item; item = "" }
     END { if (item != "") print item }' "$work/readme-section" |
    sed -E 's/[[:space:]]+/ /g' >"$work/readme-codes"

same_sets "randctl's commands" "randctl --help" "$work/help-synopses" \
    "README.md's list" "$work/readme-synopses"
cut -d' ' -f1 "$work/help-codes" >"$work/help-code-numbers"
cut -d' ' -f1 "$work/readme-codes" >"$work/readme-code-numbers"
same_sets "randctl's exit codes" "randctl --help" "$work/help-code-numbers" \
    "README.md's list" "$work/readme-code-numbers"
# Each code's meaning as --help words it starts README's (which may say more).
while read -r code text; do
    said=$(awk -v c="$code" '$1 == c { print substr($0, length(c) + 2); exit }' "$work/readme-codes")
    [ -n "$said" ] && [[ $said != "$text"* ]] &&
        fail "exit code $code: --help says \"$text\", README.md \"$said\""
done <"$work/help-codes"
pass "README.md words each exit code as randctl --help does"

# --- the man pages ---------------------------------------------------------------------------
# deroff: a roff line as a reader sees it. Font macros (.B, .I: arguments joined by blanks;
# .BR, .IR and the like: joined as they are), quotes, font escapes and \- undone. Lines that
# end in a backslash continue on the next.
deroff='
function deroff(s,    macro, args, n, i, c, q, out, a, sep) {
    if (s ~ /^\.[A-Z]+( |$)/) {
        macro = substr(s, 2); sub(/ .*/, "", macro)
        s = substr(s, length(macro) + 3)
        n = 0; a = ""; q = 0; has = 0
        for (i = 1; i <= length(s); i++) {
            c = substr(s, i, 1)
            if (c == "\"") { q = !q; has = 1; continue }
            if (c == " " && !q) { if (has || a != "") args[++n] = a; a = ""; has = 0; continue }
            a = a c
        }
        if (has || a != "") args[++n] = a
        sep = length(macro) == 1 ? " " : ""
        out = ""
        for (i = 1; i <= n; i++) out = out (i > 1 ? sep : "") args[i]
        s = out
    }
    gsub(/\\f[BIRP]/, "", s); gsub(/\\-/, "-", s); gsub(/\\&/, "", s); gsub(/\\e/, "\\", s)
    gsub(/[ \t]+/, " ", s); sub(/^ /, "", s); sub(/ $/, "", s)
    return s
}
{ while ($0 ~ /[^\\]\\$/ && (getline next_line) > 0) $0 = substr($0, 1, length($0) - 1) next_line }'

# randctl(1): the tag of every .TP at the top level of COMMANDS (options inside .RS are not).
awk "$deroff"'
    /^\.SH / { in_commands = ($0 ~ /^\.SH COMMANDS/); next }
    !in_commands { next }
    /^\.RS/ { depth++; next }
    /^\.RE/ { depth--; next }
    tag { print tolower(deroff($0)); tag = 0; next }
    /^\.TP/ && depth == 0 { tag = 1 }' "$repo/man/randctl.1" >"$work/man-synopses"
tr 'A-Z' 'a-z' <"$work/help-synopses" >"$work/help-synopses-lower"
same_sets "randctl's command synopses" "randctl --help" "$work/help-synopses-lower" \
    "randctl(1) COMMANDS" "$work/man-synopses"

# randd(8)'s SYNOPSIS against randd --help's usage lines.
"$RANDD" --help >"$work/randd-help" 2>&1 || fail "randd --help exited non-zero"
randd_usage=$(sed -n '1,/^  -/p' "$work/randd-help" | sed '$d' | tr '\n' ' ' |
    sed -E 's/^usage: //; s/[[:space:]]+/ /g; s/ $//')
man_usage=$(awk "$deroff"'
    /^\.SH / { in_synopsis = ($0 ~ /^\.SH SYNOPSIS/); next }
    in_synopsis { printf "%s ", deroff($0) }' "$repo/man/randd.8" |
    sed -E 's/[[:space:]]+/ /g; s/ $//; s/\[ /[/g; s/ \]/]/g')
[ -n "$randd_usage" ] && [ "${randd_usage,,}" = "${man_usage,,}" ] &&
    pass "randd(8)'s SYNOPSIS is randd --help's: $randd_usage" ||
    fail "randd(8)'s SYNOPSIS differs from randd --help:"$'\n'"  man:  $man_usage"$'\n'"  help: $randd_usage"

# --- the synopses docs/ repeats ---------------------------------------------------------------
ops_usage=$(sed -n '/^    randd \[/,/^$/p' "$repo/docs/operating.md" | tr '\n' ' ' |
    sed -E 's/[[:space:]]+/ /g; s/^ //; s/ $//')
[ "$ops_usage" = "$randd_usage" ] && pass "docs/operating.md's randd synopsis is randd --help's" ||
    fail "docs/operating.md's randd synopsis differs:"$'\n'"  doc:  $ops_usage"$'\n'"  help: $randd_usage"
perf=$(sed -n 's/^    \$ build\/randctl \(benchmark .*\)/\1/p' "$repo/docs/performance.md")
grep -qxF -- "$perf" "$work/help-synopses" && pass "docs/performance.md's benchmark synopsis is --help's" ||
    fail "docs/performance.md's benchmark synopsis is not randctl --help's: '$perf'"

# And README stays a first page: the rest lives in docs/ (issue 41).
lines=$(wc -l <"$readme")
[ "$lines" -le 300 ] && pass "README.md is $lines lines (at most 300)" ||
    fail "README.md is $lines lines, more than the 300 of a first page: move detail to docs/"

finish test_doc_synopses.sh
