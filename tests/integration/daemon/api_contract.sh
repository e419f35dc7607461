#!/usr/bin/env bash
# Every endpoint of API v1, its success shape and its 4xx answers, and the
# CLI's exit statuses on top of them.
. "$(dirname "$0")/lib.sh" "$1"

daemon_up

# The API, endpoint by endpoint, in one Python process.
python3 "$(dirname "$0")/api_contract.py" "$SOCK" || fail "API contract"

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
