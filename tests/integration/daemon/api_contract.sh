#!/usr/bin/env bash
# Every endpoint of API v1, its success shape and its 4xx answers, and the
# CLI's exit statuses on top of them.
. "$(dirname "$0")/lib.sh" "$1"

daemon_up

# ---- health, metrics, routing ----
out=$(api GET /healthz)
expect_status "GET /healthz" 200
jcheck "$out" 'd["status"] == "ok" and d["api"] == "v1" and d["schema"] >= 2'
api POST /healthz >/dev/null
expect_status "POST /healthz" 405
out=$(api GET /metrics)
expect_status "GET /metrics" 200
echo "$out" | grep -q '^gpuslice_slices 0$' || fail "metrics: no gpuslice_slices 0"
api GET /nope >/dev/null
expect_status "GET /nope" 404
api GET /v1/nope >/dev/null
expect_status "GET /v1/nope" 404
api GET /v1/slices/a/b/c/d >/dev/null
expect_status "too deep a path" 404
out=$(api GET "/v1/slices?$(printf 'a%d=1&' $(seq 20))")
expect_status "too many query arguments" 400

# ---- slices: bad input ----
api POST /v1/slices '{"name": "x", ' >/dev/null
expect_status "malformed JSON" 400
jcheck "$(cat "$WORK/body")" 'd["error"] == "PARSE" and d["message"]'
api POST /v1/slices '[1,2]' >/dev/null
expect_status "array body" 400
api POST /v1/slices '{"name": "x", "colour": "red"}' >/dev/null
expect_status "unknown key" 400
jcheck "$(cat "$WORK/body")" 'd["error"] == "INVALID" and "colour" in d["message"]'
api POST /v1/slices '{"name": "x", "memory": "4XB"}' >/dev/null
expect_status "bad memory" 400
api POST /v1/slices '{"name": "x", "compute": 140}' >/dev/null
expect_status "compute out of range" 400
jcheck "$(cat "$WORK/body")" 'd["error"] == "RANGE"'
api POST /v1/slices '{"name": "bad name!"}' >/dev/null
expect_status "bad name" 400
api POST /v1/slices '{"name": "x", "on_exit": "never"}' >/dev/null
expect_status "bad on_exit" 400
api POST /v1/slices '{"name": "x", "team": "nosuchteam"}' >/dev/null
expect_status "unknown team" 404
big=$(python3 -c 'print("{\"name\": \"" + "a" * 70000 + "\"}")')
api POST /v1/slices "$big" >/dev/null
expect_status "oversized body" 413
api POST /v1/slices '{"name": "huge", "memory": "500GiB"}' >/dev/null
expect_status "does not fit" 409
jcheck "$(cat "$WORK/body")" 'd["error"] == "NO_FIT"'

# ---- slices: life cycle ----
out=$(api POST /v1/slices '{"name": "nb-1", "memory": "4GiB", "compute": 25, "priority": "high"}')
expect_status "create" 201
jcheck "$out" 'd["name"] == "nb-1" and d["memory_bytes"] == 4 << 30 and d["compute"] == 25'
jcheck "$out" 'd["priority"] == "high" and d["mode"] == "timeslice" and d["state"] == "ready"'
jcheck "$out" 'd["gpu"]["uuid"].startswith("GPU-") and d["env"]["GPUSLICE_SLICE"] == "nb-1"'
jcheck "$out" 'd["region"]["slot"] >= 0 and d["env"]["GPUSLICE_RUN_DIR"]'
api POST /v1/slices '{"name": "nb-1", "memory": "1GiB"}' >/dev/null
expect_status "duplicate name" 409
jcheck "$(cat "$WORK/body")" 'd["error"] == "EXISTS"'
out=$(api POST /v1/slices '{"memory": 1073741824, "mode": "mps", "compute": 10}')
expect_status "create with a picked name" 201
picked=$(jq_py "$out" 'd["name"]')
case $picked in slice-*) ;; *) fail "picked name $picked" ;; esac
jcheck "$out" 'd["mode"] == "mps" and "CUDA_MPS_PIPE_DIRECTORY" in d["env"]'

out=$(api GET /v1/slices)
expect_status "list" 200
jcheck "$out" 'sorted(s["name"] for s in d["slices"]) == sorted(["nb-1", "'"$picked"'"])'
out=$(api GET "/v1/slices?team=default&usage=1")
expect_status "list by team" 200
jcheck "$out" 'len(d["slices"]) == 2 and "usage" in d["slices"][0]'
api GET "/v1/slices?team=bad%20team" >/dev/null
expect_status "list with a bad team" 400
out=$(api GET /v1/slices/nb-1)
expect_status "get" 200
jcheck "$out" 'd["name"] == "nb-1" and d["usage"]["processes"] == 0'
api GET /v1/slices/missing >/dev/null
expect_status "get missing" 404
api PUT /v1/slices/nb-1 '{}' >/dev/null
expect_status "PUT on a slice" 405

out=$(api POST /v1/slices/nb-1/attach "{\"pid\": $$}")
expect_status "attach" 200
jcheck "$out" "$$ in d['pids']"
api POST /v1/slices/nb-1/attach '{"pid": -4}' >/dev/null
expect_status "attach a bad pid" 400
api POST /v1/slices/nb-1/attach '{"pid": 1, "x": 2}' >/dev/null
expect_status "attach with an unknown key" 400
api POST /v1/slices/nb-1/attach '{"pid": 999999999}' >/dev/null
expect_status "attach a missing process" 404
api POST /v1/slices/nb-1/bogus '{}' >/dev/null
expect_status "unknown slice action" 404
api GET /v1/slices/nb-1/attach >/dev/null
expect_status "GET attach" 405

# ---- GPUs ----
out=$(api GET /v1/gpus)
expect_status "gpus" 200
jcheck "$out" 'd["source"] == "sim" and len(d["gpus"]) == 2'
jcheck "$out" 'd["gpus"][0]["model"] == "H100-SXM5-80GB" and d["gpus"][0]["mig"]["capable"]'
jcheck "$out" 'sum(g["allocated"]["slices"] for g in d["gpus"]) == 2'
api DELETE /v1/gpus >/dev/null
expect_status "DELETE gpus" 405

# ---- teams and quotas ----
out=$(api GET /v1/teams)
expect_status "teams" 200
jcheck "$out" '"default" in [t["name"] for t in d["teams"]]'
out=$(api PUT /v1/teams/ml '{"guarantee": {"memory": "8GiB", "compute": 50}, "max": {"memory": "16GiB"}}')
expect_status "put team" 200
jcheck "$out" 'd["guarantee"]["memory_bytes"] == 8 << 30 and d["max"]["compute"] is None'
out=$(api GET /v1/teams/ml)
expect_status "get team" 200
jcheck "$out" 'd["usage"]["memory_bytes"] == 0 and d["from_config"] is False'
api PUT /v1/teams/ml '{"guarantee": {"memory": "32GiB"}, "max": {"memory": "16GiB"}}' >/dev/null
expect_status "guarantee above max" 400
api PUT /v1/teams/ml '{"quota": 1}' >/dev/null
expect_status "unknown team key" 400
api PUT /v1/teams/sub '{"parent": "nosuch"}' >/dev/null
expect_status "unknown parent" 404
api GET /v1/teams/nosuch >/dev/null
expect_status "get missing team" 404
out=$(api POST /v1/slices '{"name": "ml-1", "memory": "2GiB", "team": "ml"}')
expect_status "create in team" 201
api DELETE /v1/teams/ml >/dev/null
expect_status "delete a team with slices" 409
api DELETE /v1/slices/ml-1 >/dev/null
expect_status "delete" 200
api DELETE /v1/teams/ml >/dev/null
expect_status "delete team" 200
api DELETE /v1/teams/ml >/dev/null
expect_status "delete team again" 404
api DELETE /v1/teams/default >/dev/null
expect_status "delete the default team" 403
api POST /v1/teams >/dev/null
expect_status "POST teams" 405

# ---- usage ----
out=$(api GET "/v1/usage?since=1h&by=slice")
expect_status "usage" 200
jcheck "$out" 'd["by"] == "slice" and "total" in d and d["currency"] and "ml-1" in [r["slice"] for r in d["rows"]]'
out=$(api GET "/v1/usage?since=2024-01-01T00:00:00Z&until=1h")
expect_status "usage with RFC 3339" 200
api GET "/v1/usage?by=colour" >/dev/null
expect_status "usage by a bad key" 400
api GET "/v1/usage?since=yesterday" >/dev/null
expect_status "usage with a bad since" 400
api GET "/v1/usage?since=1h&until=2h" >/dev/null
expect_status "usage with until before since" 400

# ---- events ----
out=$(api GET "/v1/events?limit=100")
expect_status "events" 200
jcheck "$out" '"slice.created" in [e["type"] for e in d["events"]] and d["last_id"] > 0'
last=$(jq_py "$out" 'd["last_id"]')
out=$(api GET "/v1/events?after=$last")
jcheck "$out" 'd["events"] == [] and d["last_id"] == '"$last"
out=$(api GET "/v1/events?slice=ml-1")
jcheck "$out" 'set(e["type"] for e in d["events"]) == {"slice.created", "slice.deleted"}'
api GET "/v1/events?limit=0" >/dev/null
expect_status "events limit 0" 400
api GET "/v1/events?after=abc" >/dev/null
expect_status "events bad after" 400

# ---- plan ----
out=$(api POST /v1/plan '{"gpu": 1, "demand": "1g.10gb=2,3g.40gb=1"}')
expect_status "plan" 200
jcheck "$out" 'd["model"] == "H100-SXM5-80GB" and len(d["steps"]) == 3 and d["unmet"] == []'
out=$(api POST /v1/plan '{"model": "A100-SXM4-40GB", "current": "4g.20gb@0", "demand": "3g.20gb=2"}')
expect_status "plan on a model" 200
jcheck "$out" 'd["unmet"] and d["unmet"][0]["count"] == 1'
api POST /v1/plan '{"gpu": 0, "demand": "9g.1tb=1"}' >/dev/null
expect_status "plan an unknown profile" 400
api POST /v1/plan '{"gpu": 0}' >/dev/null
expect_status "plan without demand" 400
api POST /v1/plan '{"gpu": 7, "demand": "1g.10gb=1"}' >/dev/null
expect_status "plan on a missing GPU" 404
api POST /v1/plan '{"model": "GTX-480", "demand": "1g.10gb=1"}' >/dev/null
expect_status "plan on an unknown model" 400
api GET /v1/plan >/dev/null
expect_status "GET plan" 405

# ---- the CLI on top: output and exit statuses ----
out=$("$G" create --name cli-1 --memory 512MiB --compute 5 --json)
jcheck "$out" 'd["name"] == "cli-1" and d["memory_bytes"] == 512 << 20'
out=$("$G" list --json)
jcheck "$out" '"cli-1" in [s["name"] for s in d["slices"]]'
"$G" list | grep -q '^cli-1 ' || fail "list table lacks cli-1"
"$G" show cli-1 | grep -q '^name: *cli-1' || fail "show lacks the name"
"$G" show cli-1 --json | python3 -c 'import json,sys; json.load(sys.stdin)'
rc=0; "$G" show nosuch 2>/dev/null || rc=$?
expect_eq "show missing: exit" "$rc" 3
rc=0; "$G" create --name cli-2 --memory 12XB 2>/dev/null || rc=$?
expect_eq "create with a bad quantity: exit" "$rc" 2
rc=0; "$G" create --name cli-2 --memory 900GiB 2>/dev/null || rc=$?
expect_eq "create that does not fit: exit" "$rc" 5
rc=0; "$G" create --name cli-1 2>/dev/null || rc=$?
expect_eq "create a duplicate: exit" "$rc" 1
msg=$("$G" create --name cli-1 2>&1 || true)
case $msg in "gpuslice create: "*) ;; *) fail "error format: $msg" ;; esac
"$G" delete cli-1 | grep -q 'deleted slice cli-1' || fail "delete output"
rc=0; "$G" delete cli-1 2>/dev/null || rc=$?
expect_eq "delete missing: exit" "$rc" 3
rc=0; "$G" --socket "$WORK/none.sock" list 2>/dev/null || rc=$?
expect_eq "unreachable daemon: exit" "$rc" 6
rc=0; GPUSLICE_SOCKET=$WORK/none.sock "$G" list 2>/dev/null || rc=$?
expect_eq "unreachable daemon via GPUSLICE_SOCKET: exit" "$rc" 6
"$G" top --once | grep -q 'GPU 0' || fail "top --once"
"$G" top --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["gpus"]) == 2'
"$G" events --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["events"]'
"$G" events --slice cli-1 | grep -q 'slice.deleted' || fail "events --slice"
"$G" usage --since 1h --by slice --format csv | head -1 | grep -q '^slice,gpu_seconds' || fail "usage csv"
"$G" usage --since 1h --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert "rows" in d'
rc=0; "$G" usage --by colour 2>/dev/null || rc=$?
expect_eq "usage --by colour: exit" "$rc" 2
"$G" quota set ml2 --memory 4GiB --compute 50 --max-memory 8GiB --json >/dev/null
"$G" quota set ml2 --max-compute 80 --json |
	python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["guarantee"]["memory_bytes"] == 4 << 30 and d["max"]["compute"] == 80'
"$G" quota show | grep -q '^ml2 ' || fail "quota show lacks ml2"
rc=0; "$G" quota set ml2 --memory 64GiB 2>/dev/null || rc=$?
expect_eq "quota with guarantee above max: exit" "$rc" 2
"$G" quota delete ml2 >/dev/null
for c in create list show delete top quota usage events; do
	"$G" "$c" --help | grep -q '^usage: gpuslice' || fail "$c --help"
done
echo "ok: API contract"
