#!/usr/bin/env bash
# demo-daemon.sh - the second half of `make demo`: gpusliced on its
# embedded default (the real GPUs when there are any, else a simulated
# node of 2 x H100, and it says which), four slices on one GPU - an
# inference server (high priority), two notebooks and a batch job - the
# workload kit running in them through `gpuslice run --slice` for about
# 30 s with a live view, then what each slice asked for and what it got.
# Stops everything it started. Usage: scripts/demo-daemon.sh BUILD_DIR
set -euo pipefail

B=$(cd "${1:?usage: scripts/demo-daemon.sh BUILD_DIR}" && pwd)
SECONDS_RUN=${GS_DEMO_SECONDS:-30}
for f in bin/gpusliced bin/gpuslice bin/gs-infer bin/gs-matmul bin/gs-burn \
	bin/gs-alloc lib/libgpuslice.so; do
	[ -e "$B/$f" ] || { echo "demo: $B/$f is missing; run make build first" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpuslice-demo-daemon.XXXXXX")
SOCK=$WORK/run/api.sock
G=("$B/bin/gpuslice" --socket "$SOCK")
DPID=""
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	if [ -n "$DPID" ]; then
		kill -TERM "$DPID" 2>/dev/null || true
		wait "$DPID" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
unset GPUSLICE_SIM_DIR GPUSLICE_RUN_DIR CUDA_VISIBLE_DEVICES LD_PRELOAD \
	LD_LIBRARY_PATH || true

# gpusliced never falls back to the simulator by itself: the demo asks for
# it when this machine has no working GPU driver.
gpus_src=sim
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
	gpus_src=auto
fi
echo "== gpusliced: one node daemon, four slices, ${SECONDS_RUN} s of work =="
"$B/bin/gpusliced" --state-dir "$WORK/state" --socket "$SOCK" --gpus "$gpus_src" \
	--log-file "$WORK/gpusliced.log" &
DPID=$!
for _ in $(seq 100); do
	curl -sf --unix-socket "$SOCK" http://localhost/healthz >/dev/null 2>&1 && break
	kill -0 "$DPID" 2>/dev/null || { cat "$WORK/gpusliced.log" >&2; exit 1; }
	sleep 0.1
done
gpus=$(curl -s --unix-socket "$SOCK" http://localhost/v1/gpus)
source=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["source"])' "$gpus")
if [ "$source" = sim ]; then
	echo "No GPU found: the demo runs gpusliced on a SIMULATED node (--gpus sim)"
	echo "of 2 x H100-SXM5-80GB (numbers measure gpuslice's logic, not a GPU)."
	simdir=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["sim_dir"])' "$gpus")
	eval "$("$B/bin/gpuslice" sim env --dir "$simdir")"
else
	echo "gpusliced found real GPUs:"
	python3 -c 'import json,sys; [print("  gpu %d: %s" % (g["index"], g["name"])) for g in json.loads(sys.argv[1])["gpus"]]' "$gpus"
fi

# NAME PRIORITY MEMORY COMPUTE: one slice on GPU 0.
mk() {
	"${G[@]}" create --name "$1" --priority "$2" --memory "$3" --compute "$4" \
		--mode timeslice --gpu 0 >/dev/null
	printf '  slice %-8s priority %-6s memory %-6s compute %s%%\n' "$1" "$2" "$3" "$4"
}
echo "Slices on GPU 0:"
mk infer high 8GiB 40
mk nb-1 normal 4GiB 15
mk nb-2 normal 4GiB 15
mk batch low 8GiB 30

# in SLICE NAME CMD...: CMD in the slice (shim loaded), on its GPU, its
# JSON line into $WORK/NAME.json.
in_slice() {
	local slice=$1 name=$2 dev
	shift 2
	dev=$("${G[@]}" show "$slice" --json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["env"].get("CUDA_VISIBLE_DEVICES", ""))')
	CUDA_VISIBLE_DEVICES=$dev "$B/bin/gpuslice" run --slice "$slice" \
		--run-dir "$WORK/run" -- "$@" >"$WORK/$name.json" 2>"$WORK/$name.err" &
	PIDS+=($!)
}
t0=$(date +%s.%N)
in_slice infer infer "$B/bin/gs-infer" --light --seconds "$SECONDS_RUN" --device 0
in_slice nb-1 nb-1 "$B/bin/gs-burn" --seconds "$SECONDS_RUN" --memory 2GiB --device 0
in_slice nb-2 nb-2-alloc "$B/bin/gs-alloc" --api plain --chunk 512MiB --hold "$SECONDS_RUN" --device 0
in_slice batch batch "$B/bin/gs-burn" --seconds "$SECONDS_RUN" --memory 6GiB --device 0

echo
if [ -t 1 ]; then
	echo "Live view for ${SECONDS_RUN} s (gpuslice top):"
	sleep 1
	timeout "$SECONDS_RUN" "${G[@]}" top --interval 2 </dev/null || true
else
	for _ in $(seq 3); do
		sleep $((SECONDS_RUN / 3))
		"${G[@]}" top --once
	done
fi
for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
PIDS=()
t1=$(date +%s.%N)
"${G[@]}" list --json >"$WORK/slices.json"
for s in infer nb-1 nb-2 batch; do
	"${G[@]}" show "$s" --json >"$WORK/show-$s.json"
done
"${G[@]}" usage --since 5m --by slice --json >"$WORK/usage.json"

python3 - "$WORK" "$t0" "$t1" <<'PY'
import json, os, sys
work, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
# The share is over the time the workloads really ran (start-up and the
# last kernels included), not the nominal seconds they were asked for.
wall = t1 - t0

def load(path):
    try:
        return json.loads(open(os.path.join(work, path)).readline())
    except (OSError, ValueError):
        return {}

def gib(b):
    return "%.1f GiB" % (b / 2**30)

usage = {r["slice"]: r for r in json.load(open(os.path.join(work, "usage.json")))["rows"]}
cur = json.load(open(os.path.join(work, "usage.json")))["currency"]
infer = load("infer.json")
alloc = load("nb-2-alloc.json")
rows = [("slice", "priority", "asked: memory / compute", "got: peak memory / GPU time share",
         "cost", "notes")]
for name, what in (("infer", "gs-infer --light"), ("nb-1", "gs-burn (notebook)"),
                   ("nb-2", "gs-alloc up to the cap"), ("batch", "gs-burn (batch)")):
    s = json.load(open(os.path.join(work, "show-%s.json" % name)))
    u = s.get("usage", {})
    # NVML's count (the ledger's, what is billed): the shim's books also
    # span a time-sliced neighbour's turns, which NVML does not count.
    billed = usage.get(name, {}).get("gpu_seconds", 0)
    nvml = 100.0 * billed / wall if wall > 0 else 0
    share = 100.0 * u.get("gpu_seconds", 0) / wall if wall > 0 else 0
    note = what + " (NVML %.1f%%)" % nvml if share > 0 else what
    if name == "infer" and "p99_ms" in infer:
        note += ": %.0f req/s, p99 %.2f ms" % (infer.get("throughput_rps", 0), infer["p99_ms"])
    if name == "nb-2" and "allocated_bytes" in alloc:
        note += ": stopped at %s (%s)" % (gib(alloc["allocated_bytes"]), alloc.get("error"))
    rows.append((name, s["priority"], "%s / %d%%" % (gib(s["memory_bytes"]), s["compute"]),
                 "%s / %.1f%%" % (gib(u.get("memory_peak_bytes", 0)), share),
                 "%.4f %s" % (usage.get(name, {}).get("cost", 0), cur), note))
w = [max(len(r[i]) for r in rows) for i in range(5)]
for i, r in enumerate(rows):
    print("  " + "  ".join(c.ljust(w[k]) if k < 5 else c for k, c in enumerate(r)))
    if i == 0:
        print("  " + "  ".join("-" * w[k] for k in range(5)) + "  -----")
print()
print("Peak memory is the shim's books (allocations); GPU time share is the")
print("slice's GPU time by its books over the %.0f s the workloads ran. On a" % wall)
print("time-sliced GPU the books also count a neighbour's turns that ran while")
print("the slice's kernels waited; NVML's count, in the notes, is what the")
print("ledger bills (it lags by up to one ledger interval). Costs come from")
print("the daemon's price table (docs/config.md) and its ledger.")
PY
echo
echo "Events:"
"${G[@]}" events --limit 12 | sed 's/^/  /'
for s in infer nb-1 nb-2 batch; do "${G[@]}" delete "$s" >/dev/null; done
kill -TERM "$DPID"
wait "$DPID" 2>/dev/null || true
DPID=""
echo "gpusliced stopped; slices deleted."
