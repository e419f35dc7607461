#!/usr/bin/env bash
# `gpuslice run --mode mps`: four slices of 25 % (share mode) running the
# same matmul at once are clients of one MPS server, so their kernels
# overlap: the four finish in well under four times one alone (turns
# would take about 4x; the sim's MPS about 2x). The report says mode mps
# and still counts every launch and some GPU time.
# The MPS control daemon gpuslice started is gone once the last run left.
. "$(dirname "$0")/lib.sh" "$1"
sim_up
mm=("$B/bin/gs-matmul" --n 128 --iterations 30000)
slice=(--mode mps --compute 25 --compute-mode share --memory 4GiB --report)

"${RUN[@]}" "${slice[@]}" -- "${mm[@]}" >"$WORK/alone" 2>"$WORK/alone.rep" ||
	fail "a lone MPS slice failed: $(cat "$WORK/alone.rep")"
for i in 1 2 3 4; do
	"${RUN[@]}" "${slice[@]}" -- "${mm[@]}" >"$WORK/out$i" 2>"$WORK/rep$i" &
	PIDS+=($!)
done
for p in "${PIDS[@]}"; do
	wait "$p" || fail "an MPS slice failed: $(cat "$WORK"/rep*)"
done
PIDS=()
"$PY" - "$WORK" <<'PY' || fail "see above"
import json, sys
w = sys.argv[1]
def last(path):
    ls = [l for l in open(path) if l.startswith("{")]
    return json.loads(ls[-1])
alone = last(f"{w}/alone")["wall_s"]
walls = [last(f"{w}/out{i}")["wall_s"] for i in range(1, 5)]
reps = [last(f"{w}/rep{i}") for i in range(1, 5)]
modes = [r.get("mode") for r in reps]
counted = all(r["launches"] >= 30000 and r["gpu_busy_s"] > 0 for r in reps)
ratio = max(walls) / alone
print(f"alone {alone:.3f} s, four at once {max(walls):.3f} s ({ratio:.2f} x), "
      f"modes {modes}, launches {[r['launches'] for r in reps]}")
sys.exit(0 if ratio < 3.0 and modes == ["mps"] * 4 and counted else 1)
PY
left=$(find "$RUNDIR/mps" -name nvidia-cuda-mps-control.pid 2>/dev/null)
[ -z "$left" ] || fail "the MPS control daemon outlived its last slice: $left"
echo "ok"
