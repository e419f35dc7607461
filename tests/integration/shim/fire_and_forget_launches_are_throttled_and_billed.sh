#!/usr/bin/env bash
# A process that launches kernels and never synchronises (fire and forget:
# 1 ms kernels for 4 s, no stream or context synchronisation, exit with
# work still queued) in a 20 % slice is held to its share and billed for
# what it used: the shim bounds the work it keeps in flight (about 2 ms of
# estimate, waiting on its oldest batch's event when over) and charges
# each batch from its events whether or not the program ever looks. By
# the sim's own accounting it used 20 % of the GPU (within 4 points), and
# the GPU time charged (`gpuslice run --report`) is within 10 % of that.
. "$(dirname "$0")/lib.sh" "$1"
sim_up

"${RUN[@]}" --compute 20 --report --slice ff -- "$B/tests/gs-shim-launcher" \
	--api plain --seconds 4 --ns 1000000 --per-sync 0 >"$WORK/out" 2>"$WORK/rep" ||
	fail "the launcher failed: $(cat "$WORK/out" "$WORK/rep")"
sleep 0.5 # what it left queued finishes on the GPU
sim_busy >"$WORK/busy"
"$PY" - $(run_figures "$WORK/out" "$WORK/rep" "$WORK/busy") <<'PY' || fail "a fire-and-forget process was not held to its share, or not billed"
import sys
launches, wall, used, charged, booked, err = sys.argv[1:]
wall, used, charged = float(wall), float(used), float(charged)
share = used / wall * 100
ratio = charged / used if used > 0 else 0
print(f"{launches} launches, never synchronised: {share:.1f}% of the GPU "
      f"over {wall:.2f} s (sim {used:.3f} s), charged {charged:.3f} s (x{ratio:.3f})")
sys.exit(0 if err == "none" and abs(share - 20) <= 4 and 0.9 <= ratio <= 1.1 else 1)
PY
echo ok
