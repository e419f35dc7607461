#!/usr/bin/env bash
# An Xid posted into the node state (as the CUDA stand-in does on a fault)
# reaches a process waiting in nvmlEventSetWait_v2, with the Xid as
# eventData; a wait with nothing posted times out. With the sim's libcuda
# and gs-fault built, a real faulting kernel delivers Xid 31.
. "$(dirname "$0")/lib.sh" "$1"
"$PROBE" init 2xH100-SXM5-80GB

wait_xid() { # GPU TIMEOUT_MS OUTFILE
	"$PROBE" wait-xid "$1" "$2" >"$3" 2>&1 &
	local p=$!
	disown
	PIDS+=("$p")
	wait_for grep -q registered "$3"
	echo "$p"
}

w=$(wait_xid 1 5000 "$WORK/w1")
"$PROBE" xid 0 79 # another GPU: not for this waiter
"$PROBE" xid 1 48
wait_for not_alive "$w"
expect_eq "event" "$(tail -n 1 "$WORK/w1")" "xid=48 gi=-1"

w=$(wait_xid 0 200 "$WORK/w2")
wait_for not_alive "$w"
expect_eq "timeout" "$(tail -n 1 "$WORK/w2")" "Timeout"

if [ -f "$LIBCUDA" ] && [ -x "$B/bin/gs-fault" ]; then
	w=$(wait_xid 0 10000 "$WORK/w3")
	LD_LIBRARY_PATH=$B/sim "$B/bin/gs-fault" >/dev/null 2>&1 || true
	wait_for not_alive "$w"
	expect_eq "Xid from a faulting kernel" "$(tail -n 1 "$WORK/w3")" "xid=31 gi=-1"
else
	echo "note: sim libcuda or gs-fault not built; skipping the real fault"
fi
echo ok
