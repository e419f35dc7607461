#!/usr/bin/env bash
# demo.sh - `make demo`: a tour of gpuslice on a simulated node, no GPU
# needed. Usage: scripts/demo.sh BUILD_DIR
#
# Sets up a simulated node with two H100s in a scratch directory, runs the
# workload kit's programs on it the way the KubeCon sharing study did
# (light and heavy inference side by side, the small matmul batch job alone
# and four at once, a GPU-intensive burn, allocation up to the cap, a
# fault), and prints a table of what each got. Takes well under a minute.
# Every figure comes from the simulator: it measures gpuslice's logic, not
# a GPU.
set -euo pipefail

B=$(cd "${1:?usage: scripts/demo.sh BUILD_DIR}" && pwd)
for f in bin/gpuslice sim/libcuda.so.1 bin/gs-infer bin/gs-matmul \
	bin/gs-burn bin/gs-alloc bin/gs-fault; do
	[ -e "$B/$f" ] || { echo "demo: $B/$f is missing; run make build first" >&2; exit 1; }
done
command -v python3 >/dev/null || { echo "demo: python3 is needed for the table" >&2; exit 1; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpuslice-demo.XXXXXX")
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT

"$B/bin/gpuslice" sim init --gpus 2xH100-SXM5-80GB --dir "$WORK/sim" >/dev/null ||
	{ echo "demo: gpuslice sim init failed" >&2; exit 1; }
eval "$("$B/bin/gpuslice" sim env --dir "$WORK/sim")"

cat <<EOF
gpuslice demo - SIMULATED node: 2 x H100-SXM5-80GB (gpuslice's simulator,
not real GPUs; the numbers measure gpuslice's logic, not GPU speed).
Scratch directory: $WORK

EOF

# run NAME CMD...: runs a workload in the background, its JSON line into
# $WORK/NAME.json (a failure's line too: gs-fault fails on purpose).
run() {
	local name=$1
	shift
	("$@" >"$WORK/$name.json" 2>"$WORK/$name.err" || true) &
	PIDS+=($!)
}
wait_all() {
	local p
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	PIDS=()
}
step() { printf '  %s\n' "$*"; }

step "GPU 0: gs-infer --light and --heavy side by side (4 s, time-sliced)"
run infer-light "$B/bin/gs-infer" --light --seconds 4 --device 0
run infer-heavy "$B/bin/gs-infer" --heavy --seconds 4 --device 0
wait_all

# 512x512 rather than the study's 256x256: on the sim a 256 matmul is as
# short as one launch costs the host, which would hide the time-slicing.
step "GPU 1: gs-matmul alone (a small batch job: 2000 x 512^3)"
"$B/bin/gs-matmul" --iterations 2000 --n 512 --device 1 >"$WORK/matmul-alone.json" || true
step "GPU 1: four gs-matmul at once on the same GPU"
for i in 1 2 3 4; do
	run "matmul-x4-$i" "$B/bin/gs-matmul" --iterations 2000 --n 512 --device 1
done
step "GPU 0: gs-burn for 3 s (GPU-intensive job), meanwhile"
run burn "$B/bin/gs-burn" --seconds 3 --memory 4GiB --device 0
wait_all

step "GPU 0: gs-alloc, 1 GiB cuMemCreate chunks until the GPU is full"
"$B/bin/gs-alloc" --api vmm --chunk 1GiB --device 0 >"$WORK/alloc.json" || true
step "GPU 1: gs-fault (an illegal address on purpose)"
"$B/bin/gs-fault" --device 1 >"$WORK/fault.json" || true
echo

python3 - "$WORK" <<'PY'
import json, os, sys

work = sys.argv[1]

def load(name):
    try:
        with open(os.path.join(work, name + ".json")) as f:
            return json.loads(f.readline())
    except (OSError, ValueError):
        err = os.path.join(work, name + ".err")
        msg = open(err).read().strip() if os.path.exists(err) else ""
        return {"error": "no result" + (": " + msg if msg else "")}

def gib(b):
    return "%.1f GiB" % (b / 2**30)

rows = []
def row(workload, setup, result, d):
    if d.get("error") and workload not in ("gs-alloc", "gs-fault"):
        result = "FAILED: %s (%s)" % (d["error"], d.get("call", ""))
    rows.append((workload, setup, result))

for name, setup in (("infer-light", "--light  (1 thread, batch 1)"),
                    ("infer-heavy", "--heavy  (5 threads, batch 5)")):
    d = load(name)
    row("gs-infer", setup + ", beside the other",
        "%.0f req/s  p50 %.2f ms  p99 %.2f ms" % (
            d.get("throughput_rps", 0), d.get("p50_ms") or 0,
            d.get("p99_ms") or 0) if "p50_ms" in d else "", d)

alone = load("matmul-alone")
t1 = alone.get("wall_s")
row("gs-matmul", "alone, 2000 x 512^3",
    "%.2f s" % t1 if t1 else "", alone)
for i in range(1, 5):
    d = load("matmul-x4-%d" % i)
    t = d.get("wall_s")
    row("gs-matmul", "4 at once, copy %d" % i,
        "%.2f s  (%.1fx alone)" % (t, t / t1) if t and t1 else "", d)

d = load("burn")
row("gs-burn", "3 s, 4 GiB buffer",
    "%d kernels  %.0f GFLOP/s (simulated)" % (d.get("kernels", 0),
                                              d.get("gflops") or 0)
    if "kernels" in d else "", d)

d = load("alloc")
row("gs-alloc", "vmm, 1 GiB chunks",
    "%s of %s free, then %s" % (gib(d.get("allocated_bytes", 0)),
                                gib(d.get("free_bytes_before", 0)),
                                d.get("error")) if "allocated_bytes" in d
    else "FAILED: %s" % d.get("error"), d)

d = load("fault")
row("gs-fault", "store to an unmapped address",
    "exited with %s" % d.get("error"), d)

w = [max(len(r[i]) for r in rows + [("workload", "run", "result")])
     for i in range(3)]
fmt = "  %%-%ds  %%-%ds  %%s" % (w[0], w[1])
print(fmt % ("workload", "run", "result"))
print(fmt % ("-" * w[0], "-" * w[1], "-" * 6))
for r in rows:
    print(fmt % r)
src = alone.get("source")
print()
print("Device as the programs saw it: %s" % src)
print("All figures are from the simulator (time-slicing modelled in"
      " software); run `make gpu-check` on a machine with a GPU for real"
      " ones.")
PY

# Part two: the node daemon, slices and the workload kit in them.
echo
bash "$(dirname "$0")/demo-daemon.sh" "$B"
