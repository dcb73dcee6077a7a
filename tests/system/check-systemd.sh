#!/usr/bin/env bash
# randd under a real systemd, installed as an operator installs it: the .debs of `make deb` in
# a minimal Debian 12 root (debootstrap --variant=minbase, cached under BUILD/systemd), booted
# with systemd-nspawn and driven from outside through nsenter. Checks boot order, notify, the
# VM generation word, reload, socket activation, hardening and the EGD sockets; then reboots
# with randd-egd.socket and randd-metrics.timer enabled and checks them at boot, the watchdog,
# and a clean poweroff.
# Needs root.
#
# usage: check-systemd.sh BUILD      (make check-systemd builds the .debs first)
#        check-systemd.sh --can-run  exit 0 if this machine can run it, else say why, exit 1
set -u
SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# --- can this machine run it? -----------------------------------------------------------

can_run() {
    local host
    if [ "$(id -u)" != 0 ]; then
        echo "needs root (debootstrap, systemd-nspawn)"; return 1
    fi
    if ! command -v systemd-nspawn >/dev/null &&
       ! apt-cache policy systemd-container 2>/dev/null | grep -q 'Candidate: [0-9]'; then
        echo "systemd-nspawn is not installed and apt offers no systemd-container"; return 1
    fi
    host=${MIRROR#*://}; host=${host%%/*}
    if ! timeout 15 bash -c "exec 3<>/dev/tcp/$host/80" 2>/dev/null; then
        echo "cannot reach the Debian archive ($host:80) to debootstrap a root"; return 1
    fi
}

if [ "${1:-}" = --can-run ]; then
    can_run
    exit
fi
build=${1:?usage: check-systemd.sh BUILD | --can-run}
[ "$(id -u)" = 0 ] || { echo "FAIL: check-systemd needs root (debootstrap, systemd-nspawn)"; exit 1; }
build=$(cd "$build" && pwd)
cache=$build/systemd
root=$cache/root
mkdir -p "$cache"
started=$SECONDS

. "$(dirname "$0")/../integration/common.sh"

nspawn= init= machine=randd-check-$$
die() { echo "FAIL: $*"; exit 1; }
section() { echo "== $*"; }

# --- the container's lifetime --------------------------------------------------------------

# The running container's nspawn and init, also in $cache/container (a run that was killed
# leaves them there for the next one to stop).
gone() { ! kill -0 "$1" 2>/dev/null; }
nspawn_gone() { gone "$nspawn"; }

# end_container NSPAWN INIT (either may be empty): SIGTERM makes nspawn power the container
# off. One that does not is killed, and its init too: nspawn's death alone leaves the
# container running; the init's (the PID namespace's reaper) ends everything in it.
end_container() {
    if [ -n "$1" ] && ! gone "$1"; then
        kill -TERM "$1"
        WAIT=60 wait_for "the container to power off after SIGTERM" gone "$1" && return 0
        kill -KILL "$1"
    fi
    if [ -n "$2" ] && ! gone "$2"; then kill -KILL "$2"; fi
}
stop_container() {
    [ -n "$nspawn" ] || return 0
    end_container "$nspawn" "$init"
    wait "$nspawn" 2>/dev/null
    nspawn= init=
    rm -f "$cache/container"
    rmdir "/run/systemd/nspawn/propagate/$machine" 2>/dev/null
    if grep -qF " $root" /proc/self/mountinfo; then
        echo "FAIL: mounts under $root outlived the container:"; grep -F " $root" /proc/self/mountinfo
    fi
}
trap 'if [ "$BASHPID" = "$test_shell" ]; then stop_container; rm -rf "$work"; fi' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM      # the EXIT trap stops the container then too

# One run at a time on a build directory; then what a killed run left running is stopped,
# if those pids are still its nspawn on this root and a container's init.
exec 9>"$cache/lock"
flock -n 9 || die "another check-systemd is running on $build"
if [ -f "$cache/container" ] && read -r old_nspawn old_init <"$cache/container"; then
    tr '\0' ' ' </proc/"$old_nspawn"/cmdline 2>/dev/null | grep -qF "systemd-nspawn -D $root " ||
        old_nspawn=
    tr '\0' '\n' </proc/"$old_init"/environ 2>/dev/null | grep -qx container=systemd-nspawn ||
        old_init=
    if [ -n "$old_nspawn$old_init" ]; then
        echo "stopping the container a killed run left: nspawn ${old_nspawn:--}, init ${old_init:--}"
        end_container "$old_nspawn" "$old_init"
    fi
    rm -f "$cache/container"
fi

# The container's init: nspawn's child once it has exec'd systemd. Gives up at once if
# nspawn has already exited (its console log says why).
find_init() {
    local c
    nspawn_gone && die "systemd-nspawn exited during boot: $(tail -20 "$cache/console.log")"
    for c in $(cat /proc/"$nspawn"/task/*/children 2>/dev/null); do
        [ "$(cat /proc/"$c"/comm 2>/dev/null)" = systemd ] && { init=$c; return 0; }
    done
    return 1
}

# ct COMMAND...: runs COMMAND inside the container, as its root, with a clean environment;
# one that hangs is killed after $WAIT seconds (status 124), so the test cannot (SIGKILL 5 s
# later: a stopped process ignores the SIGTERM).
ct() {
    timeout -k 5 "$WAIT" nsenter -t "$init" -a -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"
}
# as_nobody COMMAND...: the same, as an ordinary unprivileged client.
as_nobody() { ct setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

booted() {
    case $(ct systemctl is-system-running 2>/dev/null) in running|degraded) return 0;; esac
    return 1
}

prop() { ct systemctl show -P "$2" "$1"; }       # prop UNIT PROPERTY
main_pid() { prop randd.service MainPID; }
active() { [ "$(ct systemctl is-active "$@" 2>/dev/null | sort -u)" = active ]; }
status_key() { ct randctl status --keys | sed -n "s/^$1: //p"; }      # a `randctl status` value

# Journal lines from `mark` on: in_journal PATTERN. journald writes what it is sent a moment
# later, so a test waits for a line (logged WHAT PATTERN). No -u: journalctl 252 with
# --after-cursor and -u leaves out lines (systemd's own about the unit, or the unit's).
mark() { cursor=$(ct journalctl -q -n 1 -o cat --show-cursor | sed -n 's/^-- cursor: //p'); }
in_journal() {
    ct journalctl -q --no-pager -o cat --after-cursor="$cursor" | grep -qE -- "$1"
}
logged() { wait_for "$1 in the journal" in_journal "$2"; }

# A systemd timespan ("30s", "1min 30s", "500ms") in whole seconds; infinity and unset: 0.
seconds_of() {
    awk '{ s = 0; for (i = 1; i <= NF; i++) { v = $i + 0; u = $i; sub(/^[0-9.]+/, "", u);
           s += v * (u == "min" ? 60 : u == "h" ? 3600 : u == "ms" ? 0.001 : u == "us" ? 0.000001 : 1) }
           printf "%d\n", s }' <<<"$1"
}

# --- the root: debootstrapped once, unpacked afresh each run ------------------------------

# The packages under test, and the root's packages: systemd to boot, and what the .debs
# depend on (names only), so dpkg -i needs no network. The cache is named by that list.
debs=$(ls "$build"/deb/randd_*.deb "$build"/deb/librandd0_*.deb 2>/dev/null | grep -v dbgsym)
[ "$(wc -w <<<"$debs")" = 2 ] || die "no randd and librandd0 .debs in $build/deb (run make deb)"
packages=$(for d in $debs; do dpkg-deb -f "$d" Depends; done | tr ',' '\n' |
           sed -e 's/[(|].*//' -e 's/ //g' | grep -vx -e '' -e librandd0 |
           cat - <(printf 'systemd\nsystemd-sysv\n') | sort -u | tr '\n' ' ')
key=$(printf '%s minbase %s' "$SUITE" "$packages" | sha256sum | cut -c1-12)
tarball=$cache/$SUITE-minbase-$key.tar

section "root"
if [ -f "$tarball" ]; then
    echo "reusing the cached $SUITE minbase root ($tarball)"
else
    t=$SECONDS
    rm -rf "$cache/debootstrap" "$cache"/"$SUITE"-minbase-*.tar*
    echo "debootstrap --variant=minbase $SUITE with: $packages"
    debootstrap --variant=minbase --include="$(tr ' ' ',' <<<"${packages% }")" \
        "$SUITE" "$cache/debootstrap" "$MIRROR" >"$cache/debootstrap.log" 2>&1 ||
        die "debootstrap failed: $(tail -20 "$cache/debootstrap.log")"
    tar -C "$cache/debootstrap" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball" ||
        die "could not write $tarball"
    rm -rf "$cache/debootstrap"
    echo "debootstrapped and cached in $((SECONDS - t)) s: $tarball"
fi
rm -rf "$root" && mkdir -p "$root" && tar -C "$root" -xf "$tarball" || die "cannot unpack $tarball"
cp $debs "$root/tmp/"
chroot "$root" sh -c 'dpkg -i /tmp/*.deb && rm /tmp/*.deb' >"$cache/install.log" 2>&1 ||
    die "dpkg -i in the root failed: $(tail -20 "$cache/install.log")"
echo "installed:" $(for d in $debs; do basename "$d"; done)
# The reload check is only worth something where nothing else provides kill(1).
[ -e "$root/bin/kill" ] || [ -e "$root/usr/bin/kill" ] &&
    die "the root has a kill(1) (procps?); it must be as minimal as the systems randd ships to"
cp "$root/etc/randd.conf" "$cache/randd.conf.orig"

# --- boot ----------------------------------------------------------------------------------

# No systemd on the host: nothing to allocate a scope from, so nspawn stays in our cgroup.
# CAP_IPC_LOCK lets nspawn's seccomp filter allow mlock, as on a real machine. A machine has
# /dev/kmsg, and its systemd CAP_SYSLOG to give randd (to learn of VM clones): nspawn gives a
# container neither unless asked.
keep_unit=--keep-unit
[ -d /run/systemd/system ] && keep_unit=
boot() {
    systemd-nspawn -D "$root" -M "$machine" -b --register=no $keep_unit --private-network \
        --link-journal=no --console=passive --capability=CAP_IPC_LOCK,CAP_SYSLOG \
        --bind-ro=/dev/kmsg >>"$cache/console.log" 2>&1 9>&- &
    nspawn=$! init=
    wait_for "the container's init (systemd) to start" find_init || die "no init in the container"
    echo "$nspawn $init" >"$cache/container"
    wait_for "the container's systemd to finish booting" booted ||
        die "the container did not finish booting: $(ct systemctl list-jobs --no-pager 2>&1 | tail)"
    echo "booted: the container is $(ct systemctl is-system-running)" \
         "$(ct systemctl --failed --plain --no-legend --no-pager | awk '{printf " %s", $1}')"
}

# halt poweroff|reboot: asks the container's systemd, waits for nspawn to exit; sets rc.
halt() {
    local out
    out=$(ct systemctl "$1" 2>&1) || fail "systemctl $1: $out"
    if WAIT=150 wait_for "the container to $1" nspawn_gone; then
        wait "$nspawn"; rc=$?
        nspawn= init=
        rm -f "$cache/container"
    else
        fail "the container did not $1"; stop_container; rc=
    fi
}

section "boot"
: >"$cache/console.log"
boot

if active randd.socket randd.service; then pass "randd.socket and randd.service are active after boot"
else fail "after boot: randd.socket $(ct systemctl is-active randd.socket), randd.service $(ct systemctl is-active randd.service)"; fi
[ "$(ct systemctl is-enabled randd.socket randd.service | sort -u)" = enabled ] &&
    pass "the package enabled randd.socket and randd.service" ||
    fail "not enabled: $(ct systemctl is-enabled randd.socket randd.service | tr '\n' ' ')"

# Ready (Type=notify: READY=1) before sysinit.target, on systemd's own clock.
ready_us=$(prop randd.service ActiveEnterTimestampMonotonic)
sysinit_us=$(prop sysinit.target ActiveEnterTimestampMonotonic)
boot_us=$(ct systemctl show -P UserspaceTimestampMonotonic)     # systemd started
since_boot() { printf '%d.%03d ms' $(( ($1 - boot_us) / 1000 )) $(( ($1 - boot_us) % 1000 )); }
if [ "${ready_us:-0}" -gt 0 ] && [ "${sysinit_us:-0}" -gt 0 ] && [ "$ready_us" -le "$sysinit_us" ]; then
    pass "randd ready $(since_boot "$ready_us") into boot, before sysinit.target ($(since_boot "$sysinit_us"))"
else
    fail "randd ready at ${ready_us:-?} us, sysinit.target reached at ${sysinit_us:-?} us (monotonic): not before"
fi
out=$(ct randctl bytes 32 --hex 2>&1)
[[ $out =~ ^[0-9a-f]{64}$ ]] && pass "randctl bytes as root" || fail "randctl bytes as root: $out"
out=$(as_nobody randctl bytes 32 --hex 2>&1)
[[ $out =~ ^[0-9a-f]{64}$ ]] && pass "randctl bytes as an unprivileged user" ||
    fail "randctl bytes as nobody: $out ($(ct ls -ld /run/randd /run/randd/randd.sock 2>&1 | tr '\n' ' '))"

# Not an assertion: what the kernel feed can do in this container, for whoever reads the log.
echo "kernel feed in this container (shown, not checked):"
ct randctl status --keys | grep -E '^(sources\[[0-9]\]\.(name|state|kernel_creditable)|kernel\.)' |
    sed 's/^/  /'

section "notify"
text=$(prop randd.service StatusText)
[ "$text" = "Serving on /run/randd/randd.sock" ] && pass "StatusText carries randd's STATUS: \"$text\"" ||
    fail "StatusText is \"$text\", not randd's \"Serving on /run/randd/randd.sock\""

# --- the VM generation word ------------------------------------------------------------------

# randd publishes it beside the socket, in /run/randd, which randd.socket makes randd's
# dynamic user's; a client that is not root maps it with librandd's checks (randctl status
# says whether it did, or why not). Checked again after a restart, a clean stop (removed) and
# the watchdog's kill (the leftover replaced).
section "VM generation word"
word=/run/randd/randd.sock.generation
randd_uid() { ct awk '$1 == "Uid:" { print $2 }' /proc/"$(main_pid)"/status; }
published() { ct test -f "$word"; }
check_word() {   # check_word WHEN
    local uid out line
    wait_for "randd to publish $word" published
    uid=$(randd_uid)
    out=$(ct stat -c '%F %u %a %h %s' "$word" 2>&1)
    [ "$out" = "regular file $uid 644 1 4096" ] &&
        pass "$word$1: a regular file of randd's uid $uid, mode 0644, one link, one page" ||
        fail "$word$1: \"$out\", wanted \"regular file $uid 644 1 4096\" (randd's uid $uid)"
    out=$(ct stat -c '%F %u %a' /run/randd 2>&1)
    [ "$out" = "directory $uid 755" ] && pass "/run/randd$1: a directory of randd's uid, mode 0755" ||
        fail "/run/randd$1: \"$out\", wanted \"directory $uid 755\""
    line=$(as_nobody randctl status --keys 2>&1 | grep '^librandd.vm_generation_word: ')
    [[ $line == "librandd.vm_generation_word: mapped $word "* ]] &&
        pass "an unprivileged client maps it$1: ${line#*: }" ||
        fail "an unprivileged client$1: ${line:-no librandd.vm_generation_word line in randctl status}"
}
check_word ""
ino=$(ct stat -c %i "$word")
ct systemctl restart randd.service || fail "systemctl restart randd failed"
check_word " after systemctl restart randd"
[ "$(ct stat -c %i "$word")" != "$ino" ] && pass "the restarted randd published a new file" ||
    fail "$word is the same inode ($ino) after a restart: adopted, not made afresh"

# --- hardening -------------------------------------------------------------------------------

section "hardening"
pid=$(main_pid)
proc=$(ct cat /proc/"$pid"/status)
field() { awk -v k="$1:" '$1 == k { $1 = ""; sub(/^ /, ""); print }' <<<"$proc"; }
read -r ruid euid suid fsuid <<<"$(field Uid)"
if [ "$ruid" = "$euid" ] && [ "$ruid" = "$suid" ] && [ "$ruid" -ge 61184 ] && [ "$ruid" -le 65519 ] &&
   ! ct grep -q "^[^:]*:[^:]*:$ruid:" /etc/passwd; then
    pass "randd runs as dynamic user $ruid (systemd's 61184-65519, not in /etc/passwd)"
else
    fail "randd's uids are $(field Uid): not one dynamic user"
fi
# Capabilities are each thread's own: the main thread serves EGD (and clients, with workers =
# 1) and holds none; randd-kernel, which only makes the kernel feed's ioctls, holds
# CAP_SYS_ADMIN alone.
[ "$(field CapEff)" = 0000000000000000 ] && pass "the main thread holds no capability" ||
    fail "the main thread's CapEff is $(field CapEff), wanted none"
kernel_cap=$(ct sh -c 'for t in /proc/'"$pid"'/task/*; do
    [ "$(cat "$t/comm")" = randd-kernel ] && sed -n "s/^CapEff:[[:space:]]*//p" "$t/status"; done')
[ "$kernel_cap" = 0000000000200000 ] &&
    pass "randd-kernel's CapEff is CAP_SYS_ADMIN alone (0x200000)" ||
    fail "randd-kernel's CapEff is '$kernel_cap', wanted 0000000000200000 (CAP_SYS_ADMIN alone)"
[ "$(field NoNewPrivs)" = 1 ] && pass "NoNewPrivs" || fail "NoNewPrivs is $(field NoNewPrivs)"
# VM clones are noticed by the kernel's log line (and the uevent where a kernel sends it):
# the unit lets randd open /dev/kmsg (CAP_SYSLOG, DeviceAllow=/dev/kmsg r), and CAP_SYSLOG is
# gone by now (CapEff above: none, and randd-kernel's CAP_SYS_ADMIN alone).
watching="kernel_log $(status_key vmgenid.kernel_log) uevent $(status_key vmgenid.uevent)"
[ "$watching" = "kernel_log true uevent true" ] &&
    pass "randd watches for new VM generations: $watching" ||
    fail "randd watches '$watching', wanted 'kernel_log true uevent true'" \
         "$(ct journalctl -q -o cat -u randd.service | grep -E 'kmsg|uevents' | tail -2)"
# The hardening as systemd scores it: at most 2.0 ("OK"; 0 is best, 10 worst).
score=$(ct systemd-analyze security randd.service 2>&1 |
        sed -n 's/.*Overall exposure level for randd.service: \([0-9.]*\).*/\1/p')
[ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }' &&
    pass "systemd-analyze security: exposure $score (at most 2.0)" ||
    fail "systemd-analyze security: exposure '${score:-not reported}', wanted at most 2.0"
for dir in /usr /etc; do
    out=$(ct nsenter -t "$pid" -m touch "$dir/.randd-write-probe" 2>&1)
    if grep -q 'Read-only file system' <<<"$out"; then pass "$dir is read-only for randd (ProtectSystem)"
    else ct nsenter -t "$pid" -m rm -f "$dir/.randd-write-probe"; fail "randd could write to $dir: ${out:-created a file}"; fi
done
if (( 0x$(awk '$1 == "CapBnd:" { print $2 }' /proc/"$init"/status) >> 14 & 1 )); then
    [ "$(status_key pool.locked_in_memory)" = true ] && pass "the generator state is locked in memory" ||
        fail "the generator state is not locked in memory (the syscall filter denies mlock?)"
fi

# --- reload ------------------------------------------------------------------------------------

section "reload"
printf 'reseed_interval = 45\n' >>"$root/etc/randd.conf"
mark
out=$(ct systemctl reload randd.service 2>&1) && pass "systemctl reload randd succeeds" ||
    fail "systemctl reload randd: $out $(ct journalctl -q -n 5 -o cat -u randd.service)"
logged "randd's 'reload: /etc/randd.conf applied'" 'reload: /etc/randd.conf applied' &&
    pass "randd logged that it re-read /etc/randd.conf" || fail "no 'applied' line after systemctl reload"
[ "$(status_key config.reseed_interval)" = 45 ] && pass "the new reseed_interval (45) is in effect" ||
    fail "reseed_interval is $(status_key config.reseed_interval) after reload, not 45"
[ "$(main_pid)" = "$pid" ] && pass "a reload keeps the process ($pid)" || fail "reload replaced randd ($pid -> $(main_pid))"

printf 'max_clients = many\n' >>"$root/etc/randd.conf"
mark
if out=$(ct systemctl reload randd.service 2>&1); then fail "systemctl reload accepted a broken config"
else pass "systemctl reload fails on a broken config: $(head -1 <<<"$out")"; fi
logged "the broken line as file:line: key" '/etc/randd.conf:[0-9]+: max_clients: ' &&
    pass "the journal names the broken line (file:line: key)" || fail "no file:line for the broken config in the journal"
active randd.service && [ "$(main_pid)" = "$pid" ] && [ "$(status_key config.reseed_interval)" = 45 ] &&
    pass "after the failed reload randd runs on, with the old config" ||
    fail "after the failed reload: $(ct systemctl is-active randd.service), pid $(main_pid), reseed_interval $(status_key config.reseed_interval)"
# The daemon's own guard, for a SIGHUP sent past systemctl reload.
mark
ct systemctl kill -s HUP --kill-who=main randd.service
logged "randd rejecting the broken config on SIGHUP" 'rejected, keeping the running configuration' &&
    pass "randd itself rejects a broken config on SIGHUP" || fail "randd did not reject the broken config on SIGHUP"
active randd.service && [ "$(status_key config.reseed_interval)" = 45 ] &&
    pass "and keeps serving with the old config" || fail "randd after a rejected SIGHUP: $(ct systemctl is-active randd.service)"
cp "$cache/randd.conf.orig" "$root/etc/randd.conf"
ct systemctl reload randd.service || fail "systemctl reload back to the shipped config failed"

section "hardening with kernel_topup = no"
printf 'kernel_topup = no\n' >>"$root/etc/randd.conf"
ct systemctl restart randd.service || fail "systemctl restart randd failed"
cap=$(ct awk '$1 == "CapEff:" { print $2 }' /proc/"$(main_pid)"/status)
[ "$cap" = 0000000000000000 ] && pass "with kernel_topup = no, CapEff is empty" ||
    fail "with kernel_topup = no, CapEff is $cap, not 0"
cp "$cache/randd.conf.orig" "$root/etc/randd.conf"
ct systemctl restart randd.service || fail "systemctl restart randd failed"

# --- socket activation ---------------------------------------------------------------------

section "socket activation"
pid=$(main_pid)
ct systemctl stop randd.service 2>/dev/null     # it warns that randd.socket can start it again
! active randd.service && active randd.socket && pass "randd.service stopped, randd.socket still listening" ||
    fail "after stopping: randd.service $(ct systemctl is-active randd.service), randd.socket $(ct systemctl is-active randd.socket)"
ct test -e "$word" && fail "$word outlived randd's clean stop" || pass "a clean stop removed $word"
clients=()
for i in $(seq 16); do
    as_nobody randctl bytes 1024 --hex >"$work/client.$i" 2>&1 & clients+=($!)
done
lost=0
for i in "${!clients[@]}"; do
    wait "${clients[$i]}" && [[ $(cat "$work/client.$((i + 1))") =~ ^[0-9a-f]{2048}$ ]] ||
        { lost=$((lost + 1)); echo "  client $((i + 1)): $(head -c 200 "$work/client.$((i + 1))")"; }
done
[ "$lost" = 0 ] && pass "16 clients connecting to the stopped service all got their 1024 bytes" ||
    fail "$lost of 16 requests to the socket-activated service were lost"
active randd.service && [ "$(main_pid)" != "$pid" ] && pass "the socket started randd again (pid $pid -> $(main_pid))" ||
    fail "randd.service is $(ct systemctl is-active randd.service) after the clients connected"

# --- the EGD sockets -------------------------------------------------------------------------

# An EGD client in perl-base (Essential): 32 bytes by command 0x02, then the pid by 0x04.
egd_client='use IO::Socket::UNIX; use IO::Socket::INET;
my $a = shift; my $s = $a =~ m{^/} ? IO::Socket::UNIX->new(Peer => $a) : IO::Socket::INET->new(PeerAddr => $a);
die "connect $a: $!\n" unless $s;
sub take { my ($n) = @_; my $b = ""; while (length($b) < $n) {
    my $r = sysread($s, $b, $n - length($b), length($b)); die "read: ", ($r // $!), "\n" unless $r; } $b }
syswrite($s, pack("CC", 2, 32)); my $bytes = take(32);
syswrite($s, "\x04"); my $pid = take(ord(take(1)));
print unpack("H*", $bytes), " $pid\n";'

# egd_clients: an EGD client (as nobody) on each of randd-egd.socket's two sockets.
egd_clients() {
    local where out pid
    for where in /run/randd/egd.sock 127.0.0.1:8888; do
        out=$(as_nobody perl -e "$egd_client" "$where" 2>&1)
        pid=$(main_pid)
        [[ $out =~ ^[0-9a-f]{64}\ $pid$ ]] && pass "an EGD client on $where got 32 bytes from randd (pid $pid)$1" ||
            fail "EGD client on $where: ${out:-nothing}$1"
    done
}

# systemd starts no socket for a service already running (it could not pass it on): the
# operator stops randd, starts randd-egd.socket, and the next client starts randd with both.
section "EGD sockets"
ct systemctl stop randd.service 2>/dev/null
ct systemctl enable --now randd-egd.socket 2>/dev/null && active randd-egd.socket &&
    pass "randd-egd.socket enabled and listening" || fail "randd-egd.socket: $(ct systemctl is-active randd-egd.socket)"
egd_clients ", started through the socket"

# --- at boot: randd-egd.socket and the metrics timer enabled ---------------------------------

section "reboot with randd-egd.socket and randd-metrics.timer enabled"
ct systemctl enable randd-metrics.timer 2>/dev/null || fail "cannot enable randd-metrics.timer"
halt reboot
[ "$rc" = 133 ] || fail "systemd-nspawn exited ${rc:-?} on reboot, not 133"
boot
active randd.socket randd-egd.socket randd.service && pass "randd.socket, randd-egd.socket and randd.service active" ||
    fail "after the reboot: $(ct systemctl is-active randd.socket randd-egd.socket randd.service | tr '\n' ' ')"
egd_clients " at boot"

# --- the watchdog ------------------------------------------------------------------------------

section "watchdog"
wd=$(seconds_of "$(prop randd.service WatchdogUSec)")
pid=$(main_pid) restarts=$(prop randd.service NRestarts)
if ! [[ $pid =~ ^[1-9][0-9]*$ ]]; then          # never kill 0: that is the caller's own group
    fail "randd is not running (MainPID \"$pid\"): nothing to stop"
elif [ "$wd" -gt 0 ]; then
    mark
    ino=$(ct stat -c %i "$word")
    ct sh -c 'kill -STOP "$1"' sh "$pid"       # the shell's kill: the root has no kill(1)
    t0=$SECONDS
    restarted() { active randd.service && [ "$(main_pid)" != "$pid" ] && [ "$(main_pid)" != 0 ]; }
    if WAIT=$((wd + 60)) wait_for "systemd to restart randd, stopped by SIGSTOP, after its watchdog" restarted; then
        took=$((SECONDS - t0))
        [ "$took" -le $((wd + 10)) ] && pass "systemd killed the stopped randd and restarted it after $took s (WatchdogSec=$wd s)" ||
            fail "the restart took $took s, more than WatchdogSec=$wd s"
        logged "systemd's 'Watchdog timeout' for randd" 'randd.service: Watchdog timeout' &&
            pass "the journal says it was the watchdog" || fail "randd was restarted, but not by its watchdog"
        [ "$(prop randd.service NRestarts)" -gt "$restarts" ] &&
            pass "NRestarts went up ($restarts -> $(prop randd.service NRestarts))" || fail "NRestarts stayed at $restarts"
        check_word " after the watchdog's restart"
        [ "$(ct stat -c %i "$word")" != "$ino" ] && pass "the killed randd's leftover was replaced" ||
            fail "$word is the killed randd's file (inode $ino): adopted, not replaced"
    else
        fail "randd stopped with SIGSTOP was not restarted"
        ct sh -c 'kill -CONT "$1"' sh "$pid"
    fi
else
    fail "randd.service has no watchdog (WatchdogUSec=$(prop randd.service WatchdogUSec))"
fi

# --- the metrics timer -----------------------------------------------------------------------

# Enabled before the reboot; OnBootSec= fires it 15 s into this boot.
section "metrics timer"
prom=$root/var/lib/prometheus/node-exporter/randd.prom
prom_ready() { grep -q '^randd_ready 1$' "$prom" 2>/dev/null; }
wait_for "randd-metrics.timer to write $prom" prom_ready &&
    pass "randd-metrics.timer wrote randd.prom ($(grep -c '^randd_' "$prom") samples)" ||
    fail "no randd.prom: $(ct systemctl status --no-pager -n 5 randd-metrics.service 2>&1 | tail -5)"
as_nobody grep -q '^randd_ready ' /var/lib/prometheus/node-exporter/randd.prom &&
    pass "a collector that is not root can read it" || fail "randd.prom is not readable: $(ls -l "$prom")"
[ "$(prop randd-metrics.service Result)" = success ] && pass "randd-metrics.service succeeded" ||
    fail "randd-metrics.service result: $(prop randd-metrics.service Result)"

# --- shutdown ----------------------------------------------------------------------------------

section "shutdown"
mark
t0=$SECONDS
halt poweroff
[ "$rc" = 0 ] && pass "systemctl poweroff: the container was down in $((SECONDS - t0)) s" ||
    fail "systemd-nspawn exited ${rc:-?} after poweroff"
# The container's journal from the poweroff on, read from the host once it is down.
journal=$(journalctl -D "$root/var/log/journal" --no-pager -o short-unix --after-cursor="$cursor" 2>&1 |
         grep -E ' randd\[[0-9]+\]: |randd\.service')
stamp() { awk -v p="$1" 'index($0, p) { print $1; exit }' <<<"$journal"; }
stopping=$(stamp 'Stopping randd.service') stopped=$(stamp 'Stopped randd.service')
if [ -n "$stopping" ] && [ -n "$stopped" ]; then
    ms=$(awk -v a="$stopping" -v b="$stopped" 'BEGIN { printf "%d", (b - a) * 1000 }')
    [ "$ms" -le 5000 ] && pass "randd stopped $ms ms after systemd asked it to" ||
        fail "randd took $ms ms to stop at poweroff"
else
    fail "no stop of randd.service in the container's journal: $(tail -5 <<<"$journal")"
fi
grep -q 'Terminated: shutting down' <<<"$journal" && ! grep -qE 'timed out|Killing process|SIGKILL' <<<"$journal" &&
    pass "randd ended on SIGTERM, nothing killed" ||
    fail "randd did not end cleanly at poweroff: $(grep -E 'randd|timed out|Kill' <<<"$journal" | tail -5)"

echo "check-systemd: $((SECONDS - started)) s"
[ "$failures" = 0 ] && rm -rf "$root"
finish check-systemd.sh
