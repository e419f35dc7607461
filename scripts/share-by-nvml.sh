#!/usr/bin/env bash
# share-by-nvml.sh - what share of a simulated GPU each time-sliced slice
# gets by NVML's count (the sim's busy time per process, what NVML
# accounting and the ledger bill), after a warm-up: gpusliced on a
# simulated node, slices on GPU 0 each running one workload, the sim's
# per-process busy time read at the end of the warm-up and a second
# before the workloads end (from the first one's start). The charge
# ratio's benchmark (docs/security.md): `make bench` section
# `nvml_share`, and the demo mix's integration test
# (tests/integration/daemon/demo_shares_by_nvml.sh). Needs the sim
# (a build with gpusliced and sim/). Stops everything it started.
#
# Usage: scripts/share-by-nvml.sh BUILD_DIR SECONDS WARMUP SLICE...
#   SLICE is NAME:PRIORITY:COMPUTE:WORKLOAD, WORKLOAD one of burn
#   (gs-burn), infer (gs-infer --light); COMPUTE 0 is a slice with no
#   compute limit.
# Prints one line per slice: NAME asked COMPUTE nvml_after_warmup PCT
# nvml_whole PCT (percent of the wall time; whole: from just after the
# workloads started), then the daemon's last GS_SHARE_LOG_LINES (0)
# charge ratio log lines.
set -euo pipefail

B=$(cd "${1:?usage: share-by-nvml.sh BUILD_DIR SECONDS WARMUP SLICE...}" && pwd)
RUN=${2:?seconds}
WARM=${3:?warm-up seconds}
shift 3
[ $# -gt 0 ] || { echo "share-by-nvml: no slice given" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpuslice-nvmlshare.XXXXXX")
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

"$B/bin/gpusliced" --state-dir "$WORK/state" --socket "$SOCK" --gpus sim \
	--log-file "$WORK/gpusliced.log" &
DPID=$!
for _ in $(seq 100); do
	curl -sf --unix-socket "$SOCK" http://localhost/healthz >/dev/null 2>&1 && break
	kill -0 "$DPID" 2>/dev/null || { cat "$WORK/gpusliced.log" >&2; exit 1; }
	sleep 0.1
done
gpus=$(curl -s --unix-socket "$SOCK" http://localhost/v1/gpus)
simdir=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["sim_dir"])' "$gpus")
eval "$("$B/bin/gpuslice" sim env --dir "$simdir")"

names=()
for s in "$@"; do
	IFS=: read -r name prio pct work <<<"$s"
	args=(create --name "$name" --priority "$prio" --memory 4GiB --mode timeslice --gpu 0)
	[ "$pct" = 0 ] || args+=(--compute "$pct")
	"${G[@]}" "${args[@]}" >/dev/null
	names+=("$name")
done
for s in "$@"; do
	IFS=: read -r name prio pct work <<<"$s"
	case $work in
	burn) cmd=("$B/bin/gs-burn" --seconds "$RUN" --memory 1GiB --device 0) ;;
	infer) cmd=("$B/bin/gs-infer" --light --seconds "$RUN" --device 0) ;;
	*) echo "share-by-nvml: unknown workload $work" >&2; exit 2 ;;
	esac
	dev=$("${G[@]}" show "$name" --json |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["env"].get("CUDA_VISIBLE_DEVICES", ""))')
	CUDA_VISIBLE_DEVICES=$dev "$B/bin/gpuslice" run --slice "$name" \
		--run-dir "$WORK/run" -- "${cmd[@]}" >/dev/null 2>"$WORK/$name.err" &
	PIDS+=($!)
	t0=${t0:-$(date +%s.%N)}
done
# `gpuslice run` forks the workload: its child is the slice's process.
sleep 0.5
for p in "${PIDS[@]}"; do pgrep -P "$p" | head -1; done >"$WORK/pids"
snap() { # FILE: the sim's status with the time it was read
	local t
	t=$(date +%s.%N)
	"$B/bin/gpuslice" sim status --json --dir "$simdir" |
		python3 -c 'import json,sys; d=json.load(sys.stdin); d["t"]=float(sys.argv[1]); print(json.dumps(d))' "$t" >"$1"
}
snap "$WORK/s0.json"
sleep "$WARM"
snap "$WORK/s1.json"
# (the first workload started at t0 ends RUN s later: read before)
sleep "$(python3 -c "import time; print(max(0.5, $t0 + $RUN - 1.5 - time.time()))")"
snap "$WORK/s2.json"
for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
PIDS=()

python3 - "$WORK" "${names[*]}" "$@" <<'PY'
import json, os, sys
work, names = sys.argv[1], sys.argv[2].split()
specs = {a.split(":")[0]: a.split(":") for a in sys.argv[3:]}
snaps = [json.load(open(os.path.join(work, "s%d.json" % i))) for i in range(3)]
def busy(s):
    # pid -> busy seconds on GPU 0
    return {p["pid"]: p["busy_s"] for p in s["gpus"][0]["processes"]}
b0, b1, b2 = busy(snaps[0]), busy(snaps[1]), busy(snaps[2])
order = open(os.path.join(work, "pids")).read().split()
for name, pid in zip(names, order):
    pid = int(pid)
    if pid not in b2:
        print("%-8s asked %3s  gone before the end (pid %d)" %
              (name, specs[name][2], pid))
        continue
    after = (b2.get(pid, 0) - b1.get(pid, 0)) / (snaps[2]["t"] - snaps[1]["t"])
    whole = (b2.get(pid, 0) - b0.get(pid, 0)) / (snaps[2]["t"] - snaps[0]["t"])
    print("%-8s asked %3s  nvml_after_warmup %5.1f  nvml_whole %5.1f" %
          (name, specs[name][2], 100 * after, 100 * whole))
PY
grep -h "charge ratio" "$WORK/gpusliced.log" | sed 's/^/  log: /' | tail -${GS_SHARE_LOG_LINES:-0} || true
