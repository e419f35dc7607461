#!/usr/bin/env bash
# Issue #25 (fair by owner, on ground truth): one slice with a compute
# share of its own that lies. Alice and Mallory each have a strict 50 %
# slice on the GPU. Mallory burns in hers and, at the same time, holds her
# own token bucket full (her shim never sees itself out of tokens),
# rewrites her scheduler records (she holds the turn, waits, has work in
# flight for seconds, has used no GPU time) and keeps her books saying
# she used no GPU time (gs-region-forge refill, turns, hide). The watchdog
# is left at its default (flag), so what holds her to her share is the
# arbiter alone: it counts her share from the turns and drains it gave
# her, not from her bucket or records. Before, she took the turns of a
# whole quantum whenever Alice got tokens back and Alice's burn fell to
# 70-88 % of its rate alone; now it keeps at least 90 %.
. "$(dirname "$0")/lib.sh" "$1"
[ -x "$BURN" ] || { echo "SKIP: no gs-burn"; exit 77; }

sim_node
node_up

tenant_api $ALICE POST /v1/slices '{"name": "a50", "mode": "timeslice", "compute": 50}' >/dev/null
expect_status "create a50" 201
tenant_api $MALLORY POST /v1/slices '{"name": "m50", "mode": "timeslice", "compute": 50}' >/dev/null
expect_status "create m50" 201
alice_burn a50 3 "$WORK/alone.json"
alone=$(burn_field "$WORK/alone.json" gflops)
took_alone=$took

as_uid $MALLORY "$G" run --slice m50 -- "$BURN" --seconds 20 --memory 256MiB \
	>"$WORK/m.json" 2>"$WORK/m.err" &
PIDS+=($!)
wait_until 5 pgrep -u $MALLORY -x gs-burn >/dev/null || fail "Mallory's burn did not start: $(cat "$WORK/m.err")"
FP=()
for a in refill turns hide; do
	as_uid $MALLORY "$FORGE" $a "$RUNDIR" m50 19 >"$WORK/$a.out" 2>"$WORK/$a.err" &
	PIDS+=($!)
	FP+=($!)
done
wait_until 5 eval 'grep -q "holding tokens" "$WORK/refill.out" && grep -q "own records written" "$WORK/turns.out" && grep -q hiding "$WORK/hide.out"' ||
	fail "the lies did not reach Mallory's own files: $(cat "$WORK"/{refill,turns,hide}.{out,err})"
sleep 0.5
alice_burn a50 4 "$WORK/attacked.json"
attacked=$(burn_field "$WORK/attacked.json" gflops)
for p in "${FP[@]}"; do
	kill -0 "$p" 2>/dev/null || fail "an attack ended before the burn did: the test did not test it"
done
pgrep -u $MALLORY -x gs-burn >/dev/null || fail "Mallory's burn ended before Alice's: the test did not test it"
echo "Alice's strict 50 % burn: ${alone} GFLOP/s in ${took_alone} ms alone, ${attacked} in ${took} ms next to Mallory's lying 50 % slice"
python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if a > 0 and b >= 0.9 * a else 1)' \
	"$alone" "$attacked" ||
	fail "Alice's burn fell to ${attacked} GFLOP/s next to one lying slice with a share, against ${alone} alone"
echo "ok: a lying slice with a share left Alice $(python3 -c 'import sys; print("%.0f" % (100 * float(sys.argv[2]) / float(sys.argv[1])))' "$alone" "$attacked") % of her rate alone"
