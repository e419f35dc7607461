#!/usr/bin/env bash
# Issue #25, Why 7: kernels launched without ever synchronising. The
# shim's books count a slice's GPU time when its work is seen to complete,
# so five processes that launched and never synchronised were billed 0 s.
# The ledger now bills what NVML accounting measured for the slice's
# processes: their GPU time is billed (within 10 % of the sim's own count).
. "$(dirname "$0")/lib.sh" "$1"
PTX=$SRC/workloads/kernels.ptx
[ -r "$PTX" ] || { echo "SKIP: no workloads/kernels.ptx"; exit 77; }

sim_node
printf 'ledger:\n  interval_ms: 300\nwatchdog:\n  interval_ms: 300\n' >"$WORK/cfg.yaml"
daemon_up --config "$WORK/cfg.yaml"
chmod 755 "$RUNDIR"

tenant_api $MALLORY POST /v1/slices '{"name": "ff", "mode": "timeslice", "compute": 20}' >/dev/null
expect_status "create ff" 201
t_start=$(date +%s.%N)
for i in 1 2 3 4 5; do
	as_uid $MALLORY GPUSLICE_SLICE=ff GPUSLICE_RUN_DIR="$RUNDIR" LD_PRELOAD="$SHIM" \
		LD_LIBRARY_PATH="$LD_LIBRARY_PATH" python3 "$SRC/tests/integration/security/fire_and_forget.py" \
		"$PTX" 40 1.5 >"$WORK/ff$i.out" 2>&1 &
	PIDS+=($!)
done
wait_until 30 eval '[ "$(cat "$WORK"/ff*.out | grep -c "^launched")" -ge 5 ] || grep -q "^error" "$WORK"/ff*.out' ||
	fail "the launchers did not launch: $(cat "$WORK"/ff*.out)"
grep -q "^error" "$WORK"/ff*.out && fail "a launcher failed: $(cat "$WORK"/ff*.out)"
wait_until 30 eval '! pgrep -u '$MALLORY' -f fire_and_forget >/dev/null' || fail "the launchers did not end"
t_end=$(date +%s.%N)
sleep 1.5
sim=$("$G" sim status --json | python3 -c '
import json, sys
print(sum(x["busy_s"] for x in json.load(sys.stdin)["exited"]))')
got=$(python3 - "$STATE/state.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
print(db.execute("SELECT coalesce(sum(gpu_seconds), 0) FROM usage WHERE slice = 'ff'").fetchone()[0])
PY
)
# NVML accounting gives each ended process's GPU time as a whole percent
# of its life: up to half a percent of each life either way, whoever
# bills from it. Each of the five lived at most the launch phase.
python3 - "$sim" "$got" "$t_start" "$t_end" <<'PY' || fail "billed ${got} s of GPU time for never-synchronised work the sim counts at ${sim} s"
import sys
sim, got, t0, t1 = (float(a) for a in sys.argv[1:5])
resolution = 5 * (t1 - t0) / 200
print(f"billed {got:.3f} s, sim {sim:.3f} s; allowed: 10 % + NVML's resolution {resolution:.3f} s")
assert sim > 0.2, sim
assert abs(got - sim) <= 0.1 * sim + resolution, (got, sim, resolution)
PY
echo "ok: five never-synchronising processes used ${sim} s of GPU time (sim) and were billed ${got} s"
