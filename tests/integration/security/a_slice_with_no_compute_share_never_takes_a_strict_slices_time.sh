#!/usr/bin/env bash
# Issue #25, Why 9 and What 4: a slice with no compute share is best
# effort. Alice has a strict 50 % slice; Mallory a slice with no compute
# share on the same GPU (admitted, though Alice's share and hers are not
# promised together), in which she burns and forges her records (she
# holds the turn, waits, has work in flight: gs-region-forge turns).
# While a slice with a share waits or was active lately, the arbiter
# does not hear share-less slices of its priority or lower, so Alice's
# burn keeps at least 90 % of its rate alone; Mallory's burn still runs
# in the time Alice leaves (it ends with kernels done).
. "$(dirname "$0")/lib.sh" "$1"
[ -x "$BURN" ] || { echo "SKIP: no gs-burn"; exit 77; }

sim_node
node_up

tenant_api $ALICE POST /v1/slices '{"name": "a50", "mode": "timeslice", "compute": 50}' >/dev/null
expect_status "create a50" 201
tenant_api $MALLORY POST /v1/slices '{"name": "m0", "mode": "timeslice"}' >/dev/null
expect_status "create m0" 201
alice_burn a50 3 "$WORK/alone.json"
alone=$(burn_field "$WORK/alone.json" gflops)
took_alone=$took

as_uid $MALLORY "$G" run --slice m0 -- "$BURN" --seconds 8 --memory 256MiB \
	>"$WORK/m.json" 2>"$WORK/m.err" &
MJOB=$!
PIDS+=($MJOB)
wait_until 5 pgrep -u $MALLORY -x gs-burn >/dev/null || fail "Mallory's burn did not start: $(cat "$WORK/m.err")"
as_uid $MALLORY "$FORGE" turns "$RUNDIR" m0 6 >"$WORK/turns.out" 2>"$WORK/turns.err" &
FPID=$!
PIDS+=($FPID)
wait_until 5 grep -q "own records written" "$WORK/turns.out" ||
	fail "the forger did not start: $(cat "$WORK/turns.out" "$WORK/turns.err")"
sleep 0.5
alice_burn a50 3 "$WORK/attacked.json"
attacked=$(burn_field "$WORK/attacked.json" gflops)
kill -0 "$FPID" 2>/dev/null || fail "the attack ended before the burn did: the test did not test it"
pgrep -u $MALLORY -x gs-burn >/dev/null || fail "Mallory's burn ended before Alice's: the test did not test it"
echo "Alice's strict 50 % burn: ${alone} GFLOP/s in ${took_alone} ms alone, ${attacked} in ${took} ms next to a share-less burn"
python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if a > 0 and b >= 0.9 * a else 1)' \
	"$alone" "$attacked" ||
	fail "Alice's burn fell to ${attacked} GFLOP/s next to a slice with no compute share, against ${alone} alone"
mrc=0
wait "$MJOB" || mrc=$?
[ "$mrc" -eq 0 ] ||
	fail "Mallory's best-effort burn failed (exit $mrc): $(cat "$WORK/m.json" "$WORK/m.err"); daemon: $(grep -E 'm0|watchdog|kill' "$WORK/daemon.log" | tail -5)"
mk=$(burn_field "$WORK/m.json" kernels)
[ "$mk" -gt 0 ] || fail "Mallory's best-effort burn ran no kernel: $(cat "$WORK/m.json")"
echo "ok: a share-less slice left Alice $(python3 -c 'import sys; print("%.0f" % (100 * float(sys.argv[2]) / float(sys.argv[1])))' "$alone" "$attacked") % of her rate alone and ran ${mk} kernels in what she left"
