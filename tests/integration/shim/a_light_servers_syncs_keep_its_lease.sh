#!/usr/bin/env bash
# A light server in an MPS slice of its own that is not measured (high
# priority, no limit: the study's light-inference server A, #30 item 5)
# keeps its lease of launches across its synchronising calls while the
# lease is young (2 ms): its requests (a copy in, layers of kernels, a
# copy out and cuStreamSynchronize each) are not admitted one by one
# under the region lock. Seen from outside as the futex calls of the
# whole run (strace -c): each admission of an unmeasured lease wakes the
# GPU's waiters: 1.02 futex calls a request before, 0.17 now; asserted:
# under 0.6 (a loaded host's slower requests share fewer to a lease).
# Skipped without strace (scripts/deps.sh installs it).
. "$(dirname "$0")/lib.sh" "$1"
command -v strace >/dev/null ||
	{ echo "SKIP: strace is not installed (scripts/deps.sh installs it)"; exit 77; }
sim_up

strace -f -qq -c -e trace=futex -o "$WORK/strace" \
	"${RUN[@]}" --mode mps --priority high --memory 8GiB -- \
	"$B/bin/gs-infer" --light --seconds 2 >"$WORK/out" 2>"$WORK/err" ||
	fail "the light server failed: $(cat "$WORK/out" "$WORK/err")"
"$PY" - "$WORK/out" "$WORK/strace" <<'PY' || fail "the light server's requests were admitted one by one"
import json, sys
out = [l for l in open(sys.argv[1]) if l.startswith("{")]
req = json.loads(out[-1])["requests"]
calls = 0
for line in open(sys.argv[2]):
    f = line.split()
    if f and f[-1] == "futex":
        calls = int(f[3])
print(f"{req} requests, {calls} futex calls ({calls / max(req, 1):.3f} a request)")
sys.exit(0 if req >= 100 and calls * 5 < req * 3 else 1)
PY
echo ok
