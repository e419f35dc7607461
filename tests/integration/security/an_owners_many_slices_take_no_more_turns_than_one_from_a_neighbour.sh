#!/usr/bin/env bash
# Issue #25, "the quantum and drain are per owner": Mallory burns in 8
# slices of her own on the GPU, all scheduled (weight 2, as Alice's),
# against Alice's one. The arbiter shares the GPU first among owners:
# all of Mallory's slices are charged what any of them used (so they
# take the turn in the order one slice would, and hold it no longer),
# and only her latest holder's work in flight holds the next holder
# back. So Alice's burn gets the rate it gets next to one slice of
# Mallory's, waits no longer between her turns (read from the shared
# file, which anyone may read: gs-region-forge watch) and starts as soon
# (generous bounds, measured in one run: 80 % of that rate, 1.5x the
# p90 wait + 20 ms, 1 s more wall time).
. "$(dirname "$0")/lib.sh" "$1"
[ -x "$BURN" ] || { echo "SKIP: no gs-burn"; exit 77; }

sim_node
node_up

N=8
tenant_api $ALICE POST /v1/slices '{"name": "a", "mode": "timeslice", "weight": 2}' >/dev/null
expect_status "create a" 201
for i in $(seq $N); do
	tenant_api $MALLORY POST /v1/slices '{"name": "m'$i'", "mode": "timeslice", "weight": 2}' >/dev/null
	expect_status "create m$i" 201
done

# mallory_burns K SECONDS: Mallory burns in m1..mK; their pids in MB.
mallory_burns() {
	MB=()
	for i in $(seq "$1"); do
		as_uid $MALLORY "$G" run --slice m$i -- "$BURN" --seconds "$2" --memory 64MiB \
			>"$WORK/m$i.json" 2>"$WORK/m$i.err" &
		PIDS+=($!)
		MB+=($!)
	done
	wait_until 10 eval '[ "$(pgrep -u '$MALLORY' -x gs-burn | wc -l)" -ge '"$1"' ]' ||
		fail "Mallory's $1 burns did not start: $(cat "$WORK"/m*.err)"
	sleep 1
}

# The processes below pid $1, deepest first.
tree() {
	local c
	for c in $(pgrep -P "$1"); do
		tree "$c"
		echo "$c"
	done
}
# stop_mb: Mallory's burns of this test, and what they run under; MBT
# lists them, for mb_gone.
stop_mb() {
	local p
	MBT=()
	for p in "${MB[@]}"; do
		MBT+=($(tree "$p") "$p")
	done
	kill "${MBT[@]}" 2>/dev/null || true
}
mb_gone() {
	local p
	for p in "${MBT[@]}"; do
		! kill -0 "$p" 2>/dev/null || return 1
	done
}

ASLOT=$(as_uid $ALICE "$FORGE" slot "$RUNDIR" a) || fail "no slot for Alice's slice"

# watched_burn OUT: Alice's 3 s burn while who holds the turn is read
# (gs-region-forge watch); OUT.holds gets the holdings.
watched_burn() {
	"$FORGE" watch "$RUNDIR" - 4 >"$1.holds" &
	PIDS+=($!)
	local w=$!
	alice_burn a 3 "$1"
	wait "$w" || fail "the turn watcher failed"
}

# waits HOLDS: Alice's waits for the turn between two of her turns (ms):
# "max p90 turns".
waits() {
	python3 - "$1" "$ASLOT" <<'PY'
import sys
holds = [l.split() for l in open(sys.argv[1]) if l.startswith("hold ")]
a = sys.argv[2]
idx = [i for i, h in enumerate(holds) if h[1] == a]
gaps = []
for i, j in zip(idx, idx[1:]):
    g = sum(float(h[2]) for h in holds[i + 1:j])
    if g > 0:
        gaps.append(g)
gaps.sort()
if not gaps:
    print("0 0 %d" % len(idx))
else:
    print("%.1f %.1f %d" % (gaps[-1], gaps[int(0.9 * (len(gaps) - 1))], len(idx)))
PY
}

mallory_burns 1 7
watched_burn "$WORK/one.json"
one=$(burn_field "$WORK/one.json" gflops)
took_one=$took
pgrep -u $MALLORY -x gs-burn >/dev/null || fail "Mallory's burn ended before Alice's: the test did not test it"
# Only this test's burns (below the shells it started them from): tests
# running beside it run burns as the same uid.
stop_mb
wait_until 10 mb_gone || fail "Mallory's burn did not stop"

mallory_burns $N 9
watched_burn "$WORK/many.json"
many=$(burn_field "$WORK/many.json" gflops)
[ "$(pgrep -u $MALLORY -x gs-burn | wc -l)" -ge $N ] ||
	fail "Mallory's burns ended before Alice's: the test did not test it"
# Her burns are not left running past the test (its cleanup kills the
# shells they were started from, not what runs below them).
stop_mb
echo "Alice's burn: ${one} GFLOP/s in ${took_one} ms next to 1 slice of Mallory's, ${many} in ${took} ms next to $N"
read -r wmax1 wp1 turns1 <<<"$(waits "$WORK/one.json.holds")"
read -r wmax8 wp8 turns8 <<<"$(waits "$WORK/many.json.holds")"
echo "Alice's waits for the turn (max, p90 ms; her turns): next to 1 slice ${wmax1} ${wp1} ${turns1}, next to $N ${wmax8} ${wp8} ${turns8}"
python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if a > 0 and b >= 0.8 * a else 1)' \
	"$one" "$many" ||
	fail "Alice's burn fell to ${many} GFLOP/s next to $N slices of one owner, against ${one} next to one"
python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if b <= 1.5 * a + 20 else 1)' \
	"$wp1" "$wp8" ||
	fail "Alice waited longer for her turns next to $N slices of one owner (p90 ${wp8} ms) than next to one (${wp1} ms)"
[ "$took" -le $((took_one + 1000)) ] ||
	fail "Alice's burn took ${took} ms next to $N slices of one owner, against ${took_one} ms next to one"
echo "ok: $N slices of one owner left Alice $(python3 -c 'import sys; print("%.0f" % (100 * float(sys.argv[2]) / float(sys.argv[1])))' "$one" "$many") % of the rate she gets next to one"
