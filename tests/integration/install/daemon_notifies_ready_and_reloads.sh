#!/usr/bin/env bash
# gpusliced speaks sd_notify's protocol when $NOTIFY_SOCKET names a
# datagram socket (what systemd gives a Type=notify service): READY=1 with
# MAINPID once the API answers, RELOADING=1 then READY=1 around a SIGHUP,
# STOPPING=1 on SIGTERM. SIGHUP re-reads --config: log.level takes effect
# (debug lines appear), a key that needs a restart is named, and a file
# that no longer parses is refused with the running settings kept. The
# state directory doubles as the run directory here (--state-dir D
# --socket D/api.sock), which once made gpusliced refuse its own lock.
. "$(dirname "$0")/lib.sh" "$1"

[ -e "$B/sim/libnvidia-ml.so.1" ] || skip "this build has no simulator"
D=$WORK/d
mkdir -p "$D"
export GPUSLICE_SIM_DIR=$WORK/sim
cat >"$WORK/cfg.yaml" <<EOC
log:
  level: info
EOC

# A datagram socket that appends every message to notify.log.
python3 - "$WORK/notify.sock" "$WORK/notify.log" <<'EOP' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as f:
    f.write("BOUND\n")
    while True:
        m = s.recv(4096).decode()
        f.write(m.replace("\n", " ") + "\n")
EOP
PIDS+=($!)
wait_until 10 grep -q BOUND "$WORK/notify.log" || fail "no notify listener"

NOTIFY_SOCKET=$WORK/notify.sock "$B/bin/gpusliced" --gpus sim --config "$WORK/cfg.yaml" \
	--state-dir "$D" --socket "$D/api.sock" >"$WORK/daemon.log" 2>&1 &
pid=$!
PIDS+=($pid)
wait_until 10 grep -q READY=1 "$WORK/notify.log" ||
	fail "no READY=1 (daemon: $(tail -3 "$WORK/daemon.log"))"
# READY means the API answers already (no waiting here).
healthy "$D/api.sock" >/dev/null || fail "READY=1 came before the API answered"
grep -q "READY=1 MAINPID=$pid" "$WORK/notify.log" || fail "READY without MAINPID=$pid: $(cat "$WORK/notify.log")"
grep -q "uses run directory" "$WORK/daemon.log" && fail "gpusliced refused its own run-directory lock"

# Reload: debug on, and a key that needs a restart.
cat >"$WORK/cfg.yaml" <<EOC
log:
  level: debug
watchdog:
  action: kill
api:
  tcp: 127.0.0.1:1
EOC
kill -HUP $pid
wait_until 10 grep -q "config reloaded" "$WORK/daemon.log" || fail "SIGHUP did not reload"
line=$(grep "config reloaded" "$WORK/daemon.log")
case $line in *"log.level=debug"*"watchdog.action=kill"*"applied at the next start: api.tcp"*) ;;
*) fail "the reload line does not say what changed: $line" ;; esac
wait_until 10 grep -q ' D gpusliced.*reload done' "$WORK/daemon.log" || fail "no debug line after the reload to debug"
grep -q "RELOADING=1" "$WORK/notify.log" || fail "no RELOADING=1"
[ "$(grep -c 'READY=1' "$WORK/notify.log")" -ge 2 ] || fail "no READY=1 after the reload"
healthy "$D/api.sock" >/dev/null || fail "the API stopped answering after the reload"

# A broken file is refused, the daemon keeps running.
echo "log: [" >"$WORK/cfg.yaml"
kill -HUP $pid
wait_until 10 grep -q "reload of .* refused" "$WORK/daemon.log" || fail "a broken config was not refused"
kill -0 $pid || fail "gpusliced died on a broken config reload"
healthy "$D/api.sock" >/dev/null || fail "the API stopped answering after a refused reload"

kill -TERM $pid
wait $pid || fail "gpusliced exited $? on SIGTERM"
wait_until 5 grep -q STOPPING=1 "$WORK/notify.log" || fail "no STOPPING=1"
echo "ok"
