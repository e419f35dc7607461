# lib.sh - shared by the shim's integration tests: a fresh simulated node
# and a fresh run directory (region) per test, and small helpers. Source
# it with the build dir in $1:
#   . "$(dirname "$0")/lib.sh" "$1"
# Sets B (build dir), WORK (scratch, removed on exit), SIMDIR, RUNDIR,
# exports the sim's environment and GPUSLICE_RUN_DIR, and defines RUN as
# the `gpuslice run` command line to use. Exits 77 (skipped) when the build
# has no sim.
set -euo pipefail

B=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-shim-test.XXXXXX")
SIMDIR=$WORK/sim
RUNDIR=$WORK/run
PIDS=()
export GPUSLICE_RUN_DIR=$RUNDIR
# The system Python: a version manager's shim can take seconds to start on
# a loaded machine, and these tests call Python often.
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
RUN=("$B/bin/gpuslice" run)

# Background `gpuslice run`s are stopped with SIGTERM first: they pass it
# on to their command, so nothing is left holding the test's output open.
cleanup() {
	local p
	exec 2>/dev/null # no job notices for what we kill here
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	sleep 0.2
	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# sim_up [GPUS]: a fresh simulated node (default one H100) in $SIMDIR.
sim_up() {
	local gpus=${1:-1xH100-SXM5-80GB}
	if [ ! -e "$B/sim/libcuda.so.1" ] || [ ! -e "$B/lib/libgpuslice.so" ]; then
		echo "SKIP: this build has no simulated GPU or no shim"
		exit 77
	fi
	"$B/bin/gpuslice" sim init --gpus "$gpus" --dir "$SIMDIR" >/dev/null ||
		fail "gpuslice sim init --gpus $gpus failed"
	eval "$("$B/bin/gpuslice" sim env --dir "$SIMDIR")"
}

# jcheck JSON PYTHON-EXPR: asserts EXPR over the object d.
jcheck() {
	"$PY" -c '
import json, sys
d = json.loads(sys.argv[1])
sys.exit(0 if eval(sys.argv[2]) else 1)
' "$1" "$2" || fail "expected $2 in: $1"
}

# jget JSON KEY
jget() {
	"$PY" -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' \
		"$1" "$2" || fail "no key $2 in: $1"
}

# last_json FILE: the last line of FILE that parses as a JSON object.
last_json() {
	"$PY" -c '
import json, sys
last = None
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        try:
            last = json.loads(line); last = line
        except ValueError:
            pass
print(last or "")
' "$1"
}

# busy PID...: the sim's own GPU busy seconds of each PID, one per line
# ("PID BUSY"), live processes and exited ones.
sim_busy() {
	"$B/bin/gpuslice" sim status --json --dir "$SIMDIR" >"$WORK/status.json"
	"$PY" - "$WORK/status.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
seen = {}
for e in d.get("exited", []):
    seen[e["pid"]] = e["busy_s"]
for g in d["gpus"]:
    for p in g["processes"]:
        seen[p["pid"]] = p["busy_s"]
for pid, b in seen.items():
    print(pid, b)
PY
}

# run_figures OUT REP BUSY: from a gs-shim-launcher's JSON line (OUT),
# `gpuslice run --report`'s (REP) and sim_busy's output taken after it
# (BUSY), one line: LAUNCHES WALL_S USED_S CHARGED_S BOOKED ERROR - what
# the sim says the process used, what the shim charged and the launches
# it booked.
run_figures() {
	"$PY" - "$@" <<'PY'
import json, sys
out, rep, busy = sys.argv[1:]
o = json.load(open(out))
r = {}
for line in open(rep):
    if line.startswith("{") and "gpu_busy_s" in line:
        r = json.loads(line)
sim = {int(a): float(b) for a, b in (l.split() for l in open(busy))}
print(o["launches"], o["wall_s"], sim.get(o["pid"], 0.0),
      r.get("gpu_busy_s", 0.0), r.get("launches", -1), o["error"] or "none")
PY
}

# burn_shares WINDOW TOLERANCE MIN_BUSY [GS-BURN ARGS...]: three saturating
# gs-burn in slices of 20, 30 and 50 % on one GPU; from 2 s in, for
# WINDOW seconds, each one's share of the GPU by the sim's own accounting
# (busy seconds per process). Prints them and the GPU's total busy share;
# fails when a share is off by more than TOLERANCE points or the total is
# under MIN_BUSY %.
burn_shares() {
	local window=$1 tol=$2 min_busy=$3 pct t1 t1b t2 t2b
	shift 3
	for pct in 20 30 50; do
		"${RUN[@]}" --compute "$pct" --slice "s$pct" -- "$B/bin/gs-burn" \
			--seconds "$(("$window" + 4))" "$@" >"$WORK/burn$pct" &
		PIDS+=($!)
		echo $! >"$WORK/runner$pct"
	done
	sleep 2
	for pct in 20 30 50; do
		child_of "$(cat "$WORK/runner$pct")" >"$WORK/pid$pct"
	done
	t1=$(date +%s.%N); sim_busy >"$WORK/b1"; t1b=$(date +%s.%N)
	sleep "$window"
	t2=$(date +%s.%N); sim_busy >"$WORK/b2"; t2b=$(date +%s.%N)
	wait
	"$PY" - "$WORK" "$t1" "$t1b" "$t2" "$t2b" "$tol" "$min_busy" <<'PY' ||
import sys
w, t1, t1b, t2, t2b, tol, min_busy = sys.argv[1], *map(float, sys.argv[2:])
def load(f):
    return {int(a): float(b) for a, b in (l.split() for l in open(f))}
b1, b2 = load(w + "/b1"), load(w + "/b2")
window = (t2 + t2b) / 2 - (t1 + t1b) / 2
bad, total = [], 0.0
for pct in (20, 30, 50):
    pid = int(open(f"{w}/pid{pct}").read())
    share = (b2[pid] - b1[pid]) / window * 100
    total += share
    print(f"slice {pct}%: {share:.2f}% of the GPU over {window:.2f} s (sim)")
    if abs(share - pct) > tol:
        bad.append(pct)
print(f"GPU busy: {total:.2f}%")
sys.exit(1 if bad or total < min_busy else 0)
PY
		fail "a share off by more than $tol points, or the GPU under $min_busy % busy"
}

# sim_mem_used: bytes in use by all processes on the node (the sim's own
# per-process books, summed).
sim_mem_used() {
	"$B/bin/gpuslice" sim status --json --dir "$SIMDIR" | awk '
		{ while (match($0, /"memory_bytes":[0-9]+/)) {
			s += substr($0, RSTART + 15, RLENGTH - 15)
			$0 = substr($0, RSTART + RLENGTH) } }
		END { printf "%.0f\n", s }'
}

# wait_file FILE [TENTHS]: until FILE is non-empty (default 10 s).
wait_file() {
	local n=${2:-100}
	while [ ! -s "$1" ] && [ "$n" -gt 0 ]; do
		sleep 0.1
		n=$((n - 1))
	done
	[ -s "$1" ] || fail "timed out waiting for $1"
}

# child_of PID: the single child process of PID.
child_of() {
	local c n=50
	while [ "$n" -gt 0 ]; do
		c=$(pgrep -P "$1" | head -1 || true)
		[ -n "$c" ] && { echo "$c"; return; }
		sleep 0.1
		n=$((n - 1))
	done
	fail "no child of $1"
}
