#!/usr/bin/env bash
# A light server in an MPS slice with a priority (the study's
# light-inference server A, #30 item 5) is admitted under the region lock,
# but wakes the GPU's waiters only when some process waits: alone on its
# GPU, its requests (a copy in, 16 kernels, a copy out and
# cuStreamSynchronize each) make no futex call. It made one a request
# (each admission of an unmeasured lease woke whoever slept on the GPU's
# seq word, nobody). Counted with strace -c over the whole run, for the
# unmeasured server and for one measured for its report (--report);
# asserted: under 0.1 a request. (The wakes that matter, of processes
# waiting for a turn or a priority, are the turn and priority tests'.)
# Skipped without strace (scripts/deps.sh installs it).
. "$(dirname "$0")/lib.sh" "$1"
command -v strace >/dev/null ||
	{ echo "SKIP: strace is not installed (scripts/deps.sh installs it)"; exit 77; }
sim_up

for extra in "" "--report"; do
	strace -f -qq -c -e trace=futex -o "$WORK/strace" \
		"${RUN[@]}" --mode mps --priority high --memory 8GiB $extra -- \
		"$B/bin/gs-infer" --light --seconds 1.5 >"$WORK/out" 2>"$WORK/err" ||
		fail "the light server ($extra) failed: $(cat "$WORK/out" "$WORK/err")"
	"$PY" - "$WORK/out" "$WORK/strace" "$extra" <<'PY' || fail "the light server ($extra) woke nobody at its requests"
import json, sys
out = [l for l in open(sys.argv[1]) if l.startswith("{")]
req = json.loads(out[-1])["requests"]
calls = 0
for line in open(sys.argv[2]):
    f = line.split()
    if f and f[-1] == "futex":
        calls = int(f[3])
print(f"{sys.argv[3] or 'unmeasured'}: {req} requests, {calls} futex calls ({calls / max(req, 1):.3f} a request)")
sys.exit(0 if req >= 100 and calls * 10 < req else 1)
PY
done

echo ok
