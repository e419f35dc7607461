#!/usr/bin/env bash
# `gpuslice import device-plugin|dra` on the files in tests/data/import:
# what they translate to (checked in the JSON output), and the exit
# status and one-line FILE:LINE message for each bad file.
set -euo pipefail
build=${1:?usage: import_cli.sh BUILD_DIR}
src=${GS_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}
gs="$build/bin/gpuslice"
data="$src/tests/data/import"
fails=0

check() { # check NAME COMMAND...: the command must succeed
	local name=$1
	shift
	if ! "$@"; then
		echo "FAIL: $name" >&2
		fails=$((fails + 1))
	fi
}

# expect_exit NAME STATUS PATTERN ARGS...: gpuslice ARGS exits STATUS with
# one line on stderr matching PATTERN and nothing on stdout.
expect_exit() {
	local name=$1 status=$2 pattern=$3 rc=0
	shift 3
	"$gs" "$@" >out.txt 2>err.txt || rc=$?
	if [ "$rc" != "$status" ] || ! grep -Eq -- "$pattern" err.txt ||
		[ "$(wc -l <err.txt)" != 1 ] || [ -s out.txt ]; then
		echo "FAIL: $name: exit $rc (want $status), stderr: $(cat err.txt)" >&2
		fails=$((fails + 1))
	fi
}

cd "$(mktemp -d)"

# --help is usage on stdout, exit 0
check "help" bash -c "'$gs' import --help | grep -q 'usage: gpuslice import device-plugin'"
expect_exit "no format" 2 "usage|format" import nothing-here
expect_exit "unknown option" 2 "unexpected argument '--frobnicate'" \
	import device-plugin "$data/dp-mps-a100.yaml" --frobnicate
expect_exit "unknown GPU" 2 "unknown GPU model 'Z9000'" \
	import device-plugin "$data/dp-mps-a100.yaml" --gpu Z9000
expect_exit "missing file" 3 "no-such.yaml: No such file" \
	import dra "$data/no-such.yaml"

# The reference example: five configs; MPS 10 replicas on an H100.
"$gs" import device-plugin "$data/device-plugin-example.yaml" --gpu H100 \
	--gpus 8 --json >dp.json
check "example: 5 configs" test "$(jq '.configs | length' dp.json)" = 5
check "example: strategies" test "$(jq -c '[.configs[].strategy]' dp.json)" = \
	'["none","time-slicing","time-slicing","mps","time-slicing"]'
check "example: MPS compute 100/10" \
	test "$(jq '.configs[3].resources[0].slice.compute' dp.json)" = 10
check "example: MPS memory floor(81559/10) MiB" \
	test "$(jq '.configs[3].resources[0].slice.memory_bytes' dp.json)" = $((8155 * 1048576))
check "example: renamed" \
	test "$(jq -r '.configs[3].resources[0].name' dp.json)" = nvidia.com/gpu.shared
check "example: 80 slices on 8 GPUs" \
	test "$(jq '.configs[3].resources[0].total' dp.json)" = 80
check "example: ignored fields noted" \
	test "$(jq '[.configs[4].notes[] | select(test("ignored|reset"))] | length' dp.json)" = 3

# Human output says what the plugin does and what gpuslice would create.
"$gs" import device-plugin "$data/dp-mps-a100.yaml" --gpu A100-40GB >dp.txt
check "A100 MPS: 25% of the threads" grep -q "25% of the threads (100/4)" dp.txt
check "A100 MPS: create line" grep -q "gpuslice create .*compute=25 .*mode=mps" dp.txt

"$gs" import device-plugin "$data/dp-timeslicing-mig.yaml" --json >mig.json
check "MIG .me profile" \
	test "$(jq -r '.configs[0].resources[1].slice["mig-profile"]' mig.json)" = "1g.10gb+me"

# DRA: the seed's parentUUID claim is a same-parent gang; the Pod after it
# is skipped with a note.
"$gs" import dra "$data/dra-claim-parentuuid.yaml" --json >claim.json
check "claim: same-parent gang" test "$(jq -r '.placement.gang' claim.json)" = same-parent
check "claim: devices" test "$(jq -c '.placement.devices' claim.json)" = '["1g.5gb","3g.20gb"]'
check "claim: MPS in the 1g.5gb" test "$(jq -r '.configs[0].spec' claim.json | grep -c 'mode=mig+mps mig-profile=1g.5gb')" = 1
check "claim: Pod skipped" test "$(jq '[.notes[] | select(test("kind Pod skipped"))] | length' claim.json)" = 1

"$gs" import dra "$data/dra-template-v1.yaml" --json >tmpl.json
check "template: two whole GPUs" test "$(jq -c '.placement.devices' tmpl.json)" = '["whole GPU","whole GPU"]'
check "template: Short is level 1" test "$(jq '.configs[0].timeSliceLevel' tmpl.json)" = 1

"$gs" import dra "$data/dra-gpuconfig-mps.yaml" --json >mps.json
check "MPS: 50%" test "$(jq '.configs[0].activeThreadPercentage' mps.json)" = 50
check "MPS: 6G is 5722M" test "$(jq '.configs[0].perDevicePinnedMemoryMiB["0"]' mps.json)" = 5722
"$gs" import dra "$data/dra-gpuconfig-timeslicing.yaml" >ts.txt
check "TimeSlicing Long: level 3" grep -q "set-timeslice 3" ts.txt

# Bad files: exit 2 (or 3), one line naming FILE:LINE.
expect_exit "replicas 1" 2 "dp-bad-replicas.yaml:6: .*replicas must be at least 2, got 1" \
	import device-plugin "$data/dp-bad-replicas.yaml"
expect_exit "typo" 2 "dp-unknown-field.yaml:4: unknown field 'migStratgy' in flags \\(did you mean migStrategy\\?\\)" \
	import device-plugin "$data/dp-unknown-field.yaml"
# MPS without flags.mpsRoot: the plugin reads --mps-root, which its Helm
# chart sets (/run/nvidia/mps); imported with a note saying so.
"$gs" import device-plugin "$data/dp-mps-without-root.yaml" --gpu H100 >mpsroot.txt
check "MPS without mpsRoot imports" grep -q "compute=33" mpsroot.txt
check "MPS without mpsRoot: the chart's root" grep -q "/run/nvidia/mps" mpsroot.txt
expect_exit "not YAML" 2 "dp-not-yaml.yaml:6: " \
	import device-plugin "$data/dp-not-yaml.yaml"
expect_exit "bad interval" 2 "dra-bad-interval.yaml:6: sharing.timeSlicingConfig.interval must be Default\\|Short\\|Medium\\|Long, got 'Longer'" \
	import dra "$data/dra-bad-interval.yaml"
expect_exit "seed's class typo" 2 "dra-bad-class.yaml:10: .*unknown device class 'migu.nvidia.com'" \
	import dra "$data/dra-bad-class.yaml"
expect_exit "MPS with timeSlicingConfig" 2 "dra-mps-with-timeslicing.yaml:6: " \
	import dra "$data/dra-mps-with-timeslicing.yaml"
expect_exit "device-plugin file as DRA" 3 "no GpuConfig" \
	import dra "$data/dp-mps-a100.yaml"

if [ "$fails" -ne 0 ]; then
	echo "$fails check(s) failed" >&2
	exit 1
fi
echo "import_cli: all checks passed"
