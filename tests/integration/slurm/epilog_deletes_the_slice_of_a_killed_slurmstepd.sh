#!/usr/bin/env bash
# The backstop: when the job's slurmstepd dies with SIGKILL (so its exit
# callback never runs), the slice is still deleted when the job ends, by
# the plugin's job_epilog; slurmd keeps running.
. "$(dirname "$0")/lib.sh"

j=$(sbatch --parsable -o "$W/out" --gres=shard:1 --gpu-mem=1G \
	--wrap "echo pid=\$\$; exec $B/bin/gs-burn --seconds 60 --memory 256MiB")
running() {
	has_slice "slurm-$j" && file_has "$W/out" pid= &&
		sim_has_pid "$(sed -n 's/^pid=//p' "$W/out")"
}
wait_for 150 running || fail "job $j did not start: $(slices)"
burn=$(sed -n 's/^pid=//p' "$W/out")
trap 'kill -9 "$burn" 2>/dev/null || true' EXIT

# The job's slurmstepd: the burn's parent.
stepd=$(ps -o ppid= -p "$burn" | tr -d ' ')
[ "$(cat "/proc/$stepd/comm" 2>/dev/null)" = slurmstepd ] ||
	fail "the burn's parent $stepd is not a slurmstepd"
kill -9 "$stepd"
kill -9 "$burn" # what proctrack would have killed with the step
sleep 0.5
has_slice "slurm-$j" || fail "the slice went with slurmstepd: this case checks nothing"

scancel "$j"
wait_job "$j" 60
wait_for 100 no_slice "slurm-$j" || fail "the epilog left slice slurm-$j: $(slices)"
grep -q "gpuslice: epilog of job $j: deleted 1 slice" "$GS_SLURM_LC/log/slurmd.log" ||
	fail "slurmd.log does not say the epilog deleted it"
pid=$(cat "$GS_SLURM_LC/run/slurmd.pid")
[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmd ] || fail "slurmd is gone"
note "slice of job $j, whose slurmstepd was killed -9, deleted by the epilog"
echo ok
