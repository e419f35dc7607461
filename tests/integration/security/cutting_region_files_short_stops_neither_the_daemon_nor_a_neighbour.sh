#!/usr/bin/env bash
# Mallory cuts the region files she can write to nothing (ftruncate): the
# shared usage file (0666: every tenant writes the scheduler records) and
# her own owner file. gpusliced and Alice's running process map both; a
# page past the new end used to raise SIGBUS and kill them. Now the
# region's SIGBUS guard maps zeros over such a page: the daemon answers
# and reports each file once (region.truncated events), Alice's process
# lives on with its memory cap (her books are in her own file), and the
# daemon builds a fresh shared file so that new processes start (before,
# every later start on the node failed until the daemon restarted).
. "$(dirname "$0")/lib.sh" "$1"

sim_node
node_up

tenant_api $ALICE POST /v1/slices '{"name": "a1", "memory": "1GiB", "mode": "timeslice"}' >/dev/null
expect_status "create a1" 201
tenant_api $MALLORY POST /v1/slices '{"name": "m1", "memory": "1GiB", "mode": "timeslice"}' >/dev/null
expect_status "create m1" 201
tenant_start $ALICE a a1
echo "alloc $((256 << 20))" >&$TIN
wait_until 10 grep -q "^alloc $((256 << 20)) 0" "$WORK/a.out" || fail "Alice's first 256 MiB: $(cat "$WORK/a.out")"

[ -f "$RUNDIR/usage.$MALLORY" ] || fail "no owner file for Mallory: $(ls -l "$RUNDIR")"
as_uid $MALLORY truncate -s 0 "$RUNDIR/usage" || fail "Mallory could not cut the shared usage file (mode $(stat -c %a "$RUNDIR/usage"))"
as_uid $MALLORY truncate -s 0 "$RUNDIR/usage.$MALLORY" || fail "Mallory could not cut her own owner file"

# The daemon reads both (listings, metrics, its housekeeping each second).
api GET /v1/slices >/dev/null
api GET /metrics >/dev/null
wait_until 5 eval '[ "$(node_events region.truncated)" -ge 2 ]' ||
	fail "the daemon did not report both cut files: $(api GET '/v1/events?limit=50')"
healthy || fail "the daemon stopped answering after the files were cut"

# Alice's process lives on, under its cap.
echo "alloc $((256 << 20))" >&$TIN
wait_until 10 grep -q "^alloc $((256 << 20)) 0" <(sed -n 2p "$WORK/a.out") ||
	fail "Alice's second 256 MiB after the attack: $(cat "$WORK/a.out" "$WORK/a.err")"
echo "alloc $((1 << 30))" >&$TIN
wait_until 10 eval '[ "$(wc -l <"$WORK/a.out")" -ge 4 ]' || fail "Alice's process did not answer: $(cat "$WORK/a.out" "$WORK/a.err")"
kill -0 $TPID 2>/dev/null || fail "Alice's process died: $(cat "$WORK/a.err")"
last=$(tail -1 "$WORK/a.out")
[ "$last" = "alloc $((1 << 30)) 2" ] || fail "Alice's 1 GiB past her 1 GiB cap was not refused with OUT_OF_MEMORY: $last"

# New processes start: the daemon built a fresh shared usage file.
echo quit >&$TIN
exec {TIN}>&-
wait $TJOB || fail "Alice's process did not end cleanly: $(cat "$WORK/a.err")"
wait_until 5 eval '[ "$(stat -c %s "$RUNDIR/usage")" -gt 0 ]' || fail "the shared usage file stays cut"
capped_run $ALICE a1 1
echo "ok: cut region files: the daemon answers and reports them, Alice's process keeps its cap, new runs start"
