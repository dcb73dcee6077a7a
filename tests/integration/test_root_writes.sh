#!/usr/bin/env bash
# Root never writes through a path another user controls (issue 42). As nobody, links are
# planted in a directory of nobody's: a symlink to a root-owned 0600 file, a symlink to a
# root-owned directory holding root's files of the names asked for, and (made by root, below)
# a hard link to another root-owned file. Then root runs every command that writes a file a
# user names -- randctl assess --report (the non-IID, IID and restart modes), randd --capture
# --output, randctl metrics --output -- at the planted names and through the directory link,
# with and without --force. Each must refuse, naming the path and the problem, with a
# non-zero exit, and leave root's files as they were (the same checksum) and no temporary
# file behind. (The benchmark's scratch files are created in a directory of its own,
# mkdtemp's 0700: no one else can plant there.)
#
# Nothing machine-wide is changed. The kernel's fs.protected_symlinks only guards sticky
# world-writable directories (/tmp); nobody's own 0755 directory is not one, so whatever the
# sysctl says, what is shown is randd's own refusal. Needs root.
. "$(dirname "$0")/common.sh"

if [ "$(id -u)" != 0 ]; then
    echo "SKIP test_root_writes.sh: needs root (root's writes are what is tested)"; exit 0
fi
if ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
    echo "SKIP test_root_writes.sh: needs setpriv and the user nobody"; exit 0
fi
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

# Root's files the links point at (in $work, so on nobody's directory's filesystem: a hard
# link cannot cross one), a directory of root's with files of the output names in it, and
# the directory nobody plants in.
plant=$work/nobodys
mkdir "$plant" && chown nobody:nogroup "$plant" && chmod 755 "$plant"
root_files="symlinked hardlinked rootdir/randd.prom rootdir/page.html"
reset_root_files() {     # as they were, and nothing else in root's directory
    rm -rf "$work/rootdir" && mkdir "$work/rootdir"
    for name in $root_files; do
        printf "root's %s file: must not change\n" "$name" >"$work/$name"
        chmod 600 "$work/$name"
    done
}
reset_root_files
sums() { (cd "$work" && sha256sum $root_files && ls -A rootdir); }
before=$(sums)

# A symlink and a hard link at each output name. nobody plants the symlink. Root makes the
# hard link: with fs.protected_hardlinks = 1 (Debian's default) nobody may not link a file it
# cannot read, and the refusal does not depend on who made the link -- the check is the
# file's link count (st_nlink), which is 2 either way.
plant_links() {         # plant_links NAME: NAME.sym -> symlinked, NAME.hard = hardlinked
    as_nobody ln -s "$work/symlinked" "$plant/$1.sym" &&
        ln "$work/hardlinked" "$plant/$1.hard" ||
        fail "could not plant $plant/$1.{sym,hard}"
}
# And nobody's symlink to root's directory, for outputs named through it.
as_nobody ln -s "$work/rootdir" "$plant/dir.sym" || fail "nobody could not plant $plant/dir.sym"
sample=$work/samples.bin                 # a small sample file: the refusal comes first
head -c 5000 /dev/urandom >"$sample"

# refuses WHAT PATTERN COMMAND...: root's COMMAND exits non-zero with a message matching
# PATTERN, and root's files keep their checksums.
refuses() {
    local what=$1 pattern=$2 rc
    shift 2
    "$@" >"$work/out" 2>&1; rc=$?
    if [ "$(sums)" != "$before" ]; then
        fail "$what: root's file was written through the link (exit $rc): $(head -c 300 "$work/out")"
        reset_root_files        # for the next case
    elif [ $rc = 0 ]; then
        fail "$what: exit 0, no refusal (root's files intact): $(head -c 300 "$work/out")"
    elif ! grep -qE -- "$pattern" "$work/out"; then
        fail "$what: exit $rc, but not the message /$pattern/: $(head -c 300 "$work/out")"
    else
        pass "$what: exit $rc, root's file intact: $(grep -E -- "$pattern" "$work/out" | head -1)"
    fi
}

# --- randctl assess --report ----------------------------------------------------------------
plant_links report
for force in "" --force; do
    refuses "assess --report ${force:+$force }through nobody's symlink" \
        "report\.sym: a symbolic link" "$RANDCTL" assess "$sample" --report "$plant/report.sym" $force
done
refuses "assess --report through nobody's hard link" "report\.hard: already exists" \
    "$RANDCTL" assess "$sample" --report "$plant/report.hard"
refuses "assess --report --force through nobody's hard link" \
    "report\.hard: a file with [0-9]+ hard links" "$RANDCTL" assess "$sample" --report "$plant/report.hard" --force
refuses "assess --iid --report through nobody's symlink" "report\.sym: a symbolic link" \
    "$RANDCTL" assess "$sample" --iid --no-permutations --report "$plant/report.sym"
refuses "assess --restart --report through nobody's hard link" \
    "report\.hard: a file with [0-9]+ hard links" "$RANDCTL" assess "$sample" --restart --h-initial 1 --report "$plant/report.hard" --force
# A file nobody owns, plain: another user's file is not replaced either.
as_nobody sh -c "echo nobody\\'s >'$plant/report.nobody'"
refuses "assess --report --force over nobody's own file" "belongs to uid 65534" \
    "$RANDCTL" assess "$sample" --report "$plant/report.nobody" --force
[ "$(cat "$plant/report.nobody")" = "nobody's" ] && pass "nobody's file is left as it was" ||
    fail "nobody's file was replaced: $(head -c 100 "$plant/report.nobody")"
# Through nobody's symlink to root's directory: neither root's page there replaced nor a new
# page put in it.
dir_link="dir\.sym is a symbolic link \(to [^)]*\) of uid 65534's"
refuses "assess --report --force through nobody's symlink to root's directory" "$dir_link" \
    "$RANDCTL" assess "$sample" --report "$plant/dir.sym/page.html" --force
refuses "assess --report of a new page through nobody's symlink to root's directory" \
    "$dir_link" "$RANDCTL" assess "$sample" --report "$plant/dir.sym/new.html"

# --- randd --capture --output ---------------------------------------------------------------
plant_links capture
for force in "" --force; do
    refuses "randd --capture --output ${force:+$force }through nobody's symlink" \
        "capture\.sym: a symbolic link" \
        "$RANDD" --capture getrandom --count 1000 --output "$plant/capture.sym" $force
done
refuses "randd --capture --output through nobody's hard link" "capture\.hard: already exists" \
    "$RANDD" --capture getrandom --count 1000 --output "$plant/capture.hard"
refuses "randd --capture --output --force through nobody's hard link" \
    "capture\.hard: a file with [0-9]+ hard links" \
    "$RANDD" --capture getrandom --count 1000 --output "$plant/capture.hard" --force

# --- randctl metrics --output (replaces by rule: a file of root's own, not these) -------------
# No daemon at the socket: metrics still writes "randd_up 0" to the file (and exits 3), so the
# file's path is taken all the same.
plant_links metrics
export RANDD_SOCKET=$work/no-daemon.sock
refuses "metrics --output through nobody's symlink" "metrics\.sym: a symbolic link" \
    "$RANDCTL" metrics --output "$plant/metrics.sym"
refuses "metrics --output through nobody's hard link" \
    "metrics\.hard: a file with [0-9]+ hard links" "$RANDCTL" metrics --output "$plant/metrics.hard"
refuses "metrics --output through nobody's symlink to root's directory" "$dir_link" \
    "$RANDCTL" metrics --output "$plant/dir.sym/randd.prom"

# --- what is left in nobody's directory: the planted names, nothing of root's -----------------
left=$(cd "$plant" && ls -A | sort | tr '\n' ' ')
planted="capture.hard capture.sym dir.sym metrics.hard metrics.sym report.hard report.nobody report.sym "
[ "$left" = "$planted" ] &&
    pass "the planted links are where nobody put them, no temporary file left" ||
    fail "nobody's directory holds: $left"
[ "$(readlink "$plant/report.sym")" = "$work/symlinked" ] &&
    [ "$(stat -c %h "$work/hardlinked")" = 4 ] &&
    pass "each link still points at root's file (3 hard links to it besides its own name)" ||
    fail "links changed: $(ls -l "$plant")"

# --- and where nothing was planted, root's outputs work as before ----------------------------
page_mode=$(printf '%o' $((0666 & ~0$(umask))))        # as fopen(out, "w") made it
"$RANDCTL" assess "$sample" --report "$plant/fresh.html" >/dev/null 2>&1 &&
    [ "$(stat -c '%U %a %h' "$plant/fresh.html")" = "root $page_mode 1" ] &&
    grep -q '</html>' "$plant/fresh.html" &&
    pass "assess --report at a fresh name in nobody's directory: root's 0$page_mode page" ||
    fail "assess --report at a fresh name: $(ls -l "$plant/fresh.html" 2>&1)"
"$RANDCTL" assess "$sample" --report "$plant/fresh.html" --force >/dev/null 2>&1 &&
    pass "assess --report --force replaces root's own page" || fail "--force over root's own page"
"$RANDD" --capture getrandom --count 1000 --output "$plant/fresh.bin" 2>/dev/null &&
    [ "$(stat -c '%U %a %s' "$plant/fresh.bin")" = "root 600 1000" ] &&
    pass "randd --capture --output at a fresh name: root's 0600 file of 1000 samples" ||
    fail "--capture at a fresh name: $(ls -l "$plant/fresh.bin" 2>&1)"

# A symlink of root's own on the way is followed, as before.
ln -s "$work/rootdir" "$work/rootlink"
"$RANDCTL" metrics --output "$work/rootlink/own.prom" >/dev/null 2>&1
[ "$(stat -c '%U %a' "$work/rootdir/own.prom" 2>&1)" = "root 644" ] &&
    grep -q '^randd_up 0$' "$work/rootdir/own.prom" &&
    pass "metrics --output through root's own symlink to root's directory: written" ||
    fail "metrics --output through root's own symlink: $(ls -l "$work/rootdir" 2>&1)"
rm -f "$work/rootdir/own.prom"

[ "$(sums)" = "$before" ] && pass "root's files: the checksums they started with" ||
    fail "root's files changed: $(sums)"
finish test_root_writes.sh
