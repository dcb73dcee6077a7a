#!/usr/bin/env bash
# make install DESTDIR=... PREFIX=/usr: the exact file list, a tiny client built with
# pkg-config against the installed tree (shared and static) and run against a daemon, the
# installed randd.so seeding `openssl rand` with the installed example config, man pages
# clean under groff -ww, and uninstall leaving only the operator's /etc/randd.conf.
. "$(dirname "$0")/common.sh"
dest=$work/root
unitdir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
modulesdir=$(pkg-config --variable=modulesdir libcrypto)

# A plain build, whatever flags the make running this test was given (check-asan's, which
# also arrive as CFLAGS and LDFLAGS in the environment and would rebuild a stale build/).
unset MAKEFLAGS MAKELEVEL MFLAGS CFLAGS LDFLAGS
make -s install DESTDIR="$dest" PREFIX=/usr >/dev/null || fail "make install"
want=$(sort <<EOF2
/etc/randd.conf
$unitdir/randd.service
$unitdir/randd.socket
$unitdir/randd-egd.socket
$unitdir/randd-metrics.service
$unitdir/randd-metrics.timer
/usr/bin/randctl
/usr/include/randd.h
/usr/lib/librandd.a
/usr/lib/librandd.so
/usr/lib/librandd.so.0
/usr/lib/librandd.so.0.1.0
/usr/lib/pkgconfig/librandd.pc
/usr/sbin/randd
/usr/share/man/man1/randctl.1
/usr/share/man/man3/librandd.3
/usr/share/man/man5/randd.conf.5
/usr/share/man/man7/randd-provider.7
/usr/share/man/man8/randd.8
/usr/share/randd/openssl-randd.cnf
/usr/share/randd/prometheus/randd-rules.yml
$modulesdir/randd.so
EOF2
)
got=$(cd "$dest" && find . ! -type d | sed 's|^\.||' | sort)
[ "$got" = "$want" ] && pass "installed file list" || fail "installed files differ: $(diff <(echo "$want") <(echo "$got"))"
grep -q '^ExecStart=/usr/sbin/randd ' "$dest$unitdir/randd.service" && pass "unit points at the installed randd" || fail "ExecStart"
[ "$(readelf -d "$dest/usr/lib/librandd.so.0.1.0" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')" = librandd.so.0 ] &&
    pass "soname librandd.so.0" || fail "soname"
# The .so promises randd.h's functions and nothing else: the engines and the codec stay out.
declared=$(grep -oE '^[a-z][^(]*\brandd_[a-z0-9_]+\(' lib/randd.h | grep -oE 'randd_[a-z0-9_]+\($' |
           tr -d '(' | sort)
exported=$(nm -D --defined-only "$dest/usr/lib/librandd.so.0.1.0" | awk '{print $3}' | sort)
[ -n "$declared" ] && [ "$exported" = "$declared" ] && pass "librandd.so exports randd.h's functions only" ||
    fail "exports differ from randd.h: $(diff <(echo "$declared") <(echo "$exported"))"

cat >"$work/client.c" <<'EOF2'
#include <randd.h>
#include <stdio.h>
int main(void)
{
    randd_handle *h;
    unsigned char buf[16];
    int rc = randd_open(&h, NULL);

    if (rc == 0)
        rc = randd_bytes(h, buf, sizeof(buf));
    printf("%s\n", randd_strerror(rc));
    return rc == 0 ? 0 : 1;
}
EOF2
export PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig
if cc -o "$work/client" "$work/client.c" $(pkg-config --cflags --libs librandd) &&
   cc -o "$work/client-static" "$work/client.c" $(pkg-config --cflags librandd) \
      "$dest/usr/lib/librandd.a" $(pkg-config --libs-only-l --static librandd | sed 's/-lrandd//'); then
    pass "a client builds with pkg-config (shared and static)"
else
    fail "building a client with pkg-config"
fi
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH
export RANDD_SOCKET=$work/randd.sock
"$dest/usr/sbin/randd" --config "$dest/etc/randd.conf" --socket "$RANDD_SOCKET" 2>/dev/null &
pid=$!
wait_for "the installed randd to answer STATUS" answers || fail "the installed randd did not start"
out=$(LD_LIBRARY_PATH=$dest/usr/lib "$work/client") && [ "$out" = success ] &&
    pass "the shared-library client gets bytes from the installed daemon" || fail "shared client: $out"
out=$("$work/client-static") && pass "the static client too" || fail "static client: $out"
seeds() { "$RANDCTL" status --json | grep -o '"seed":[0-9]*' | cut -d: -f2; }
before=$(seeds)
out=$(OPENSSL_MODULES=$dest$modulesdir OPENSSL_CONF=$dest/usr/share/randd/openssl-randd.cnf \
      openssl rand -hex 16 2>&1) && [ "$(seeds)" -gt "$before" ] &&
    pass "the installed randd.so and example config seed openssl rand from the daemon" ||
    fail "installed provider: $out"
[ -z "$(readelf -d "$dest$modulesdir/randd.so" | grep NEEDED | grep -v 'libcrypto.so.3\|libc.so.6')" ] &&
    pass "randd.so needs only libcrypto and libc" || fail "randd.so needs: $(readelf -d "$dest$modulesdir/randd.so" | grep NEEDED)"
kill "$pid"; wait "$pid" 2>/dev/null; pid=

for m in "$dest"/usr/share/man/man*/*; do
    warnings=$(LC_ALL=C.UTF-8 groff -ww -z -man "$m" 2>&1)
    [ -z "$warnings" ] || fail "${m##*/}: $warnings"
done
pass "man pages render without groff warnings"

echo '# edited by the operator' >>"$dest/etc/randd.conf"
make -s install DESTDIR="$dest" PREFIX=/usr >/dev/null
grep -q 'edited by the operator' "$dest/etc/randd.conf" && pass "install keeps an existing /etc/randd.conf" || fail "config overwritten"
make -s uninstall DESTDIR="$dest" PREFIX=/usr >/dev/null
left=$(cd "$dest" && find . ! -type d | sed 's|^\.||')
[ "$left" = /etc/randd.conf ] && pass "uninstall leaves only /etc/randd.conf" || fail "left behind: $left"

finish test_install.sh
