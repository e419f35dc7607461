#!/usr/bin/env bash
# nvidia-cuda-mps-control (sim): `-d` records the daemon for the visible
# GPUs in the node state with its pipe directory; every documented
# command round-trips through the daemon; bad commands fail with a
# message and exit 1; `quit` clears the state and stops the daemon and its
# server; control.log records the daemon's life and commands.
. "$(dirname "$0")/lib.sh" "$1"
"$PROBE" init 2xH100-SXM5-80GB

out=$("$MPSC" -h)
expect_in "help" "$out" "start_server"
if "$MPSC" -x 2>/dev/null; then fail "an invalid option was accepted"; fi
if err=$(echo get_server_list | "$MPSC" 2>&1); then
	fail "a client without a daemon succeeded"
fi
expect_in "no daemon" "$err" "Cannot find MPS control daemon"

CUDA_VISIBLE_DEVICES=1 "$MPSC" -d
daemon=$(cat "$WORK/pipe/nvidia-cuda-mps-control.pid")
expect_in "state of GPU 1" "$("$PROBE" mps 1 0)" \
	"^state=1 live=1 control_pid=$daemon server_pid=0 pipe_dir=$WORK/pipe ordinal=0 "
expect_in "GPU 0 untouched" "$("$PROBE" mps 0 0)" "^state=0 live=0 control_pid=0 "
if err=$(CUDA_VISIBLE_DEVICES=1 "$MPSC" -d 2>&1); then
	fail "a second daemon on the same pipe directory started"
fi
expect_in "second daemon" "$err" "already running"

expect_eq "default percentage" "$(mps get_default_active_thread_percentage)" "100.0"
expect_eq "set+get percentage" "$(mps 'set_default_active_thread_percentage 25' \
	get_default_active_thread_percentage)" "25.0"
expect_in "state percentage" "$("$PROBE" mps 1 0)" "default_atp=25 "

uuid=$("$SMI" -i 1 --query-gpu=uuid --format=csv,noheader)
mps "set_default_device_pinned_mem_limit 0 2G" >/dev/null
expect_eq "limit by ordinal" "$(mps 'get_default_device_pinned_mem_limit 0')" "2048M"
expect_eq "limit by uuid" "$(mps "get_default_device_pinned_mem_limit $uuid")" "2048M"
expect_in "state limit" "$("$PROBE" mps 1 0)" "default_mem=2147483648 "

expect_eq "no server yet" "$(mps get_server_list)" ""
mps "start_server -uid $(id -u)" >/dev/null
server=$(mps get_server_list)
[ -n "$server" ] && kill -0 "$server" || fail "no server process after start_server"
expect_in "server recorded, took the defaults" "$("$PROBE" mps 1 0)" \
	"server_pid=$server .* default_atp=25 atp=25 default_mem=2147483648 mem=2147483648"
expect_eq "server status" "$(mps "get_server_status $server")" "ACTIVE"
mps "set_active_thread_percentage $server 50" >/dev/null
expect_eq "server percentage" "$(mps "get_active_thread_percentage $server")" "50.0"
expect_eq "default unchanged" "$(mps get_default_active_thread_percentage)" "25.0"
mps "set_device_pinned_mem_limit $server 0 1024M" >/dev/null
expect_eq "server limit" "$(mps "get_device_pinned_mem_limit $server 0")" "1024M"
expect_eq "priority" "$(mps 'set_default_client_priority 1' get_default_client_priority)" "1"

# The server is a compute process on its GPU; a client shows up as one.
expect_in "server in NVML" "$("$PROBE" nvml-procs 1)" "^$server "
sleep 300 &
client=$!
disown
PIDS+=("$client")
"$PROBE" proc 1 0 "$client" 100 mps
expect_eq "client list" "$(mps "get_client_list $server")" "$client"
expect_in "device client list" "$(mps get_device_client_list)" "^$uuid $client$"
expect_in "NVML MPS list" "$("$PROBE" nvml-procs 1 mps)" "^$client 104857600 -1 -1$"
expect_eq "terminate" "$(mps "terminate_client $server $client")" "0"
expect_eq "client sees CUDA_ERROR_MPS_CLIENT_TERMINATED" "$("$PROBE" sticky "$client")" "810"

if err=$(echo bogus | "$MPSC" 2>&1); then fail "an unknown command succeeded"; fi
expect_in "unknown command" "$err" "Unrecognized command: bogus"
if err=$(echo "get_client_list 1" | "$MPSC" 2>&1); then fail "a wrong server pid succeeded"; fi
expect_in "wrong server" "$err" "Server 1 not found"
if err=$(echo "set_default_active_thread_percentage 150" | "$MPSC" 2>&1); then
	fail "150% was accepted"
fi
if err=$(echo "set_default_device_pinned_mem_limit 7 1G" | "$MPSC" 2>&1); then
	fail "an unknown device was accepted"
fi

expect_in "control.log" "$(cat "$WORK/log/control.log")" "Starting control daemon"
expect_in "control.log commands" "$(cat "$WORK/log/control.log")" "CMD get_server_list"
[ -s "$WORK/log/server.log" ] || fail "no server.log"

mps quit >/dev/null
expect_in "quit clears the state" "$("$PROBE" mps 1 0)" "^state=0 live=0 control_pid=0 server_pid=0 pipe_dir= "
wait_for not_alive "$daemon"
wait_for not_alive "$server"
[ ! -e "$WORK/pipe/control" ] || fail "socket left behind"
if "$PROBE" nvml-procs 1 | grep -q "^$server "; then fail "server still listed by NVML"; fi

# A new daemon starts right away, on all GPUs when none are named.
"$MPSC" -d
expect_in "GPU 0 now served" "$("$PROBE" mps 0 0)" "^state=1 live=1 .* ordinal=0 "
expect_in "GPU 1 now served" "$("$PROBE" mps 1 0)" "^state=1 live=1 .* ordinal=1 .*default_atp=0 "
mps quit >/dev/null

# One daemon per MIG device, each with its own pipe directory (the MIG
# guide's MPS workflow): the record lands on that MIG device's engine.
"$SMI" -i 0 -mig 1 >/dev/null
"$SMI" mig -i 0 -cgi 19,19 -C >/dev/null
mig=$("$SMI" -L | grep -o 'MIG-[0-9a-f-]*' | sed -n 2p)
CUDA_MPS_PIPE_DIRECTORY=$WORK/pipe2 CUDA_VISIBLE_DEVICES=$mig "$MPSC" -d
expect_in "second MIG device served" "$("$PROBE" mps 0 2)" "^state=1 live=1 .* pipe_dir=$WORK/pipe2 ordinal=0 "
expect_in "first MIG device not" "$("$PROBE" mps 0 1)" "^state=0 "
if CUDA_VISIBLE_DEVICES=$mig "$MPSC" -d 2>/dev/null; then
	fail "two daemons on one MIG device"
fi
if CUDA_MPS_PIPE_DIRECTORY=$WORK/pipe3 CUDA_VISIBLE_DEVICES=MIG-nope "$MPSC" -d 2>/dev/null; then
	fail "a daemon for an unknown device started"
fi
CUDA_MPS_PIPE_DIRECTORY=$WORK/pipe2 mps quit >/dev/null
expect_in "MIG record cleared" "$("$PROBE" mps 0 2)" "^state=0 "
echo "ok"
