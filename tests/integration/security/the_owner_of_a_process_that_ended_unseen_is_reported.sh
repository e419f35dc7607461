#!/usr/bin/env bash
# Issue #25, Why 5 (the owner): a short process in no slice that ended
# before any watchdog scan met it is billed through NVML accounting, but
# once it is gone /proc no longer says whose it was: the report named a
# pid and nobody. The daemon now records each process's owner as it
# starts (the kernel's proc connector; a /proc scan per tick where that
# is unavailable, which the report then says), and the report of an
# accounted process no slice claims names its uid.
#
# With the watchdog looking every 3 s, Mallory runs four 0.2 s burns in
# no slice, one after another; those the watchdog never saw alive (no
# "in no slice" line for their pid) must be reported with uid 65534, and
# they count toward her repeat offences as those met alive do (the third
# is reported: `watchdog.repeat_offender`).
. "$(dirname "$0")/lib.sh" "$1"
[ -x "$BURN" ] || { echo "SKIP: no gs-burn"; exit 77; }

sim_node
printf 'watchdog:\n  interval_ms: 3000\n' >"$WORK/cfg.yaml"
daemon_up --config "$WORK/cfg.yaml"
pids=()
for i in 1 2 3 4; do
	# Its pid is the burn's: the shell execs it.
	as_uid $MALLORY sh -c 'echo $$; exec "$0" --seconds 0.2 --memory 64MiB >/dev/null 2>&1' \
		"$BURN" >"$WORK/pid" || true
	pids+=($(cat "$WORK/pid"))
	sleep 0.3
done
unseen=0
for p in "${pids[@]}"; do
	grep -q "pid=$p (" "$WORK/daemon.log" && continue # met alive
	unseen=$((unseen + 1))
	wait_until 10 eval 'api GET "/v1/events?limit=1000" | grep -q "process $p [(]"' ||
		fail "process $p (0.2 s, in no slice, never seen alive) was not reported: $(grep "pid=$p" "$WORK/daemon.log")"
	api GET "/v1/events?limit=1000" | grep -o "process $p ([^)]*)[^\"]*" >"$WORK/rep.$p"
	grep -q "process $p (uid $MALLORY)" "$WORK/rep.$p" ||
		fail "process $p was reported without its owner, uid $MALLORY: $(cat "$WORK/rep.$p")"
done
[ "$unseen" -ge 1 ] || fail "the watchdog saw all four 0.2 s processes alive (every 3 s?)"
wait_until 10 eval 'api GET "/v1/events?limit=1000" | grep -q "uid $MALLORY ran [0-9]* processes on a GPU in no slice"' ||
	fail "four processes of uid $MALLORY in no slice ($unseen never seen alive) made no repeat-offender report"
echo "ok: $unseen processes that ended unseen were reported with their owner, uid $MALLORY: $(cat "$WORK"/rep.* | head -1)"
