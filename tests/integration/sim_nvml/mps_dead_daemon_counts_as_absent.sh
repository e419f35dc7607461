#!/usr/bin/env bash
# A control daemon killed with -9 leaves its record in the node state, but
# nothing may take it for a running MPS: the record names a dead pid (the
# probe's "live=0"), the server dies with the daemon and leaves NVML's
# process list, and clients cannot reach it. A new `-d` takes the devices
# over and clears a FAULT; so does quit + `-d` after a fault. With the
# sim's libcuda built, a CUDA process started after the kill runs without
# MPS, and one started under a live daemon runs as an MPS client.
. "$(dirname "$0")/lib.sh" "$1"

has_server() {
	[ -n "$(mps get_server_list)" ]
}
"$PROBE" init 1xH100-SXM5-80GB

"$MPSC" -d
daemon=$(cat "$WORK/pipe/nvidia-cuda-mps-control.pid")
mps "start_server -uid $(id -u)" >/dev/null
server=$(mps get_server_list)
expect_in "server listed" "$("$PROBE" nvml-procs 0)" "^$server "

kill -9 "$daemon"
wait_for not_alive "$daemon"
expect_in "record of a dead daemon" "$("$PROBE" mps 0 0)" "^state=1 live=0 control_pid=$daemon "
wait_for not_alive "$server"
if "$PROBE" nvml-procs 0 | grep -q "^$server "; then fail "dead server still listed"; fi
if echo get_server_list | "$MPSC" 2>/dev/null; then fail "reached a dead daemon"; fi

if [ -x "$ALLOC" ] && [ -f "$LIBCUDA" ]; then
	"$ALLOC" "$LIBCUDA" 64 >"$WORK/a.out" &
	a=$!
	disown
	PIDS+=("$a")
	wait_for grep -q ready "$WORK/a.out"
	expect_in "no MPS after the kill: a plain compute process" \
		"$("$PROBE" nvml-procs 0)" "^$a "
	kill -9 "$a"
	wait_for not_alive "$a"
else
	echo "note: $LIBCUDA not built; skipping the CUDA client checks"
fi

# The driver marks a fault; a new daemon after the kill starts clean.
"$PROBE" fault 0 0
expect_in "faulted" "$("$PROBE" mps 0 0)" "^state=2 live=0 "
"$MPSC" -d
daemon2=$(cat "$WORK/pipe/nvidia-cuda-mps-control.pid")
[ "$daemon2" != "$daemon" ] || fail "pid file not rewritten"
expect_in "taken over" "$("$PROBE" mps 0 0)" "^state=1 live=1 control_pid=$daemon2 server_pid=0 "

if [ -x "$ALLOC" ] && [ -f "$LIBCUDA" ]; then
	"$ALLOC" "$LIBCUDA" 64 >"$WORK/b.out" &
	b=$!
	disown
	PIDS+=("$b")
	wait_for grep -q ready "$WORK/b.out"
	expect_in "an MPS client under a live daemon" \
		"$("$PROBE" nvml-procs 0 mps)" "^$b "
	# The daemon starts a server for a waiting client by itself.
	# Re-asked on every try: the server starts when the client shows up.
	wait_for has_server
	kill -9 "$b"
	wait_for not_alive "$b"
fi

# FAULT under a live daemon: visible, and quit + -d restarts clean.
mps "start_server -uid $(id -u)" >/dev/null
server2=$(mps get_server_list)
"$PROBE" fault 0 0
expect_eq "server status" "$(mps "get_server_status $server2")" "FAULT"
mps quit >/dev/null
"$MPSC" -d
expect_in "clean after restart" "$("$PROBE" mps 0 0)" "^state=1 live=1 "
mps quit >/dev/null
echo ok
