#!/usr/bin/env bash
# A slice without limits pays for scheduling only while a slice with a
# limit or a priority is active on its GPU (#12 item 5): next to a 50 %
# slice its launches are admitted and counted in its books (the slow
# path), and within `presence` (100 ms) after that slice is gone they go
# straight to the driver again (the fast path books nothing). The plain
# slice's books are read from the region at 2.0 s and 3.5 s; the limited
# slice ran for its first second only.
. "$(dirname "$0")/lib.sh" "$1"
sim_up
P=$B/tests/gs-region-probe
L=$B/tests/gs-shim-launcher

"${RUN[@]}" --slice plain -- "$L" --api plain --seconds 4 --ns 20000 \
	--per-sync 10 >"$WORK/plain" &
PIDS+=($!)
"${RUN[@]}" --compute 50 --slice limited -- "$L" --api plain --seconds 1 \
	--ns 20000 --per-sync 10 >"$WORK/limited" &
PIDS+=($!)
sleep 2
a=$("$P" "$RUNDIR" plain)
sleep 1.5
b=$("$P" "$RUNDIR" plain)
wait
echo "plain slice's books at 2.0 s: $a"
echo "plain slice's books at 3.5 s: $b"
jcheck "$(cat "$WORK/limited")" 'd["error"] is None and d["launches"] > 0'
jcheck "$(cat "$WORK/plain")" 'd["error"] is None'
# Scheduled while the limited slice ran (the control) ...
jcheck "$a" 'd["found"] and d["launches"] > 100'
# ... and not once after it had gone.
"$PY" - "$a" "$b" <<'PY' || fail "the plain slice still took the scheduler's path after the limited slice had gone"
import json, sys
a, b = (json.loads(x) for x in sys.argv[1:])
sys.exit(0 if b["launches"] == a["launches"] else 1)
PY
echo ok
