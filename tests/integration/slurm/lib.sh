# lib.sh - shared by the Slurm cases; run.sh starts the cluster and runs
# each case with its environment (SLURM_CONF, the sim's variables,
# GS_SLURM_*, RUNDIR, SIMDIR). Source it: . "$(dirname "$0")/lib.sh"
#
# Sets B (build dir) and W (this case's scratch dir) and defines the
# helpers below. A line "note: ..." on stdout is repeated by run.sh under
# the case's "ok" line (measured figures).
set -euo pipefail

: "${GS_SLURM_B:?run the Slurm cases through tests/integration/slurm/run.sh}"
B=$GS_SLURM_B
W=$(mktemp -d "$GS_SLURM_WORK/case.XXXXXX")
chmod 755 "$W"

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

note() {
	echo "note: $*"
}

# py EXPR ARGS...: evaluates a Python expression with sys.argv[1:] as a.
py() {
	local e=$1
	shift
	python3 -c "import json, sys; a = sys.argv[1:]; print($e)" "$@"
}

# slices: the region's slices, one JSON object per line.
slices() {
	"$B/tests/gs-slurm-slices" "$RUNDIR"
}

# slice NAME: its JSON line, or nothing.
slice() {
	slices | grep -F "\"name\":\"$1\"," || true
}

# wait_for TENTHS CMD...: polls CMD every 0.1 s; 1 when it never held.
wait_for() {
	local n=$1
	shift
	while [ "$n" -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

has_slice() {
	[ -n "$(slice "$1")" ]
}

no_slice() {
	[ -z "$(slice "$1")" ]
}

# job_field JOB KEY: a field of `scontrol show job -o` (JobState, ExitCode).
job_field() {
	scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' |
		sed -n "s/^$2=//p" | head -n 1
}

job_done() {
	case "$(job_field "$1" JobState)" in
	COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | PREEMPTED | BOOT_FAIL | DEADLINE) return 0 ;;
	*) return 1 ;;
	esac
}

# wait_job JOB [SECONDS]: until the job has ended (default 60 s).
wait_job() {
	wait_for $((${2:-60} * 10)) job_done "$1" ||
		fail "job $1 still $(job_field "$1" JobState) after ${2:-60} s"
}

job_running() {
	[ "$(job_field "$1" JobState)" = RUNNING ]
}

# file_has FILE PATTERN: grep -q that tolerates a missing file.
file_has() {
	grep -q "$2" "$1" 2>/dev/null
}

# sim_snap FILE: the sim's status (its own accounting, not the shim's),
# raw, into FILE: fast, so timestamps taken around it bracket it closely.
sim_snap() {
	"$B/bin/gpuslice" sim status --json --dir "$SIMDIR" >"$1"
}

# sim_procs FILE: "pid gpu busy_s" for every process in a snapshot, live
# or exited.
sim_procs() {
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
seen = {}
for e in d.get("exited", []):
    seen[e["pid"]] = (e["gpu"], e["busy_s"])
for g in d["gpus"]:
    for p in g["processes"]:
        seen[p["pid"]] = (g["index"], p["busy_s"])
for pid, (gpu, busy) in seen.items():
    print(pid, gpu, busy)
' "$1"
}

# sim_has_pid PID: the sim lists PID as a live process (a grep, not a
# JSON parser: polled in loops, where starting Python costs seconds on a
# loaded machine).
sim_has_pid() {
	"$B/bin/gpuslice" sim status --json --dir "$SIMDIR" |
		grep -q "{\"pid\":$1,\"memory_bytes\":"
}

# json_line FILE: the last line of FILE that is a JSON object.
json_line() {
	grep '^{' "$1" | tail -n 1
}
