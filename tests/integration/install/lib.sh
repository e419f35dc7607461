# lib.sh - shared by the install tests: `. lib.sh BUILD_DIR`.
# $WORK is a scratch directory (removed at exit, with every process the
# test started: PIDS, and MPS control daemons found under $WORK).
set -euo pipefail

B=$(cd "${1:?usage: $0 BUILD_DIR}" && pwd)
SRC=${GS_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gs-install-test.XXXXXX")
chmod 755 "$WORK"
PIDS=()
unset GPUSLICE_SHIM GPUSLICE_SIM_DIR GPUSLICE_SOCKET GPUSLICE_RUN_DIR \
	CUDA_VISIBLE_DEVICES CUDA_MPS_PIPE_DIRECTORY LD_PRELOAD || true

# The prefix this build was configured for, and where its unit points.
PREFIX=$(sed -n 's/^CMAKE_INSTALL_PREFIX:[A-Z]*=//p' "$B/CMakeCache.txt")
PREFIX=${PREFIX:-/usr/local}
if [ "$PREFIX" = /usr ]; then ETC=/etc; else ETC=$PREFIX/etc; fi

# Processes whose executable or command line lies under $WORK.
work_procs() {
	local p exe
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null || true)
		case $exe in "$WORK"/*) echo "${p#/proc/}" ;; esac
	done
}

install_cleanup() {
	local p rc=$?
	for p in "${PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
	done
	sleep 0.3
	for p in "${PIDS[@]}" $(work_procs); do
		kill -9 "$p" 2>/dev/null || true
	done
	# MPS control daemons whose pipe directory is ours
	for p in $(find "$WORK" -name nvidia-cuda-mps-control.pid -exec cat {} + 2>/dev/null); do
		kill -9 "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		for p in "$WORK"/*.log; do
			[ -f "$p" ] || continue
			echo "--- $p (last 30 lines) ---" >&2
			tail -30 "$p" >&2
		done
	fi
	[ -n "${GS_KEEP_WORK:-}" ] && echo "kept $WORK" >&2 || rm -rf "$WORK"
}
trap install_cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $*"
	exit 77
}

# wait_until SECONDS CMD...: polls CMD every 0.1 s.
wait_until() {
	local n=$(($1 * 10))
	shift
	while [ $n -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# healthy SOCKET: the daemon behind SOCKET answers /healthz.
healthy() {
	curl -sf --max-time 2 --unix-socket "$1" http://localhost/healthz
}

# no_build_paths ROOT: no installed ELF file's data names the build tree
# (debug info may, and assert()'s __FILE__ names sources in a Debug build;
# neither is a path looked up at run time).
no_build_paths() {
	local f sec
	while IFS= read -r f; do
		head -c4 "$f" | grep -q 'ELF' || continue
		for sec in .rodata .data .data.rel.ro .dynamic .dynstr; do
			objcopy -O binary --only-section="$sec" "$f" "$WORK/sec" 2>/dev/null || continue
			if grep -qaF "$B" "$WORK/sec"; then
				fail "$f: its $sec names the build tree $B"
			fi
		done
	done < <(find "$1" -type f)
}

# capped_alloc G ALLOC: gs-alloc under `G run --memory 1GiB` stops with
# CUDA_ERROR_OUT_OF_MEMORY at or under 1 GiB (the simulator's env set).
capped_alloc() {
	local out
	out=$("$1" run --memory 1GiB -- "$2" --api plain --chunk 128MiB) ||
		fail "gpuslice run exited $?: $out"
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
assert d["error"] == "CUDA_ERROR_OUT_OF_MEMORY", d
assert 0 < d["allocated_bytes"] <= 2**30, d
' "$out" || fail "the workload was not capped at 1 GiB: $out"
}
