#!/usr/bin/env bash
# Issue #25, Why 5: short-lived processes outside any slice got past
# `kill` (twenty 0.25 s burns took 83 % of the GPU; 3 were killed), and
# nothing said who ran them. Now each one NVML lists is stopped on first
# sight, and NVML accounting catches those that ended between two looks:
# their GPU time is counted (gpuslice_unattributed_gpu_seconds_total,
# watchdog.unattributed), and the uid that keeps doing it is reported
# (watchdog.repeat_offender).
. "$(dirname "$0")/lib.sh" "$1"
[ -x "$BURN" ] || { echo "SKIP: no gs-burn"; exit 77; }

sim_node
node_up kill
for i in $(seq 20); do
	as_uid $MALLORY "$BURN" --seconds 0.25 --memory 64MiB >/dev/null 2>&1 && echo done >>"$WORK/ran" ||
		echo stopped >>"$WORK/ran"
done
sleep 1
stopped=$(grep -c stopped "$WORK/ran" || true)
[ "$(node_events watchdog.repeat_offender)" -ge 1 ] ||
	fail "Mallory ran 20 processes in no slice and no repeat offence was reported"
api GET "/v1/events?limit=1000" >/dev/null
grep -q "uid $MALLORY ran" "$WORK/body" || fail "the repeat offence does not name uid $MALLORY"
unatt=$(curl -s --unix-socket "$SOCK" http://localhost/metrics |
	awk '/^gpuslice_unattributed_gpu_seconds_total /{print $2}')
ended=$(( 20 - stopped ))
if [ "$ended" -gt 0 ]; then
	python3 -c 'import sys; assert float(sys.argv[1]) > 0' "${unatt:-0}" ||
		fail "$ended processes in no slice ended unstopped and NVML accounting counted none of their GPU time"
fi
echo "ok: 20 short processes in no slice: $stopped stopped on sight, the rest billed as unattributed (${unatt} s); uid $MALLORY reported"
echo "bench: watchdog, twenty 0.25 s processes in no slice: $stopped of 20 stopped before they ended"
