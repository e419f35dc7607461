#!/usr/bin/env bash
# Two jobs on one GPU: one with --gpu-mem=4G allocates 1 GiB chunks until
# it fails, and gets CUDA_ERROR_OUT_OF_MEMORY at its cap (the GPU has
# 80 GiB); the other, with --gpu-mem=8G, holds 6 GiB and burns to the end
# without an error.
. "$(dirname "$0")/lib.sh"

big=$(sbatch --parsable -o "$W/big.out" --gres=shard:1 --gpu-mem=8G \
	--wrap "echo gpu=\$CUDA_VISIBLE_DEVICES; exec $B/bin/gs-burn --seconds 6 --memory 6GiB")
wait_for 150 file_has "$W/big.out" gpu= || fail "job $big did not start"
sleep 1
hog=$(sbatch --parsable -o "$W/hog.out" --gres=shard:1 --gpu-mem=4G \
	--wrap "echo gpu=\$CUDA_VISIBLE_DEVICES; exec $B/bin/gs-alloc --api plain --chunk 1GiB --hold 1")
wait_job "$hog" 60
wait_job "$big" 60

grep -q '^gpu=0$' "$W/big.out" && grep -q '^gpu=0$' "$W/hog.out" ||
	fail "the jobs are not both on GPU 0: $(cat "$W/big.out" "$W/hog.out")"
h=$(json_line "$W/hog.out")
[ -n "$h" ] || fail "gs-alloc printed nothing: $(cat "$W/hog.out")"
py 'json.loads(a[0])["error"]' "$h" | grep -q '^CUDA_ERROR_OUT_OF_MEMORY$' ||
	fail "the job past its memory got no out-of-memory error: $h"
py 'json.loads(a[0])["allocated_bytes"] <= 4 << 30 and json.loads(a[0])["allocated_bytes"] >= 2 << 30' "$h" | grep -q True ||
	fail "the 4G job got an unexpected amount before the error: $h"
note "--gpu-mem=4G job: $(py 'json.loads(a[0])["allocated_bytes"] >> 30' "$h") GiB, then $(py 'json.loads(a[0])["error"]' "$h")"

g=$(json_line "$W/big.out")
py 'json.loads(a[0])["error"] is None' "$g" | grep -q True ||
	fail "the other job did not finish normally: $g"
[ "$(job_field "$big" ExitCode)" = 0:0 ] ||
	fail "job $big ended with $(job_field "$big" ExitCode)"
echo ok
