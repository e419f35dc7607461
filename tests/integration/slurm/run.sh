#!/usr/bin/env bash
# run.sh BUILD_DIR - the Slurm integration suite (`make test-slurm`).
#
# Brings up a throw-away single-node Slurm 22.05 (local-cluster.sh: munged,
# slurmctld, slurmd on 127.0.0.1, gres gpu:2 + shard:8 on fake
# /dev/nvidiaN character devices) whose two GPUs are the simulated node's
# (`gpuslice sim`, 2 x H100), loads build/lib/spank_gpuslice.so through
# plugstack.conf, runs each case below in its own process with a time
# limit, and takes the cluster down again, whatever happened.
#
# Exit 0 when every case passed. When Slurm cannot be started on this
# machine at all (not root, Slurm not installed, the daemons do not come
# up without our plugin) it prints "SKIP: <why>" and exits 0: that is not
# a failure of gpuslice. Anything after that point is.
#
# Environment: GS_KEEP_WORK=1 keeps the scratch directory (cluster logs,
# job outputs); LC_PORT picks the slurmctld port (default: the first free
# pair from 16817).
set -uo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:?usage: run.sh BUILD_DIR}" && pwd)
LC=$HERE/local-cluster.sh
CASE_TIMEOUT=120

CASES=(
	malformed_options_are_refused_at_submission
	two_jobs_share_one_gpu_by_30_and_70_percent
	job_past_its_memory_gets_oom_while_the_other_finishes
	cancelled_job_slice_is_gone_within_2s
	shards_become_the_compute_share_and_gpus_stay_whole
	epilog_deletes_the_slice_of_a_killed_slurmstepd
	unprivileged_job_is_capped_and_cannot_raise_its_limits
	daemon_makes_the_slice_and_bills_the_account
)

skip() {
	echo "SKIP: Slurm integration tests not run: $*"
	exit 0
}

die() {
	echo "FAIL: $*" >&2
	exit 1
}

# ---- can Slurm run here at all?
[ "$(id -u)" = 0 ] || skip "they need root (slurmd switches to the job's user); run make test-slurm as root"
for t in munged munge slurmctld slurmd slurmstepd srun sbatch salloc scontrol squeue scancel python3 curl; do
	command -v "$t" >/dev/null 2>&1 ||
		skip "'$t' is not installed (scripts/deps.sh installs slurmctld slurmd slurm-client munge libslurm-dev)"
done
[ -f /usr/include/slurm/spank.h ] ||
	skip "<slurm/spank.h> is missing (apt-get install libslurm-dev), so the plugin was not built"

# ---- what the build must hold
for f in lib/spank_gpuslice.so lib/libgpuslice.so sim/libcuda.so.1 bin/gpuslice \
	bin/gpusliced bin/gs-burn bin/gs-alloc tests/gs-slurm-slices; do
	[ -e "$B/$f" ] || die "$B/$f is missing: build first (make build)"
done

WORK=$(mktemp -d /tmp/gs-slurm.XXXXXX)
chmod 755 "$WORK"
LCDIR=$WORK/lc

cleanup() {
	bash "$LC" down "$LCDIR" >/dev/null 2>&1 || true
	if [ -f "$WORK/daemon.pid" ]; then
		kill -9 "$(cat "$WORK/daemon.pid")" 2>/dev/null || true
	fi
	if [ -n "${GS_KEEP_WORK:-}" ]; then
		echo "kept $WORK" >&2
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

# A free pair of ports (slurmctld, slurmd) from 16817 on.
free_port() {
	python3 - <<'PY'
import socket
for p in range(16817, 18817, 2):
    ok = True
    for q in (p, p + 1):
        s = socket.socket()
        try:
            s.bind(("0.0.0.0", q))
        except OSError:
            ok = False
        finally:
            s.close()
    if ok:
        print(p)
        break
PY
}

export LC_PORT=${LC_PORT:-$(free_port)}
export LC_GRES_MODE=shard LC_GPUS=2 LC_SHARDS_PER_GPU=4 LC_TIMEOUT=30
export GS_SLURM_B=$B GS_SLURM_WORK=$WORK GS_SLURM_LC=$LCDIR GS_SLURM_HERE=$HERE
export SIMDIR=$WORK/sim RUNDIR=$WORK/run
export GS_SLURM_SPANK="required $B/lib/spank_gpuslice.so run_dir=$RUNDIR daemon=off"
unset GPUSLICE_RUN_DIR GPUSLICE_SLICE GPUSLICE_SOCKET CUDA_VISIBLE_DEVICES || true

# ---- Slurm without our plugin first: if this fails, Slurm cannot run here.
if ! bash "$LC" up "$LCDIR" >"$WORK/up.out" 2>"$WORK/up.err"; then
	tail -n 20 "$WORK/up.err" >&2
	skip "the local Slurm cluster did not start (see above)"
fi
# ---- then with it: from here on a problem is ours.
echo "$GS_SLURM_SPANK" >"$LCDIR/etc/plugstack.conf"
bash "$LC" restart "$LCDIR" >"$WORK/restart.out" 2>&1 ||
	{ cat "$WORK/restart.out" >&2; die "Slurm did not come back with spank_gpuslice.so in plugstack.conf"; }
export SLURM_CONF=$LCDIR/etc/slurm.conf

"$B/bin/gpuslice" sim init --gpus 2xH100-SXM5-80GB --dir "$SIMDIR" >/dev/null ||
	die "gpuslice sim init failed"
eval "$("$B/bin/gpuslice" sim env --dir "$SIMDIR")"

# Between cases: no job left, a clean simulated node.
settle() {
	local i
	scancel --quiet $(squeue -h -o %i) 2>/dev/null || true
	for i in $(seq 100); do
		[ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
		sleep 0.2
	done
	"$B/bin/gpuslice" sim reset --dir "$SIMDIR" >/dev/null 2>&1 || true
}

passed=0 failed=0 t_all=$SECONDS
for c in "${CASES[@]}"; do
	t0=$SECONDS
	if timeout -k 5 "$CASE_TIMEOUT" bash "$HERE/$c.sh" >"$WORK/$c.log" 2>&1; then
		echo "ok   $c ($((SECONDS - t0)) s)"
		sed -n 's/^note: /     /p' "$WORK/$c.log"
		passed=$((passed + 1))
	else
		rc=$?
		echo "FAIL $c (exit $rc after $((SECONDS - t0)) s):"
		sed 's/^/     | /' "$WORK/$c.log" | tail -n 30
		echo "     | --- slurmd.log, gpuslice lines:"
		grep -h 'gpuslice\|spank' "$LCDIR/log/slurmd.log" | tail -n 10 | sed 's/^/     | /'
		failed=$((failed + 1))
	fi
	settle
done
echo "slurm: $passed passed, $failed failed in $((SECONDS - t_all)) s"
[ "$failed" = 0 ]
