#!/usr/bin/env bash
# The units in systemd/ installed and enabled in a scratch root: `systemd-analyze verify` on
# each, then on the whole boot transaction (multi-user.target), where an ordering cycle
# with the early-boot targets would show; a deliberately cyclic copy proves that check can
# fail. Then the hardening score: exposure at most 2.0.
set -u
units=${1:-systemd}
randd=${RANDD:-build/randd}
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if ! command -v systemd-analyze >/dev/null; then
    echo "SKIP: no systemd-analyze"; exit 0
fi

make_root() {   # service-file → prints the root
    local root; root=$(mktemp -d)
    mkdir -p "$root/usr/sbin" "$root/usr/bin" "$root/usr/lib/systemd" \
             "$root/etc/systemd/system/sysinit.target.wants" "$root/etc/systemd/system/sockets.target.wants"
    ln -s usr/bin "$root/bin"; ln -s usr/sbin "$root/sbin"; ln -s usr/lib "$root/lib"
    cp "$randd" "$root/usr/sbin/randd"
    cp "$(type -P true)" "$root/usr/bin/true"         # randd.socket's ExecStartPre=
    cp -r /usr/lib/systemd/system "$root/usr/lib/systemd/"
    cp "$1" "$root/etc/systemd/system/randd.service"
    cp "$units/randd.socket" "$units/randd-egd.socket" "$units/randd-metrics.service" \
       "$units/randd-metrics.timer" "$root/etc/systemd/system/"
    mkdir -p "$root/usr/bin" && cp "${RANDCTL:-build/randctl}" "$root/usr/bin/randctl"
    ln -s ../randd.service "$root/etc/systemd/system/sysinit.target.wants/"
    ln -s ../randd.socket "$root/etc/systemd/system/sockets.target.wants/"
    echo "$root"
}

analyze() {   # root args...
    local root=$1; shift
    (cd "$root/etc/systemd/system" && systemd-analyze --root="$root" --man=no "$@" 2>&1)
}

root=$(make_root "$units/randd.service")
trap 'rm -rf "$root" "${cyclic:-}"' EXIT

out=$(analyze "$root" verify randd.service randd.socket randd-egd.socket \
      randd-metrics.service randd-metrics.timer); rc=$?
if [ $rc = 0 ] && [ -z "$out" ]; then echo "ok: verify randd.service randd.socket randd-egd.socket"
else fail "verify the units: $out"; fi

# Other units' missing binaries in the scratch root are not ours to judge.
out=$(analyze "$root" verify multi-user.target | grep -v 'is not executable')
if grep -qiE 'cycle|randd' <<<"$out"; then fail "boot transaction: $out"
else echo "ok: the boot transaction with randd enabled has no ordering cycle"; fi

cyclic=$(make_root <(sed 's/^Before=sysinit.target shutdown.target$/&\nAfter=basic.target/' \
                        "$units/randd.service"))
if analyze "$cyclic" verify multi-user.target | grep -q 'ordering cycle'; then
    echo "ok: a unit ordered after basic.target is caught as a cycle"
else
    fail "the cycle check missed a deliberately cyclic unit"
fi

out=$(analyze "$root" security --offline=yes --threshold=20 randd.service); rc=$?
score=$(sed -n 's/.*Overall exposure level for randd.service: \([0-9.]*\).*/\1/p' <<<"$out")
if [ -n "$score" ] && [ $rc = 0 ]; then echo "ok: systemd-analyze security: exposure $score (at most 2.0)"
else fail "exposure ${score:-unknown} above 2.0"; fi

[ "$failures" = 0 ] && echo "test_units.sh: all passed"
[ "$failures" = 0 ]
