#!/usr/bin/env bash
# A kernel the sim's PTX interpreter cannot run never gives a silent wrong
# answer (exec/exec_errors.c): an unsupported instruction a thread reaches
# fails the launch with CUDA_ERROR_ILLEGAL_INSTRUCTION (sticky, at the next
# synchronize) and one stderr line naming the kernel and the instruction;
# one on a path not taken does not; a wild store gives
# CUDA_ERROR_ILLEGAL_ADDRESS (so does one to a graph allocation not yet
# allocated), `trap` CUDA_ERROR_LAUNCH_FAILED, and a
# recursive .func call or clusters of more than one block (another block's
# shared memory, .reqnctapercluster) CUDA_ERROR_ILLEGAL_INSTRUCTION.
. "$(dirname "$0")/lib.sh" "$1"
"$GS" sim init --gpus 1xH100-SXM5-80GB --dir "$GPUSLICE_SIM_DIR" >/dev/null || fail "sim init"
"$B/tests/exec/gs-exec-errors" >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/out" "$WORK/err"; fail "gs-exec-errors"; }
cat "$WORK/out"
for c in not_reached unsupported bad_address graph_memory_not_live trap cluster_rank cluster_dims recursion; do
	grep -q "^ok $c\$" "$WORK/out" || fail "case $c"
done
grep -q "kernel k failed (CUDA_ERROR_ILLEGAL_INSTRUCTION): .*'bar.arrive 1, 64'" "$WORK/err" ||
	{ cat "$WORK/err"; fail "no log line names the unsupported instruction"; }
[ "$(grep -c "ILLEGAL_INSTRUCTION.*'bar.arrive" "$WORK/err")" = 1 ] || { cat "$WORK/err"; fail "the failure was not logged exactly once"; }
grep -q "ILLEGAL_INSTRUCTION.*'call (r), f, (a)'" "$WORK/err" || { cat "$WORK/err"; fail "the recursive call was not named"; }
grep -q "CUDA_ERROR_ILLEGAL_ADDRESS" "$WORK/err" || fail "the wild store was not logged"
echo ok
