#!/usr/bin/env bash
# Issue #25, Why 3a: billing came from the books Mallory writes herself;
# holding her GPU-time counter at 0 billed a 4 s burn as 0 s. Now the
# ledger bills what NVML accounting measured for her slice's
# kernel-confirmed processes (the books only cross-check it: a
# ledger.divergence event): the burn is billed within 5 % of the sim's own
# count of its GPU time, whatever her books say. Her slice has a compute
# share (90 %): only a measured slice's shim keeps books in every case, so
# only there can books at 0 be told from honest ones.
. "$(dirname "$0")/lib.sh" "$1"
[ -x "$BURN" ] || { echo "SKIP: no gs-burn"; exit 77; }

sim_node
printf 'ledger:\n  interval_ms: 300\nwatchdog:\n  interval_ms: 300\n' >"$WORK/cfg.yaml"
daemon_up --config "$WORK/cfg.yaml"
chmod 755 "$RUNDIR"

billed() {
	python3 - "$STATE/state.db" "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
print(db.execute("SELECT coalesce(sum(gpu_seconds), 0) FROM usage WHERE slice = ?", (sys.argv[2],)).fetchone()[0])
PY
}

tenant_api $MALLORY POST /v1/slices '{"name": "b1", "mode": "timeslice", "memory": "2GiB", "compute": 90}' >/dev/null
expect_status "create b1" 201
as_uid $MALLORY "$FORGE" hide "$RUNDIR" b1 12 >"$WORK/hide.out" 2>&1 &
PIDS+=($!)
wait_until 5 grep -q hiding "$WORK/hide.out" || fail "the forge did not reach Mallory's books: $(cat "$WORK/hide.out")"
as_uid $MALLORY "$G" run --slice b1 -- "$BURN" --seconds 4 --memory 256MiB \
	>"$WORK/burn.out" 2>"$WORK/burn.err" || fail "Mallory's burn failed: $(cat "$WORK/burn.err")"
sleep 1.5
sim=$("$G" sim status --json | python3 -c '
import json, sys
print(sum(x["busy_s"] for x in json.load(sys.stdin)["exited"]))')
got=$(billed b1)
python3 - "$sim" "$got" <<'PY' || fail "billed ${got} s for a burn the sim counts at ${sim} s"
import sys
sim, got = float(sys.argv[1]), float(sys.argv[2])
assert sim >= 3.0, sim
assert abs(got - sim) <= 0.05 * sim, (got, sim)
PY
[ "$(events_of b1 ledger.divergence)" -ge 1 ] || fail "no ledger.divergence event for books that said 0 s"
echo "ok: a ${sim} s burn with its books held at 0 billed ${got} s"
