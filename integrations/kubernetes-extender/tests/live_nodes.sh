#!/usr/bin/env bash
# gs-k8s-extender --nodes: the node state comes live from two gpusliced on
# simulated nodes (TCP listeners on their own ports, with their own
# tokens). Recorded-style kube-scheduler requests (capitalised keys,
# nulls; filter_live.json, prioritize_live.json) get answers that follow
# the daemons' free GPUs: with both nodes empty both pass; once node-a's
# GPUs are filled through its API it is filtered out and ranked below
# node-b; once node-b's daemon stops it is filtered out with the reason,
# never scored as an empty node.
. "$(dirname "$0")/../../../tests/integration/daemon/lib.sh" "$1"

EXT=$B/bin/gs-k8s-extender
[ -x "$EXT" ] || { echo "SKIP: no gs-k8s-extender in this build"; exit 77; }
TD=$(cd "$(dirname "$0")" && pwd)

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# A port free now may be taken by a parallel test before a listener binds
# it: each listener is started on a fresh free port until one binds (a
# listener that cannot bind exits at start).
# listen_on NAME CMD...: runs CMD (with @PORT@ replaced) on a free port
# until it answers on it; sets PORT_<NAME> and PID_<NAME>.
listen_on() {
	local name=$1 try port pid i
	shift
	for try in 1 2 3 4 5; do
		port=$(free_port)
		"${@//@PORT@/$port}" &
		pid=$!
		for i in $(seq 200); do
			kill -0 "$pid" 2>/dev/null || break
			# (still alive once it answers: the answer was its own)
			curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$port/" &&
				sleep 0.1 && kill -0 "$pid" 2>/dev/null && {
				PIDS+=("$pid")
				printf -v "PORT_$name" '%s' "$port"
				printf -v "PID_$name" '%s' "$pid"
				return 0
			}
			sleep 0.05
		done
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		echo "($name: no answer on port $port, try $try)" >&2
	done
	fail "$name did not start on any of 5 free ports:"
}
printf 'token-a-%s\n' "$RANDOM$RANDOM" >"$WORK/token-a"
printf 'token-b-%s\n' "$RANDOM$RANDOM" >"$WORK/token-b"
# node_daemon N PORT: gpusliced of node N listening on PORT.
node_daemon() {
	local sim=$GPUSLICE_SIM_DIR state=$STATE sock=$SOCK log=$WORK/daemon.log
	if [ "$1" = b ]; then
		sim=$WORK/sim-b state=$WORK/state-b sock=$WORK/run-b/api.sock
		log=$WORK/daemon-b.log
	fi
	cat >"$WORK/cfg-$1.yaml" <<YAML
api:
  tcp: 127.0.0.1:$2
  token_file: $WORK/token-$1
YAML
	GPUSLICE_SIM_DIR=$sim exec "$D" --state-dir "$state" --socket "$sock" \
		--gpus sim --config "$WORK/cfg-$1.yaml" >>"$log" 2>&1
}

# node-a on lib.sh's dirs, node-b on its own.
"$G" sim init --gpus 2xH100-SXM5-80GB --dir "$GPUSLICE_SIM_DIR" >/dev/null
"$G" sim init --gpus 2xH100-SXM5-80GB --dir "$WORK/sim-b" >/dev/null
mkdir -p "$WORK/run-b"
listen_on a node_daemon a @PORT@
listen_on b node_daemon b @PORT@
pa=$PORT_a pb=$PORT_b DPID=$PID_a DPID_B=$PID_b
healthy || fail "node-a's unix socket"

cat >"$WORK/nodes.json" <<JSON
{"poll_interval_ms": 200, "timeout_ms": 1000,
 "nodes": [{"name": "node-a", "url": "http://127.0.0.1:$pa", "token_file": "$WORK/token-a"},
           {"name": "node-b", "url": "http://127.0.0.1:$pb/", "token_file": "$WORK/token-b"}]}
JSON
ext_run() { exec "$EXT" --nodes "$WORK/nodes.json" --port "$1" >>"$WORK/ext.log" 2>&1; }
listen_on ext ext_run @PORT@
pe=$PORT_ext EPID=$PID_ext
ext() { # VERB FILE: the answer on stdout
	curl -s --max-time 10 -X POST -H 'Content-Type: application/json' \
		--data-binary "@$TD/$2" "http://127.0.0.1:$pe/$1"
}
wait_until 10 ext filter filter_live.json || fail "the extender did not answer:"

# ---- both empty: both pass, both score (once both were polled: the
# first polls may finish after the extender starts answering) ----
both_pass() {
	ext filter filter_live.json | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d["NodeNames"] == ["node-a", "node-b"] and d["FailedNodes"] == {} and d["Nodes"] is None else 1)'
}
wait_until 10 both_pass || fail "both empty nodes do not pass: $(ext filter filter_live.json)"
out=$(ext prioritize prioritize_live.json)
jcheck "$out" '[h["Host"] for h in d] == ["node-a", "node-b"] and all(h["Score"] > 0 for h in d)'
# a urlPrefix with a path (http://host:port/gpuslice/v1): the scheduler
# posts to PREFIX/filter
out=$(ext gpuslice/v1/prioritize prioritize_live.json)
jcheck "$out" '[h["Host"] for h in d] == ["node-a", "node-b"]'

# ---- fill node-a's GPUs through its API (70 GiB on each) ----
tok_a=$(cat "$WORK/token-a")
for g in 0 1; do
	st=$(curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $tok_a" \
		-X POST -d "{\"name\": \"fill-$g\", \"memory\": \"70GiB\", \"gpu\": $g}" \
		"http://127.0.0.1:$pa/v1/slices")
	expect_eq "fill node-a GPU $g (body $(cat "$WORK/body"))" "$st" 201
done
a_filtered() {
	ext filter filter_live.json | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d["NodeNames"] == ["node-b"] and "node-a" in d["FailedNodes"] else 1)'
}
wait_until 10 a_filtered || fail "node-a not filtered once full: $(ext filter filter_live.json)"
out=$(ext filter filter_live.json)
jcheck "$out" '"not enough free GPU" in d["FailedNodes"]["node-a"]'
out=$(ext prioritize prioritize_live.json)
jcheck "$out" '{h["Host"]: h["Score"] for h in d}["node-a"] < {h["Host"]: h["Score"] for h in d}["node-b"]'
jcheck "$out" '{h["Host"]: h["Score"] for h in d}["node-a"] == 0'

# ---- node-b's daemon stops: filtered with the reason, scored 0 ----
kill -TERM "$DPID_B"
wait "$DPID_B" 2>/dev/null || true
b_gone() {
	ext filter filter_live.json | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d["NodeNames"] == [] and "node-b" in d["FailedNodes"] else 1)'
}
wait_until 10 b_gone || fail "node-b not filtered once its daemon stopped: $(ext filter filter_live.json)"
out=$(ext filter filter_live.json)
jcheck "$out" '"unavailable" in d["FailedNodes"]["node-b"] and "/v1/gpus" in d["FailedNodes"]["node-b"]'
out=$(ext prioritize prioritize_live.json)
jcheck "$out" 'all(h["Score"] == 0 for h in d)'
grep -q "node node-b" "$WORK/ext.log" || fail "the extender did not log node-b's failure"
kill -TERM "$EPID"
rc=0
wait "$EPID" || rc=$?
expect_eq "the extender's exit status on SIGTERM" "$rc" 0
echo "ok: live nodes"
