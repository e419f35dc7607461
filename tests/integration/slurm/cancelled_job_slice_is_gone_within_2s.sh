#!/usr/bin/env bash
# scancel of a running job (a batch job, and an srun step): the job's
# slice is gone from the node's region within 2 s, and so is the task's
# GPU memory.
. "$(dirname "$0")/lib.sh"

# gone_within NAME SECONDS-BUDGET: measures from now until NAME is gone.
gone_after() {
	local name=$1 t0 t1
	t0=$(date +%s.%N)
	wait_for 100 no_slice "$name" || fail "slice $name still there 10 s after scancel: $(slice "$name")"
	t1=$(date +%s.%N)
	py 'f"{float(a[1]) - float(a[0]):.2f}"' "$t0" "$t1"
}

j=$(sbatch --parsable -o "$W/batch.out" --gres=shard:1 --gpu-mem=2G \
	--gpu-compute=50 --wrap "echo pid=\$\$; exec $B/bin/gs-burn --seconds 120")
running() {
	has_slice "slurm-$j" && file_has "$W/batch.out" pid= &&
		sim_has_pid "$(sed -n 's/^pid=//p' "$W/batch.out")"
}
wait_for 150 running || fail "job $j did not start its burn: $(slices)"
pid=$(sed -n 's/^pid=//p' "$W/batch.out")
scancel "$j"
dt=$(gone_after "slurm-$j")
py 'float(a[0]) <= 2.0' "$dt" | grep -q True || fail "batch job $j: its slice went after $dt s, not within 2 s"
wait_for 50 eval '! sim_has_pid '"$pid" || fail "the burn of job $j is still on the GPU"
note "scancel of a batch job: slice gone after $dt s"

# An srun job, cancelled from outside.
srun --gres=shard:1 --gpu-mem=2G -o "$W/srun.out" "$B/bin/gs-burn" --seconds 120 --memory 256MiB &
srun_pid=$!
sjob=""
started() {
	sjob=$(squeue -h -o %i -t R | head -n 1)
	[ -n "$sjob" ] && slice "slurm-$sjob" | grep -Eq '"n_procs":([2-9]|[1-9][0-9]),'
}
wait_for 150 started || { kill "$srun_pid" 2>/dev/null; fail "the srun job did not start: $(slices)"; }
sjob=$(squeue -h -o %i -t R | head -n 1)
scancel "$sjob"
dt=$(gone_after "slurm-$sjob")
wait "$srun_pid" 2>/dev/null || true
py 'float(a[0]) <= 2.0' "$dt" | grep -q True || fail "srun job $sjob: its slice went after $dt s, not within 2 s"
note "scancel of an srun job: slice gone after $dt s"
echo ok
