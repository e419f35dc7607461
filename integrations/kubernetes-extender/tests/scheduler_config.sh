#!/usr/bin/env bash
# deploy/kubernetes/scheduler/scheduler-config*.yaml against kube-scheduler's config
# types and extender validation (scheduler_config.py), a copy with an
# unknown field or without ignoredByScheduler refused (the checker
# checks), and the example's urlPrefix path answered by gs-k8s-extender
# over HTTP in the mode it names.
set -euo pipefail
build=${1:?usage: scheduler_config.sh BUILD_DIR}
src=${GS_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
here="$src/integrations/kubernetes-extender/tests"
py=python3
"$py" -c 'import yaml' 2>/dev/null || py=/usr/bin/python3
if ! "$py" -c 'import yaml' 2>/dev/null; then
	echo "SKIP: python3-yaml is not installed" >&2
	exit 77
fi
tmp=$(mktemp -d)
trap '[ -z "${EPID:-}" ] || kill "$EPID" 2>/dev/null || true; rm -rf "$tmp"' EXIT
n=0
for f in "$src"/deploy/kubernetes/scheduler/scheduler-config*.yaml; do
	"$py" "$here/scheduler_config.py" "$f"
	n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "FAIL: no deploy/kubernetes/scheduler/scheduler-config*.yaml" >&2; exit 1; }

# the checker must refuse what the scheduler would: a misspelt field, and
# the share without ignoredByScheduler
ex="$src/deploy/kubernetes/scheduler/scheduler-config.yaml"
sed 's/nodeCacheCapable:/nodeCachecapable:/' "$ex" >"$tmp/typo.yaml"
sed 's/ignoredByScheduler: true/ignoredByScheduler: false/' "$ex" >"$tmp/noignore.yaml"
for bad in typo noignore; do
	if "$py" "$here/scheduler_config.py" "$tmp/$bad.yaml" >/dev/null; then
		echo "FAIL: scheduler_config.py accepted $bad.yaml" >&2
		exit 1
	fi
done

# the extender answers at the example's urlPrefix path
prefix=$("$py" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["extenders"][0]["urlPrefix"])' "$ex")
path=/${prefix#http*://*/}
port=$((20000 + RANDOM % 20000))
"$build/bin/gs-k8s-extender" --state "$here/state.json" --port "$port" >"$tmp/ext.log" 2>&1 &
EPID=$!
for _ in $(seq 50); do
	curl -s -o /dev/null "http://127.0.0.1:$port/" && break
	sleep 0.1
done
out=$(curl -s --max-time 10 -X POST -H 'Content-Type: application/json' \
	--data-binary "@$here/filter_share.json" "http://127.0.0.1:$port$path/filter")
"$py" -c 'import json, sys; d = json.loads(sys.argv[1]); sys.exit(0 if d["NodeNames"] == ["node-a", "node-b"] else 1)' "$out" ||
	{ echo "FAIL: POST $path/filter answered: $out" >&2; exit 1; }
out=$(curl -s --max-time 10 -X POST -H 'Content-Type: application/json' \
	--data-binary "@$here/filter_nodelist.json" "http://127.0.0.1:$port$path/filter")
"$py" -c 'import json, sys; d = json.loads(sys.argv[1]); sys.exit(0 if [n["metadata"]["name"] for n in d["Nodes"]["items"]] == ["node-a", "node-b"] and d["NodeNames"] is None else 1)' "$out" ||
	{ echo "FAIL: nodeCacheCapable false at $path/filter answered: $out" >&2; exit 1; }
echo "scheduler_config: $n file(s) valid; the extender answers at $path"
