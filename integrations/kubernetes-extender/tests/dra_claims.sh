#!/usr/bin/env bash
# gs-k8s-extender --kubeconfig reads a pod's DRA claims and claim templates
# from the API server (the claims stand-in of the DRA driver's tests) and
# counts them like a gpu-milli request: a claim of 60 % compute and 8 GiB
# does not pass node-b (half a GPU free at most), a template of 48 GiB
# passes node-a only (three T4s' worth on node-c); a claim the server does
# not have is an error reply (503) with the reason, never a blind pass.
# Without --kubeconfig the same pod passes every node (claims not counted).
set -euo pipefail
build=$1
src=${GS_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
here="$src/integrations/kubernetes-extender/tests"
tmp=$(mktemp -d)
SPID="" EPID=""
trap '[ -z "$EPID" ] || kill "$EPID" 2>/dev/null || true; [ -z "$SPID" ] || kill "$SPID" 2>/dev/null || true; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/ext.log" ] && tail -5 "$tmp/ext.log" >&2; exit 1; }

mkdir -p "$tmp/claims/ml"
cat >"$tmp/claims/ml/shared.json" <<'J'
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"namespace": "ml", "name": "shared"},
 "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.gpuslice.io",
   "capacity": {"requests": {"compute": "60", "memory": "8Gi"}}}}]}}}
J
cat >"$tmp/claims/ml/big.template.json" <<'J'
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"namespace": "ml", "name": "big"},
 "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.gpuslice.io",
   "capacity": {"requests": {"compute": "10", "memory": "48Gi"}}}}]}}}}
J
python3 "$src/tests/integration/k8s_driver/claims_standin.py" "$tmp/claims" "$tmp/sport" >"$tmp/standin.log" 2>&1 &
SPID=$!
for _ in $(seq 100); do [ -s "$tmp/sport" ] && break; sleep 0.1; done
[ -s "$tmp/sport" ] || fail "the claims stand-in did not start"
cat >"$tmp/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: standin
  cluster:
    server: http://127.0.0.1:$(cat "$tmp/sport")
users:
- name: scheduler
  user:
    token: test-token
contexts:
- name: standin
  context:
    cluster: standin
    user: scheduler
current-context: standin
KC

# start_extender ARGS...: on a free port (another test may take the one
# picked: pick again), PORT set.
start_extender() {
	local try
	for try in 1 2 3 4 5; do
		PORT=$((20000 + RANDOM % 20000))
		"$build/bin/gs-k8s-extender" --state "$here/state.json" --port "$PORT" "$@" >"$tmp/ext.log" 2>&1 &
		EPID=$!
		for _ in $(seq 50); do
			curl -s -o /dev/null "http://127.0.0.1:$PORT/" && return 0
			kill -0 "$EPID" 2>/dev/null || break
			sleep 0.1
		done
		kill "$EPID" 2>/dev/null || true
		wait "$EPID" 2>/dev/null || true
		EPID=""
	done
	fail "gs-k8s-extender did not start: $(cat "$tmp/ext.log")"
}

# filter CLAIMS_JSON: HTTP status, then the passing nodes (comma-joined).
filter() {
	local body
	body='{"Pod": {"metadata": {"name": "p", "namespace": "ml"}, "spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "1"}}}], "resourceClaims": '"$1"'}}, "Nodes": null, "NodeNames": ["node-a", "node-b", "node-c"]}'
	curl -s --max-time 10 -o "$tmp/out" -w '%{http_code}\n' -X POST -H 'Content-Type: application/json' \
		--data-binary "$body" "http://127.0.0.1:$PORT/filter"
	python3 -c 'import json, sys; print(",".join(json.load(open(sys.argv[1])).get("NodeNames") or []))' "$tmp/out"
}
expect() { # WHAT GOT WANT
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3' ($(cat "$tmp/out"))"
}

start_extender --kubeconfig "$tmp/kubeconfig"
expect "a claim of 60 % and 8 GiB" "$(filter '[{"name": "gpu", "resourceClaimName": "shared"}]' | tr '\n' ' ')" "200 node-a,node-c "
expect "a template of 48 GiB" "$(filter '[{"name": "gpu", "resourceClaimTemplateName": "big"}]' | tr '\n' ' ')" "200 node-a "
expect "a claim the server lacks" "$(filter '[{"name": "gpu", "resourceClaimName": "gone"}]' | sed -n 1p)" "503"
grep -q "resourceclaims/gone" "$tmp/ext.log" || fail "the failed claim read is not logged"
grep -q "GET /apis/resource.k8s.io/v1/namespaces/ml/resourceclaimtemplates/big Bearer test-token" "$tmp/claims/requests.log" ||
	fail "the template was not read with the kubeconfig's token: $(cat "$tmp/claims/requests.log")"
kill "$EPID"; wait "$EPID" 2>/dev/null || true; EPID=""

start_extender
expect "without --kubeconfig" "$(filter '[{"name": "gpu", "resourceClaimName": "shared"}]' | tr '\n' ' ')" "200 node-a,node-b,node-c "
echo "ok: DRA claims count against the nodes' free GPUs"
