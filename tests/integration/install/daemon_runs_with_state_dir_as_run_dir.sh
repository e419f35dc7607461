#!/usr/bin/env bash
# `gpusliced --state-dir D --socket D/api.sock` starts (it once refused
# with "another gpusliced (pid N) uses run directory D", N its own pid:
# the run directory's lock is the state directory's, taken twice), and a
# second gpusliced on D is still refused, naming the first one's pid.
. "$(dirname "$0")/lib.sh" "$1"

[ -e "$B/sim/libnvidia-ml.so.1" ] || skip "this build has no simulator"
export GPUSLICE_SIM_DIR=$WORK/sim
D=$WORK/d
mkdir -p "$D"
"$B/bin/gpusliced" --gpus sim --state-dir "$D" --socket "$D/api.sock" >"$WORK/daemon.log" 2>&1 &
pid=$!
PIDS+=($pid)
wait_until 10 healthy "$D/api.sock" || fail "gpusliced did not start on one directory: $(tail -2 "$WORK/daemon.log")"

rc=0
"$B/bin/gpusliced" --gpus sim --state-dir "$D" --socket "$D/api.sock" >"$WORK/second.log" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "a second gpusliced on $D exited $rc, want 1"
grep -q "another gpusliced (pid $pid) uses" "$WORK/second.log" ||
	fail "the second gpusliced did not name pid $pid: $(cat "$WORK/second.log")"
healthy "$D/api.sock" >/dev/null || fail "the first gpusliced stopped answering"
kill -TERM $pid
wait $pid || fail "gpusliced exited $? on SIGTERM"
echo "ok"
