#!/usr/bin/env bash
# `make gpu-stage`'s folder (scripts/gpu-stage.sh) is under 64 MiB and
# runs the GPU check by itself: here on the sim, with the build tree, the
# source tree and the CUDA toolkit hidden (empty tmpfs mounts in a private
# mount namespace), so nothing comes from a build or a compiler. With a
# small --budget the study (4 minutes) is skipped as not fitting and says
# so; gpu-check.json, gpu-check.md and the log archive are written; a run
# stopped after its first check already left that check in the reports,
# and stopping it leaves none of its processes running.
. "$(dirname "$0")/lib.sh" "$1"

[ -e "$B/sim/libnvidia-ml.so.1" ] || skip "this build has no simulator"
unshare -m true 2>/dev/null || skip "no private mount namespace here (the build tree could not be hidden)"
ST=$WORK/stage
bash "$SRC/scripts/gpu-stage.sh" "$B" "$ST" >"$WORK/stage.log" 2>&1 ||
	fail "gpu-stage failed: $(tail -5 "$WORK/stage.log")"
size=$(du -sb "$ST" | cut -f1)
[ "$size" -lt $((64 << 20)) ] || fail "the staged folder is $size bytes, not under 64 MiB"
[ -x "$ST/gpu-check.sh" ] && [ -x "$ST/bin/gpuslice" ] && [ -f "$ST/lib/libgpuslice.so" ] ||
	fail "the staged folder lacks gpu-check.sh, bin/gpuslice or lib/libgpuslice.so"

cuda=${CUDA_HOME:-/usr/local/cuda}
hide="$B $SRC"
[ -d "$cuda" ] && hide="$hide $cuda"
hidden() { # CMD...: runs CMD with $hide covered by empty mounts
	unshare -m bash -c 'for d in $HIDE; do mount -t tmpfs none "$d"; done; exec "$@"' \
		bash "$@"
}
export HIDE=$hide

rc=0
HIDE=$hide hidden env PATH=/usr/bin:/bin bash "$ST/gpu-check.sh" --sim --budget 40 --out "$WORK/out" \
	--only memory_cap_plain,cudart,pytorch,launch_cost,study,ts_vs_mps >"$WORK/run.log" 2>&1 || rc=$?
out=$(cat "$WORK/run.log")
[ "$rc" = 0 ] || fail "the staged check exited $rc: $out"
grep -q '^PASS memory_cap_plain ' <<<"$out" || fail "memory_cap_plain did not pass: $out"
if [ -x "$ST/checks/cudart_check" ]; then
	grep -q '^PASS cudart ' <<<"$out" || fail "the staged cudart_check did not pass: $out"
fi
grep -q '^SKIP study  *does not fit in the budget' <<<"$out" || fail "the study was not skipped for the budget: $out"
python3 - "$WORK/out" <<'PY' || fail "reports: $out"
import json, sys, tarfile
d = json.load(open(sys.argv[1] + "/gpu-check.json"))
assert d["source"].startswith("sim"), d["source"]
assert d["budget_s"] == 40 and d["used_s"] <= 50, (d["budget_s"], d["used_s"])
assert d["preflight"].startswith("passed"), d["preflight"]
names = [c["name"] for c in d["checks"]]
assert names == ["memory_cap_plain", "cudart", "pytorch", "launch_cost", "study", "ts_vs_mps"], names
assert d["failed"] == 0, d
md = open(sys.argv[1] + "/gpu-check.md").read()
assert "| study | SKIP |" in md, md
logs = tarfile.open(sys.argv[1] + "/gpu-check-logs.tar.gz").getnames()
assert any(n.endswith("memory_cap_plain.log") for n in logs), logs
assert any(n.endswith("preflight.log") for n in logs), logs
PY

# Stopped half-way: the first check's result is already on disk.
HIDE=$hide hidden env PATH=/usr/bin:/bin bash "$ST/gpu-check.sh" --sim --budget 300 --out "$WORK/half" \
	>"$WORK/half.log" 2>&1 &
hp=$!
PIDS+=($hp)
wait_until 60 grep -q '^PASS memory_cap_plain' "$WORK/half.log" || fail "no first result: $(cat "$WORK/half.log")"
kill -TERM $hp
wait $hp 2>/dev/null || true
no_work_procs() { [ -z "$(work_procs)" ]; }
wait_until 5 no_work_procs || fail "the stopped check left processes: $(work_procs)"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["checks"][0]["name"] == "memory_cap_plain" and d["checks"][0]["status"] == "pass", d
' "$WORK/half/gpu-check.json" || fail "a stopped run left no report of its first check"
echo "ok"
