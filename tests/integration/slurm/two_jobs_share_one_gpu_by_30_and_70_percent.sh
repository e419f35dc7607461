#!/usr/bin/env bash
# Two batch jobs on one GPU (one shard each, so Slurm packs them on GPU 0)
# with --gpu-mem=4G --gpu-compute=30 and --gpu-mem=8G --gpu-compute=70,
# each running a saturating gs-burn: each gets its share within 3
# percentage points over a 10 s window in which both run. Measured by the
# sim's own accounting (busy seconds per process), not by the shim's.
. "$(dirname "$0")/lib.sh"

submit() { # submit PCT MEM
	sbatch --parsable -o "$W/job$1.out" --gres=shard:1 --gpu-mem="$2" \
		--gpu-compute="$1" \
		--wrap "echo pid=\$\$ gpu=\$CUDA_VISIBLE_DEVICES; exec $B/bin/gs-burn --seconds 24"
}
j30=$(submit 30 4G)
j70=$(submit 70 8G)

pid_of() { # pid_of PCT
	sed -n 's/^pid=\([0-9]*\) .*/\1/p' "$W/job$1.out" 2>/dev/null
}
both_on_gpu() {
	[ -n "$(pid_of 30)" ] && [ -n "$(pid_of 70)" ] &&
		sim_has_pid "$(pid_of 30)" && sim_has_pid "$(pid_of 70)"
}
wait_for 150 both_on_gpu || fail "the two burns did not both start (job $j30: $(job_field "$j30" JobState), job $j70: $(job_field "$j70" JobState))"

# The plugin made one slice per job with the job's limits.
s30=$(slice "slurm-$j30")
s70=$(slice "slurm-$j70")
py 'json.loads(a[0])["mem_limit"] == 4 << 30 and json.loads(a[0])["compute_pct"] == 30' "$s30" | grep -q True ||
	fail "job $j30's slice: '$s30'"
py 'json.loads(a[0])["mem_limit"] == 8 << 30 and json.loads(a[0])["compute_pct"] == 70' "$s70" | grep -q True ||
	fail "job $j70's slice: '$s70'"
grep -q 'gpu=0$' "$W/job30.out" && grep -q 'gpu=0$' "$W/job70.out" ||
	fail "the jobs are not both on GPU 0: $(cat "$W/job30.out" "$W/job70.out")"

sleep 1
t1=$(date +%s.%N); sim_snap "$W/s1"; t1b=$(date +%s.%N)
sleep 10
t2=$(date +%s.%N); sim_snap "$W/s2"; t2b=$(date +%s.%N)
both_on_gpu || fail "a burn ended inside the measuring window"
sim_procs "$W/s1" >"$W/b1"
sim_procs "$W/s2" >"$W/b2"

python3 - "$W" "$t1" "$t1b" "$t2" "$t2b" "$(pid_of 30)" "$(pid_of 70)" <<'PY'
import sys
w, t1, t1b, t2, t2b = sys.argv[1], *map(float, sys.argv[2:6])
pids = {30: int(sys.argv[6]), 70: int(sys.argv[7])}
def load(f):
    return {int(p): (int(g), float(b)) for p, g, b in (l.split() for l in open(f))}
b1, b2 = load(w + "/b1"), load(w + "/b2")
window = (t2 + t2b) / 2 - (t1 + t1b) / 2
bad = []
for pct, pid in pids.items():
    share = (b2[pid][1] - b1[pid][1]) / window * 100
    print(f"note: --gpu-compute={pct}: {share:.2f}% of GPU {b2[pid][0]} over {window:.2f} s (sim)")
    if abs(share - pct) > 3:
        bad.append(pct)
sys.exit(1 if bad else 0)
PY

wait_job "$j30" 30
wait_job "$j70" 30
for j in "$j30" "$j70"; do
	[ "$(job_field "$j" ExitCode)" = 0:0 ] ||
		fail "job $j ended with $(job_field "$j" ExitCode)"
done
for pct in 30 70; do
	json_line "$W/job$pct.out" | grep -q '"error":null' ||
		fail "burn $pct: $(cat "$W/job$pct.out")"
done
wait_for 20 no_slice "slurm-$j30" && wait_for 20 no_slice "slurm-$j70" ||
	fail "slices left after the jobs ended: $(slices)"
echo ok
