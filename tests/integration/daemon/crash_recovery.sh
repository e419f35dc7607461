#!/usr/bin/env bash
# kill -9 of gpusliced at random points while several clients create and
# delete slices (10k operations): after each restart the slices are
# exactly those of the acknowledged operations (operations in flight at
# the kill are resolved by looking), and the shared region holds exactly
# those slices: nothing lost, nothing leaked.
. "$(dirname "$0")/lib.sh" "$1"

OPS=${GS_CRASH_OPS:-10000}
daemon_up

"$LOADGEN" crash --socket "$SOCK" --clients 4 --ops "$OPS" --keep 4 \
	--out "$WORK/expected" >"$WORK/loadgen.json" 2>"$WORK/loadgen.err" &
LPID=$!
PIDS+=("$LPID")

kills=0
while kill -0 "$LPID" 2>/dev/null; do
	# 0.05 .. 0.30 s between kills: some land mid-batch, some idle.
	sleep "0.$(printf '%02d' $((RANDOM % 26 + 5)))"
	kill -0 "$LPID" 2>/dev/null || break
	daemon_kill9
	kills=$((kills + 1))
	daemon_up
done
rc=0
wait "$LPID" || rc=$?
[ "$rc" -eq 0 ] || { cat "$WORK/loadgen.err" >&2; fail "loadgen exited $rc"; }
[ "$kills" -ge 2 ] || fail "only $kills kills happened; the run was too short"

# One more crash with nothing in flight, then compare.
daemon_kill9
daemon_up
sort "$WORK/expected" >"$WORK/want"
api GET /v1/slices | python3 -c '
import json, sys
for s in json.load(sys.stdin)["slices"]:
    print(s["name"])' | sort >"$WORK/got"
diff -u "$WORK/want" "$WORK/got" >&2 ||
	fail "state after restart differs from the acknowledged operations"
"$LOADGEN" region "$RUNDIR" | sort >"$WORK/region"
diff -u "$WORK/want" "$WORK/region" >&2 ||
	fail "the region does not hold exactly the store's slices"
n=$(wc -l <"$WORK/want")
echo "ok: $kills kills during $OPS operations; $n slices as acknowledged; $(cat "$WORK/loadgen.json")"
