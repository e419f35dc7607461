#!/usr/bin/env bash
# gpusliced never starts in a way that loses what tenants hold:
#  - a second daemon on the same run directory (another state dir, the
#    same socket) exits non-zero naming the first, and the first's shared
#    region (the `limits` file the shim reads) is untouched: its slices
#    still list and still join;
#  - a state.db of 0 bytes, or one that is not a database, is refused
#    (exit 1, naming the file), never started empty;
#  - a slice row that does not parse (its spec, its labels) stops the
#    start with an error naming the row, rather than dropping the slice.
. "$(dirname "$0")/lib.sh" "$1"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# refused WHAT PATTERN [ARGS...]: gpusliced exits non-zero within 20 s
# and its output matches PATTERN.
refused() {
	local what=$1 pat=$2 rc=0
	shift 2
	timeout 20 "$D" --state-dir "$STATE" --socket "$SOCK" --gpus sim "$@" \
		>"$WORK/refused.out" 2>&1 || rc=$?
	[ "$rc" -ne 0 ] || fail "$what: gpusliced started"
	[ "$rc" -ne 124 ] || fail "$what: gpusliced still running after 20 s"
	grep -qE -- "$pat" "$WORK/refused.out" ||
		fail "$what: want /$pat/ in: $(cat "$WORK/refused.out")"
	echo "$what: refused (exit $rc): $(grep -E -- "$pat" "$WORK/refused.out" | head -1)"
}

daemon_up
for n in a b; do
	api POST /v1/slices "{\"name\": \"$n\", \"memory\": \"2GiB\", \"labels\": {\"who\": \"t$n\"}}" >/dev/null
	expect_status "create $n" 201
done
sleep 1.5 # a housekeeping round, so the region is as the daemon keeps it
sum0=$(sha256sum <"$RUNDIR/limits")

# A second daemon on the same run directory.
rc=0
timeout 20 "$D" --state-dir "$WORK/state2" --socket "$SOCK" --gpus sim \
	>"$WORK/second.out" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "second daemon: exit $rc: $(cat "$WORK/second.out")"
grep -q "another gpusliced (pid $DPID) uses run directory" "$WORK/second.out" ||
	fail "second daemon: $(cat "$WORK/second.out")"
expect_eq "region limits file after the second daemon" "$(sha256sum <"$RUNDIR/limits")" "$sum0"
kill -0 "$DPID" || fail "the first daemon died"
list=$(api GET /v1/slices)
jcheck "$list" 'sorted(s["name"] for s in d["slices"]) == ["a", "b"]'
api POST /v1/slices/a/attach "{\"pid\": $$}" >/dev/null
[ "$(st)" = 200 ] || [ "$(st)" = 201 ] || fail "attach to a after the second daemon: $(st) $(cat "$WORK/body")"
expect_eq "lock file mode" "$(stat -c %a "$RUNDIR/gpusliced.lock")" 600
daemon_stop
cp "$STATE/state.db" "$WORK/good.db"
[ ! -s "$STATE/state.db-wal" ] || fail "a WAL was left after a clean stop"

# A truncated database.
: >"$STATE/state.db"
refused "0-byte state.db" "state.db is empty \\(0 bytes\\)"

# Not a database.
head -c 65536 /dev/urandom >"$STATE/state.db"
refused "garbage state.db" "state.db: file is not a database"
rm -f "$STATE"/state.db-*

# A slice row whose spec does not parse.
cp "$WORK/good.db" "$STATE/state.db"
"$PY" - "$STATE/state.db" <<'PYEOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE slices SET spec = 'memory=lots of }{ garbage' WHERE name = 'b'")
db.commit()
PYEOF
refused "bad spec row" "slice row id=[0-9]+ name='b' is unreadable \\(spec"

# A slice row whose labels are not JSON.
cp "$WORK/good.db" "$STATE/state.db"
rm -f "$STATE"/state.db-*
"$PY" - "$STATE/state.db" <<'PYEOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE slices SET labels = '{not json' WHERE name = 'a'")
db.commit()
PYEOF
refused "bad labels row" "slice row id=[0-9]+ name='a' is unreadable \\(labels"

# The intact database starts with both slices.
cp "$WORK/good.db" "$STATE/state.db"
rm -f "$STATE"/state.db-*
daemon_up
list=$(api GET /v1/slices)
jcheck "$list" 'sorted(s["name"] for s in d["slices"]) == ["a", "b"]'
echo "ok: a second daemon, an empty or foreign database and a bad row are refused"
