#!/usr/bin/env bash
# Issue #25, Why 3b: Mallory's books are her own file, so she can write an
# infinity into her slice's memory-time. Before, the ledger's next row for
# her slice was NaN, the database refused it and rolled back the whole
# batch: every slice's usage rows were lost every tick, and a delete
# answered 200 in such a batch came back. Now her books are refused (an
# event, a metric), the other slices' rows are written, and a deleted
# slice stays deleted, also across a restart.
. "$(dirname "$0")/lib.sh" "$1"

sim_node
printf 'ledger:\n  interval_ms: 300\n' >"$WORK/ledger.yaml"
daemon_up --config "$WORK/ledger.yaml"
chmod 755 "$RUNDIR"

rows_of() {
	python3 - "$STATE/state.db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
print(db.execute("SELECT count(*) FROM usage WHERE slice = ?", (sys.argv[2],)).fetchone()[0])
PY
}

tenant_api $ALICE POST /v1/slices '{"name": "a1", "mode": "timeslice", "memory": "1GiB"}' >/dev/null
expect_status "create a1" 201
tenant_api $MALLORY POST /v1/slices '{"name": "m1", "mode": "timeslice", "compute": 10}' >/dev/null
expect_status "create m1" 201
# Her books count once a process of hers used the GPU.
as_uid $MALLORY "$G" run --slice m1 -- "$BURN" --seconds 1 --memory 64MiB \
	>/dev/null 2>"$WORK/m1.err" || fail "Mallory's burn in m1 failed: $(cat "$WORK/m1.err")"
as_uid $MALLORY "$FORGE" poison "$RUNDIR" m1 4 >"$WORK/poison.out" 2>&1 &
PIDS+=($!)
wait_until 5 grep -q poisoning "$WORK/poison.out" || fail "the forge did not reach Mallory's books: $(cat "$WORK/poison.out")"
sleep 0.5
before=$(rows_of a1)
sleep 2
after=$(rows_of a1)
[ "$after" -ge $((before + 3)) ] ||
	fail "Alice's usage rows stopped while Mallory's books held an infinity ($before -> $after rows in 2 s)"
# Mallory deletes her slice while her books are still false.
tenant_api $MALLORY DELETE /v1/slices/m1 >/dev/null
expect_status "delete m1" 200
sleep 1.5
tenant_api $MALLORY GET /v1/slices/m1 >/dev/null
[ "$(cat "$WORK/status")" = 404 ] || fail "m1 came back after its delete: $(cat "$WORK/body")"
[ "$(node_events ledger.books_refused)" -ge 1 ] || [ "$(events_of m1 ledger.books_refused)" -ge 1 ] ||
	fail "no ledger.books_refused event"
# (read whole first: grep -q stopping early would fail curl under pipefail)
metrics=$(curl -s --unix-socket "$SOCK" http://localhost/metrics)
grep -q '^gpuslice_ledger_books_refused_total [1-9]' <<<"$metrics" ||
	fail "the refused books are not counted in /metrics"
daemon_stop
daemon_up --config "$WORK/ledger.yaml"
tenant_api $MALLORY GET /v1/slices/m1 >/dev/null
[ "$(cat "$WORK/status")" = 404 ] || fail "m1 came back after a restart: $(cat "$WORK/body")"
python3 - "$STATE/state.db" <<'PY' || fail "a usage row holds a figure that is not finite"
import math, sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
for r in db.execute("SELECT gpu_seconds, gib_seconds, throttled_seconds FROM usage"):
    assert all(v is not None and math.isfinite(v) and v >= 0 for v in r), r
PY
echo "ok: Alice's rows $before -> $after in 2 s under Mallory's false books; m1 stays deleted"
