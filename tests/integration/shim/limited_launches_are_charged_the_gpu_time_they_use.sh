#!/usr/bin/env bash
# A compute-limited slice's launches are admitted in leases and timed in
# batches (one pair of events for up to 1024 launches), the GPU idle time
# between them told apart from the host times around the two records
# (shim/charge.c). Whatever the rhythm, the GPU
# time the shim charges (`gpuslice run --report`, gpu_busy_s) is within
# 8 % of what the sim's own accounting says the process used:
#   tight    2 us kernels launched back to back, 500 per sync;
#   sparse   50 us kernels, the host sleeping 200 us after each (the GPU
#            idle most of the time inside every batch);
#   mixed    20 us kernels, 30 us host sleeps, 100 per sync;
#   dense    200 us kernels, 100 us sleeps (the queue never runs dry);
#   single   8 us kernels, one per sync.
# A 60 % limit holds all of them, so a batch charged its idle gaps too
# would be throttled and show up as a charge well above the sim's.
. "$(dirname "$0")/lib.sh" "$1"
sim_up

n=0
for c in "tight 2000 0 500" "sparse 50000 200 50" "mixed 20000 30 100" \
	"dense 200000 100 20" "single 8000 0 1"; do
	set -- $c
	n=$((n + 1))
	"${RUN[@]}" --compute 60 --report --slice "l$n" -- \
		"$B/tests/gs-shim-launcher" --api plain --seconds 1.5 --ns "$2" \
		--gap-us "$3" --per-sync "$4" >"$WORK/out$n" 2>"$WORK/rep$n" ||
		fail "$1: the launcher failed: $(cat "$WORK/out$n" "$WORK/rep$n")"
	sim_busy >"$WORK/busy$n"
	"$PY" - "$1" $(run_figures "$WORK/out$n" "$WORK/rep$n" "$WORK/busy$n") <<'PY' ||
import sys
name, launches, wall, used, charged, booked, err = sys.argv[1:]
launches, used, charged, booked = int(launches), float(used), float(charged), int(booked)
ratio = charged / used if used > 0 else 0
print(f"{name:7s} {launches:7d} launches: charged {charged:.3f} s, "
      f"sim {used:.3f} s (x{ratio:.3f}), {booked} launches booked")
sys.exit(0 if 0.92 <= ratio <= 1.08 and booked == launches else 1)
PY
		fail "$1: charged GPU time or launches off"
done
echo ok
