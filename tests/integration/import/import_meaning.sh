#!/usr/bin/env bash
# `gpuslice import ... --k8s` means what the input meant, on configs
# written from the NVIDIA projects' documented formats (fixtures/, our
# own files: the device plugin's config, its Helm values, the GPU
# operator's values and ConfigMaps, the DRA driver's claims and Pods):
#   - N replicas per GPU become capacity requests that fit exactly N pods
#     on a GPU (compute and memory), for time-slicing and MPS alike;
#   - ConfigMaps and Helm values import every config they embed, and an
#     error inside one names the file's own line;
#   - a ResourceClaim stays one shared claim with its name and namespace,
#     every template of a file is kept, MIG requests stay MIG;
#   - CEL selectors on attributes both drivers publish are kept (on
#     gpuslice.io's domain);
#   - what a gpuslice.io claim cannot carry (other CEL selectors, several
#     devices in a claim, per-client MPS limits for several clients, shared
#     MIG devices) fails with exit 2 and FILE:LINE: FIELD.
# The objects must also pass the resource.k8s.io/v1 schema when
# python3-jsonschema is there (import_k8s.sh skips without it).
set -euo pipefail
build=${1:?usage: import_meaning.sh BUILD_DIR}
src=${GS_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
gs="$build/bin/gpuslice"
fx="$src/tests/integration/import/fixtures"
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

fail() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}

# refuse NAME PATTERN ARGS...: exit 2, one stderr line matching PATTERN,
# nothing on stdout.
refuse() {
	local name=$1 pattern=$2 rc=0
	shift 2
	"$gs" "$@" >out.txt 2>err.txt || rc=$?
	if [ "$rc" != 2 ] || ! grep -Eq -- "$pattern" err.txt ||
		[ "$(wc -l <err.txt)" != 1 ] || [ -s out.txt ]; then
		fail "$name: exit $rc, stderr: $(cat err.txt)"
	fi
}

# Device-plugin configs: --json (what the plugin does) and --k8s (what we
# emit) of each, compared by check_meaning.py.
for f in dp-timeslicing-10 dp-timeslicing-renamed dp-mps-no-root \
	dp-configmap dp-helm-values dp-operator-values dp-two-configs; do
	"$gs" import device-plugin "$fx/$f.yaml" --gpu H100 --json >"$f.json" ||
		fail "$f: --json"
	"$gs" import device-plugin "$fx/$f.yaml" --gpu H100 --k8s \
		>"$f.k8s.json" 2>"$f.err" || fail "$f: --k8s: $(cat "$f.err")"
done
for f in dra-shared-claim dra-two-templates dra-mig-any dra-mps-one-client \
	dra-cel-common; do
	"$gs" import dra "$fx/$f.yaml" --k8s >"$f.k8s.json" 2>"$f.err" ||
		fail "$f: --k8s: $(cat "$f.err")"
done

refuse "ConfigMap: a bad config names the file's line" \
	"dp-configmap-bad.yaml:21: sharing.timeSlicing.resources\[0\].replicas must be at least 2" \
	import device-plugin "$fx/dp-configmap-bad.yaml"
refuse "shared MIG devices" \
	"dp-timeslicing-mig.yaml:9: sharing.timeSlicing.resources\[0\].replicas: 3 replicas of MIG device" \
	import device-plugin "$fx/dp-timeslicing-mig.yaml" --gpu H100 --k8s
printf 'version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 150\n' >ts150.yaml
refuse "more replicas than whole percents" \
	"ts150.yaml:5: sharing.timeSlicing.resources\[0\].replicas: 150 replicas per GPU" \
	import device-plugin ts150.yaml --gpu H100 --k8s
refuse "replicas without a GPU model" \
	"dp-timeslicing-10.yaml:9: sharing.timeSlicing.resources\[0\].replicas: --k8s needs --gpu" \
	import device-plugin "$fx/dp-timeslicing-10.yaml" --k8s
refuse "a CEL selector on another attribute" \
	"dra-cel-other.yaml:16: spec.spec.devices.requests\[0\].exactly.selectors\[0\].cel.expression: selector not translated" \
	import dra "$fx/dra-cel-other.yaml" --k8s
refuse "two devices in one claim" \
	"dra-two-gpus.yaml:10: spec.spec.devices.requests\[0\].count: 2 devices in one claim" \
	import dra "$fx/dra-two-gpus.yaml" --k8s
refuse "per-client MPS limits, two clients" \
	"dra-mps-two-clients.yaml:20: spec.spec.devices.config\[0\].opaque.parameters.sharing.mpsConfig: .*2 containers use this claim" \
	import dra "$fx/dra-mps-two-clients.yaml" --k8s
# mig-parted configs inside the GPU operator's ConfigMap: planned, and an
# error names the ConfigMap's own line.
"$gs" plan --mig-parted "$fx/migparted-configmap.yaml" --config halves \
	--gpu A100-40GB >plan.txt 2>&1 || fail "mig-parted ConfigMap: $(cat plan.txt)"
grep -q "3g.20gb@0 3g.20gb@4" plan.txt || fail "mig-parted ConfigMap: halves became $(cat plan.txt)"
rc=0
"$gs" plan --mig-parted "$fx/migparted-configmap.yaml" --config wrong \
	--gpu A100-40GB >plan.txt 2>&1 || rc=$?
grep -q "(line 22)" plan.txt || fail "mig-parted ConfigMap: the error does not name the file's line (exit $rc): $(cat plan.txt)"

# Without --k8s the same files are described, not refused.
for f in dra-cel-other dra-two-gpus dra-mps-two-clients; do
	"$gs" import dra "$fx/$f.yaml" >/dev/null || fail "$f: plain import"
done

py=python3
"$py" -c 'import json' 2>/dev/null || py=/usr/bin/python3
PYTHONPATH="$src/tests/integration/k8s_api" "$py" \
	"$src/tests/integration/import/check_meaning.py" "$tmp" || fails=$((fails + 1))
if [ "$fails" != 0 ]; then
	echo "$fails check(s) failed" >&2
	exit 1
fi
echo "import_meaning: all checks passed"
