#!/usr/bin/env bash
# The usage ledger: GPU time a workload ran in a slice comes back through
# `gpuslice usage` by slice and by team, with GiB-seconds and costs from
# the configured price table, in table, CSV and JSON. Also: node.timeslice
# is applied to the GPUs at start (nvidia-smi compute-policy), and the TCP
# listener wants the bearer token for everything but /healthz.
. "$(dirname "$0")/lib.sh" "$1"

BURN=$B/bin/gs-burn
[ -x "$BURN" ] && [ -e "$B/lib/libgpuslice.so" ] || { echo "SKIP: no gs-burn or shim"; exit 77; }
port=$((20000 + RANDOM % 20000))
printf 'gpuslice-test-token-%s\n' "$RANDOM$RANDOM" >"$WORK/token"
cat >"$WORK/cfg.yaml" <<YAML
node:
  timeslice: long
api:
  tcp: 127.0.0.1:$port
  token_file: $WORK/token
ledger:
  interval_ms: 500
teams:
  lab:
    guarantee: {memory: 8GiB}
prices:
  currency: EUR
  rules:
    - {model: "*", mode: "*", per_gpu_second: 3600/h, per_gib_second: 0}
YAML
daemon_up --config "$WORK/cfg.yaml"
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"

# ---- time-slice level, applied at start ----
"$G" sim status --json --dir "$GPUSLICE_SIM_DIR" | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if all(g["timeslice_level"] == 3 for g in d["gpus"]) else 1)' ||
	fail "node.timeslice long was not applied to the GPUs"

# ---- TCP with a token ----
tok=$(cat "$WORK/token")
st=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")
expect_eq "tcp healthz without a token" "$st" 200
st=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/slices")
expect_eq "tcp without a token" "$st" 401
st=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer wrong" "http://127.0.0.1:$port/v1/slices")
expect_eq "tcp with a wrong token" "$st" 401
st=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" "http://127.0.0.1:$port/metrics")
expect_eq "tcp metrics with the token" "$st" 200
st=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" \
	-X POST -d '{"name": "via-tcp", "memory": "1GiB"}' "http://127.0.0.1:$port/v1/slices")
expect_eq "tcp create with the token (an administrator)" "$st" 201

# ---- the ledger ----
out=$(api POST /v1/slices '{"name": "led", "mode": "timeslice", "memory": "2GiB", "compute": 50, "team": "lab"}')
expect_status "led" 201
dev=$(jq_py "$out" 'd["env"]["CUDA_VISIBLE_DEVICES"]')
CUDA_VISIBLE_DEVICES=$dev "$G" run --slice led --run-dir "$RUNDIR" -- \
	"$BURN" --seconds 2 --memory 1GiB >"$WORK/burn.json" 2>"$WORK/burn.err" ||
	fail "gs-burn in the slice failed: $(cat "$WORK/burn.err")"
sleep 1.2 # one more ledger row after the run
"$G" usage --since 10m --by slice --json >"$WORK/u.json"
python3 - "$WORK/u.json" <<'PY' || fail "ledger by slice: $(cat "$WORK/u.json")"
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["slice"]: x for x in d["rows"]}["led"]
# 2 s at a 50% limit: about 1 GPU-second (generous bounds for a busy box)
assert 0.4 <= r["gpu_seconds"] <= 2.2, r
assert r["team"] == "lab"
# 2 GiB reserved for the slice's lifetime so far (a few seconds)
assert 2.0 <= r["gib_seconds"] <= 2 * 120, r
assert abs(r["cost"] - r["gpu_seconds"]) < 1e-6, r  # 3600/h = 1 per GPU-second
assert d["currency"] == "EUR" and d["unpriced_rows"] == 0
print("ledger: %.2f GPU-s, %.1f GiB-s, %.2f %s" % (r["gpu_seconds"], r["gib_seconds"], r["cost"], d["currency"]))
PY
"$G" usage --since 10m --by team --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
t = {x["team"]: x for x in d["rows"]}
assert t["lab"]["gpu_seconds"] > 0.4 and abs(d["total"]["cost"] - sum(x["cost"] for x in d["rows"])) < 1e-6
' || fail "ledger by team"
"$G" usage --since 10m --by slice --format csv >"$WORK/u.csv"
head -1 "$WORK/u.csv" | grep -qx 'slice,gpu_seconds,gib_seconds,throttled_seconds,reserved_gpu_seconds,cost,currency,sm_seconds,parked_seconds' ||
	fail "csv header: $(head -1 "$WORK/u.csv")"
grep -q '^led,' "$WORK/u.csv" || fail "csv lacks led"
"$G" usage --since 10m --by team | grep -q '^lab ' || fail "table lacks lab"
"$G" usage --since 10m --team lab --by slice --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert [r["slice"] for r in d["rows"]] == ["led"], d' || fail "usage --team"
# Deleting a slice writes its last row; history stays after it is gone.
"$G" delete led >/dev/null
"$G" usage --since 10m --slice led --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["rows"] and d["rows"][0]["gpu_seconds"] > 0.4, d' || fail "usage after delete"
echo "ok: ledger, time-slice, TCP"
