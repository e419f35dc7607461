#!/usr/bin/env bash
# A --compute 30 strict MPS slice alone on the GPU gets no more than about
# 30 % of the SMs: its saturating burn does 0.15..0.45 of the kernels the
# same burn does in an unlimited MPS slice in the same time, and its
# report bills SM-time at share 0.30. In share mode the same slice alone
# may use what is idle (at least 0.8 of the unlimited rate).
. "$(dirname "$0")/lib.sh" "$1"
sim_up
burn=("$B/bin/gs-burn" --seconds 1.5 --memory 256MiB)
"${RUN[@]}" --mode mps --report -- "${burn[@]}" >"$WORK/full" 2>"$WORK/full.rep" ||
	fail "unlimited MPS slice failed: $(cat "$WORK/full.rep")"
"${RUN[@]}" --mode mps --compute 30 --report -- "${burn[@]}" \
	>"$WORK/strict" 2>"$WORK/strict.rep" ||
	fail "strict MPS slice failed: $(cat "$WORK/strict.rep")"
"${RUN[@]}" --mode mps --compute 30 --compute-mode share --report -- \
	"${burn[@]}" >"$WORK/share" 2>"$WORK/share.rep" ||
	fail "share MPS slice failed: $(cat "$WORK/share.rep")"
"$PY" - "$WORK" <<'PY' || fail "see above"
import json, sys
w = sys.argv[1]
def last(path):
    ls = [l for l in open(path) if l.startswith("{")]
    return json.loads(ls[-1])
rate = {k: last(f"{w}/{k}")["kernels"] / last(f"{w}/{k}")["wall_s"]
        for k in ("full", "strict", "share")}
rep = last(f"{w}/strict.rep")
r_strict = rate["strict"] / rate["full"]
r_share = rate["share"] / rate["full"]
print(f"strict 30 %: {r_strict:.2f} of unlimited, share: {r_share:.2f}; "
      f"strict report: {rep}")
sys.exit(0 if 0.15 <= r_strict <= 0.45 and r_share >= 0.8
         and rep.get("sm_share") == 0.3 and rep.get("mode") == "mps"
         and rep["sm_time_s"] <= 0.31 * rep["gpu_busy_s"] + 1e-6 else 1)
PY
