#!/usr/bin/env bash
# The PTX interpreter's fuzzer (exec/exec_fuzz.c): every single-instruction
# form it knows, over random and edge-value operands, gives the host
# reference's bits (IEEE ones exactly, .approx ones within PTX's bound).
# Two seeds, so a rerun covers other inputs too.
. "$(dirname "$0")/lib.sh" "$1"
"$GS" sim init --gpus 1xH100-SXM5-80GB --dir "$GPUSLICE_SIM_DIR" >/dev/null || fail "sim init"
for seed in 1 "$(date +%s)"; do
	"$B/tests/exec/gs-exec-fuzz" "$seed" 4096 >"$WORK/out" 2>&1 ||
		{ cat "$WORK/out"; fail "fuzz seed $seed: results differ from the host's"; }
	grep -q '^all ok' "$WORK/out" || { cat "$WORK/out"; fail "fuzz seed $seed did not finish"; }
	echo "seed $seed: $(grep '^all ok' "$WORK/out")"
done
echo ok
