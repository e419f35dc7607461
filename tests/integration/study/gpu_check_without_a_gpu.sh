#!/usr/bin/env bash
# `make gpu-check` on a machine without an NVIDIA GPU: it says so and exits
# 0 without running anything, even when the sim's nvidia-smi and libcuda
# are on PATH and LD_LIBRARY_PATH (they must never pass for a GPU). The
# script never asks nvidia-smi to change a setting.
set -euo pipefail
B=$(cd "$1" && pwd)
SRC=${GS_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
S=$SRC/scripts/gpu-check.sh
W=$(mktemp -d /tmp/gs-gpucheck.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# No nvidia-smi invocation with a setting flag anywhere in the script.
if grep -nE 'nvidia-smi.*[[:space:]](-mig|-c|-r|-pm|--gpu-reset|--compute-mode|--persistence-mode|-lgc|-pl)([[:space:]=]|$)' "$S" | grep -v '^[0-9]*:#'; then
	fail "gpu-check.sh asks nvidia-smi to change a setting"
fi

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU [0-9]'; then
	serial=$(nvidia-smi --query-gpu=serial --format=csv,noheader 2>/dev/null | head -n 1)
	case $serial in
	SIM*) ;;
	*)
		echo "a real GPU is here: nothing to test without one"
		exit 77
		;;
	esac
fi

for env in plain with-sim; do
	rc=0
	if [ $env = plain ]; then
		out=$(bash "$S" "$B" --out "$W/$env" 2>&1) || rc=$?
	else
		d=$W/simnode
		"$B/bin/gpuslice" sim init --gpus 1xH100-SXM5-80GB --dir "$d" >/dev/null
		out=$(GPUSLICE_SIM_DIR=$d PATH=$B/sim:$PATH LD_LIBRARY_PATH=$B/sim \
			bash "$S" "$B" --out "$W/$env" 2>&1) || rc=$?
	fi
	[ $rc = 0 ] || fail "$env: exit $rc: $out"
	grep -q 'no NVIDIA GPU here' <<<"$out" || fail "$env: does not say there is no GPU: $out"
	[ ! -e "$W/$env/gpu-check.json" ] || fail "$env: ran checks without a GPU"
done

rc=0
bash "$S" >/dev/null 2>&1 || rc=$?
[ $rc = 2 ] || fail "no build dir: exit $rc, want 2"
rc=0
bash "$S" "$B" --bogus >/dev/null 2>&1 || rc=$?
[ $rc = 2 ] || fail "unknown option: exit $rc, want 2"
bash "$S" --help | grep -q 'gpu-check' || fail "--help"
echo "ok"
