# latency_pairs.sh - sourced by the priority-latency tests (shim and
# daemon): gs-infer at high priority measured alone and next to a
# saturating burn at low priority, in pairs, against an unprotected
# control. The caller defines high_infer (prints gs-infer's JSON line)
# and low_burn (a 7 s gs-burn in the low slice, its JSON line on stdout).
#
# gs-infer counts its requests from 0.5 s after its start (--warmup): a
# server that arrives while a low kernel runs (gs-burn's take ~60 ms on
# the sim) shares the GPU with it until it ends, as on a real time-sliced
# GPU, since nothing preempts a kernel already running; what the
# scheduler decides is that no further low work starts, which is what
# the counted requests measure. The arrival is printed (warmup_max_ms).

INFER=("$B/bin/gs-infer" --light --width 8192 --seconds 4 --warmup 0.5)

# json_field JSON FIELD
json_field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# unprotected: $bare, gs-infer next to a burn without the shim.
unprotected() {
	"$B/bin/gs-burn" --seconds 7 >/dev/null 2>&1 &
	local b=$!
	PIDS+=($b)
	sleep 1
	bare=$("${INFER[@]}")
	wait "$b"
}

# latency_pairs BOUND: up to five alone/with pairs (host jitter on a
# loaded machine moves p99 from run to run); true at the first pair whose
# p99 next to the burn is within BOUND x alone. OUT: $alone, $with (the
# last pair's JSON lines), $WORK/burn (the last burn's).
latency_pairs() {
	local attempt lo a w
	for attempt in 1 2 3 4 5; do
		alone=$(high_infer)
		low_burn >"$WORK/burn" 2>"$WORK/burn.err" &
		lo=$!
		PIDS+=($lo)
		sleep 1
		with=$(high_infer)
		wait "$lo"
		a=$(json_field "$alone" p99_ms)
		w=$(json_field "$with" p99_ms)
		echo "attempt $attempt: p99 alone $a ms, next to a low-priority burn $w ms${bare:+ (unprotected: $(json_field "$bare" p99_ms) ms)}; worst while arriving $(json_field "$with" warmup_max_ms) ms"
		awk -v a="$a" -v w="$w" -v k="$1" 'BEGIN { exit !(w <= k * a) }' && return 0
	done
	return 1
}
