#!/usr/bin/env bash
# Mallory cuts the region files she can write to nothing (ftruncate): her
# own owner file. (The shared usage file is the daemon's, 0644: she is
# refused; before region layout 5 it was 0666 and she cut it too, which
# stopped every later start on the node until the daemon rebuilt it.)
# gpusliced maps her file; a page past the new end used to raise SIGBUS
# and kill it. Now the region's SIGBUS guard maps zeros over such a page:
# the daemon answers and reports the file once (region.truncated), and
# Alice's running process lives on with its memory cap (her books are in
# her own file); new processes start.
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
as_uid $MALLORY truncate -s 0 "$RUNDIR/usage" 2>"$WORK/cut.err" &&
	fail "Mallory cut the shared usage file (mode $(stat -c %a "$RUNDIR/usage"))"
grep -q "Permission denied" "$WORK/cut.err" || fail "cutting usage: $(cat "$WORK/cut.err")"
as_uid $MALLORY truncate -s 0 "$RUNDIR/usage.$MALLORY" || fail "Mallory could not cut her own owner file"

# The daemon reads both (listings, metrics, its housekeeping each second).
api GET /v1/slices >/dev/null
api GET /metrics >/dev/null
wait_until 5 eval '[ "$(node_events region.truncated)" -ge 1 ]' ||
	fail "the daemon did not report the cut file: $(api GET '/v1/events?limit=50')"
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

# New processes start.
echo quit >&$TIN
exec {TIN}>&-
wait $TJOB || fail "Alice's process did not end cleanly: $(cat "$WORK/a.err")"
[ "$(stat -c %s "$RUNDIR/usage")" -gt 0 ] || fail "the shared usage file was cut"
capped_run $ALICE a1 1
echo "ok: Mallory cannot cut the shared file; her cut owner file: the daemon answers and reports it, Alice's process keeps its cap, new runs start"
