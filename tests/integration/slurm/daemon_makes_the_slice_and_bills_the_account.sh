#!/usr/bin/env bash
# With gpusliced on the node (plugstack daemon=required), the job's slice
# is made through the daemon's API: owned by the job's user, in the team
# named by the job's account (made on first use), on the GPU Slurm gave
# the job, and the tasks run on the daemon's region. The ledger bills the
# account for the job's GPU time; the slice is gone within 2 s when the
# job ends or is cancelled; --gpuslice-swap=never reaches the slice's
# spec. Before the daemon starts, a job fails with the
# reason in its output and the node is not drained.
. "$(dirname "$0")/lib.sh"

DRUN=$W/drun
SOCK=$DRUN/api.sock
mkdir -p "$DRUN" "$W/state"
chmod 755 "$DRUN"
dpid=""
restore() {
	[ -z "$dpid" ] || kill -TERM "$dpid" 2>/dev/null || true
	[ -z "$dpid" ] || wait "$dpid" 2>/dev/null || true
	echo "$GS_SLURM_SPANK" >"$GS_SLURM_LC/etc/plugstack.conf"
	bash "$GS_SLURM_HERE/local-cluster.sh" restart "$GS_SLURM_LC" >/dev/null 2>&1 || true
}
trap restore EXIT

echo "required $B/lib/spank_gpuslice.so run_dir=$RUNDIR daemon=required socket=$SOCK" \
	>"$GS_SLURM_LC/etc/plugstack.conf"
bash "$GS_SLURM_HERE/local-cluster.sh" restart "$GS_SLURM_LC" >"$W/restart.out" 2>&1 ||
	fail "Slurm did not restart: $(tail -n 5 "$W/restart.out")"

# daemon=required and no daemon yet: the job fails, saying why, in its
# own output; the node stays up (a failing batch step must not drain it).
j=$(sbatch --parsable -o "$W/nodaemon.out" --gpu-mem=1G --wrap 'echo ran')
wait_job "$j" 30
[ "$(job_field "$j" JobState)" = FAILED ] || fail "job $j without its slice: $(job_field "$j" JobState)"
grep -q "^gpuslice: job $j step batch: no slice: gpusliced does not answer on $SOCK" "$W/nodaemon.out" ||
	fail "job $j's output does not say why: $(cat "$W/nodaemon.out")"
! grep -q '^ran$' "$W/nodaemon.out" || fail "job $j ran without its slice"
state=$(sinfo -h -n "$(cat "$GS_SLURM_LC/etc/nodename")" -o %T)
case $state in idle | mixed | allocated | completing) ;; *) fail "the node is $state after a job that had no slice" ;; esac
note "daemon=required without a daemon: job $j failed with its reason, node $state"

"$B/bin/gpusliced" --state-dir "$W/state" --socket "$SOCK" --gpus sim \
	--log-file "$W/daemon.log" &
dpid=$!
echo "$dpid" >"$GS_SLURM_WORK/daemon.pid"

api() { # api METHOD PATH: the body; the status in $W/status
	curl -s --max-time 10 --unix-socket "$SOCK" -X "$1" -o "$W/body" \
		-w '%{http_code}' "http://localhost$2" >"$W/status" || true
	cat "$W/body"
}
healthy() { [ "$(api GET /healthz >/dev/null; cat "$W/status")" = 200 ]; }
wait_for 100 healthy || fail "gpusliced did not answer: $(tail -n 5 "$W/daemon.log")"

uuid0=$("$B/bin/gpuslice" sim status --json --dir "$SIMDIR" | py 'json.load(sys.stdin)["gpus"][0]["uuid"]')
j=$(sbatch --parsable -A physics -o "$W/job.out" --gres=shard:1 --gpu-mem=4G \
	--gpu-compute=30 --wrap "printenv GPUSLICE_SLICE GPUSLICE_RUN_DIR CUDA_VISIBLE_DEVICES; exec $B/bin/gs-burn --seconds 4 --memory 512MiB")
in_daemon() { [ "$(api GET "/v1/slices/slurm-$j" >/dev/null; cat "$W/status")" = 200 ]; }
wait_for 150 in_daemon || fail "gpusliced has no slice slurm-$j: $(api GET /v1/slices)"
s=$(api GET "/v1/slices/slurm-$j")
check() {
	py "$1" "$s" | grep -q True || fail "slice slurm-$j: want $1 in $s"
}
check '(lambda d: d["team"] == "physics" and d["owner_uid"] == 0)(json.loads(a[0]))'
check '(lambda d: d["memory_bytes"] == 4 << 30 and d["compute"] == 30 and d["gpu"]["index"] == 0)(json.loads(a[0]))'
check '(lambda d: d["mode"] == "timeslice" and len(d["pids"]) >= 1)(json.loads(a[0]))'

wait_job "$j" 60
[ "$(job_field "$j" ExitCode)" = 0:0 ] || fail "job $j: $(job_field "$j" ExitCode); $(cat "$W/job.out")"
gone() { [ "$(api GET "/v1/slices/slurm-$j" >/dev/null; cat "$W/status")" = 404 ]; }
wait_for 20 gone || fail "slice slurm-$j still in gpusliced 2 s after the job ended"
[ "$(sed -n 1p "$W/job.out")" = "slurm-$j" ] &&
	[ "$(sed -n 2p "$W/job.out")" = "$DRUN" ] &&
	[ "$(sed -n 3p "$W/job.out")" = "$uuid0" ] ||
	fail "the task's environment: $(head -n 3 "$W/job.out")"
json_line "$W/job.out" | grep -q '"error":null' || fail "the burn failed: $(cat "$W/job.out")"

bill() {
	api GET "/v1/usage?by=slice&slice=slurm-$j" | py '[r for r in json.load(sys.stdin)["rows"] if r["slice"] == a[0] and r["team"] == "physics" and r["gpu_seconds"] > 0]' "slurm-$j" | grep -q gpu_seconds
}
wait_for 50 bill || fail "the ledger does not bill physics for slurm-$j: $(api GET '/v1/usage?by=slice')"
secs=$(api GET "/v1/usage?by=slice&slice=slurm-$j" | py '[r["gpu_seconds"] for r in json.load(sys.stdin)["rows"]][0]')
note "gpusliced ledger: slurm-$j, team physics, $(py 'f"{float(a[0]):.2f}"' "$secs") GPU s"

# Cancelled: gone from the daemon within 2 s. The job also asks
# --gpuslice-swap=never, which reaches the slice's spec.
j=$(sbatch --parsable -o "$W/long.out" --gres=shard:1 --gpu-mem=1G \
	--gpuslice-swap=never \
	--wrap "exec $B/bin/gs-burn --seconds 120 --memory 256MiB")
wait_for 150 in_daemon || fail "gpusliced has no slice slurm-$j"
s=$(api GET "/v1/slices/slurm-$j")
check '(lambda d: d["swap"]["mode"] == "never")(json.loads(a[0]))'
note "--gpuslice-swap=never: slice slurm-$j has swap mode never"
t0=$(date +%s.%N)
scancel "$j"
wait_for 100 gone || fail "slice slurm-$j still in gpusliced 10 s after scancel"
dt=$(py 'f"{float(a[1]) - float(a[0]):.2f}"' "$t0" "$(date +%s.%N)")
py 'float(a[0]) <= 2.0' "$dt" | grep -q True || fail "cancelled job $j: its slice went after $dt s"
note "through gpusliced: cancelled job's slice gone after $dt s"
echo ok
