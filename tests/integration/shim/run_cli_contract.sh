#!/usr/bin/env bash
# `gpuslice run`'s contract from the shell: --help on stdout with status 0,
# usage errors with status 2 and one line on stderr, the command's own
# exit status (128 + signal when killed), --report's JSON line on stderr,
# an ephemeral slice gone afterwards, a named slice shared by concurrent
# runs (the second keeps the first one's limits and says so).
. "$(dirname "$0")/lib.sh" "$1"
sim_up
P=$B/tests/gs-region-probe

out=$("${RUN[@]}" --help) || fail "--help exited non-zero"
grep -q "^usage: gpuslice run" <<<"$out" || fail "--help: $out"

set +e
err=$("${RUN[@]}" --memory lots -- true 2>&1 >/dev/null); rc=$?
[ $rc -eq 2 ] || fail "bad --memory: status $rc"
[ "$(wc -l <<<"$err")" -eq 1 ] && grep -q "^gpuslice run: " <<<"$err" ||
	fail "bad --memory: $err"
"${RUN[@]}" --compute 140 -- true 2>/dev/null; [ $? -eq 2 ] || fail "--compute 140"
"${RUN[@]}" --priority urgent -- true 2>/dev/null; [ $? -eq 2 ] || fail "--priority"
"${RUN[@]}" --weight 0 -- true 2>/dev/null; [ $? -eq 2 ] || fail "--weight 0"
"${RUN[@]}" --bogus -- true 2>/dev/null; [ $? -eq 2 ] || fail "--bogus"
"${RUN[@]}" --memory 1GiB 2>/dev/null; [ $? -eq 2 ] || fail "no command"
"${RUN[@]}" -- sh -c 'exit 7'; [ $? -eq 7 ] || fail "exit status not passed on"
"${RUN[@]}" -- sh -c 'kill -9 $$'; rc=$?
[ $rc -eq 137 ] || fail "killed command: status $rc, want 137"
"${RUN[@]}" -- /nonexistent/program 2>/dev/null; rc=$?
[ $rc -eq 127 ] || fail "missing program: status $rc, want 127"
set -e

# --report: one JSON line on stderr, the command's stdout untouched.
"${RUN[@]}" --memory 4GiB --slice rep --report -- \
	"$B/bin/gs-alloc" --api plain --chunk 256MiB --limit 1GiB \
	>"$WORK/out" 2>"$WORK/err"
rep=$(cat "$WORK/err")
[ "$(wc -l <"$WORK/err")" -eq 1 ] || fail "--report: not one line: $rep"
jcheck "$rep" 'd["slice"] == "rep" and set(d) >= {"gpu_busy_s", "memory_peak_bytes", "throttled_s"}'
jcheck "$rep" 'd["memory_peak_bytes"] >= 2**30 and d["memory_peak_bytes"] <= 4 * 2**30'
jcheck "$(cat "$WORK/out")" 'd["allocated_bytes"] == 2**30'
jcheck "$("$P" "$RUNDIR" rep)" 'not d["found"]'   # ephemeral: gone

# Two runs share one named slice; the second takes the first's limits.
"${RUN[@]}" --memory 2GiB --slice pair -- sleep 3 &
PIDS+=($!)
for _ in $(seq 50); do
	"$P" "$RUNDIR" pair | grep -q '"found":true' && break
	sleep 0.1
done
"${RUN[@]}" --memory 8GiB --slice pair -- "$B/tests/gs-shim-probe" \
	>"$WORK/probe" 2>"$WORK/err2"
grep -q "its own limits apply" "$WORK/err2" || fail "no warning: $(cat "$WORK/err2")"
jcheck "$(cat "$WORK/probe")" 'd["cu_total"] == 2 * 2**30'
jcheck "$("$P" "$RUNDIR" pair)" 'd["found"] and d["n_procs"] == 1'
wait
jcheck "$("$P" "$RUNDIR" pair)" 'not d["found"]'
echo ok
