#!/usr/bin/env bash
# MPS control daemons outlive gpusliced only while a slice needs them:
#  - an MPS slice deleted just before SIGTERM: the daemon stops its
#    control daemon on the way out (no tick needed);
#  - an MPS slice kept across a restart: the same control daemon serves
#    it (adopted, not a second one), and goes when the slice is deleted;
#  - a control daemon left by a gpusliced whose state is gone (no slice
#    wants it): the next gpusliced on that run directory stops it.
# Nothing the test started is left running.
. "$(dirname "$0")/lib.sh" "$1"

[ -e "$B/sim/libnvidia-ml.so.1" ] || skip "this build has no simulator"
export GPUSLICE_SIM_DIR=$WORK/sim
RUN=$WORK/run
SOCK=$RUN/api.sock
DPID=""

up() { # STATE_DIR
	"$B/bin/gpusliced" --gpus sim --state-dir "$1" --socket "$SOCK" \
		>>"$WORK/daemon.log" 2>&1 &
	DPID=$!
	PIDS+=($DPID)
	wait_until 10 healthy "$SOCK" || fail "gpusliced did not answer"
}
down() {
	kill -TERM "$DPID"
	wait "$DPID" || fail "gpusliced exited $? on SIGTERM"
	DPID=""
}
api() { # METHOD PATH [BODY]
	curl -sf --max-time 30 --unix-socket "$SOCK" -X "$1" \
		${3:+-H 'Content-Type: application/json' -d "$3"} "http://localhost$2"
}
# The pids of nvidia-cuda-mps-control processes this test's daemons made
# (their pid files under $RUN).
mps_live() {
	local f p
	for f in "$RUN"/mps/*/pipe/nvidia-cuda-mps-control.pid; do
		[ -f "$f" ] || continue
		p=$(cat "$f")
		kill -0 "$p" 2>/dev/null && echo "$p"
	done
	return 0
}
new_mps_slice() { # NAME
	api POST /v1/slices "{\"name\": \"$1\", \"mode\": \"mps\", \"memory\": \"1GiB\", \"compute\": 30, \"gpu\": 0}" >/dev/null ||
		fail "create of MPS slice $1 failed"
	[ -n "$(mps_live)" ] || fail "no MPS control daemon runs for $1"
}
none_left() { [ -z "$(mps_live)" ]; }

# 1. delete, then stop at once.
up "$WORK/s1"
new_mps_slice a
api DELETE /v1/slices/a >/dev/null || fail "delete a"
down
none_left || fail "MPS control daemon $(mps_live) outlived gpusliced with no MPS slice left"

# 2. kept across a restart, adopted, stopped with its slice.
up "$WORK/s2"
new_mps_slice b
first=$(mps_live)
down
[ "$(mps_live)" = "$first" ] || fail "the MPS control daemon of a live slice was stopped with gpusliced"
up "$WORK/s2"
sleep 1.5 # a tick or more
[ "$(mps_live)" = "$first" ] || fail "after the restart: MPS control daemons '$(mps_live)', want the adopted $first"
grep -q "found the MPS control daemon pid=$first" "$WORK/daemon.log" ||
	fail "the restarted gpusliced did not say it found pid $first"
api DELETE /v1/slices/b >/dev/null || fail "delete b"
wait_until 5 none_left || fail "the adopted MPS control daemon $first still runs after its slice's delete"
down

# 3. an orphan: its gpusliced's state is gone.
up "$WORK/s3"
new_mps_slice c
orphan=$(mps_live)
kill -9 "$DPID"
wait "$DPID" 2>/dev/null || true
up "$WORK/s4" # a fresh state dir: no slice wants it
wait_until 5 none_left || fail "the orphaned MPS control daemon $orphan was not stopped by the next gpusliced"
down
none_left || fail "left running: $(mps_live)"
echo "ok"
