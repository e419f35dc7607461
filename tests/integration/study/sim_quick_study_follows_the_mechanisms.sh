#!/usr/bin/env bash
# `gpuslice bench study --sim --quick --out D` on a private simulated node:
# it writes D/study.json (24 cells, every key, source "sim"), D/study.md
# (the seed's grid) and SVG charts that name their source; and each
# strategy's figures keep the order its mechanism implies on the sim:
#
#   - time-slicing about doubles a saturating job's completion time, and
#     exclusive GPUs do not;
#   - without limits (time-slicing, MPS), a job that takes the memory
#     leaves its neighbour out of memory; MPS limits and gpuslice hold the
#     greedy job at its limit and MIG inside its instance, so the
#     neighbour runs;
#   - a fatal fault kills the MPS neighbour but no other strategy's;
#   - MPS runs the four small jobs concurrently, faster than time-slicing;
#   - gpuslice's high-priority server keeps its latency next to a
#     low-priority one, and the two (MPS-backed) serve about what MPS does.
#
# Latency tails on a loaded 2-core machine are noisy: the bounds are loose
# and compare like with like.
set -euo pipefail
B=$(cd "$1" && pwd)
W=$(mktemp -d /tmp/gs-study.XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
[ -f "$B/sim/libcuda.so.1" ] || {
	echo "no sim in this build"
	exit 77
}

start=$(date +%s)
"$B/bin/gpuslice" bench study --sim --quick --out "$W/out" >"$W/stdout" 2>"$W/stderr" ||
	fail "exit $?: $(tail -n 5 "$W/stderr")"
echo "study took $(($(date +%s) - start)) s"
grep -q 'gpu-intensive / gpuslice' "$W/stderr" || fail "no progress lines on stderr"
grep -q '^| | Exclusive | Time-slicing | MPS w/o limits | MPS with limits | MIG | gpuslice |' "$W/stdout" ||
	fail "stdout has no grid: $(head -n 5 "$W/stdout")"

ls "$W/out"/*.svg >/dev/null || fail "no SVG charts"
[ "$(ls "$W/out"/*.svg | wc -l)" -ge 2 ] || fail "fewer than two charts"

python3 - "$W/out" <<'PY'
import json, os, sys, xml.dom.minidom

out = sys.argv[1]
problems = []
def check(cond, what):
    if not cond:
        problems.append(what)

# ---- structure ----
cells = json.load(open(os.path.join(out, "study.json")))
check(isinstance(cells, list) and len(cells) == 24, "24 cells, got %d" % len(cells))
keys = ["workload", "strategy", "source", "status", "reason", "setup", "jobs",
        "latency_p50_ms", "latency_p99_ms", "throughput", "throughput_unit",
        "completion_s", "completion_alone_s", "gpu_util_pct", "sm_util_pct",
        "memory_per_job_bytes", "neighbour_on_oom", "neighbour_on_fault"]
C = {}
for c in cells:
    for k in keys:
        check(k in c, "%s/%s lacks %s" % (c.get("workload"), c.get("strategy"), k))
    check(c["source"] == "sim", "source %r" % c["source"])
    check(c["status"] == "ok", "%s/%s: %s %s" % (c["workload"], c["strategy"], c["status"], c["reason"]))
    C[(c["workload"], c["strategy"])] = c
strategies = ["exclusive", "time-slicing", "mps", "mps-limits", "mig", "gpuslice"]
for w in ["inference-light", "inference-heavy", "small-batch", "gpu-intensive"]:
    for s in strategies:
        check((w, s) in C, "missing cell %s/%s" % (w, s))
if problems:
    # Show what the failed jobs said, so a failure here can be diagnosed.
    for c in cells:
        if c.get("status") != "ok":
            for ph in c.get("phases", []) or []:
                for j in ph.get("jobs", []):
                    if j.get("exit_status"):
                        print("%s/%s %s: result %s stderr %r" % (c["workload"], c["strategy"], j["name"],
                              json.dumps(j.get("result")), j.get("stderr_tail")))
    print("\n".join(problems)); sys.exit(1)
for c in cells:
    check(c["gpu_util_pct"] is not None and 0 < c["gpu_util_pct"] <= 101,
          "%s/%s util %r" % (c["workload"], c["strategy"], c["gpu_util_pct"]))
    mem = c["memory_per_job_bytes"]
    check(isinstance(mem, list) and len(mem) == c["jobs"] and all(m and m > 0 for m in mem),
          "%s/%s memory per job %r" % (c["workload"], c["strategy"], mem))
    if c["workload"].startswith("inference"):
        check(c["latency_p50_ms"] and c["latency_p99_ms"] >= c["latency_p50_ms"] and c["throughput"] > 0,
              "%s/%s latency/throughput" % (c["workload"], c["strategy"]))
    else:
        check(c["completion_s"] and c["completion_alone_s"] and c["throughput"] > 0,
              "%s/%s completion" % (c["workload"], c["strategy"]))

md = open(os.path.join(out, "study.md")).read()
check("| | Exclusive | Time-slicing | MPS w/o limits | MPS with limits | MIG | gpuslice |" in md, "study.md grid header")
for row in ["Inference, light load", "Inference, heavy load", "Small GPU batch job", "GPU-intensive batch job"]:
    check("| %s |" % row in md, "study.md grid row " + row)
check("gpuslice sim" in md, "study.md names its source")
for f in os.listdir(out):
    if f.endswith(".svg"):
        doc = xml.dom.minidom.parse(os.path.join(out, f))
        texts = "".join(n.firstChild.data for n in doc.getElementsByTagName("text") if n.firstChild)
        check("source: gpuslice sim" in texts, f + " does not name its source")
        check(len(doc.getElementsByTagName("rect")) > 10, f + " has no bars")

# ---- what the mechanisms imply ----
gi = lambda s: C[("gpu-intensive", s)]
ex = gi("exclusive")
base = ex["completion_alone_s"]
r = gi("time-slicing")["completion_s"] / base
check(1.6 <= r <= 2.6, "time-slicing 2 burns: completion x%.2f of exclusive alone, want about 2" % r)
r = ex["completion_s"] / base
check(0.8 <= r <= 1.3, "exclusive 2 burns: x%.2f of alone, want about 1" % r)

def oom(s):
    return gi(s)["neighbour_on_oom"]
for s in ["time-slicing", "mps"]:
    check(oom(s)["neighbour"]["outcome"] == "out of memory",
          "%s: the greedy job's neighbour should run out of memory, got %r" % (s, oom(s)["neighbour"]))
for s in ["exclusive", "mps-limits", "mig", "gpuslice"]:
    check(oom(s)["neighbour"]["outcome"] == "ran",
          "%s: the greedy job's neighbour should run, got %r" % (s, oom(s)["neighbour"]))
for s in ["mps-limits", "gpuslice"]:
    o = oom(s)["offender"]
    check(o["allocated_bytes"] <= o["device_bytes"] / 2 and o["error"] == "CUDA_ERROR_OUT_OF_MEMORY",
          "%s: the greedy job should stop at its limit (half the GPU) with OOM, got %r" % (s, o))
o = oom("mig")["offender"]
check(o["allocated_bytes"] <= o["device_bytes"] and o["device_bytes"] < gi("exclusive")["neighbour_on_oom"]["offender"]["device_bytes"] / 2 + 2**30,
      "mig: the greedy job should stay inside its instance, got %r" % o)
o = oom("time-slicing")["offender"]
check(o["allocated_bytes"] > o["device_bytes"] / 2, "time-slicing: the greedy job should get most of the GPU, got %r" % o)

for s in ["mps", "mps-limits"]:
    f = gi(s)["neighbour_on_fault"]["neighbour"]
    check(f["outcome"] == "killed", "%s: a fault should take the MPS neighbour down, got %r" % (s, f))
for s in ["exclusive", "time-slicing", "mig", "gpuslice"]:
    f = gi(s)["neighbour_on_fault"]["neighbour"]
    check(f["outcome"] == "ran", "%s: the neighbour of a fault should run, got %r" % (s, f))
for s in strategies:
    check(gi(s)["neighbour_on_fault"]["faulting_job"]["error"] == "CUDA_ERROR_ILLEGAL_ADDRESS",
          "%s: the faulting job should fault" % s)

sb = lambda s: C[("small-batch", s)]
check(sb("mps")["completion_s"] < 0.95 * sb("time-slicing")["completion_s"],
      "small batch: MPS (%.2f s) should beat time-slicing (%.2f s) for 4 jobs"
      % (sb("mps")["completion_s"], sb("time-slicing")["completion_s"]))
check(sb("time-slicing")["completion_s"] > 1.5 * sb("time-slicing")["completion_alone_s"],
      "small batch: 4 time-sliced jobs should take longer than one")
check(sb("gpuslice")["completion_s"] < 0.8 * sb("time-slicing")["completion_s"],
      "small batch: gpuslice's auto slices (MPS-backed, %.2f s) should beat time-slicing (%.2f s)"
      % (sb("gpuslice")["completion_s"], sb("time-slicing")["completion_s"]))

h = lambda s: C[("inference-heavy", s)]["servers"]
a, b = h("gpuslice")
e = h("exclusive")[0]
check(a["priority"] == "high" and b["priority"] == "low", "gpuslice servers' priorities")
# The high-priority server keeps about its exclusive-GPU latency. (Whether
# the low-priority one loses throughput depends on whether the two contend
# at all in a quick run, and p99 against p99 is host jitter on a loaded
# 2-core machine, so neither is compared.)
check(a["p50_ms"] <= 1.5 * e["p50_ms"],
      "gpuslice heavy: high-priority p50 %.2f ms vs exclusive %.2f ms" % (a["p50_ms"], e["p50_ms"]))
# MPS-backed servers (auto): B runs alongside A as a below-normal client,
# so both together serve about what MPS serves (#12: >= 0.95x in the bench;
# a generous bound here).
check(C[("inference-heavy", "gpuslice")]["throughput"] >= 0.85 * C[("inference-heavy", "mps")]["throughput"],
      "gpuslice heavy: %.0f req/s should be near MPS's %.0f"
      % (C[("inference-heavy", "gpuslice")]["throughput"], C[("inference-heavy", "mps")]["throughput"]))
ts = h("time-slicing")[0]
check(ts["p50_ms"] >= 1.2 * e["p50_ms"],
      "time-slicing heavy: p50 %.2f ms should rise well above exclusive %.2f ms" % (ts["p50_ms"], e["p50_ms"]))
check(C[("inference-heavy", "time-slicing")]["throughput"] < 0.8 * C[("inference-heavy", "exclusive")]["throughput"],
      "time-slicing heavy: both servers together should serve less than on two GPUs")

if problems:
    print("\n".join(problems))
    print(open(os.path.join(out, "study.md")).read())
    sys.exit(1)
print("all checks passed")
PY
