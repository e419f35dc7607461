#!/usr/bin/env bash
# gpusliced runs on a simulated node only when asked (gpus: sim). With
# gpus: auto and NVML absent, broken (no entry points) or the simulator's
# own library, it says why and exits non-zero instead of accepting slices
# on a simulated GPU; with --gpus sim it starts.
. "$(dirname "$0")/lib.sh" "$1"

# refuses CFG WHAT: gpusliced with config CFG exits non-zero within 10 s,
# names NVML and gpus: sim in its message, and never opens its socket.
refuses() {
	local log=$WORK/refuse.log rc=0
	rm -rf "$STATE" "$RUNDIR"
	timeout 10 "$D" --state-dir "$STATE" --socket "$SOCK" --config "$1" \
		>"$log" 2>&1 || rc=$?
	[ "$rc" -ne 0 ] || fail "$2: gpusliced started (exit 0): $(cat "$log")"
	[ "$rc" -ne 124 ] || fail "$2: gpusliced still running after 10 s (it fell back?)"
	grep -q 'NVML' "$log" || fail "$2: message does not name NVML: $(cat "$log")"
	grep -q 'gpus: sim' "$log" || fail "$2: message does not say how to ask for the sim: $(cat "$log")"
	[ ! -S "$SOCK" ] || fail "$2: the API socket exists"
}

printf 'node:\n  gpus: auto\n  nvml_library: %s\n' "$WORK/absent/libnvidia-ml.so.1" >"$WORK/absent.yaml"
refuses "$WORK/absent.yaml" "absent NVML"

# A library that loads but is not NVML (a driver/library mismatch).
libc=$(ldd "$D" | awk '/libc.so/ {print $3; exit}')
printf 'node:\n  gpus: auto\n  nvml_library: %s\n' "$libc" >"$WORK/broken.yaml"
refuses "$WORK/broken.yaml" "broken NVML"

# The simulator's NVML, found through auto, is not a GPU either.
"$G" sim init --gpus 2xH100-SXM5-80GB --dir "$GPUSLICE_SIM_DIR" >/dev/null
printf 'node:\n  gpus: auto\n  nvml_library: %s\n' "$B/sim/libnvidia-ml.so.1" >"$WORK/simlib.yaml"
refuses "$WORK/simlib.yaml" "simulator's NVML under gpus: auto"

# Asked for explicitly, the simulated node serves.
rm -rf "$STATE" "$RUNDIR"
daemon_up
src=$(api GET /v1/gpus)
expect_status "GET /v1/gpus" 200
jcheck "$src" 'd["source"] == "sim" and len(d["gpus"]) == 2'
echo "ok: gpus auto refuses absent, broken and simulated NVML; gpus sim starts"
