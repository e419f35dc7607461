#!/usr/bin/env bash
# gpu-check.sh - `make gpu-check`: what only a real NVIDIA GPU can confirm.
#
#   scripts/gpu-check.sh BUILD_DIR [--out DIR] [--gpu INDEX] [--only LIST] [--sim]
#
# On a machine with an NVIDIA GPU (nvidia-smi lists one and the real
# libcuda.so.1 gives CUDA a device, with gpuslice's sim kept off every
# path), runs these checks against the real driver, each with a time
# limit, each independent of the others:
#
#   memory_cap_<api>   gs-alloc under `gpuslice run --memory 4GiB` for every
#                      allocation API: growth stops at the cap with
#                      CUDA_ERROR_OUT_OF_MEMORY
#   compute_share      three slices --compute 20/30/50 over gs-burn: each
#                      one's GPU time from its own kernel count and the
#                      rate of a burn alone, within 5 points of its share
#   priority           gs-infer --light (high) next to gs-burn (low): p99
#                      against the server alone, and against both normal
#   launch_cost        what the shim adds per kernel launch (the shim's
#                      bench program when built, else gs-matmul with and
#                      without the shim)
#   cudart             tests/gpu/cudart_check.cu built with nvcc (static
#                      cudart, which resolves the driver through
#                      cuGetProcAddress) under a memory cap: cudaMemGetInfo
#                      reports the cap, cudaMalloc past it fails with
#                      cudaErrorMemoryAllocation
#   pytorch            where `import torch` works: allocating past the cap
#                      raises torch.cuda.OutOfMemoryError
#   study              `gpuslice bench study --gpu N --quick` on the real GPU
#   ts_vs_mps          from the study: time-slicing against MPS (only where
#                      nvidia-cuda-mps-control exists and needs no setting)
#
# Writes gpu-check.json and gpu-check.md (in BUILD_DIR/gpu-check, or --out)
# and prints one PASS/FAIL/SKIP line per check. Exit status: 0 when nothing
# failed (and when there is no GPU: it says so and runs nothing), 1 when a
# check failed, 2 for a usage error.
#
# It never changes a GPU setting: no MIG mode, compute mode, persistence
# mode or reset. nvidia-smi is only ever asked to list (-L) and to query.
#
# --sim runs the same checks against a private simulated node instead, to
# test this script where no GPU is at hand; its figures are the sim's.
set -u -o pipefail

usage() {
	sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
}

BUILD=""
OUT=""
GPU=0
ONLY=""
SIM=0
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	--out)
		OUT=${2:?--out needs a directory}
		shift
		;;
	--gpu)
		GPU=${2:?--gpu needs an index}
		shift
		;;
	--only)
		ONLY=${2:?--only needs a list of checks}
		shift
		;;
	--sim) SIM=1 ;;
	-*)
		echo "gpu-check: unknown option $1 (see --help)" >&2
		exit 2
		;;
	*)
		if [ -n "$BUILD" ]; then
			echo "gpu-check: unexpected argument $1" >&2
			exit 2
		fi
		BUILD=$1
		;;
	esac
	shift
done
if [ -z "$BUILD" ]; then
	echo "usage: scripts/gpu-check.sh BUILD_DIR [--out DIR] [--gpu INDEX] [--only LIST] [--sim]" >&2
	exit 2
fi
case $GPU in
'' | *[!0-9]*)
	echo "gpu-check: --gpu takes an index, got '$GPU'" >&2
	exit 2
	;;
esac
if [ ! -x "$BUILD/bin/gpuslice" ]; then
	echo "gpu-check: $BUILD/bin/gpuslice is not built (run make first)" >&2
	exit 2
fi
BUILD=$(cd "$BUILD" && pwd)
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$BUILD/gpu-check}
BIN=$BUILD/bin
GIB=$((1 << 30))

# ---- an environment without the sim -------------------------------------

# A directory holding gpuslice's sim stand-ins (this build's or another's).
is_sim_dir() {
	[ "$1" = "$BUILD/sim" ] && return 0
	[ -f "$1/libcuda.so.1" ] && grep -qa GPUSLICE_SIM_DIR "$1/libcuda.so.1" 2>/dev/null && return 0
	[ -f "$1/nvidia-smi" ] && grep -qa '(simulated)' "$1/nvidia-smi" 2>/dev/null && return 0
	return 1
}

strip_sim() {
	local IFS=: out="" d
	for d in $1; do
		[ -z "$d" ] && continue
		is_sim_dir "$d" && continue
		out=${out:+$out:}$d
	done
	printf '%s' "$out"
}

export PATH=$(strip_sim "${PATH:-/usr/bin:/bin}")
export LD_LIBRARY_PATH=$(strip_sim "${LD_LIBRARY_PATH:-}")
[ -n "$LD_LIBRARY_PATH" ] || unset LD_LIBRARY_PATH
unset GPUSLICE_SIM_DIR CUDA_VISIBLE_DEVICES CUDA_MPS_ACTIVE_THREAD_PERCENTAGE \
	CUDA_MPS_PINNED_DEVICE_MEM_LIMIT

TMP=$(mktemp -d "${TMPDIR:-/tmp}/gs-gpu-check.XXXXXX")
MPS_DIR=$TMP/no-mps
mkdir -p "$TMP/run" "$MPS_DIR"
# A private run directory: no daemon's slices are touched. Workloads that
# are not meant to be MPS clients look for a daemon in an empty directory.
export GPUSLICE_RUN_DIR=$TMP/run CUDA_MPS_PIPE_DIRECTORY=$MPS_DIR
trap 'rm -rf "$TMP"' EXIT

# nvidia-smi, asked only to list and to query (never to change anything).
smi_query() {
	local a
	for a in "$@"; do
		case $a in
		-i | --query-gpu=* | [0-9]*) ;;
		*)
			echo "gpu-check: refusing to pass '$a' to nvidia-smi" >&2
			return 2
			;;
		esac
	done
	timeout -k 5 30 nvidia-smi "$@" --format=csv,noheader,nounits 2>/dev/null
}

# ---- JSON helpers (python3: the build already needs it) -------------------

# jf FILE KEY: a top-level key of the last JSON line of FILE ("" if none).
jf() {
	python3 - "$1" "$2" <<'PY'
import json, sys
val = ""
try:
    lines = [l for l in open(sys.argv[1], errors="replace") if l.startswith("{")]
    if lines:
        v = json.loads(lines[-1]).get(sys.argv[2])
        if v is None:
            val = ""
        elif isinstance(v, bool):
            val = "true" if v else "false"
        else:
            val = str(v)
except Exception:
    pass
print(val)
PY
}

# calc EXPR: float arithmetic and comparisons (prints the value, or 1/0).
calc() {
	python3 -c "import sys; v = eval(sys.argv[1]); print(int(v) if isinstance(v, bool) else v)" "$1"
}

# ---- results ---------------------------------------------------------------

RESULTS=$TMP/results.jsonl
: >"$RESULTS"
FAILED=0

# result STATUS REASON [FIGURES_JSON]: the current check's outcome.
result() {
	local figs=${3:-}
	[ -n "$figs" ] || figs='{}'
	printf '%s\t%s\t%s\n' "$1" "$2" "$figs" >"$TMP/cur"
}

wanted() {
	[ -z "$ONLY" ] && return 0
	case ",$ONLY," in *",$1,"*) return 0 ;; esac
	return 1
}

run_check() {
	local name=$1 fn=$2 t0 t1 status reason figs rc
	wanted "$name" || return 0
	rm -f "$TMP/cur"
	t0=$(date +%s.%N)
	("$fn" "$name") >"$TMP/$name.log" 2>&1
	rc=$?
	t1=$(date +%s.%N)
	if [ -s "$TMP/cur" ]; then
		IFS=$'\t' read -r status reason figs <"$TMP/cur"
	else
		status=fail
		reason="the check ended without a result (exit $rc): $(tail -c 300 "$TMP/$name.log" | tr '\n' ' ')"
		figs='{}'
	fi
	[ "$status" = fail ] && FAILED=$((FAILED + 1))
	printf '%-4s %-22s %s\n' "$(tr a-z A-Z <<<"$status")" "$name" "$reason"
	python3 - "$name" "$status" "$reason" "$figs" "$t0" "$t1" >>"$RESULTS" <<'PY'
import json, sys
name, status, reason, figs, t0, t1 = sys.argv[1:]
try:
    figs = json.loads(figs)
except Exception:
    figs = {"raw": figs}
print(json.dumps({"name": name, "status": status, "reason": reason,
                  "seconds": round(float(t1) - float(t0), 1), "figures": figs}))
PY
}

# ---- finding the GPU --------------------------------------------------------

NO_GPU_WHY=""
detect_gpu() {
	local list serial
	if ! command -v nvidia-smi >/dev/null 2>&1; then
		NO_GPU_WHY="nvidia-smi is not installed"
		return 1
	fi
	if ! list=$(timeout -k 5 30 nvidia-smi -L 2>&1); then
		NO_GPU_WHY="nvidia-smi -L failed: $(head -n 1 <<<"$list")"
		return 1
	fi
	if ! grep -q '^GPU [0-9]' <<<"$list"; then
		NO_GPU_WHY="nvidia-smi lists no GPU"
		return 1
	fi
	serial=$(smi_query -i "$GPU" --query-gpu=serial | head -n 1)
	case $serial in
	SIM*)
		NO_GPU_WHY="the nvidia-smi found is gpuslice's sim"
		return 1
		;;
	esac
	return 0
}

SOURCE=""
if [ "$SIM" = 1 ]; then
	export GPUSLICE_SIM_DIR=$TMP/sim
	if ! "$BIN/gpuslice" sim init --gpus 1xH100-SXM5-80GB --dir "$GPUSLICE_SIM_DIR" >/dev/null; then
		echo "gpu-check: cannot create a simulated node" >&2
		exit 1
	fi
	export LD_LIBRARY_PATH=$BUILD/sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	export PATH=$BUILD/sim:$PATH
	GPU=0
	SOURCE="sim (a self-test of gpu-check: the figures are the sim's, not a GPU's)"
elif ! detect_gpu; then
	echo "gpu-check: no NVIDIA GPU here ($NO_GPU_WHY); nothing to check. The simulated-GPU tests (make test) cover the rest."
	exit 0
fi

UUID=$(smi_query -i "$GPU" --query-gpu=uuid | head -n 1 | tr -d ' ')
NAME=$(smi_query -i "$GPU" --query-gpu=name | head -n 1)
DRIVER=$(smi_query -i "$GPU" --query-gpu=driver_version | head -n 1)
MEM_MIB=$(smi_query -i "$GPU" --query-gpu=memory.total | head -n 1 | tr -d ' ')
CMODE=$(smi_query -i "$GPU" --query-gpu=compute_mode | head -n 1)
MIG=$(smi_query -i "$GPU" --query-gpu=mig.mode.current | head -n 1)
if [ -z "$UUID" ]; then
	echo "gpu-check: nvidia-smi gives no UUID for GPU $GPU" >&2
	exit 1
fi
[ -n "$SOURCE" ] || SOURCE="$NAME, driver $DRIVER"
export CUDA_VISIBLE_DEVICES=$UUID
mkdir -p "$OUT"
echo "gpu-check: GPU $GPU: $NAME ($UUID), driver $DRIVER, compute mode $CMODE, MIG $MIG"
echo "gpu-check: source of every figure below: $SOURCE"

# CUDA itself must see the GPU through the real driver.
if ! timeout -k 5 60 "$BIN/gs-alloc" --api plain --chunk 1MiB --limit 1MiB >"$TMP/probe.json" 2>&1; then
	why=$(tail --bytes=300 "$TMP/probe.json")
	echo "FAIL cuda_probe             GPU $GPU is listed but CUDA cannot use it: $why"
	exit 1
fi
echo "gpu-check: CUDA reaches it: $(jf "$TMP/probe.json" source) through $(jf "$TMP/probe.json" resolve)"

G=("$BIN/gpuslice" run --run-dir "$TMP/run")

# ---- checks -----------------------------------------------------------------

# One allocation API under a 4 GiB cap: growth must stop at the cap with
# CUDA_ERROR_OUT_OF_MEMORY (not at the 8 GiB safety limit).
check_memory_cap() {
	local api=${1#memory_cap_} f=$TMP/$1.json got err stopped
	if [ "$MEM_MIB" -lt 6144 ] 2>/dev/null; then
		result skip "GPU has only $MEM_MIB MiB; the check caps at 4 GiB"
		return
	fi
	timeout -k 5 120 "${G[@]}" --memory 4GiB -- "$BIN/gs-alloc" --api "$api" \
		--chunk 256MiB --limit 8GiB >"$f" 2>"$f.err"
	got=$(jf "$f" allocated_bytes)
	err=$(jf "$f" error)
	stopped=$(jf "$f" stopped)
	if [ -z "$got" ]; then
		result fail "gs-alloc printed nothing: $(tail -c 200 "$f.err" | tr '\n' ' ')"
		return
	fi
	local figs="{\"api\":\"$api\",\"cap_bytes\":$((4 * GIB)),\"allocated_bytes\":$got,\"error\":\"$err\",\"stopped\":\"$stopped\"}"
	if [ "$err" = CUDA_ERROR_NOT_SUPPORTED ]; then
		result skip "this GPU or driver does not support the $api API" "$figs"
	elif [ "$(calc "$got <= 4 * $GIB and $got >= 3 * $GIB")" = 1 ] &&
		[ "$err" = CUDA_ERROR_OUT_OF_MEMORY ]; then
		result pass "stopped at $(calc "round($got / $GIB, 2)") GiB of a 4 GiB cap with $err" "$figs"
	else
		result fail "allocated $(calc "round($got / $GIB, 2)") GiB under a 4 GiB cap, then ${err:-no error} (stopped: $stopped)" "$figs"
	fi
}

# Three slices of 20, 30 and 50 % over gs-burn at once. Each job's GPU
# time = its kernels x (burn time alone per kernel); its share = that over
# its wall time.
check_compute_share() {
	local a=$TMP/share-alone.json k w rate pids=() i fail=0 figs="" msg=""
	timeout -k 5 60 "$BIN/gs-burn" --seconds 5 >"$a" 2>&1
	k=$(jf "$a" kernels)
	w=$(jf "$a" wall_s)
	if [ -z "$k" ] || [ -z "$w" ]; then
		result fail "gs-burn alone failed: $(tail -c 200 "$a" | tr '\n' ' ')"
		return
	fi
	rate=$(calc "$k / $w")
	for i in 20 30 50; do
		timeout -k 5 120 "${G[@]}" --compute "$i" -- "$BIN/gs-burn" --seconds 10 \
			>"$TMP/share-$i.json" 2>"$TMP/share-$i.err" &
		pids+=($!)
	done
	wait "${pids[@]}"
	for i in 20 30 50; do
		k=$(jf "$TMP/share-$i.json" kernels)
		w=$(jf "$TMP/share-$i.json" wall_s)
		if [ -z "$k" ] || [ -z "$w" ]; then
			result fail "the --compute $i job failed: $(tail -c 200 "$TMP/share-$i.err" | tr '\n' ' ')"
			return
		fi
		local got
		got=$(calc "round(100 * $k / $rate / $w, 1)")
		figs="$figs\"share_${i}_pct\":$got,"
		msg="$msg $i%->$got%"
		[ "$(calc "abs($got - $i) <= 5")" = 1 ] || fail=1
	done
	figs="{${figs}\"alone_kernels_per_s\":$rate,\"tolerance_points\":5}"
	if [ $fail = 0 ]; then
		result pass "each slice within 5 points:$msg" "$figs"
	else
		result fail "a slice is more than 5 points off:$msg" "$figs"
	fi
}

# gs-infer --light in a high-priority slice next to gs-burn in a low one;
# the same with both at normal priority; the server alone as the base.
check_priority() {
	local base p_hi p_norm b
	timeout -k 5 60 "${G[@]}" --priority high -- "$BIN/gs-infer" --light --seconds 6 >"$TMP/prio-alone.json" 2>/dev/null
	base=$(jf "$TMP/prio-alone.json" p99_ms)
	for mode in high normal; do
		local lo=low
		[ $mode = normal ] && lo=normal
		timeout -k 5 60 "${G[@]}" --priority $lo -- "$BIN/gs-burn" --seconds 9 >"$TMP/prio-burn-$mode.json" 2>/dev/null &
		b=$!
		sleep 1.5
		timeout -k 5 60 "${G[@]}" --priority $mode -- "$BIN/gs-infer" --light --seconds 6 >"$TMP/prio-$mode.json" 2>/dev/null
		wait $b
	done
	p_hi=$(jf "$TMP/prio-high.json" p99_ms)
	p_norm=$(jf "$TMP/prio-normal.json" p99_ms)
	if [ -z "$base" ] || [ -z "$p_hi" ] || [ -z "$p_norm" ]; then
		result fail "a gs-infer run failed (alone: ${base:-none}, high: ${p_hi:-none}, normal: ${p_norm:-none} ms)"
		return
	fi
	local r_hi r_norm figs
	r_hi=$(calc "round($p_hi / $base, 2)")
	r_norm=$(calc "round($p_norm / $base, 2)")
	figs="{\"p99_alone_ms\":$base,\"p99_high_next_to_low_burn_ms\":$p_hi,\"p99_normal_next_to_normal_burn_ms\":$p_norm,\"ratio_high\":$r_hi,\"ratio_normal\":$r_norm}"
	if [ "$(calc "$r_hi <= 2 or $r_hi <= 0.5 * $r_norm")" = 1 ]; then
		result pass "p99 ${base} ms alone, ${p_hi} ms (x$r_hi) high next to a low burn, ${p_norm} ms (x$r_norm) both normal" "$figs"
	else
		result fail "high priority does not protect p99: ${base} ms alone, ${p_hi} ms (x$r_hi) high, ${p_norm} ms (x$r_norm) normal" "$figs"
	fi
}

# The shim's added cost per kernel launch: its bench program when built
# (shim/bench_shim.c), else gs-matmul with and without the shim.
check_launch_cost() {
	local bench=$BIN/gs-bench-shim f=$TMP/launch.out
	if [ -x "$bench" ]; then
		if ! timeout -k 5 300 "$bench" "$BUILD/lib/libgpuslice.so" >"$f" 2>&1; then
			result fail "gs-bench-shim failed: $(tail -c 200 "$f" | tr '\n' ' ')"
			return
		fi
		local a l
		a=$(jf "$f" launch_added_ns)
		l=$(jf "$f" launch_limited_added_ns)
		if [ -z "$a" ]; then
			result fail "gs-bench-shim printed no figures: $(tail -c 200 "$f" | tr '\n' ' ')"
			return
		fi
		result pass "gs-bench-shim: +$a ns per cuLaunchKernel without a compute limit, +$l ns with one" \
			"$(grep '^{' "$f" | tail -n 1)"
		return
	fi
	local n=100000 plain shim
	timeout -k 5 120 "$BIN/gs-matmul" --n 16 --iterations $n >"$TMP/lc-plain.json" 2>&1
	timeout -k 5 120 "${G[@]}" -- "$BIN/gs-matmul" --n 16 --iterations $n >"$TMP/lc-shim.json" 2>&1
	plain=$(jf "$TMP/lc-plain.json" wall_s)
	shim=$(jf "$TMP/lc-shim.json" wall_s)
	if [ -z "$plain" ] || [ -z "$shim" ]; then
		result fail "gs-matmul failed (plain: ${plain:-none}, under the shim: ${shim:-none})"
		return
	fi
	local us
	us=$(calc "round(($shim - $plain) / $n * 1e6, 2)")
	if [ "$(calc "$us <= 0")" = 1 ]; then
		result pass "no measurable added cost per launch (gs-matmul --n 16, $n launches: ${plain} s plain, ${shim} s under the shim; no shim bench program is built)" \
			"{\"added_us_per_launch\":$us,\"launches\":$n,\"plain_s\":$plain,\"shim_s\":$shim}"
		return
	fi
	result pass "about $us us added per launch (gs-matmul --n 16, $n launches: ${plain} s plain, ${shim} s under the shim; no shim bench program is built)" \
		"{\"added_us_per_launch\":$us,\"launches\":$n,\"plain_s\":$plain,\"shim_s\":$shim}"
}

# A CUDA runtime program (static cudart: cuGetProcAddress) under a cap.
check_cudart() {
	local nvcc cap=$((2 * GIB)) f=$TMP/cudart.json
	# The sim backs allocations up to 256 MiB with host memory (larger
	# ones read as zeros), and the check writes into a quarter of the cap.
	[ "$SIM" = 1 ] && cap=$((1 * GIB))
	nvcc=$(command -v nvcc || true)
	[ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc
	if [ -z "$nvcc" ]; then
		result skip "nvcc is not installed"
		return
	fi
	if ! timeout -k 5 300 "$nvcc" -O2 -o "$TMP/cudart_check" "$SRC/tests/gpu/cudart_check.cu" >"$TMP/nvcc.log" 2>&1; then
		result fail "nvcc could not build tests/gpu/cudart_check.cu: $(tail -c 300 "$TMP/nvcc.log" | tr '\n' ' ')"
		return
	fi
	if ! timeout -k 5 60 "$TMP/cudart_check" >"$TMP/cudart-plain.json" 2>&1; then
		result fail "cudart_check fails even without the shim: $(tail -c 300 "$TMP/cudart-plain.json" | tr '\n' ' ')"
		return
	fi
	timeout -k 5 60 "${G[@]}" --memory $cap -- "$TMP/cudart_check" --cap $cap >"$f" 2>"$f.err"
	local figs
	figs=$(tail -n 1 "$f")
	case $figs in "{"*) ;; *) figs='{}' ;; esac
	if [ "$(jf "$f" ok)" = true ]; then
		result pass "cudaMemGetInfo total $(jf "$f" mem_get_info_total) = cap; cudaMalloc past the cap: $(jf "$f" malloc_past_cap)" "$figs"
	else
		result fail "under a $cap-byte cap: cudaMemGetInfo total $(jf "$f" mem_get_info_total), within cap $(jf "$f" malloc_within_cap), kernel ok $(jf "$f" kernel_ok), past cap $(jf "$f" malloc_past_cap) $(jf "$f" error)" "$figs"
	fi
}

# PyTorch, where it is installed with CUDA.
check_pytorch() {
	if [ "$SIM" = 1 ]; then
		result skip "PyTorch's kernels ship as SASS (cuBLAS, cuDNN), which the sim cannot load"
		return
	fi
	if ! timeout -k 5 120 python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
		result skip "python3 cannot import torch with CUDA"
		return
	fi
	cat >"$TMP/torch_cap.py" <<'PY'
import json, torch
cap = 2 << 30
small = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
try:
    big = torch.empty(cap, dtype=torch.uint8, device="cuda")
    outcome = "no error"
except torch.cuda.OutOfMemoryError:
    outcome = "torch.cuda.OutOfMemoryError"
except Exception as e:
    outcome = type(e).__name__ + ": " + str(e)[:200]
free, total = torch.cuda.mem_get_info()
print(json.dumps({"outcome": outcome, "mem_get_info_total": total,
                  "torch": torch.__version__, "cap_bytes": cap}))
PY
	timeout -k 5 180 "${G[@]}" --memory 2GiB -- python3 "$TMP/torch_cap.py" >"$TMP/torch.json" 2>"$TMP/torch.err"
	local o
	o=$(jf "$TMP/torch.json" outcome)
	if [ "$o" = torch.cuda.OutOfMemoryError ]; then
		result pass "allocating 2 GiB more under a 2 GiB cap raised $o (mem_get_info total $(jf "$TMP/torch.json" mem_get_info_total))" "$(tail -n 1 "$TMP/torch.json")"
	else
		result fail "under a 2 GiB cap: ${o:-the script failed: $(tail -c 200 "$TMP/torch.err" | tr '\n' ' ')}"
	fi
}

# The seed study on this GPU (quick).
check_study() {
	if timeout -k 10 1200 "$BIN/gpuslice" bench study --gpu "$GPU" --quick --out "$OUT/study" \
		>"$TMP/study.out" 2>"$TMP/study.err"; then
		local summary
		summary=$(python3 - "$OUT/study/study.json" <<'PY'
import collections, json, sys
c = collections.Counter(x["status"] for x in json.load(open(sys.argv[1])))
print(", ".join("%d %s" % (n, s) for s, n in sorted(c.items())))
PY
		)
		result pass "cells: $summary; see $OUT/study/study.md" "{\"dir\":\"$OUT/study\"}"
	else
		result fail "gpuslice bench study failed: $(tail -c 300 "$TMP/study.err" | tr '\n' ' ')"
	fi
}

# Time-slicing against MPS, read from the study's small-batch cells.
check_ts_vs_mps() {
	local j=$OUT/study/study.json
	if [ ! -f "$j" ]; then
		result skip "the study did not run"
		return
	fi
	python3 - "$j" >"$TMP/tsmps" <<'PY'
import json, sys
cells = {(c["workload"], c["strategy"]): c for c in json.load(open(sys.argv[1]))}
ts, mps = cells.get(("small-batch", "time-slicing")), cells.get(("small-batch", "mps"))
if mps is None or mps["status"] == "skipped":
    print("skip\t" + (mps or {}).get("reason", "no MPS cell") + "\t{}")
elif ts is None or ts["status"] != "ok" or mps["status"] != "ok":
    print("fail\ttime-slicing: %s, MPS: %s\t{}" % (ts and (ts["reason"] or ts["status"]), mps["reason"] or mps["status"]))
else:
    f = {"ts_4_jobs_s": ts["completion_s"], "mps_4_jobs_s": mps["completion_s"],
         "ts_alone_s": ts["completion_alone_s"], "mps_alone_s": mps["completion_alone_s"]}
    print("pass\t4 matmul jobs: %.2f s time-sliced, %.2f s under MPS (alone %.2f / %.2f s)\t%s"
          % (f["ts_4_jobs_s"], f["mps_4_jobs_s"], f["ts_alone_s"], f["mps_alone_s"], json.dumps(f)))
PY
	if [ -s "$TMP/tsmps" ]; then
		cp "$TMP/tsmps" "$TMP/cur"
	else
		result fail "could not read $j"
	fi
}

for api in plain pitch managed async pool vmm array; do
	run_check "memory_cap_$api" check_memory_cap
done
run_check compute_share check_compute_share
run_check priority check_priority
run_check launch_cost check_launch_cost
run_check cudart check_cudart
run_check pytorch check_pytorch
run_check study check_study
run_check ts_vs_mps check_ts_vs_mps

# ---- reports ------------------------------------------------------------------

python3 - "$RESULTS" "$OUT" "$SOURCE" "$GPU" "$UUID" <<'PY'
import json, sys, time
results, out, source, gpu, uuid = sys.argv[1:]
checks = [json.loads(l) for l in open(results) if l.strip()]
count = {s: sum(1 for c in checks if c["status"] == s) for s in ("pass", "fail", "skip")}
doc = {"source": source, "gpu": int(gpu), "uuid": uuid,
       "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "checks": checks,
       "passed": count["pass"], "failed": count["fail"], "skipped": count["skip"]}
json.dump(doc, open(out + "/gpu-check.json", "w"), indent=2)
with open(out + "/gpu-check.md", "w") as f:
    f.write("# gpu-check\n\nSource: %s (GPU %s, %s). %d passed, %d failed, %d skipped.\n\n"
            % (source, gpu, uuid, count["pass"], count["fail"], count["skip"]))
    f.write("| check | result | seconds | details |\n|---|---|---|---|\n")
    for c in checks:
        f.write("| %s | %s | %s | %s |\n" % (c["name"], c["status"].upper(), c["seconds"],
                                            c["reason"].replace("|", "\\|")))
PY
echo "gpu-check: $(grep -c '"status": "pass"' "$RESULTS" || true) passed, $FAILED failed; wrote $OUT/gpu-check.json and $OUT/gpu-check.md"
[ "$FAILED" = 0 ]
