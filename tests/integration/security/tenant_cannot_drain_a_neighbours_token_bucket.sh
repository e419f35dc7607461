#!/usr/bin/env bash
# Alice's slice has a strict 50 % share. Mallory keeps trying to empty the
# token bucket of every slice but hers (gs-region-forge drain '*': what
# her own code could write; she does not even see Alice's slice's name).
# The bucket lives in Alice's owner file (usage.<alice>, hers, mode 0600),
# out of Mallory's reach; all she can write is the shared scheduler
# record, where a claim that Alice has no tokens gives her none and takes
# none away. So Alice's burn keeps its share: its throughput under attack stays
# within 30 % of what it gets alone. (Before owner files the bucket was in
# the 0666 usage file, and the same attack took Alice's share to 0.)
. "$(dirname "$0")/lib.sh" "$1"
[ -x "$BURN" ] || { echo "SKIP: no gs-burn"; exit 77; }

sim_node
node_up

tenant_api $ALICE POST /v1/slices '{"name": "a50", "compute": 50, "mode": "timeslice"}' >"$WORK/a50.json"
grep -q '"mode": *"timeslice"' "$WORK/a50.json" || fail "a50 is not time-sliced: $(cat "$WORK/a50.json")"
expect_status "create a50" 201

alice_burn a50 3 "$WORK/alone.json"
alone=$(burn_field "$WORK/alone.json" gflops)
took_alone=$took

as_uid $MALLORY "$FORGE" drain "$RUNDIR" '*' 8 >"$WORK/drain.out" 2>"$WORK/drain.err" &
DRAIN=$!
PIDS+=("$DRAIN")
sleep 0.5
alice_burn a50 3 "$WORK/attacked.json"
attacked=$(burn_field "$WORK/attacked.json" gflops)
echo "Alice's burn: ${alone} GFLOP/s in ${took_alone} ms alone, ${attacked} in ${took} ms under attack"

python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if a > 0 and b >= 0.7 * a else 1)' \
	"$alone" "$attacked" ||
	fail "Alice's share fell under attack: ${attacked} GFLOP/s against ${alone} alone"
[ "$took" -le $((took_alone * 3 / 2 + 1000)) ] ||
	fail "Alice's burn was held back under attack: ${took} ms against ${took_alone} ms alone"
wait "$DRAIN" && fail "Mallory reached Alice's bucket: $(head -3 "$WORK/drain.out")"
grep -q "bucket out of reach" "$WORK/drain.out" && grep -q "Permission denied" "$WORK/drain.err" ||
	fail "the drain did not fail on permissions: $(head -3 "$WORK/drain.out" "$WORK/drain.err")"
echo "ok: Alice's 50 % burn: ${alone} GFLOP/s in ${took_alone} ms alone, ${attacked} in ${took} ms while Mallory tried to drain its bucket"
