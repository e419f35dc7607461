#!/usr/bin/env bash
# A malformed --gpu-mem, --gpu-compute or --gpu-priority makes srun,
# sbatch and salloc refuse the job before it reaches the controller, with
# one line naming the option; well-formed values are accepted and reach
# the tasks. --gpu-priority=high above what the job's QOS may have (no
# qos_priority= entry: normal) fails the step, naming the QOS and the
# plugstack argument that grants it.
. "$(dirname "$0")/lib.sh"

jobs_known() {
	scontrol show job -o 2>/dev/null | grep -c '^JobId=' || true
}

before=$(jobs_known)
for opt in --gpu-mem=4x --gpu-mem= --gpu-mem=0 --gpu-mem=1.3MiB \
	--gpu-compute=140 --gpu-compute=0 --gpu-compute=abc \
	--gpu-priority=urgent --gpuslice-swap=sometimes; do
	for cmd in "srun --immediate=5" sbatch "salloc --immediate=5"; do
		set +e
		case $cmd in
		sbatch) sbatch "$opt" --wrap true >"$W/out" 2>"$W/err" ;;
		*) $cmd "$opt" true >"$W/out" 2>"$W/err" ;;
		esac
		rc=$?
		set -e
		[ "$rc" != 0 ] || fail "$cmd $opt was accepted"
		grep -q "gpuslice: ${opt%%=*}: " "$W/err" ||
			fail "$cmd $opt: no clear message; stderr: $(cat "$W/err")"
	done
done
after=$(jobs_known)
[ "$after" = "$before" ] ||
	fail "refused submissions reached the controller ($before jobs before, $after after)"
note "$(grep "gpuslice" "$W/err" | head -n 1)"

# Well-formed values, every spelling the docs give.
out=$(srun --immediate=10 --gpu-mem=512MiB --gpu-compute=25% \
	--gpu-priority=normal --gpuslice-swap=never printenv GPUSLICE_SLICE) ||
	fail "srun with well-formed options failed"
case $out in slurm-*) ;; *) fail "the task saw GPUSLICE_SLICE='$out'" ;; esac
j=$(sbatch --parsable -o "$W/batch.out" --gpu-mem=8G --gpu-compute=30 \
	--gpu-priority=low --wrap 'printenv GPUSLICE_SLICE') ||
	fail "sbatch with well-formed options failed"
wait_job "$j"
[ "$(cat "$W/batch.out")" = "slurm-$j" ] ||
	fail "batch job $j ran in '$(cat "$W/batch.out")', not slurm-$j"

# Priority is the administrator's: high without a qos_priority= entry for
# the job's QOS fails the step (on the node, where the QOS is known).
set +e
srun --immediate=10 --gpu-mem=512MiB --gpu-priority=high true \
	>"$W/out" 2>"$W/err"
rc=$?
set -e
[ "$rc" != 0 ] || fail "--gpu-priority=high ran without the administrator's qos_priority= entry"
grep -q "gpu-priority=high is above what QOS .* allows (normal; the administrator sets it with qos_priority= in plugstack.conf)" "$W/err" ||
	fail "--gpu-priority=high: no clear refusal; stderr: $(cat "$W/err")"
note "$(grep -o 'gpuslice: .*above what QOS.*' "$W/err" | head -n 1)"
echo ok
