#!/usr/bin/env bash
# Every shell example of README.md, docs/*.md and the man pages, run as written against a
# daemon of the test's own, so that a documented example that stops working fails make check,
# wherever in the documents it lives.
#
# The documents mark their examples (tests/integration/doc_examples.awk extracts them): an
# HTML comment in Markdown (<!-- example -->), a roff comment in a man page (.\" example),
# each invisible when rendered, before the block. Kinds:
#   example          run each command; "$ " lines are commands and the lines after one are
#                    what it prints (a block without "$ " is all commands). Each must exit 0,
#                    and the lines shown must appear in its output (stdout and stderr), in
#                    order, others allowed between them: numbers (and hex) match any number,
#                    blanks are collapsed, and "..." lines stand for what was left out.
#   example config   a randd.conf snippet: randd --check-config must accept it.
#   example daemon   each command starts a randd: it must answer on its --socket, and exit 0
#                    on SIGTERM.
#   example openssl.cnf   an OpenSSL configuration: with it, openssl lists randd.so's seed
#                    source, and openssl rand makes the daemon count a SEED request.
#   example skip: why   not run here, for the reason given; listed in this test's output.
# A block that looks like a shell command and carries no marker fails the test, so a new
# example cannot be left out by accident.
#
# The commands run in a scratch directory in which build, lib, conf and tests lead to the
# tree under test (build is the directory of $RANDD, so check-asan runs its own build), with
# that build first on PATH, and with these substitutions, each printed below: the paths of
# an installed system point into the scratch directory, and placeholders get values.
. "$(dirname "$0")/common.sh"
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(cd "$(dirname "$RANDD")" && pwd)
RANDD=$build/${RANDD##*/}
RANDCTL=$(cd "$(dirname "$RANDCTL")" && pwd)/${RANDCTL##*/}

cwd=$work/cwd
mkdir -p "$cwd" "$work/etc" "$work/run" "$work/blocks"
ln -s "$build" "$cwd/build"
for d in lib conf tests; do ln -s "$repo/$d" "$cwd/$d"; done
cp "$repo/conf/randd.conf" "$work/etc/randd.conf"
export RANDD_SOCKET=$work/randd.sock OPENSSL_MODULES=$build PATH=$build:$PATH

# --- substitutions and fixtures, for commands only (never for the output shown) ---------------
# make run's socket (README, docs/operating.md) is this test's daemon's; /etc/randd.conf is a
# copy of conf/randd.conf, as installed; docs/assessment.md's capture has placeholders, and a
# tenth of its count
# (the assessment takes a second, not ten); randctl(1)'s benchmark a tenth of its time per
# figure (every figure is still measured: 5 s, not 50); randd.conf(5)'s group "crypto" may
# not exist.
subs=(
    "\$PWD/build/randd.sock -> $RANDD_SOCKET"
    "/run/randd/ -> $work/run/"
    "/etc/randd.conf -> $work/etc/randd.conf"
    "/usr/share/randd/openssl-randd.cnf -> $repo/conf/openssl-randd.cnf"
    "/tmp/randd.sock -> $work/tmp-randd.sock"
    "--capture SOURCE -> --capture getrandom"
    "--output FILE -> --output capture.bin"
    "assess FILE -> assess capture.bin"
    "--count 1000000 -> --count 100000"
    "benchmark --seconds 1 -> benchmark --seconds 0.1"
    "socket_group = crypto -> socket_group = nogroup"
    "trusted_group = crypto -> trusted_group = nogroup"
)
# client.c: docs/librandd.md's program that uses randd.h. noise.bin: randctl(1)'s 4-bit samples.
cat >"$cwd/client.c" <<'EOF'
#include <randd.h>
#include <stdio.h>

int main(void)
{
    randd_handle *h;
    unsigned char key[32];
    int rc = randd_open(&h, NULL);

    if (rc == 0)
        rc = randd_bytes(h, key, sizeof(key));
    printf("%s\n", randd_strerror(rc));
    randd_close(h);
    return rc < 0;
}
EOF
perl -e 'print map { chr(int(rand(16))) } 1 .. 100000' >"$cwd/noise.bin"
# Exit statuses other than 0 that a command may have, by a pattern of its text, and why.
allowed_status() {
    case $1 in
    *rngtest*) echo "0 1" ;;    # rngtest exits 1 when a block failed: ~1 in 1,000 do (docs/operating.md)
    *) echo 0 ;;
    esac
}
echo "doc examples: run in $cwd (build -> $build); substitutions:"
printf '  %s\n' "${subs[@]}"
echo "  fixtures: client.c (a librandd client), noise.bin (100,000 4-bit samples)"
echo "  rngtest may exit 1 (a failed FIPS block, about 1 in 1,000)"

substitute() {
    local text=$1 s
    for s in "${subs[@]}"; do text=${text//"${s%% -> *}"/"${s#* -> }"}; done
    printf '%s' "$text"
}

# An output line as compared: every run of digits (and hex, dots, x) one '#', blanks
# collapsed, none at either end.
normalise() {
    sed -E -e 's/[0-9a-fA-Fx.]*[0-9][0-9a-fA-Fx.]*/#/g' \
        -e 's/[[:space:]]+/ /g' -e 's/^ //' -e 's/ $//'
}

# shows_lines EXPECTED ACTUAL: each line of EXPECTED ("..." aside) appears in ACTUAL, in order.
shows_lines() {
    awk 'FILENAME == ARGV[1] { if ($0 != "..." && $0 != "") want[++n] = $0; next }
         i < n && $0 == want[i + 1] { i++ }
         END { if (i < n) { print "missing: " want[i + 1]; exit 1 } }' \
        <(normalise <"$1") <(normalise <"$2")
}

asan_preload=
if [ -n "${RANDD_SANITIZED:-}" ]; then
    asan_preload=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)
fi
# A block that needs a tool this machine lacks is skipped, and listed as such.
missing_tool() {
    local tool
    for tool in python3 rngtest openssl pkg-config cc perl; do
        grep -qE "(^|[^a-z0-9_-])$tool([^a-z0-9_-]|\$)" "$1" && ! command -v "$tool" >/dev/null &&
            { echo "$tool"; return 0; }
    done
    return 1
}

# --- the daemon the examples talk to --------------------------------------------------------
"$RANDD" --foreground --config "$work/etc/randd.conf" --socket "$RANDD_SOCKET" 2>"$work/log" &
pid=$!
ready() { "$RANDCTL" status --keys 2>/dev/null | grep -q '^ready: true'; }
if ! wait_for "randd to be ready" ready; then
    fail "randd not ready: $(cat "$work/log")"
    finish test_examples.sh
    exit
fi
has_rdseed=$(grep -qw rdseed /proc/cpuinfo && echo yes)

# --- running one block ----------------------------------------------------------------------

# run_block WHERE FILE: the commands of an "example" block, in one shell (an export carries
# over), each with its output and status kept.
run_block() {
    local where=$1 file=$2 n=0 cmd= line i script=$work/block.sh
    rm -f "$work"/cmd.* "$work"/want.* "$work"/got.* "$work"/rc.*
    local prompted=; grep -q '^\$ ' "$file" && prompted=1
    {
        echo 'cd "$1" || exit 99'
        # Under check-asan the build is instrumented: a program linked with it needs the same
        # flags, which arrive in LDFLAGS.
        echo 'cc() { command cc ${LDFLAGS:-} "$@"; }'
        # and an ASan build's randd.so needs the sanitizer runtimes loaded first into programs
        # built without them (as in test_provider.sh).
        if [ -n "${RANDD_SANITIZED:-}" ]; then
            echo "export ASAN_OPTIONS=detect_leaks=0"
            echo "openssl() { LD_PRELOAD=$asan_preload command openssl \"\$@\"; }"
            echo "python3() { LD_PRELOAD=$asan_preload command python3 \"\$@\"; }"
        fi
    } >"$script"
    while IFS= read -r line || [ -n "$line" ]; do
        if [ -n "$cmd" ]; then                        # a continued command
            cmd+=$'\n'$line
            [[ $line == *\\ ]] && continue
        elif [ -n "$prompted" ] && [[ $line != '$ '* ]]; then
            # Output lines naming rdseed hold only where the CPU has it.
            [ "$n" -gt 0 ] && { [ -z "$has_rdseed" ] && [[ $line == *rdseed* ]] ||
                                echo "$line" >>"$work/want.$n"; }
            continue
        elif [ -z "$prompted" ] && [[ -z $line || $line == '#'* ]]; then
            continue
        else
            n=$((n + 1)); cmd=${line#\$ }; : >"$work/want.$n"
            [[ $line == *\\ ]] && continue
        fi
        printf '%s\n' "$cmd" >"$work/cmd.$n"
        printf '{ %s\n} >"%s" 2>&1 </dev/null; echo $? >"%s"\n' "$(substitute "$cmd")" \
            "$work/got.$n" "$work/rc.$n" >>"$script"
        cmd=
    done <"$file"
    timeout $((WAIT * 10)) bash "$script" "$cwd"      # randctl(1)'s includes a benchmark
    for ((i = 1; i <= n; i++)); do
        local c; c=$(head -1 "$work/cmd.$i")
        local rc; rc=$(cat "$work/rc.$i" 2>/dev/null || echo "none (timed out)")
        if [[ " $(allowed_status "$c") " != *" $rc "* ]]; then
            fail "$where: '$c' exited $rc: $(tail -5 "$work/got.$i" 2>/dev/null)"
        elif ! why=$(shows_lines "$work/want.$i" "$work/got.$i"); then
            fail "$where: '$c' did not print what the document shows ($why):" \
                 "$(head -20 "$work/got.$i")"
        else
            pass "$where: $c"
        fi
    done
}

# run_config WHERE FILE: a randd.conf snippet randd --check-config must accept.
run_config() {
    substitute "$(cat "$2")" >"$work/snippet.conf"
    if "$RANDD" --check-config --config "$work/snippet.conf" >"$work/out" 2>&1; then
        pass "$1: the config snippet is valid"
    else
        fail "$1: randd --check-config refuses the config snippet: $(cat "$work/out")"
    fi
}

# run_daemon WHERE FILE: each command starts a randd that must answer on its --socket and
# stop cleanly on SIGTERM.
run_daemon() {
    local line cmd sock daemon rc
    while IFS= read -r line; do
        [ -z "$line" ] && continue
        cmd=$(substitute "$line")
        sock=$(sed -n 's/.*--socket \([^ ]*\).*/\1/p' <<<"$cmd")
        [ -n "$sock" ] || { fail "$1: '$line' names no --socket to wait for"; continue; }
        (cd "$cwd" && exec bash -c "exec $cmd") 2>"$work/daemon.log" &
        daemon=$!
        if wait_for "'$line' to answer on $sock" answers "$sock"; then
            kill -TERM "$daemon"; wait_exit "$daemon"; rc=$?
            [ "$rc" = 0 ] && pass "$1: $line (answered, stopped cleanly)" ||
                fail "$1: '$line' exited $rc on SIGTERM: $(cat "$work/daemon.log")"
        else
            kill "$daemon" 2>/dev/null; wait "$daemon" 2>/dev/null
            fail "$1: '$line' never answered: $(cat "$work/daemon.log")"
        fi
    done <"$2"
}

# run_openssl_cnf WHERE FILE: an openssl.cnf that seeds OpenSSL from this test's daemon.
seeds() { "$RANDCTL" status --keys 2>/dev/null | sed -n 's/^requests\.seed: //p'; }
run_openssl_cnf() {
    local before out
    if ! command -v openssl >/dev/null; then
        skipped+=("$1: $(head -1 "$2") ... (this machine has no openssl)")
        return
    fi
    cp "$2" "$work/openssl.cnf"
    ossl() { LD_PRELOAD=$asan_preload OPENSSL_CONF=$work/openssl.cnf openssl "$@"; }
    if ! out=$(ossl list -random-generators 2>&1) || ! grep -q 'RANDD @ randd' <<<"$out"; then
        fail "$1: with this openssl.cnf, openssl lists no RANDD seed source: $out"
        return
    fi
    before=$(seeds)
    if out=$(ossl rand -hex 16 2>&1) && [ "$(seeds)" -gt "$before" ]; then
        pass "$1: the openssl.cnf seeds openssl rand from randd"
    else
        fail "$1: openssl rand with this openssl.cnf made no SEED request ($before): $out"
    fi
}

# An unmarked block that reads as a shell command: "$ " prompts, or a command of this project
# or one the documents use, not followed by " = " (a config line).
looks_like_shell() {
    local first; first=$(grep -m1 -v '^[[:space:]]*$' "$1")
    [[ $first == '$ '* ]] && return 0
    [[ $first == *' = '* ]] && return 1
    local commands='randd|randctl|make|systemctl|qemu-system-[a-z0-9_]+|openssl|cc|rngtest|sudo'
    [[ $first =~ ^(build/)?($commands|ekeyd-egd-linux)([[:space:]]|$) ]]
}

# --- every block of every document ------------------------------------------------------------
skipped=()
nblocks=0
docs=("$repo/README.md" "$repo"/docs/*.md "$repo"/man/*.[1-8])
# The document set itself: README and docs/ both there, so a move cannot shrink it unseen.
[ -f "$repo/README.md" ] && [ -n "$(ls "$repo"/docs/*.md 2>/dev/null)" ] ||
    fail "README.md or docs/*.md missing: ${docs[*]}"
ran=0
for doc in "${docs[@]}"; do
    format=man; [[ $doc == *.md ]] && format=md
    first=$((nblocks + 1))
    awk -v format=$format -f "$here/doc_examples.awk" "$doc" >"$work/extracted"
    # Split into one file per block, named by its position; orphan markers fail.
    while IFS= read -r line; do
        case $line in
        '@@orphan '*) set -- ${line#@@orphan }
            fail "${1#$repo/}: marker '${*:2}' is not followed by a code block" ;;
        '@@block '*) set -- ${line#@@block }; where=${1#$repo/}; kind=$2; shift 2; reason=$*
            block=$work/blocks/$((++nblocks)); : >"$block"
            printf '%s\n' "$where" "$kind" "$reason" >"$block.meta" ;;
        '@@end') block= ;;
        *) [ -n "${block:-}" ] && printf '%s\n' "$line" >>"$block" ;;
        esac
    done <"$work/extracted"
    for ((b = first; b <= nblocks; b++)); do       # in the document's order: state carries
        block=$work/blocks/$b
        { read -r where; read -r kind; read -r reason; } <"$block.meta"
        if tool=$(missing_tool "$block") && [[ $kind != skip: && $kind != unmarked ]]; then
            skipped+=("$where: $(head -1 "$block") ... (this machine has no $tool)")
            continue
        fi
        case $kind in
        run) run_block "$where" "$block"; ran=$((ran + 1)) ;;
        config) run_config "$where" "$block"; ran=$((ran + 1)) ;;
        daemon) run_daemon "$where" "$block"; ran=$((ran + 1)) ;;
        openssl.cnf) run_openssl_cnf "$where" "$block"; ran=$((ran + 1)) ;;
        skip:) skipped+=("$where: $(head -1 "$block") ... ($reason)") ;;
        unmarked) if looks_like_shell "$block"; then
                      fail "$where: a shell example with no marker" \
                           "(<!-- example --> or .\\\" example): $(head -1 "$block")"
                  fi ;;
        *) fail "$where: unknown marker 'example $kind $reason'" ;;
        esac
    done
done
[ "$ran" -ge 20 ] && pass "$ran example blocks ran" ||
    fail "only $ran example blocks found to run"
echo "doc examples skipped (${#skipped[@]}):"
printf '  SKIP %s\n' "${skipped[@]}"

stop_randd
finish test_examples.sh
