#!/usr/bin/env bash
# prometheus/randd-rules.yml: promtool accepts it, its unit tests pass (each alert fires on a
# host in trouble and none on a healthy one), and every randd_ series an alert reads is one
# `randctl metrics` exports, so a renamed metric cannot leave an alert silent for good.
. "$(dirname "$0")/common.sh"
top=$(cd "$(dirname "$0")/../.." && pwd)
rules=$top/prometheus/randd-rules.yml
# Series an alert may read before randd exports them (none now: name one here, with why).
pending=""

if ! command -v promtool >/dev/null; then
    echo "SKIP test_prometheus_rules.sh: promtool (Debian package prometheus) not installed"
    exit 0
fi
out=$(promtool check rules "$rules" 2>&1) && pass "promtool check rules" || fail "$out"
out=$(cd "$top/tests/prometheus" && promtool test rules randd-rules.test.yml 2>&1) &&
    pass "promtool test rules: every alert fires when it should, none on a healthy host" ||
    fail "promtool test rules: $out"

export RANDD_SOCKET=$work/randd.sock
: >"$work/randd.conf"
"$RANDD" --config "$work/randd.conf" --socket "$RANDD_SOCKET" 2>/dev/null &
pid=$!
wait_for "randd to answer STATUS" "$RANDCTL" --nonblock status --json >/dev/null 2>&1 ||
    fail "randd did not start"
"$RANDCTL" metrics >"$work/metrics" || fail "randctl metrics failed"
# An expr runs from its key to the rule's next key (for: or labels:).
used=$(awk '/^ *expr:/ { e = 1 } /^ *(for|labels):/ { e = 0 } e' "$rules" |
       grep -o 'randd_[a-z_]*' | sort -u)
missing=
for name in $used; do
    grep -q "^# TYPE $name " "$work/metrics" && continue
    if [[ " $pending " == *" $name "* ]]; then
        echo "note: $name is not exported yet (issue 30's self-tests add it)"
    else
        missing="$missing $name"
    fi
done
[ -n "$used" ] && [ -z "$missing" ] && pass "the rules read only exported series:" $used ||
    fail "the rules read series randctl metrics lacks:$missing"
finish test_prometheus_rules.sh
