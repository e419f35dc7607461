#!/usr/bin/env bash
# An MPS slice measured for its report (--report) leaves what a sync
# waited for to be settled at its next sync, while the GPU works, instead
# of on the way back to the application (shim/launch.c defer_ok: a light
# server's request no longer pays for it, #30 item 5). Nothing is lost
# by it: the GPU time charged is still the sim's own count, and every
# launch is booked, for kernels of 2 us and 50 us synchronised every 10
# launches (each batch short enough to be deferred), sparse and tight,
# and for a process whose last sync is followed by 1 s of idling before
# it exits (its last batch is settled at exit, charged its estimate).
# Asserted: within 5 % of the sim's count (the charge tests' bound), all
# launches booked.
. "$(dirname "$0")/lib.sh" "$1"
sim_up

n=0
bad=0
for c in "2000 0 10 0" "50000 0 10 0" "50000 100 10 0" "50000 0 10 1"; do
	set -- $c
	n=$((n + 1))
	"${RUN[@]}" --mode mps --report --slice "m$n" -- \
		"$B/tests/gs-shim-launcher" --api plain --seconds 0.8 \
		--ns "$1" --gap-us "$2" --per-sync "$3" --idle-s "$4" \
		>"$WORK/out$n" 2>"$WORK/rep$n" ||
		fail "$c: the launcher failed: $(cat "$WORK/out$n" "$WORK/rep$n")"
	sim_busy >"$WORK/busy$n"
	"$PY" - "$c" $(run_figures "$WORK/out$n" "$WORK/rep$n" "$WORK/busy$n") <<'PY' || bad=1
import sys
c, launches, wall, used, charged, booked, err = sys.argv[1:]
launches, used, charged, booked = int(launches), float(used), float(charged), int(booked)
ratio = charged / used if used > 0 else 0
print(f"{c}: {launches} launches, booked {booked}: charged {charged:.4f} s, sim {used:.4f} s (x{ratio:.4f})")
sys.exit(0 if 0.95 <= ratio <= 1.05 and booked == launches and err == "none" else 1)
PY
done
[ "$bad" = 0 ] || fail "a charge or a count off (see above)"
echo ok
