#!/usr/bin/env bash
# Every shell script the project ships or runs, parsed by its own interpreter (sh -n or
# bash -n, by its first line) without running it. The benchmarks and CI's own scripts run
# outside make check, so a quote that ends an awk program early (bench-approved once had one
# in a comment's "generator's") would otherwise show only when someone runs them. Needs no
# daemon.
. "$(dirname "$0")/common.sh"
repo=$(cd "$(dirname "$0")/../.." && pwd)

# A script's interpreter by its first line; a file named *.sh without one is sourced by the
# bash scripts (common.sh). Any other "#!" names a language this test does not parse (python3,
# make), which it names only when it is not one of those: a new kind of shell is not skipped
# unseen.
checked=0
while IFS= read -r -d '' file; do
    first=; IFS= read -r first <"$file" 2>/dev/null || true
    case $first in
    '#!'*bash*)                                         shell=bash ;;
    '#!/bin/sh'*|'#!/usr/bin/env sh'*|'#!'*' sh'|'#!'*' sh '*)  shell=sh ;;
    '#!'*python3*|'#!'*make*)                           continue ;;
    '#!'*) fail "${file#"$repo"/}: an interpreter this test does not know: $first"; continue ;;
    *) case $file in *.sh) shell=bash ;; *) continue ;; esac ;;
    esac
    if out=$("$shell" -n "$file" 2>&1); then
        checked=$((checked + 1))
    else
        fail "${file#"$repo"/} does not parse ($shell -n): $out"
    fi
done < <(find "$repo/.ci" "$repo/tests" "$repo/packaging" "$repo/systemd" "$repo/conf" \
              -type f -not -path '*/vectors/*' -print0 2>/dev/null)
# A floor, so a find that matched nothing (a moved directory) is not taken for a pass.
if [ "$checked" -ge 40 ]; then
    pass "$checked shell scripts parse"
else
    fail "only $checked shell scripts found to parse: the search missed them"
fi
finish test_script_syntax.sh
