# lib.sh - shared by the daemon's integration tests: `. lib.sh BUILD_DIR`.
# Each test gets its own state dir, run dir (socket, region, MPS pipes) and
# simulated node under $WORK, helpers to start, kill and restart
# gpusliced, and cleanup of every process it started (the daemon, MPS
# control daemons it left, helpers in PIDS) and of $WORK.
set -euo pipefail

B=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
SRC=${GS_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-daemon-test.XXXXXX")
chmod 755 "$WORK"
STATE=$WORK/state
RUNDIR=$WORK/run
SOCK=$RUNDIR/api.sock
export GPUSLICE_SIM_DIR=$WORK/sim
export GPUSLICE_SOCKET=$SOCK
unset GPUSLICE_RUN_DIR CUDA_VISIBLE_DEVICES CUDA_MPS_PIPE_DIRECTORY || true
G=$B/bin/gpuslice
D=$B/bin/gpusliced
LOADGEN=$B/tests/gs-daemon-loadgen
DPID=""
PIDS=()
CLEANUP_CMDS=()   # extra commands cleanup runs (eval'ed), e.g. userdel

if [ ! -x "$D" ] || [ ! -e "$B/sim/libnvidia-ml.so.1" ]; then
	echo "SKIP: this build has no gpusliced or no simulated NVML"
	exit 77
fi

quit_mps() {
	local f
	for f in "$RUNDIR"/mps/*/pipe/nvidia-cuda-mps-control.pid; do
		[ -f "$f" ] || continue
		kill -9 "$(cat "$f")" 2>/dev/null || true
	done
}

cleanup() {
	local p rc=$?
	for p in "${PIDS[@]}"; do
		kill -9 "$p" 2>/dev/null || true
	done
	if [ -n "$DPID" ]; then
		kill -TERM "$DPID" 2>/dev/null || true
		for p in $(seq 30); do
			kill -0 "$DPID" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$DPID" 2>/dev/null || true
		wait "$DPID" 2>/dev/null || true
	fi
	quit_mps
	for p in "${CLEANUP_CMDS[@]}"; do
		eval "$p" >/dev/null 2>&1 || true
	done
	wait 2>/dev/null || true
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -f "$WORK/daemon.log" ]; then
		echo "--- daemon log (last 40 lines) ---" >&2
		tail -40 "$WORK/daemon.log" >&2
	fi
	[ -n "${GS_KEEP_WORK:-}" ] && echo "kept $WORK" >&2 || rm -rf "$WORK"
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

# healthy: the daemon answers /healthz.
healthy() {
	curl -sf --max-time 2 --unix-socket "$SOCK" http://localhost/healthz \
		>/dev/null 2>&1
}

# daemon_up [ARGS...]: starts gpusliced on this test's dirs, on the
# simulated node (asked for explicitly: gpusliced never falls back to it),
# waits for it.
daemon_up() {
	"$D" --state-dir "$STATE" --socket "$SOCK" --gpus sim "$@" \
		>>"$WORK/daemon.log" 2>&1 &
	DPID=$!
	local i
	for i in $(seq 200); do
		healthy && return 0
		kill -0 "$DPID" 2>/dev/null || fail "gpusliced exited at start"
		sleep 0.05
	done
	# Where it is stuck, for the failure report.
	command -v gdb >/dev/null &&
		timeout 30 gdb -p "$DPID" -batch -ex 'thread apply all bt' 2>&1 |
		grep -E '^(Thread|#)' >&2
	fail "gpusliced did not answer within 10 s"
}

# daemon_stop: SIGTERM and wait.
daemon_stop() {
	[ -n "$DPID" ] || return 0
	kill -TERM "$DPID" 2>/dev/null || true
	wait "$DPID" 2>/dev/null || true
	DPID=""
}

# daemon_kill9: SIGKILL and wait (no chance to clean up).
daemon_kill9() {
	[ -n "$DPID" ] || return 0
	kill -9 "$DPID" 2>/dev/null || true
	{ wait "$DPID"; } 2>/dev/null || true
	DPID=""
}

# api METHOD PATH [BODY]: the response body on stdout; the HTTP status in
# $WORK/status (read it with `st`).
api() {
	local args=(-s --max-time 30 --unix-socket "$SOCK" -X "$1" -o "$WORK/body"
		    -w '%{http_code}')
	if [ $# -ge 3 ]; then
		args+=(-H 'Content-Type: application/json' --data-binary "$3")
	fi
	curl "${args[@]}" "http://localhost$2" >"$WORK/status" || true
	cat "$WORK/body"
}

st() {
	cat "$WORK/status"
}

# expect_status WHAT WANT: the last api call's status.
expect_status() {
	expect_eq "$1 (status; body $(cat "$WORK/body"))" "$(st)" "$2"
}

# jq_py JSON EXPR: prints EXPR evaluated over the object d.
jq_py() {
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
v = eval(sys.argv[2])
print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)
' "$1" "$2"
}

# jcheck JSON EXPR: asserts EXPR over the object d.
jcheck() {
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
sys.exit(0 if eval(sys.argv[2]) else 1)
' "$1" "$2" || fail "expected $2 in: $1"
}

# wait_until SECONDS CMD...: polls CMD every 0.1 s.
wait_until() {
	local t=$1 i
	shift
	for i in $(seq $((t * 10))); do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# timed WHAT CMD...: CMD must succeed within 2 s; failures name WHAT and
# $DURING (what the test is doing to the daemon meanwhile).
DURING=${DURING:-}
timed() {
	local what=$1 t0 t1 ms
	shift
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1 || fail "$what failed (or timed out) $DURING"
	t1=$(date +%s%N)
	ms=$(((t1 - t0) / 1000000))
	[ "$ms" -le 2000 ] || fail "$what took ${ms} ms $DURING"
}

# call METHOD PATH [BODY]: succeeds on a 2xx answer within 5 s.
call() {
	local args=(-sf --max-time 5 --unix-socket "$SOCK" -X "$1" -o /dev/null)
	[ $# -ge 3 ] && args+=(-H 'Content-Type: application/json' --data-binary "$3")
	curl "${args[@]}" "http://localhost$2"
}
