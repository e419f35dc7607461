#!/usr/bin/env bash
# `gpuslice bench study` runs its small batch job as a cudart program:
# in a copy of the build's layout whose gs-matmul is gs-cudart-matmul
# (same flags and output, written with the CUDA runtime), the quick
# study's small-batch cells under time-slicing and gpuslice finish, every
# job's result says it ran on cudart, and the mechanisms show as with the
# driver-API job: four jobs take longer than one alone.
. "$(dirname "$0")/lib.sh" "$1"
shim_needs_plain_build
sim_up # only for its checks (sim and shim built); the study makes its own node
[ -x "$B/tests/cudart/gs-cudart-matmul" ] || fail "gs-cudart-matmul was not built"
P=$WORK/prefix
mkdir -p "$P/bin"
# The study finds its programs next to the gpuslice binary it runs as
# (/proc/self/exe), so the binary is copied, the rest linked.
cp "$B/bin/gpuslice" "$P/bin/"
for f in gs-alloc gs-burn gs-fault gs-infer; do
	ln -s "$B/bin/$f" "$P/bin/$f"
done
ln -s "$B/tests/cudart/gs-cudart-matmul" "$P/bin/gs-matmul"
ln -s "$B/sim" "$P/sim"
ln -s "$B/lib" "$P/lib"
"$P/bin/gpuslice" bench study --sim --quick --workloads small-batch \
	--strategies time-slicing,gpuslice --out "$WORK/out" >"$WORK/study.log" 2>&1 ||
	{ cat "$WORK/study.log"; fail "the study failed"; }
"$PY" - "$WORK/out/study.json" <<'PY' || fail "see above"
import json, sys
cells = json.load(open(sys.argv[1]))
bad = 0
for c in cells:
    results = [j["result"] for p in c["phases"] for j in p["jobs"]]
    ok = (c["workload"] == "small-batch" and c["status"] == "ok"
          and len(results) == 5
          and all(r and r.get("runtime") == "cudart" and r.get("error") is None
                  for r in results)
          and c["completion_s"] > 1.5 * c["completion_alone_s"])
    print(f"{c['strategy']:13} 4 jobs {c['completion_s']:.2f} s, 1 alone "
          f"{c['completion_alone_s']:.2f} s, cudart jobs {len(results)}: "
          f"{'ok' if ok else 'FAIL'}")
    bad += not ok
sys.exit(1 if bad or len(cells) != 2 else 0)
PY
echo ok
