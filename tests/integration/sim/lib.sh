# lib.sh - shared by the sim's integration tests: `. lib.sh BUILD_DIR`.
# Gives each test its own node state directory and the paths of the CLI
# and the sim's libraries; removes everything (and kills what it started)
# on exit.
set -euo pipefail

B=$(cd "$1" && pwd)
GS=$B/bin/gpuslice
WORK=$(mktemp -d /tmp/gs-simit.XXXXXX)
export GPUSLICE_SIM_DIR=$WORK/sim
export LD_LIBRARY_PATH=$B/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset CUDA_VISIBLE_DEVICES CUDA_MPS_PIPE_DIRECTORY \
	CUDA_MPS_ACTIVE_THREAD_PERCENTAGE CUDA_MPS_PINNED_DEVICE_MEM_LIMIT || true
PIDS=()

cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# expect_eq WHAT GOT WANT
expect_eq() {
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

# expect_in WHAT TEXT PATTERN (grep -E)
expect_in() {
	printf '%s\n' "$2" | grep -Eq -- "$3" || fail "$1: '$3' not in: $2"
}

# json EXPR: evaluates a Python expression over the JSON on stdin (`j`).
json() {
	python3 -c "import json,sys; j=json.load(sys.stdin); print($1)"
}

# run_rc CMD...: runs CMD, prints nothing, sets RC, OUT and ERR.
run_rc() {
	set +e
	OUT=$("$@" 2>"$WORK/stderr")
	RC=$?
	set -e
	ERR=$(cat "$WORK/stderr")
}
