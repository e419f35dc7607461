#!/usr/bin/env bash
# The ledger picks up where it stopped when gpusliced restarts: a slice's
# GPU time counted before a kill -9 is not counted again after the restart
# (the region's books of a slice that outlived the daemon keep counting
# from its creation; the ledger's cursor resumes from its own rows).
. "$(dirname "$0")/lib.sh" "$1"

BURN=$B/bin/gs-burn
[ -x "$BURN" ] && [ -e "$B/lib/libgpuslice.so" ] || { echo "SKIP: no gs-burn or shim"; exit 77; }
cat >"$WORK/cfg.yaml" <<YAML
ledger:
  interval_ms: 300
YAML
daemon_up --config "$WORK/cfg.yaml"
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"
out=$(api POST /v1/slices '{"name": "lr", "mode": "timeslice", "memory": "2GiB", "compute": 50}')
expect_status "lr" 201
dev=$(jq_py "$out" 'd["env"]["CUDA_VISIBLE_DEVICES"]')
CUDA_VISIBLE_DEVICES=$dev "$G" run --slice lr --run-dir "$RUNDIR" -- \
	"$BURN" --seconds 1.5 --memory 256MiB >"$WORK/burn.json" 2>"$WORK/burn.err" ||
	fail "gs-burn in the slice failed: $(cat "$WORK/burn.err")"
sleep 1 # rows after the run

gpu_s() {
	"$G" usage --since 10m --slice lr --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(sum(r["gpu_seconds"] for r in d["rows"]))'
}
before=$(gpu_s)
daemon_kill9
daemon_up --config "$WORK/cfg.yaml"
sleep 1.5 # several rows after the restart
after=$(gpu_s)
echo "GPU seconds in the ledger: $before before the restart, $after after"
python3 -c '
import sys
b, a = map(float, sys.argv[1:])
sys.exit(0 if b > 0.3 and abs(a - b) < 0.05 else 1)' "$before" "$after" ||
	fail "the ledger counted the slice's GPU time again after the restart"
echo ok
