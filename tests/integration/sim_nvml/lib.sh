# lib.sh - shared by the sim_nvml integration tests: `. lib.sh BUILD_DIR`.
# Gives each test its own node state (GPUSLICE_SIM_DIR) and MPS pipe/log
# directories under $WORK, the paths of the tools, and cleanup of every
# process it started.
set -euo pipefail

B=$(cd "$1" && pwd)
WORK=$(mktemp -d /tmp/gs-simnvml.XXXXXX)
export GPUSLICE_SIM_DIR=$WORK/sim
export CUDA_MPS_PIPE_DIRECTORY=$WORK/pipe
export CUDA_MPS_LOG_DIRECTORY=$WORK/log
unset CUDA_VISIBLE_DEVICES CUDA_MPS_ACTIVE_THREAD_PERCENTAGE || true
PROBE=$B/tests/gs-sim-nvml-probe
SMI=$B/sim/nvidia-smi
MPSC=$B/sim/nvidia-cuda-mps-control
ALLOC=$B/tests/gs-sim-nvml-alloc
LIBCUDA=$B/sim/libcuda.so.1
PIDS=()

cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null || true
	done
	# Any MPS daemon this test left running (by its pid file).
	for f in "$WORK"/pipe*/nvidia-cuda-mps-control.pid; do
		[ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
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

# mps CMD...: runs commands through the control client; prints stdout.
mps() {
	printf '%s\n' "$@" | "$MPSC"
}

# wait_for CMD...: up to 15 s until CMD succeeds (generous: the suite runs
# on loaded 2-core machines).
wait_for() {
	local i
	for i in $(seq 300); do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.05
	done
	fail "timed out waiting for: $*"
}

# not_alive PID: gone, or a zombie nobody has reaped yet.
not_alive() {
	local st
	st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 0
	[ -z "$st" ] || [ "$st" = Z ] || [ "$st" = X ]
}
