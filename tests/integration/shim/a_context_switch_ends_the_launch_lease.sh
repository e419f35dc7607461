#!/usr/bin/env bash
# The launch path caches each thread's current context (no cuCtxGetCurrent
# per launch, #30), so the calls that change it must end the thread's
# lease: gs-shim-ctxswitch switches one thread between two contexts with
# cuCtxSetCurrent and cuCtxPushCurrent/PopCurrent without synchronising,
# 2 us kernels in one and 1 ms kernels in the other, in a 100 % slice
# with --report. Every launch succeeds and is booked, and the GPU time
# charged is within 10 % of the sim's count: a lease carried across a
# switch would put the 1 ms kernels in the 2 us context's batch, timed by
# events recorded in the wrong context (so not timed at all) and charged
# the 2 us estimate.
. "$(dirname "$0")/lib.sh" "$1"
sim_up

"${RUN[@]}" --compute 100 --report --slice cs -- "$B/tests/gs-shim-ctxswitch" \
	--rounds 10 >"$WORK/out" 2>"$WORK/rep" ||
	fail "the switcher failed: $(cat "$WORK/out" "$WORK/rep")"
sim_busy >"$WORK/busy"
"$PY" - $(run_figures "$WORK/out" "$WORK/rep" "$WORK/busy") <<'PY' || fail "launches across context switches were not charged what they used"
import sys
launches, wall, used, charged, booked, err = sys.argv[1:]
launches, used, charged, booked = int(launches), float(used), float(charged), int(booked)
ratio = charged / used if used > 0 else 0
print(f"{launches} launches across switches: charged {charged:.4f} s, sim {used:.4f} s (x{ratio:.3f}), {booked} booked")
sys.exit(0 if err == "none" and booked == launches and 0.9 <= ratio <= 1.1 else 1)
PY
echo ok
