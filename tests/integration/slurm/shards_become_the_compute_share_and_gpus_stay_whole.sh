#!/usr/bin/env bash
# gres/shard without --gpu-compute: the job's shards are its compute share
# (shards held / shards per GPU, read from gres.conf: 4 here), with no
# memory cap; --gpu-compute overrides. gres/gpu without options: the
# whole GPU, no slice, no shim; its steps may slice it further, each step
# with limits of its own in a slice of its own.
. "$(dirname "$0")/lib.sh"

# hold JOBNAME ARGS...: a batch job that prints its slice and waits.
hold() {
	local name=$1
	shift
	sbatch --parsable -o "$W/$name.out" "$@" \
		--wrap 'echo "slice=${GPUSLICE_SLICE:-none} preload=${LD_PRELOAD:-none}"; sleep 30'
}
j1=$(hold one --gres=shard:1)
j3=$(hold three --gres=shard:3)
both() { has_slice "slurm-$j1" && has_slice "slurm-$j3"; }
wait_for 150 both || fail "no slices for the shard jobs: $(slices)"
check() { # check JOB COMPUTE MEM
	local s
	s=$(slice "slurm-$1")
	py 'json.loads(a[0])["compute_pct"] == int(a[1]) and json.loads(a[0])["mem_limit"] == int(a[2])' "$s" "$2" "$3" | grep -q True ||
		fail "job $1: want compute $2% memory $3, got $s"
}
check "$j1" 25 0
check "$j3" 75 0
note "shard:1 of 4 -> compute 25%, shard:3 of 4 -> 75%"
wait_for 50 file_has "$W/one.out" slice= || fail "job $j1 printed nothing"
grep -q "slice=slurm-$j1 preload=.*libgpuslice.so" "$W/one.out" ||
	fail "job $j1's task environment: $(cat "$W/one.out")"
scancel "$j1" "$j3"
wait_job "$j1" 20
wait_job "$j3" 20

jx=$(hold explicit --gres=shard:2 --gpu-compute=10)
wait_for 150 has_slice "slurm-$jx" || fail "no slice for job $jx"
check "$jx" 10 0
scancel "$jx"
wait_job "$jx" 20

# gres/gpu, no options: untouched.
out=$(srun --immediate=10 --gres=gpu:1 sh -c 'echo "slice=${GPUSLICE_SLICE:-none} preload=${LD_PRELOAD:-none} gpu=$CUDA_VISIBLE_DEVICES"')
[ "$out" = "slice=none preload=none gpu=0" ] || fail "a whole-GPU job saw: $out"

# gres/gpu, two steps slicing the job's GPU differently, side by side.
jg=$(sbatch --parsable -o "$W/gpu.out" --gres=gpu:1 -n 2 --wrap "
srun -n 1 --overlap --gpu-mem=2G --gpu-compute=40 sh -c 'echo step40 \$GPUSLICE_SLICE; sleep 4' &
sleep 1
srun -n 1 --overlap --gpu-mem=1G --gpu-compute=20 sh -c 'echo step20 \$GPUSLICE_SLICE; sleep 3' &
wait")
two_steps() { [ "$(slices | grep -c "\"name\":\"slurm-$jg")" = 2 ]; }
wait_for 150 two_steps || fail "the steps of job $jg did not get two slices: $(slices)"
py 'sorted((d["name"], d["compute_pct"], d["mem_limit"] >> 30) for d in map(json.loads, a[0].splitlines()))' \
	"$(slices | grep "\"name\":\"slurm-$jg")" >"$W/steps"
grep -q "('slurm-$jg', 40, 2), ('slurm-$jg.1', 20, 1)" "$W/steps" ||
	fail "step slices of job $jg: $(cat "$W/steps")"
wait_job "$jg" 30
grep -q "^step40 slurm-$jg\$" "$W/gpu.out" && grep -q "^step20 slurm-$jg.1\$" "$W/gpu.out" ||
	fail "what the steps saw: $(cat "$W/gpu.out")"
wait_for 20 eval '[ -z "$(slices | grep "slurm-$jg")" ]' || fail "step slices left: $(slices)"
note "gpu:1 job: steps sliced it as slurm-$jg (40%, 2 GiB) and slurm-$jg.1 (20%, 1 GiB)"
echo ok
