#!/usr/bin/env bash
# Compute is billed in SM-time: an MPS slice with compute 30 (its clients
# get CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30) has SM share 0.3 and is charged
# 0.3 SM-seconds per GPU-busy second; a time-sliced slice has the whole GPU
# in its turns (share 1, SM-seconds = GPU seconds). Checked where the
# daemon reports usage: /metrics (with NVML's SM utilisation beside it),
# the ledger (/v1/usage, whose cost says its basis; `gpuslice usage`), the
# slice's JSON (`gpuslice show`) and `gpuslice top`.
. "$(dirname "$0")/lib.sh" "$1"

BURN=$B/bin/gs-burn
[ -x "$BURN" ] && [ -e "$B/lib/libgpuslice.so" ] && [ -e "$B/sim/libcuda.so.1" ] ||
	{ echo "SKIP: no gs-burn, shim or sim libcuda"; exit 77; }
cat >"$WORK/cfg.yaml" <<YAML
ledger:
  interval_ms: 500
YAML
daemon_up --config "$WORK/cfg.yaml"
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"

env_of() { # SLICE: the slice's environment as shell words
	api GET "/v1/slices/$1" | python3 -c '
import json, shlex, sys
print(" ".join("%s=%s" % (k, shlex.quote(v)) for k, v in json.load(sys.stdin)["env"].items()))'
}

out=$(api POST /v1/slices '{"name": "mps30", "mode": "mps", "memory": "2GiB", "compute": 30, "gpu": 1}')
expect_status "mps30" 201
jcheck "$out" 'd["env"]["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "30" and d["sm_share"] == 0.3'
out=$(api POST /v1/slices '{"name": "turns", "mode": "timeslice", "memory": "2GiB", "compute": 50, "gpu": 0}')
expect_status "turns" 201
jcheck "$out" 'd["mode"] == "timeslice" and d["sm_share"] == 1'

# Both burn at once, each on its own GPU.
env $(env_of mps30) "$G" run --slice mps30 --run-dir "$RUNDIR" -- \
	"$BURN" --seconds 2 --memory 256MiB >"$WORK/mps.json" 2>"$WORK/mps.err" &
mps_run=$!
env $(env_of turns) "$G" run --slice turns --run-dir "$RUNDIR" -- \
	"$BURN" --seconds 2 --memory 256MiB >"$WORK/turns.json" 2>"$WORK/turns.err" ||
	fail "gs-burn in the turns slice failed: $(cat "$WORK/turns.err")"
wait "$mps_run" || fail "gs-burn in the MPS slice failed: $(cat "$WORK/mps.err")"
sleep 1.2 # a ledger row after the runs

# ---- /metrics: share, SM-seconds next to GPU seconds, NVML's view ----
api GET /metrics >"$WORK/metrics"
python3 - "$WORK/metrics" <<'PY' || fail "metrics: $(grep -E 'sm_|gpu_seconds|nvml_percent' "$WORK/metrics")"
import re, sys
v = {}
for line in open(sys.argv[1]):
    m = re.match(r'^(gpuslice_slice_[a-z_]+)\{[^}]*slice="([^"]+)"[^}]*\} (\S+)$', line)
    if m:
        v[(m.group(1), m.group(2))] = float(m.group(3))
def g(name, s):
    assert (name, s) in v, "no %s for %s" % (name, s)
    return v[(name, s)]
assert g("gpuslice_slice_sm_share", "mps30") == 0.3
assert g("gpuslice_slice_sm_share", "turns") == 1.0
for s, share in (("mps30", 0.3), ("turns", 1.0)):
    gpu = g("gpuslice_slice_gpu_seconds_total", s)
    sm = g("gpuslice_slice_sm_seconds_total", s)
    assert gpu > 0.2, (s, gpu)
    assert abs(sm - share * gpu) <= 0.1 * share * gpu, (s, sm, gpu)
    assert g("gpuslice_slice_compute_nvml_percent", s) >= 0
    print("metrics: %s %.2f GPU-s -> %.2f SM-s" % (s, gpu, sm))
PY

# ---- the ledger: sm_seconds beside gpu_seconds; cost says its basis ----
"$G" usage --since 10m --by slice --json >"$WORK/u.json"
python3 - "$WORK/u.json" <<'PY' || fail "ledger: $(cat "$WORK/u.json")"
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["slice"]: x for x in d["rows"]}
m, t = r["mps30"], r["turns"]
assert m["gpu_seconds"] > 0.2 and t["gpu_seconds"] > 0.2, d
assert abs(m["sm_seconds"] - 0.3 * m["gpu_seconds"]) <= 0.03 * m["gpu_seconds"], m
assert abs(t["sm_seconds"] - t["gpu_seconds"]) <= 1e-9 * max(1, t["gpu_seconds"]), t
assert abs(d["total"]["sm_seconds"] - sum(x["sm_seconds"] for x in d["rows"])) < 1e-6, d
assert d["cost_basis"] == "gpu_seconds" and d["sm_unknown_rows"] == 0, d
for k in ("gpu_seconds", "gib_seconds", "throttled_seconds", "reserved_gpu_seconds", "cost"):
    assert k in m and k in d["total"], k  # the fields that were there stay
print("ledger: mps30 %.2f GPU-s %.2f SM-s, turns %.2f GPU-s %.2f SM-s"
      % (m["gpu_seconds"], m["sm_seconds"], t["gpu_seconds"], t["sm_seconds"]))
PY

# ---- the CLI's views of the ledger and of a slice ----
"$G" usage --since 10m --by slice >"$WORK/u.txt"
grep -q 'SM-SECONDS' "$WORK/u.txt" && grep -q 'priced on gpu_seconds' "$WORK/u.txt" ||
	fail "usage table: $(cat "$WORK/u.txt")"
"$G" usage --since 10m --by slice --format csv >"$WORK/u.csv"
python3 - "$WORK/u.csv" <<'PY' || fail "usage csv: $(cat "$WORK/u.csv")"
import csv, sys
r = {x["slice"]: x for x in csv.DictReader(open(sys.argv[1]))}
m = r["mps30"]
assert abs(float(m["sm_seconds"]) - 0.3 * float(m["gpu_seconds"])) <= 0.03 * float(m["gpu_seconds"]) + 0.002, m
PY
"$G" show mps30 | grep -Eq '^sm time: +[0-9.]+ s \(SM share 0\.30\)' ||
	fail "show: $("$G" show mps30)"

# ---- the slice's live usage and `gpuslice top` ----
out=$(api GET /v1/slices/mps30)
jcheck "$out" 'abs(d["usage"]["sm_seconds"] - 0.3 * d["usage"]["gpu_seconds"]) <= 0.03 * d["usage"]["gpu_seconds"]'
"$G" top --json >"$WORK/top.json"
python3 - "$WORK/top.json" <<'PY' || fail "top --json: $(cat "$WORK/top.json")"
import json, sys
d = json.load(open(sys.argv[1]))
s = {x["name"]: x for x in d["slices"]}
assert s["mps30"]["sm_share"] == 0.3 and s["turns"]["sm_share"] == 1, s
assert s["mps30"]["usage"]["sm_seconds"] > 0 and s["turns"]["usage"]["sm_seconds"] > 0, s
PY
"$G" top --once >"$WORK/top.txt"
grep -q 'SM-TIME x SHARE' "$WORK/top.txt" || fail "top has no SM-time column: $(cat "$WORK/top.txt")"
grep -Eq '^  mps30 .* [0-9]+\.[0-9]s x0\.30 ' "$WORK/top.txt" ||
	fail "top does not show mps30's SM-time at share 0.30: $(cat "$WORK/top.txt")"
grep -Eq '^  turns .* [0-9]+\.[0-9]s x1\.00 ' "$WORK/top.txt" ||
	fail "top does not show turns' SM-time at share 1.00: $(cat "$WORK/top.txt")"
echo "ok: SM-time"
