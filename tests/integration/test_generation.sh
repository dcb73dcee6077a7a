#!/usr/bin/env bash
# The VM generation word the real randd publishes beside its socket (SOCKET.generation): made
# afresh (a regular file of one page, 0644, one link), mapped by a client that is not root,
# removed on a clean stop, and replaced after a kill. A file someone else put there first
# (another user's, a hard link to a root-only file, a wrong size) is never adopted: randd
# leaves it as it was and says so, and clients refuse it and say why. randd will not start
# with its socket in a directory others may write.
. "$(dirname "$0")/common.sh"
if [ "$(id -u)" != 0 ]; then echo "SKIP: test_generation.sh needs root (files of another uid)"; exit 0; fi
export RANDD_SOCKET=$work/randd.sock
word=$work/randd.sock.generation

as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
# The client's view: randctl status maps the word with librandd's checks.
client_line() {
    as_nobody "$RANDCTL" --socket "$RANDD_SOCKET" status --keys 2>&1 | sed -n 's/^librandd.vm_generation_word: //p'
}
file_is() { [ "$(stat -c '%F %u %a %h %s' "$1" 2>&1)" = "$2" ]; }
describe() { stat -c '%F, uid %u, mode %a, %h links, %s bytes, inode %i' "$1" 2>&1; }

# --- randd's own file ---------------------------------------------------------------------

start_with_config "hwrng_device = $work/hwrng"
file_is "$word" "regular file 0 644 1 4096" && pass "randd published $word: root's, 0644, one link, one page" ||
    fail "$word: $(describe "$word")"
out=$(client_line)
[[ $out == "mapped $word "* ]] && pass "a client that is not root maps it: $out" || fail "the client: $out"
ino=$(stat -c %i "$word")
stop_randd
[ -e "$word" ] && fail "$word outlived a clean stop" || pass "a clean stop removed it"

start_with_config "hwrng_device = $work/hwrng"
ino=$(stat -c %i "$word")
kill -KILL "$pid"; wait "$pid" 2>/dev/null; pid=
[ -e "$word" ] && pass "a killed randd leaves its file" || fail "the killed randd's file is gone"
start_with_config "hwrng_device = $work/hwrng"
[ "$(stat -c %i "$word")" != "$ino" ] && file_is "$word" "regular file 0 644 1 4096" &&
    pass "the next randd replaced its own leftover with a new file" ||
    fail "after the kill: $(describe "$word"), was inode $ino"
stop_randd

# --- files randd must not adopt -----------------------------------------------------------

# refused WHAT CLIENT-WHY: randd (started with a file already at $word) leaves it exactly as it
# was and logs why; a client refuses it, saying CLIENT-WHY.
refused() {
    local before after out
    before=$(describe "$word"; sha256sum <"$word" 2>/dev/null)
    start_with_config "hwrng_device = $work/hwrng"
    after=$(describe "$word"; sha256sum <"$word" 2>/dev/null)
    [ "$before" = "$after" ] && pass "$1: randd left it as it was" ||
        fail "$1: randd changed it: was \"$before\", now \"$after\""
    in_log "$word exists and is not one randd left .*not replacing it" "$work/log" &&
        pass "$1: randd's log names it and refuses to replace it" ||
        fail "$1: no refusal in randd's log: $(grep -i generation "$work/log")"
    out=$(client_line)
    [[ $out == "unavailable: $word: $2"* ]] && pass "$1: a client refuses it: $out" ||
        fail "$1: the client said \"$out\", wanted \"unavailable: $word: $2\""
    stop_randd
}

head -c 4096 /dev/zero >"$word"; chown nobody "$word"; chmod 644 "$word"
refused "a page another user made first" "owned by uid 65534, neither root nor its directory's owner"
rm -f "$word"

# With fs.protected_hardlinks = 0, a user could link a root-only file there.
head -c 4096 /dev/urandom >"$work/secret"; chmod 600 "$work/secret"
ln "$work/secret" "$word"
refused "a hard link to a root-only file" "Permission denied"
file_is "$work/secret" "regular file 0 600 2 4096" && pass "the linked file is still mode 0600" ||
    fail "the linked file: $(describe "$work/secret")"
chmod 644 "$work/secret"            # one that passes for randd's page but for its two links
refused "a hard link to a page of root's" "2 links, not one"
rm -f "$word" "$work/secret"

printf 'short' >"$word"; chmod 644 "$word"
refused "a file shorter than a page" "5 bytes, not one page"
rm -f "$word"

# --- a directory anyone may write ----------------------------------------------------------
# There anyone could swap the word (or the socket) for their own: randd will not start.

chmod 1777 "$work"
printf 'hwrng_device = %s\n' "$work/hwrng" >"$work/randd.conf"
timeout "$WAIT" "$RANDD" --foreground --config "$work/randd.conf" --socket "$RANDD_SOCKET" \
    2>"$work/log"; rc=$?
[ $rc = 1 ] && grep -qF "socket $RANDD_SOCKET: $work is writable by others (mode 1777)" "$work/log" &&
    pass "randd refuses to start with its socket in a directory of mode 1777" ||
    fail "randd with its socket in a 1777 directory: exit $rc: $(cat "$work/log")"
[ ! -e "$RANDD_SOCKET" ] && [ ! -e "$word" ] && pass "and leaves neither socket nor word there" ||
    fail "in the 1777 directory: $(ls -l "$work")"
chmod 755 "$work"

# --- a directory on the way that another user may change ------------------------------------
# The review's attacks, with root's real randd: a root client (randctl status maps as
# librandd's generators do) must not map a page nobody can truncate under it (SIGBUS) or
# rewrite. $S is group-writable by nogroup, nobody's group.
S=$work/shared
mkdir -m 0755 "$S" "$S/randd"
RANDD_SOCKET=$S/randd/randd.sock start_with_config "hwrng_device = $work/hwrng"
chgrp nogroup "$S"; chmod 2775 "$S"
root_view() {
    RANDD_SOCKET=$1 "$RANDCTL" status --keys 2>&1 | sed -n 's/^librandd.vm_generation_word: //p'
}
out=$(root_view "$S/randd/randd.sock")
[[ $out == "unavailable: $S/randd/randd.sock.generation: $S is writable by its group"* ]] &&
    pass "below a group-writable directory even randd's own file is refused: $out" ||
    fail "below a group-writable directory the client said: $out"
# nobody moves randd's directory aside and puts its own in its place: a symlink to the real
# socket (root's randd still answers, so it is believed) beside a page of nobody's.
as_nobody sh -c "mv '$S/randd' '$S/real' && mkdir -m 0755 '$S/randd' &&
    ln -s '$S/real/randd.sock' '$S/randd/randd.sock' &&
    head -c 4096 /dev/zero >'$S/randd/randd.sock.generation' &&
    chmod 644 '$S/randd/randd.sock.generation'"
out=$(root_view "$S/randd/randd.sock")
[[ $out == "unavailable: $S/randd/randd.sock.generation: $S is writable by its group"* ]] &&
    pass "nobody's page in place of randd's directory is refused: $out" ||
    fail "nobody's page in place of randd's directory: the client said: $out"
# or nobody's private directory, reached through nobody's symlink in $S
priv=$work/priv-nobody
mkdir -m 0755 "$priv"; chown nobody:nogroup "$priv"
as_nobody sh -c "ln -s '$S/real/randd.sock' '$priv/randd.sock' &&
    head -c 4096 /dev/zero >'$priv/randd.sock.generation' &&
    chmod 644 '$priv/randd.sock.generation' && ln -s '$priv' '$S/link'"
out=$(root_view "$S/link/randd.sock")
[[ $out == "unavailable: $S/link/randd.sock.generation: $S is writable by its group"* ]] &&
    pass "nobody's page through nobody's symlink in $S is refused: $out" ||
    fail "nobody's page through a symlink in $S: the client said: $out"
stop_randd

finish test_generation.sh
