#!/usr/bin/env bash
# gpu-check.sh - `make gpu-check`: what only a real NVIDIA GPU can confirm.
#
#   gpu-check.sh [DIR] [--out DIR] [--budget SECONDS] [--gpu INDEX]
#                [--only LIST] [--sim]
#
# DIR holds bin/gpuslice, lib/libgpuslice.so and the workload kit: a
# build directory, or a folder `make gpu-stage` made (scripts/gpu-stage.sh:
# the binaries, the shared libraries they need in lib/deps, a prebuilt
# CUDA-runtime check, this script at its top). From a staged folder DIR
# may be left out: the script's own folder is used. Nothing is built and
# nothing is installed: it runs offline, on a machine with no compiler.
#
# Preflight first: LD_PRELOAD and every GPUSLICE_* variable cleared, the
# sim on no path, ldd finding every library of every staged program, the
# real driver answering (nvidia-smi lists the GPU, CUDA reaches it). Then,
# most important first, each with its own time limit:
#
#   memory_cap_plain   gs-alloc under `gpuslice run --memory 4GiB`: growth
#                      stops at the cap with CUDA_ERROR_OUT_OF_MEMORY
#   cudart             a CUDA runtime program (static cudart, which finds the
#                      driver through cuGetProcAddress) under a cap:
#                      cudaMemGetInfo reports the cap, cudaMalloc past it
#                      fails with cudaErrorMemoryAllocation
#   pytorch            where `import torch` works: allocating past the cap
#                      raises torch.cuda.OutOfMemoryError
#   swap               a swap round trip of a PyTorch process's tensors
#                      under `gpuslice run --swap` (a CUDA runtime program
#                      where torch cannot be imported, said so): checksums
#                      equal after; prints the swap-in and swap-out rates
#                      (tests/gpu/swap_check.sh)
#   compute_share      slices of 20, 30 and 40 % over gs-burn at once: each
#                      one's share of what the three got within 5 points of
#                      its share of 90, and none above its share by more
#                      than 5 points (90 in all leaves the arbiter headroom:
#                      20+30+50 asked for the whole GPU, which three
#                      processes never quite get)
#   launch_cost        what the shim adds per kernel launch (gs-bench-shim,
#                      else gs-matmul with and without the shim): fails
#                      above 50 us per launch
#   memory_cap_<api>   the same cap for pitch, managed, async, pool, vmm and
#                      array allocations
#   priority           gs-infer --light (high) next to gs-burn (low): p99
#                      against the server alone, and against both normal
#   study              `gpuslice bench study --quick`, cut off at 4 minutes:
#                      fails when a cell failed or it did not finish
#   ts_vs_mps          from the study: time-slicing against MPS
#
# --budget SECONDS (default 540) bounds the whole run: a check that no
# longer fits in what is left is skipped and says so, and a check still
# running when the budget ends is stopped and reported as cut off.
# gpu-check.json and gpu-check.md (in --out, default DIR/gpu-check) are
# rewritten after every check, and every check's log is kept in
# gpu-check-logs.tar.gz beside them, so a run stopped half-way still
# leaves its results. One PASS/FAIL/SKIP line per check on stdout. Exit
# status: 0 when nothing failed (and when there is no GPU: it says so and
# runs nothing), 1 when a check or the preflight failed, 2 for a usage
# error.
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
BUDGET=540
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
	--budget)
		BUDGET=${2:?--budget needs seconds}
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
SELF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "$BUILD" ] && [ -x "$SELF_DIR/bin/gpuslice" ]; then
	BUILD=$SELF_DIR # run from a staged folder
fi
if [ -z "$BUILD" ]; then
	echo "usage: gpu-check.sh [DIR] [--out DIR] [--budget SECONDS] [--gpu INDEX] [--only LIST] [--sim]" >&2
	exit 2
fi
case $BUDGET in
'' | *[!0-9]*)
	echo "gpu-check: --budget takes whole seconds, got '$BUDGET'" >&2
	exit 2
	;;
esac
case $GPU in
'' | *[!0-9]*)
	echo "gpu-check: --gpu takes an index, got '$GPU'" >&2
	exit 2
	;;
esac
if [ ! -x "$BUILD/bin/gpuslice" ]; then
	echo "gpu-check: $BUILD/bin/gpuslice is not built (run make, or make gpu-stage)" >&2
	exit 2
fi
BUILD=$(cd "$BUILD" && pwd)
OUT=${OUT:-$BUILD/gpu-check}
BIN=$BUILD/bin
SHIM=$BUILD/lib/libgpuslice.so
GIB=$((1 << 30))
START=$(date +%s)
# A staged folder: its own copies of the shared libraries, the prebuilt
# CUDA-runtime check and that check's source; a build directory: the
# source tree's.
STAGED=0
DEPS_PATH=""
if [ -f "$BUILD/STAGED" ]; then
	STAGED=1
	CUDART_SRC=$BUILD/checks/cudart_check.cu
	CUDART_BIN=$BUILD/checks/cudart_check
	CHECKS_DIR=$BUILD/checks
	# The staged copies of the libraries only where this machine lacks
	# one: an older libstdc++ or libssl first on the path could break
	# what the machine's own programs (PyTorch) need.
	if [ -d "$BUILD/lib/deps" ] &&
		for f in "$BUILD"/bin/* "$BUILD"/lib/*.so; do ldd "$f" 2>/dev/null; done | grep -q 'not found'; then
		DEPS_PATH=$BUILD/lib/deps
		export LD_LIBRARY_PATH=$DEPS_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
	fi
else
	SRC=$(cd "$SELF_DIR/.." && pwd)
	CUDART_SRC=$SRC/tests/gpu/cudart_check.cu
	CUDART_BIN=""
	CHECKS_DIR=$SRC/tests/gpu
fi

# ---- an environment without the sim -------------------------------------

# A directory holding gpuslice's sim stand-ins (this build's or another's).
is_sim_dir() {
	[ "$1" = "$BUILD/sim" ] && return 0
	[ "$(cd "$1" 2>/dev/null && pwd)" = "$BUILD/sim" ] && return 0
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
trap 'archive_logs; rm -rf "$TMP"' EXIT

# Every check's log (and the preflight's) in one archive beside the
# reports; rewritten after each check.
archive_logs() {
	[ -d "$OUT" ] || return 0
	tar -C "$TMP" --exclude=./sim --exclude=./run --exclude=./no-mps \
		--exclude='*.sock' -czf "$OUT/gpu-check-logs.tar.gz.tmp" . 2>/dev/null &&
		mv "$OUT/gpu-check-logs.tar.gz.tmp" "$OUT/gpu-check-logs.tar.gz"
}

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

# kill_tree PID: PID and everything it started, children first.
kill_tree() {
	local c
	for c in $(pgrep -P "$1" 2>/dev/null); do
		kill_tree "$c"
	done
	kill -TERM "$1" 2>/dev/null || true
}

# Stopped from outside (SIGTERM, ^C): the running check goes too; the
# EXIT trap keeps the logs.
CPID=""
on_signal() {
	[ -z "$CPID" ] || kill_tree "$CPID"
	echo "gpu-check: stopped; the reports hold the checks finished so far" >&2
	exit 130
}
trap on_signal TERM INT

# run_check NAME FUNCTION NEED: runs the check when at least NEED seconds
# (what it usually takes) of the budget are left, stops it when the budget
# runs out, records its result and rewrites the reports.
run_check() {
	local name=$1 fn=$2 need=$3 t0 t1 status reason figs rc=0 left cpid cut=0
	wanted "$name" || return 0
	rm -f "$TMP/cur"
	t0=$(date +%s.%N)
	left=$((BUDGET - ($(date +%s) - START)))
	if [ "$left" -lt "$need" ]; then
		result skip "does not fit in the budget: needs about $need s, $left s of --budget $BUDGET left"
	else
		("$fn" "$name") >"$TMP/$name.log" 2>&1 &
		cpid=$!
		CPID=$cpid
		while kill -0 "$cpid" 2>/dev/null; do
			if [ $(($(date +%s) - START)) -ge "$BUDGET" ]; then
				kill_tree "$cpid"
				cut=1
				break
			fi
			sleep 0.2
		done
		wait "$cpid"
		rc=$?
		if [ "$cut" = 1 ]; then
			result skip "cut off: the --budget of $BUDGET s ran out after $(calc "round($(date +%s.%N) - $t0)") s of this check"
		fi
	fi
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
	write_reports
}

# gpu-check.json and gpu-check.md from the results so far (atomically).
write_reports() {
	mkdir -p "$OUT"
	python3 - "$RESULTS" "$OUT" "$SOURCE" "$GPU" "${UUID:-}" "$BUDGET" "$(($(date +%s) - START))" "${PREFLIGHT:-}" <<'PY'
import json, os, sys, time
results, out, source, gpu, uuid, budget, used, preflight = sys.argv[1:]
checks = [json.loads(l) for l in open(results) if l.strip()]
count = {s: sum(1 for c in checks if c["status"] == s) for s in ("pass", "fail", "skip")}
doc = {"source": source, "gpu": int(gpu), "uuid": uuid,
       "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "budget_s": int(budget),
       "used_s": int(used), "preflight": preflight, "checks": checks,
       "passed": count["pass"], "failed": count["fail"], "skipped": count["skip"]}
with open(out + "/gpu-check.json.tmp", "w") as f:
    json.dump(doc, f, indent=2)
os.replace(out + "/gpu-check.json.tmp", out + "/gpu-check.json")
with open(out + "/gpu-check.md.tmp", "w") as f:
    f.write("# gpu-check\n\nSource: %s (GPU %s, %s). %d passed, %d failed, %d skipped; %s of a %s s budget used.\n\nPreflight %s.\n\n"
            % (source, gpu, uuid, count["pass"], count["fail"], count["skip"], used, budget, preflight))
    f.write("| check | result | seconds | details |\n|---|---|---|---|\n")
    for c in checks:
        f.write("| %s | %s | %s | %s |\n" % (c["name"], c["status"].upper(), c["seconds"],
                                            c["reason"].replace("|", "\\|")))
os.replace(out + "/gpu-check.md.tmp", out + "/gpu-check.md")
PY
	archive_logs
}

# ---- preflight: the staged programs load, nothing of the sim leaks -----------

command -v python3 >/dev/null || {
	echo "FAIL preflight               python3 is missing (the reports are written with it)"
	exit 1
}
PRE=$TMP/preflight.log
: >"$PRE"
missing=""
for f in "$BIN"/* "$BUILD"/lib/*.so ${CUDART_BIN:+"$CUDART_BIN"}; do
	[ -f "$f" ] && head -c 4 "$f" 2>/dev/null | grep -q ELF || continue
	out=$(ldd "$f" 2>&1) || true
	echo "== $f" >>"$PRE"
	echo "$out" >>"$PRE"
	if grep -q 'not found' <<<"$out"; then
		missing="$missing $(basename "$f"):$(grep 'not found' <<<"$out" | awk '{print $1}' | tr '\n' ',')"
	fi
done
if [ -n "$missing" ]; then
	echo "FAIL preflight               ldd finds no library for:$missing (stage with make gpu-stage on a machine that builds)"
	mkdir -p "$OUT" && cp "$PRE" "$OUT/preflight.log"
	exit 1
fi
leak=""
[ -n "${LD_PRELOAD:-}" ] && leak="$leak LD_PRELOAD"
# (GPUSLICE_RUN_DIR is this script's own: a private, empty run directory)
[ -n "$(compgen -e | grep '^GPUSLICE_' | grep -vx GPUSLICE_RUN_DIR || true)" ] && leak="$leak GPUSLICE_*"
if [ "$SIM" = 0 ]; then
	for d in ${PATH//:/ } ${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }}; do
		is_sim_dir "$d" && leak="$leak sim-dir:$d"
	done
fi
if [ -n "$leak" ]; then
	echo "FAIL preflight               still set after clearing:$leak"
	exit 1
fi
echo "gpu-check: preflight: every staged program's libraries found; LD_PRELOAD, GPUSLICE_* and the sim off every path" | tee -a "$PRE"

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
	echo "SKIP swap                   no GPU: no swap round trip of a PyTorch process (tests/gpu/swap_check.sh); the sim's swap tests cover the mechanism"
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
echo "gpu-check: CUDA reaches it: $(jf "$TMP/probe.json" source) through $(jf "$TMP/probe.json" resolve)" | tee -a "$PRE"
PREFLIGHT="passed: every library found (ldd), LD_PRELOAD and GPUSLICE_* cleared, no sim on any path, CUDA reaches the GPU"
write_reports

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
	timeout -k 5 60 "${G[@]}" --memory 4GiB -- "$BIN/gs-alloc" --api "$api" \
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

# Three slices of 20, 30 and 40 % over gs-burn at once. Each job's GPU
# time = its kernels x (burn time alone per kernel); what it got = that
# over its wall time. 90 % asked in all: 100 % would ask the arbiter for
# the whole GPU, which three processes switching turns never quite get,
# so a correct system could fail. Pass: each one's part of what the three
# got is within 5 points of its part of 90, and none got more than its
# share by over 5 points.
check_compute_share() {
	local a=$TMP/share-alone.json k w rate pids=() i figs="" msg="" shares="20 30 40"
	timeout -k 5 30 "$BIN/gs-burn" --seconds 5 >"$a" 2>&1
	k=$(jf "$a" kernels)
	w=$(jf "$a" wall_s)
	if [ -z "$k" ] || [ -z "$w" ]; then
		result fail "gs-burn alone failed: $(tail -c 200 "$a" | tr '\n' ' ')"
		return
	fi
	rate=$(calc "$k / $w")
	for i in $shares; do
		timeout -k 5 60 "${G[@]}" --compute "$i" -- "$BIN/gs-burn" --seconds 10 \
			>"$TMP/share-$i.json" 2>"$TMP/share-$i.err" &
		pids+=($!)
	done
	wait "${pids[@]}"
	local got=() sum=0
	for i in $shares; do
		k=$(jf "$TMP/share-$i.json" kernels)
		w=$(jf "$TMP/share-$i.json" wall_s)
		if [ -z "$k" ] || [ -z "$w" ]; then
			result fail "the --compute $i job failed: $(tail -c 200 "$TMP/share-$i.err" | tr '\n' ' ')"
			return
		fi
		got+=("$(calc "round(100 * $k / $rate / $w, 1)")")
	done
	sum=$(calc "${got[0]} + ${got[1]} + ${got[2]}")
	if [ "$(calc "$sum <= 0")" = 1 ]; then
		result fail "the three slices ran no kernels"
		return
	fi
	local n=0 bad="" part want
	for i in $shares; do
		part=$(calc "round(100 * ${got[$n]} / $sum, 1)")
		want=$(calc "round(100 * $i / 90, 1)")
		figs="$figs\"share_${i}_pct\":${got[$n]},\"part_${i}_pct\":$part,"
		msg="$msg $i%->${got[$n]}% (part $part of $want)"
		[ "$(calc "abs($part - $want) <= 5")" = 1 ] || bad="$bad $i:part"
		[ "$(calc "${got[$n]} <= $i + 5")" = 1 ] || bad="$bad $i:over"
		n=$((n + 1))
	done
	figs="{${figs}\"alone_kernels_per_s\":$rate,\"sum_pct\":$sum,\"tolerance_points\":5}"
	if [ -z "$bad" ]; then
		result pass "shares held (parts within 5 points, none over by 5):$msg" "$figs"
	else
		result fail "shares not held ($bad):$msg" "$figs"
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
# (shim/bench_shim.c), else gs-matmul with and without the shim. More than
# LAUNCH_MAX_NS per launch fails: far above what an interposer should
# cost (HAMi-core and the shim measure in single microseconds), low
# enough to catch a lock or a syscall on every launch.
LAUNCH_MAX_NS=50000
check_launch_cost() {
	local bench=$BIN/gs-bench-shim f=$TMP/launch.out
	if [ -x "$bench" ]; then
		if ! timeout -k 5 150 "$bench" "$SHIM" >"$f" 2>&1; then
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
		if [ "$(calc "$a > $LAUNCH_MAX_NS or (${l:-0} > $LAUNCH_MAX_NS)")" = 1 ]; then
			result fail "gs-bench-shim: +$a ns per cuLaunchKernel without a compute limit, +$l ns with one: over $LAUNCH_MAX_NS ns" \
				"$(grep '^{' "$f" | tail -n 1)"
			return
		fi
		result pass "gs-bench-shim: +$a ns per cuLaunchKernel without a compute limit, +$l ns with one (limit $LAUNCH_MAX_NS ns)" \
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
	if [ "$(calc "$us * 1000 > $LAUNCH_MAX_NS")" = 1 ]; then
		result fail "about $us us added per launch (gs-matmul --n 16, $n launches: ${plain} s plain, ${shim} s under the shim): over $LAUNCH_MAX_NS ns" \
			"{\"added_us_per_launch\":$us,\"launches\":$n,\"plain_s\":$plain,\"shim_s\":$shim}"
		return
	fi
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
	if [ -n "$CUDART_BIN" ] && [ -x "$CUDART_BIN" ]; then
		cp "$CUDART_BIN" "$TMP/cudart_check" # built by make gpu-stage
	else
		nvcc=$(command -v nvcc || true)
		[ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc
		if [ -z "$nvcc" ]; then
			result skip "nvcc is not installed and no prebuilt cudart_check was staged"
			return
		fi
		if ! timeout -k 5 300 "$nvcc" -O2 -o "$TMP/cudart_check" "$CUDART_SRC" >"$TMP/nvcc.log" 2>&1; then
			result fail "nvcc could not build $CUDART_SRC: $(tail -c 300 "$TMP/nvcc.log" | tr '\n' ' ')"
			return
		fi
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
	if ! timeout -k 5 60 env LD_LIBRARY_PATH="$(tr ':' '\n' <<<"${LD_LIBRARY_PATH:-}" | grep -vx "${DEPS_PATH:-/nonexistent}" | paste -sd: -)" \
		python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
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
	# python3 and torch with this machine's own libraries, not the staged
	# ones gpuslice needed
	local lp=${LD_LIBRARY_PATH:-}
	[ -z "$DEPS_PATH" ] || lp=$(tr ':' '\n' <<<"$lp" | grep -vx "$DEPS_PATH" | paste -sd: -)
	timeout -k 5 120 "${G[@]}" --memory 2GiB -- env LD_LIBRARY_PATH="$lp" python3 "$TMP/torch_cap.py" >"$TMP/torch.json" 2>"$TMP/torch.err"
	local o
	o=$(jf "$TMP/torch.json" outcome)
	if [ "$o" = torch.cuda.OutOfMemoryError ]; then
		result pass "allocating 2 GiB more under a 2 GiB cap raised $o (mem_get_info total $(jf "$TMP/torch.json" mem_get_info_total))" "$(tail -n 1 "$TMP/torch.json")"
	else
		result fail "under a 2 GiB cap: ${o:-the script failed: $(tail -c 200 "$TMP/torch.err" | tr '\n' ' ')}"
	fi
}

# The seed study on this GPU (quick), cut off at 4 minutes. Fails when
# it does not finish, writes no cells, or a cell failed.
check_study() {
	local rc=0 summary
	timeout -k 10 240 "$BIN/gpuslice" bench study --gpu "$GPU" --quick --out "$OUT/study" \
		>"$TMP/study.out" 2>"$TMP/study.err" || rc=$?
	if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		result fail "did not finish within 4 minutes (its cells so far: $OUT/study)"
		return
	fi
	if [ "$rc" != 0 ]; then
		result fail "gpuslice bench study exited $rc: $(tail -c 300 "$TMP/study.err" | tr '\n' ' ')"
		return
	fi
	summary=$(python3 - "$OUT/study/study.json" <<'PY'
import collections, json, sys
try:
    cells = json.load(open(sys.argv[1]))
except Exception as e:
    print("fail\tno readable study.json: %s" % e)
    sys.exit()
c = collections.Counter(x["status"] for x in cells)
text = ", ".join("%d %s" % (n, s) for s, n in sorted(c.items()))
bad = [x["workload"] + "/" + x["strategy"] for x in cells if x["status"] not in ("ok", "skipped")]
if not c.get("ok"):
    print("fail\tno cell ran: %s" % text)
elif bad:
    print("fail\tcells: %s; failed: %s" % (text, ", ".join(bad[:6])))
else:
    print("pass\tcells: %s" % text)
PY
	)
	result "${summary%%$'\t'*}" "${summary#*$'\t'}; see $OUT/study/study.md" "{\"dir\":\"$OUT/study\"}"
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

# Most important first (a short session may end early); the NEED column is
# what each usually takes, for the budget.
run_check memory_cap_plain check_memory_cap 20
run_check cudart check_cudart 20
run_check pytorch check_pytorch 40
# shellcheck source=../tests/gpu/swap_check.sh
. "$CHECKS_DIR/swap_check.sh"
run_check swap check_swap 60
run_check compute_share check_compute_share 30
run_check launch_cost check_launch_cost 30
for api in pitch managed async pool vmm array; do
	run_check "memory_cap_$api" check_memory_cap 15
done
run_check priority check_priority 30
run_check study check_study 240
run_check ts_vs_mps check_ts_vs_mps 1

# ---- done ---------------------------------------------------------------------

write_reports
echo "gpu-check: $(grep -c '"status": "pass"' "$RESULTS" || true) passed, $FAILED failed in $(($(date +%s) - START)) s of a $BUDGET s budget; wrote $OUT/gpu-check.json, $OUT/gpu-check.md and $OUT/gpu-check-logs.tar.gz"
[ "$FAILED" = 0 ]
