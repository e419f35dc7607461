#!/usr/bin/env bash
# The shim is a guest: it says nothing on the host's stdout/stderr (even
# when its slice is missing: it logs to GPUSLICE_LOG and the program gets
# CUDA_ERROR_NOT_PERMITTED, never an unlimited GPU), works in programs
# that never touch CUDA, exports only
# the hooked names, lets each process of a forking command (a shell
# running two programs) attach as itself, and keys its books by GPU UUID
# whether CUDA_VISIBLE_DEVICES names the GPU by index or by UUID.
. "$(dirname "$0")/lib.sh" "$1"
sim_up 2xH100-SXM5-80GB
SHIM=$B/lib/libgpuslice.so
P=$B/tests/gs-region-probe
G=$((1 << 30))

# A slice that does not exist: the program's own error report (the shim
# refuses, it does not run unlimited), nothing on stderr, a log line.
GPUSLICE_SLICE=nosuch GPUSLICE_LOG="$WORK/shim.log" LD_PRELOAD=$SHIM \
	"$B/bin/gs-alloc" --api plain --chunk 1GiB --limit 2GiB \
	>"$WORK/out" 2>"$WORK/err" || true
[ ! -s "$WORK/err" ] || fail "the shim wrote to stderr: $(cat "$WORK/err")"
jcheck "$(cat "$WORK/out")" 'd["error"] == "CUDA_ERROR_NOT_PERMITTED"'
grep -q "slice=nosuch" "$WORK/shim.log" || fail "nothing logged: $(cat "$WORK/shim.log")"
# ...and with no log file asked for, no file appears and nothing is said.
GPUSLICE_SLICE=nosuch LD_PRELOAD=$SHIM "$B/bin/gs-alloc" --api plain \
	--limit 1GiB 2>"$WORK/err2" >/dev/null || true
[ ! -s "$WORK/err2" ] || fail "the shim wrote to stderr: $(cat "$WORK/err2")"

# Programs that never use CUDA run as before.
[ "$(LD_PRELOAD=$SHIM GPUSLICE_SLICE=x sh -c 'echo guest')" = guest ] ||
	fail "sh under the shim"
LD_PRELOAD=$SHIM ls / >/dev/null || fail "ls under the shim"

# Exactly the hooked names are exported.
want=$(sed -n 's/^[[:space:]]*X(\([A-Za-z0-9_]*\)[,)].*/\1/p' \
	"$GS_SRC/shim/hooks.h" | sort -u)
want=$(printf '%s\ndlsym\n' "$want" | sort -u)
have=$(nm -D --defined-only "$SHIM" | awk '{ print $3 }' | sort -u)
[ "$want" = "$have" ] || fail "exports differ: $(diff <(echo "$want") <(echo "$have"))"

# A shell running two programs one after the other: each attaches as
# itself, and the first one's share is back when the second starts.
out=$("${RUN[@]}" --memory 4GiB -- sh -c \
	"\"$B/bin/gs-alloc\" --api plain --chunk 1GiB --limit 3GiB && \"$B/bin/gs-alloc\" --api plain --chunk 1GiB --limit 3GiB")
[ "$(grep -c '"allocated_bytes":3221225472' <<<"$out")" -eq 2 ] ||
	fail "second program did not get the whole slice: $out"

# Books keyed by UUID: --gpu 1 (index), then the same GPU by UUID.
uuid1=$("$B/bin/gpuslice" sim status --json --dir "$SIMDIR" |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["gpus"][1]["uuid"])')
for sel in "--gpu 1" "--gpu $uuid1"; do
	"${RUN[@]}" --memory 4GiB --slice vis $sel -- "$B/bin/gs-alloc" \
		--api plain --chunk 1GiB --limit 1GiB --hold 3 >"$WORK/vis" &
	PIDS+=($!)
	wait_file "$WORK/vis"
	jcheck "$("$P" "$RUNDIR" vis)" "d['devs'] == ['$uuid1'] and d['mem_used'] > $G"
	wait
	rm -f "$WORK/vis"
done
CUDA_VISIBLE_DEVICES=1,0 "${RUN[@]}" --memory 4GiB --slice vis --gpu 0 -- \
	"$B/bin/gs-alloc" --api plain --chunk 1GiB --limit 1GiB --hold 3 >"$WORK/vis" &
PIDS+=($!)
wait_file "$WORK/vis"
jcheck "$("$P" "$RUNDIR" vis)" "d['devs'] == ['$uuid1']"
wait
echo ok
