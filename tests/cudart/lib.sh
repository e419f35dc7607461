# lib.sh - shared by the cudart tests: the shim tests' helpers (a fresh
# simulated node and run directory per test, `gpuslice run` as RUN), plus
# CUDART_BINS, the nvcc-built programs of this build. Exits 77 (skipped)
# when the build has no sim or nvcc was absent at build time. Source it
# with the build dir in $1.
. "$GS_SRC/tests/integration/shim/lib.sh" "$1"

CUDART_BINS=()
for kind in static shared static-sm90 shared-sm90; do
	[ -x "$B/tests/cudart/gs-cudart-$kind" ] &&
		CUDART_BINS+=("$B/tests/cudart/gs-cudart-$kind")
done
if [ "${#CUDART_BINS[@]}" -eq 0 ]; then
	echo "SKIP: nvcc was not found at build time: no cudart programs"
	exit 77
fi
[ "${#CUDART_BINS[@]}" -eq 4 ] || fail "only ${#CUDART_BINS[@]} of 4 cudart programs were built"

# shim_needs_plain_build: the tests that preload the (uninstrumented) shim
# into these uninstrumented programs cannot load an instrumented sim; in
# the ASan build they are skipped (they run in the normal build).
shim_needs_plain_build() {
	if [ -n "${GS_ASAN_PRELOAD:-}" ]; then
		echo "SKIP: ASan build: programs under the shim run in the normal build"
		exit 77
	fi
}

# sim_only_up [GPUS]: like sim_up, for tests that need no shim.
sim_only_up() {
	local gpus=${1:-1xH100-SXM5-80GB}
	if [ ! -e "$B/sim/libcuda.so.1" ]; then
		echo "SKIP: this build has no simulated GPU"
		exit 77
	fi
	"$B/bin/gpuslice" sim init --gpus "$gpus" --dir "$SIMDIR" >/dev/null ||
		fail "gpuslice sim init --gpus $gpus failed"
	eval "$("$B/bin/gpuslice" sim env --dir "$SIMDIR")"
}
