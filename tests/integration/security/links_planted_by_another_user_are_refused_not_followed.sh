#!/usr/bin/env bash
# Issue #25, Why 9 (paths): `lstat` and O_NOFOLLOW for every path the
# tools create or trust. gpusliced runs as root and creates its log, its
# state and run directories and its socket; where those lie in a
# directory other users can write (a sticky one, as /tmp), another user
# could plant a symbolic link there first and have root append to, chmod
# or serve from whatever it points at. Each is now refused with a clear
# error, and the link's target is untouched:
#   - the log file a link to a root-owned file (before: appended to);
#   - the socket's directory a link to Mallory's own directory (before:
#     chmod'ed 0755 and served from, so she could swap the socket);
#   - the socket's directory a real one of Mallory's (she could replace
#     the socket in it);
#   - the state directory a link to Mallory's directory.
. "$(dirname "$0")/lib.sh" "$1"

SHARED=$WORK/shared
mkdir -m 1777 "$SHARED"
printf 'precious\n' >"$WORK/victim"
chmod 644 "$WORK/victim"
as_uid $MALLORY mkdir -m 755 "$SHARED/mdir"
as_uid $MALLORY ln -s "$WORK/victim" "$SHARED/gpusliced.log"
as_uid $MALLORY ln -s "$SHARED/mdir" "$SHARED/run"
as_uid $MALLORY ln -s "$SHARED/mdir" "$SHARED/state"

# refused NAME WANT ARGS...: gpusliced with ARGS exits at start (within
# 15 s), saying WANT.
refused() {
	local name=$1 want=$2 rc=0
	shift 2
	timeout 15 "$D" --gpus sim "$@" >"$WORK/$name.out" 2>&1 || rc=$?
	[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] ||
		fail "$name: gpusliced did not refuse (exit $rc): $(tail -5 "$WORK/$name.out")"
	grep -q "$want" "$WORK/$name.out" ||
		fail "$name: no clear error (want '$want'): $(tail -5 "$WORK/$name.out")"
	echo "$name: $(grep -m1 "$want" "$WORK/$name.out" | sed 's/^.*\]: //')"
}

refused log "symbolic link" --state-dir "$WORK/s1" --socket "$WORK/r1/api.sock" \
	--log-file "$SHARED/gpusliced.log"
[ "$(cat "$WORK/victim")" = precious ] || fail "the daemon wrote through the planted log link"

refused rundir-link "symbolic link" --state-dir "$WORK/s2" --socket "$SHARED/run/api.sock"
[ ! -e "$SHARED/mdir/api.sock" ] || fail "the daemon served its socket from Mallory's directory"
[ "$(stat -c %a "$SHARED/mdir")" = 755 ] || fail "Mallory's directory's mode was changed"

refused rundir-theirs "belongs to another user" --state-dir "$WORK/s3" --socket "$SHARED/mdir/api.sock"
[ ! -e "$SHARED/mdir/api.sock" ] || fail "the daemon served its socket from Mallory's directory"

refused statedir-link "symbolic link" --state-dir "$SHARED/state" --socket "$WORK/r4/api.sock"
[ -z "$(ls -A "$SHARED/mdir")" ] || fail "the daemon wrote its state into Mallory's directory: $(ls -A "$SHARED/mdir")"

# And the same daemon starts where the paths are its own.
daemon_up
echo "ok: links and directories another user planted are refused, not followed"
