#!/usr/bin/env bash
# Issue #25, Why 4: lying in many slices starved a neighbour. The default
# quota lets one user hold 64 slices and the arbiter gave each slice its
# own turn: Mallory's 64 slices, each with a living process of hers and
# records claiming every turn, took the GPU from Alice's honest strict
# 50 % burn. Now the arbiter is fair by owner first: all of one owner's
# slices on a GPU are charged what any of them held, so 64 slices get the
# turns one would, and Alice keeps at least 90 % of her rate alone.
. "$(dirname "$0")/lib.sh" "$1"
[ -x "$BURN" ] || { echo "SKIP: no gs-burn"; exit 77; }

sim_node
node_up

tenant_api $ALICE POST /v1/slices '{"name": "a50", "mode": "timeslice", "compute": 50}' >/dev/null
expect_status "create a50" 201
alice_burn a50 3 "$WORK/alone.json"
alone=$(burn_field "$WORK/alone.json" gflops)
took_alone=$took

N=${LIARS:-64}
# Her N slices, each with a living process of hers that asked for it (the
# watchdog takes its entry as genuine), attached by hand; in one shell of
# hers, so that it takes seconds.
cat >"$WORK/liars.sh" <<'SH'
for i in $(seq "$1"); do
	code=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$2" -X POST \
		-H 'Content-Type: application/json' \
		--data-binary '{"name": "m'$i'", "mode": "timeslice"}' http://localhost/v1/slices)
	[ "$code" = 201 ] || { echo "create m$i: $code"; exit 1; }
	GPUSLICE_SLICE=m$i sleep 120 &
	echo "sleeper $!"
	"$3" proc "$4" m$i $! >/dev/null || { echo "attach m$i failed"; exit 1; }
done
echo "liars ready"
SH
as_uid $MALLORY bash "$WORK/liars.sh" "$N" "$SOCK" "$FORGE" "$RUNDIR" >"$WORK/liars.out" 2>&1 ||
	fail "Mallory's slices were not made: $(tail -3 "$WORK/liars.out")"
for p in $(awk '/^sleeper /{print $2}' "$WORK/liars.out"); do PIDS+=("$p"); done
grep -q "liars ready" "$WORK/liars.out" || fail "Mallory's slices were not made: $(tail -3 "$WORK/liars.out")"
as_uid $MALLORY "$FORGE" turnsall "$RUNDIR" - 12 >"$WORK/turns.out" 2>"$WORK/turns.err" &
FPID=$!
PIDS+=("$FPID")
wait_until 5 grep -q "claiming for $N slices" "$WORK/turns.out" ||
	fail "the forger did not start: $(cat "$WORK/turns.out" "$WORK/turns.err")"
sleep 0.5
alice_burn a50 3 "$WORK/attacked.json"
attacked=$(burn_field "$WORK/attacked.json" gflops)
kill -0 "$FPID" 2>/dev/null || fail "the attack ended before the burn did: the test did not test it"
echo "Alice's strict 50 % burn: ${alone} GFLOP/s in ${took_alone} ms alone, ${attacked} in ${took} ms next to 64 lying slices"
python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if a > 0 and b >= 0.9 * a else 1)' \
	"$alone" "$attacked" ||
	fail "Alice's burn fell to ${attacked} GFLOP/s next to 64 lying slices, against ${alone} alone"
echo "ok: 64 lying slices of one tenant left Alice $(python3 -c 'import sys; print("%.0f" % (100 * float(sys.argv[2]) / float(sys.argv[1])))' "$alone" "$attacked") % of her rate alone"
