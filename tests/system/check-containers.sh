#!/usr/bin/env bash
# randd served into containers, as docs/containers.md's recipe has it: a randd on the host, its socket's
# directory bind-mounted read-only at /run/randd in podman containers, rootful and rootless.
# The image is `make image`'s, from the Containerfile, with no registry (a debootstrapped
# Debian 12 minbase root with openssl, cached under BUILD/containers, plus `make install`).
# docs/containers.md's podman commands run as written; then from inside it checks randctl
# bytes, range and prime, a 1 MiB randd_bytes (BYTES_MEMFD), the OpenSSL provider (openssl
# rand), the generation word, ADD_ENTROPY refused to an unprivileged user, and, run by an
# unprivileged user, a rootless container: the daemon seen through the user namespace
# (SO_PEERCRED gives the overflow uid) is trusted only as librandd's rule allows.
# Needs root.
#
# usage: check-containers.sh BUILD       (make check-containers)
#        check-containers.sh --can-run   exit 0 if this machine can run it, else say why, exit 1
set -u
# The Makefile's IMAGE_SUITE and DEBIAN_MIRROR: what make image debootstraps, and from where.
SUITE=bookworm
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
IMAGE=localhost/randd-check-containers:latest
top=$(cd "$(dirname "$0")/../.." && pwd)

# --- how podman runs here -------------------------------------------------------------------
# A fresh machine runs `podman run` as it is. A sandbox may not: without CAP_SYS_RESOURCE,
# podman's default rlimits (above the sandbox's) cannot be set; crun refuses hybrid cgroups,
# where runc copes. The first way that runs a probe image wins; pm_global and pm_run hold it.
pm_global=() pm_run=()
LOW_LIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)

# probe_with WHO GLOBAL_OPTIONS -- RUN_OPTIONS: imports a one-file image (a static busybox)
# and runs it, as root (WHO empty) or through WHO (a command prefix).
probe_image() {
    local dir
    dir=$(mktemp -d) && mkdir "$dir/bin" && cp "$busybox" "$dir/bin/busybox" &&
        tar -C "$dir" -cf "$dir.tar" . && chmod 644 "$dir.tar" && rm -rf "$dir" &&
        echo "$dir.tar"
}
find_podman_way() {          # $@: the command prefix to run podman as (empty: root)
    local tar=$1 out ok=; shift
    "$@" podman import -q "$tar" localhost/randd-check-probe:latest >/dev/null 2>&1 || {
        echo "podman import failed"; return 1; }
    for way in "|" "|${LOW_LIMITS[*]}" "--runtime runc|${LOW_LIMITS[*]}"; do
        read -ra pm_global <<<"${way%%|*}"
        read -ra pm_run <<<"${way#*|}"
        out=$(timeout 120 "$@" podman "${pm_global[@]}" run --rm --network none "${pm_run[@]}" \
              localhost/randd-check-probe:latest /bin/busybox true 2>&1) && { ok=1; break; }
        out=${out##*$'\n'}
    done
    "$@" podman rmi -f localhost/randd-check-probe:latest >/dev/null 2>&1
    [ -n "$ok" ] || { echo "podman cannot run a container here: $out"; return 1; }
}

# can_run [probe]: root, podman (or apt offering it: make check-containers installs it), the
# archive or the cached root; with probe (podman installed), a container runs.
can_run() {
    local host tar
    if [ "$(id -u)" != 0 ]; then
        echo "needs root (podman import, containers rootful and run as another user)"; return 1
    fi
    if ! command -v podman >/dev/null &&
       ! apt-cache policy podman 2>/dev/null | grep -q 'Candidate: [0-9]'; then
        echo "podman is not installed and apt offers none"; return 1
    fi
    if ! ls "$cache"/$SUITE-minbase-openssl.tar >/dev/null 2>&1; then
        host=${MIRROR#*://}; host=${host%%/*}
        if ! timeout 15 bash -c "exec 3<>/dev/tcp/$host/80" 2>/dev/null; then
            echo "cannot reach the Debian archive ($host:80) to debootstrap a root"; return 1
        fi
    fi
    [ "${1:-}" = probe ] || return 0
    command -v podman >/dev/null || { echo "podman is not installed"; return 1; }
    busybox=$(command -v busybox)
    if [ -z "$busybox" ] || ! file -L "$busybox" 2>/dev/null | grep -q 'statically linked'; then
        echo "no static busybox (Debian's busybox-static) for the probe image"; return 1
    fi
    tar=$(probe_image) || { echo "cannot make a probe image"; return 1; }
    find_podman_way "$tar"; local rc=$?
    rm -f "$tar"
    return $rc
}

if [ "${1:-}" = --can-run ]; then
    cache=$top/build/containers
    can_run
    exit
fi
build=${1:?usage: check-containers.sh BUILD | --can-run}
build=$(cd "$build" && pwd)
cache=$build/containers
mkdir -p "$cache"
exec 9>"$cache/lock"
flock -n 9 || { echo "FAIL: another check-containers is running on $build"; exit 1; }
# In this shell, not $( ): can_run leaves the way podman runs in pm_global and pm_run.
can_run probe >"$cache/can-run"
if [ $? != 0 ]; then
    echo "SKIP check-containers: $(cat "$cache/can-run")"
    exit 0
fi
[ -z "${pm_global[*]}${pm_run[*]}" ] ||
    echo "podman runs here with: ${pm_global[*]} run ${pm_run[*]}"
started=$SECONDS

. "$(dirname "$0")/../integration/common.sh"
die() { echo "FAIL: $*"; exit 1; }
section() { echo "== $*"; }
rootless_home=$work/rootless
# "${as_user[@]}" COMMAND...: COMMAND as nobody, with a home and a runtime directory of its
# own (rootless podman keeps its images and state there). An array, not a function: timeout
# runs it.
as_user=(setpriv --reuid=nobody --regid=nogroup --clear-groups
         env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$rootless_home/home"
         XDG_RUNTIME_DIR="$rootless_home/run")
cleanup() {
    podman rmi -f "$IMAGE" >/dev/null 2>&1
    [ -d "$rootless_home/home" ] && "${as_user[@]}" podman rmi -af >/dev/null 2>&1
    [ -n "$pid" ] && kill "$pid" 2>/dev/null
    [ -n "$rundir" ] && rm -rf "$rundir"
    rm -rf "$work"
}
rundir=
trap 'if [ "$BASHPID" = "$test_shell" ]; then cleanup; fi' EXIT

# --- the image -------------------------------------------------------------------------------

section "image"
# make image: the Containerfile, from its cached Debian root (debootstrapped the first time).
t=$SECONDS
make --no-print-directory -s -C "$top" BUILD="$build" image IMAGE="$IMAGE" >"$work/image.log" 2>&1 ||
    die "make image failed: $(tail -20 "$work/image.log")"
echo "make image: $IMAGE in $((SECONDS - t)) s"
# The same image for the rootless user, saved once rather than built twice.
podman save -q --format oci-archive -o "$work/image.tar" "$IMAGE" && chmod 644 "$work/image.tar" ||
    die "podman save $IMAGE failed"

# --- the daemon on the host ------------------------------------------------------------------
# Its socket in a directory of its own under /run, as randd.service has it (/run/randd): only
# root could have made it, and it is what the containers mount.
rundir=$(mktemp -d /run/randd-check-containers.XXXXXX) && chmod 755 "$rundir" ||
    die "cannot make a directory under /run"
mkdir -m 755 "$rundir/randd"
sock=$rundir/randd/randd.sock
export RANDD_SOCKET=$sock
printf 'hwrng_device = %s\n' "$work/hwrng" >"$work/randd.conf"
"$RANDD" --foreground --config "$work/randd.conf" --socket "$sock" 2>"$work/log" &
pid=$!
wait_for "randd on the host" answers || die "randd did not start: $(cat "$work/log")"
counter() { "$RANDCTL" status --keys | sed -n "s/^requests\.$1: //p"; }

# run_image WHO DIR COMMAND...: COMMAND in the image, with DIR mounted read-only at
# /run/randd (docs/containers.md's recipe); WHO is root or rootless. in_container WHO LINE: a shell line,
# with the host randd's directory.
run_image() {
    local who=$1 dir=$2 as=(); shift 2
    [ "$who" = rootless ] && as=("${as_user[@]}")
    timeout "$WAIT" "${as[@]}" podman "${pm_global[@]}" run --rm --network none "${pm_run[@]}" \
        -v "$dir:/run/randd:ro" "$IMAGE" "$@"
}
in_container() { run_image "$1" "$rundir/randd" sh -c "$2"; }

# The checks both kinds of container pass.
served_inside() {
    local who=$1 out before after
    out=$(in_container "$who" 'randctl bytes 32 --hex && randctl range 1000 --count 3 &&
                               randctl prime 64' 2>&1)
    [[ $out =~ ^[0-9a-f]{64}$'\n'[0-9]+$'\n'[0-9]+$'\n'[0-9]+$'\n'[0-9]+$ ]] &&
        pass "$who: randctl bytes, range and prime" || fail "$who: randctl: $out"
    before=$(counter bytes_memfd)
    out=$(in_container "$who" 'randctl bytes 1048576 --raw | wc -c' 2>&1)
    after=$(counter bytes_memfd)
    [ "$out" = 1048576 ] && [ "$after" -gt "$before" ] &&
        pass "$who: 1 MiB of randd_bytes by BYTES_MEMFD (bytes_memfd $before -> $after)" ||
        fail "$who: 1 MiB: got '$out' bytes, requests.bytes_memfd $before -> $after"
    before=$(counter seed)
    out=$(in_container "$who" 'export OPENSSL_CONF=/usr/share/randd/openssl-randd.cnf
                               openssl rand -hex 16' 2>&1)
    after=$(counter seed)
    [[ $out =~ ^[0-9a-f]{32}$ ]] && [ "$after" -gt "$before" ] &&
        pass "$who: openssl rand seeded by randd.so (requests.seed $before -> $after)" ||
        fail "$who: openssl rand: '$out', requests.seed $before -> $after"
    out=$(in_container "$who" 'randctl status --keys' 2>&1 |
          grep '^librandd.vm_generation_word')
    [[ $out == *": mapped /run/randd/randd.sock.generation "* ]] &&
        pass "$who: the generation word mapped through the mount" || fail "$who: $out"
}

# --- rootful ---------------------------------------------------------------------------------
section "rootful podman"
served_inside root
# No user namespace: randd sees the container's uids as they are. Its root is the host's root
# (may ADD_ENTROPY); its nobody is the host's nobody (may not).
# randd's own refusal ("not permitted"), not librandd's: nobody is served bytes first.
out=$(in_container root 'head -c 64 /dev/urandom >/tmp/e; as_nobody() {
    setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
    as_nobody randctl bytes 4 >/dev/null && as_nobody randctl add-entropy /tmp/e --bits 8
    echo "nobody: $?"; randctl add-entropy /tmp/e --bits 8; echo "root: $?"' 2>&1)
grep -q 'add-entropy: not permitted' <<<"$out" && grep -q '^nobody: 4$' <<<"$out" &&
    grep -q '^root: 0$' <<<"$out" &&
    pass "rootful: ADD_ENTROPY refused to the container's nobody (exit 4); its root is root" ||
    fail "rootful ADD_ENTROPY: $out"

# docs/containers.md's commands as written, but for this test's tag in place of
# localhost/randd, its directory in place of the host's /run/randd, and the options podman
# needs here: each exits 0 and prints randd's bytes, through randctl or randd.so, in hex.
recipe=$(awk -v format=md -f "$top/tests/integration/doc_examples.awk" "$top/docs/containers.md" |
         awk '/^@@block .* skip: runs a container/ { on = 1; next } /^@@end/ { on = 0 } on' |
         sed -e ':a' -e '/\\$/{N; s/\\\n//; ta' -e '}')
[ -n "$recipe" ] || fail "docs/containers.md: no block marked 'example skip: runs a container'"
while IFS= read -r cmd; do
    [ -n "$cmd" ] || continue
    run=${cmd//localhost\/randd/$IMAGE}
    run=${run//-v \/run\/randd:/-v $rundir\/randd:}
    run=${run/podman run/podman ${pm_global[*]} run --network none ${pm_run[*]}}
    out=$(timeout "$WAIT" bash -c "$run" 2>&1) && [[ $out =~ ^[0-9a-f]+$ ]] &&
        pass "docs/containers.md as written: $cmd" ||
        fail "docs/containers.md as written: $cmd (run as: $run): $out"
done <<<"$recipe"

# --- rootless --------------------------------------------------------------------------------
section "rootless podman, run by nobody"
# nobody has no subordinate uids (/etc/subuid, left alone): its user namespace maps its own
# uid alone, as container root, and the image's other owners are squashed to it.
mkdir -p "$rootless_home/home/.config/containers" "$rootless_home/run"
printf '[storage]\ndriver = "vfs"\n[storage.options]\nignore_chown_errors = "true"\n' \
    >"$rootless_home/home/.config/containers/storage.conf"
chown -R nobody:nogroup "$rootless_home" && chmod 700 "$rootless_home/run"
tar=$(probe_image) && find_podman_way "$tar" "${as_user[@]}" >"$work/why" ||
    die "rootless podman cannot run here: $(cat "$work/why")"
rm -f "$tar"
"${as_user[@]}" podman load -q -i "$work/image.tar" >/dev/null ||
    die "rootless podman load failed"
served_inside rootless
# The container's root is nobody on the host: randd refuses it ADD_ENTROPY.
# (podman carries stdout and stderr apart: their lines may come in either order.)
out=$(in_container rootless 'head -c 64 /dev/urandom >/tmp/e; echo "uid $(id -u)"
    randctl bytes 4 >/dev/null && randctl add-entropy /tmp/e --bits 8; echo "exit $?"' 2>&1)
grep -qx 'uid 0' <<<"$out" && grep -q 'add-entropy: not permitted' <<<"$out" &&
    grep -qx 'exit 4' <<<"$out" &&
    pass "rootless: ADD_ENTROPY refused to the container's root (nobody to randd, exit 4)" ||
    fail "rootless ADD_ENTROPY: $(tr "\n" "|" <<<"$out")"
# Through the user namespace the daemon (host root) is the overflow uid: librandd trusts it
# only because its socket's directory, seen from inside, is private to that uid as well.
# A directory its group may write is refused, and the message names the uid seen. randd
# itself will not listen in such a directory: it is made group-writable once randd listens.
mkdir -m 755 "$rundir/open"
"$RANDD" --foreground --config "$work/randd.conf" --socket "$rundir/open/randd.sock" \
    2>"$work/log.open" &
open_pid=$!
RANDD_SOCKET=$rundir/open/randd.sock wait_for "a second randd" answers
chmod 775 "$rundir/open"
out=$(run_image rootless "$rundir/open" randctl bytes 8 2>&1); rc=$?
kill "$open_pid"; wait "$open_pid" 2>/dev/null
overflow=$(cat /proc/sys/kernel/overflowuid)
[ $rc = 4 ] && [[ $out == *"runs as uid $overflow"*"writable by its group"* ]] &&
    pass "rootless: the daemon is uid $overflow (overflow); a group-writable dir refused" ||
    fail "rootless, group-writable socket directory: exit $rc: $out"

echo "check-containers: $((SECONDS - started)) s"
finish check-containers
