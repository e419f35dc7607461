#!/usr/bin/env bash
# A claim for a MIG device that does not exist yet (the scheduler chose
# gpu-0-mig-1g-10gb-0 from the published placements) gets its instance
# made at prepare time through gpusliced's MIG planner: a MIG slice of
# profile 1g.10gb, a CDI spec that names the MIG device, and a workload
# with the spec's env is held to the instance's memory. A second MIG claim
# on the same GPU leaves the first instance alone. Unprepare deletes the
# slices.
. "$(dirname "$0")/lib.sh" "$1"
node_up 1xH100-SXM5-80GB
U=e1b2c3d4-0000-4000-8000-0000000000
jcheck "$(api GET /v1/gpus)" 'd["gpus"][0]["mig"]["instances"] == []'

claim m1 "${U}01" gpu-0-mig-1g-10gb-0 '{}'
out=$(kdra prepare ns m1 "${U}01")
jcheck "$out" 'd["error"] is None and d["devices"][0]["device"] == "gpu-0-mig-1g-10gb-0"'
s=$(api GET "/v1/slices/k8s-${U}01")
jcheck "$s" 'd["mode"].startswith("mig") and d["mig"]["profile"] == "1g.10gb" and d["mig"]["uuid"].startswith("MIG-")'
mig_uuid=$(jq_py "$s" 'd["mig"]["uuid"]')
jcheck "$(api GET /v1/gpus)" 'any(i["uuid"] == "'"$mig_uuid"'" and i["profile"] == "1g.10gb" for i in d["gpus"][0]["mig"]["instances"])'
spec=$CDI/gpuslice.io-slice_k8s-${U}01.json
cdi_valid "$spec" || { rc=$?; [ $rc -eq 77 ] && exit 77; fail "MIG CDI spec does not validate"; }
cdi_env "k8s-${U}01" >"$WORK/env"
grep -q "$mig_uuid" "$WORK/env" || fail "the CDI env does not name the MIG device $mig_uuid: $(cat "$WORK/env")"

mapfile -t CENV <"$WORK/env"
res=$(env -i LD_LIBRARY_PATH="$LD_LIBRARY_PATH" GPUSLICE_SIM_DIR="$GPUSLICE_SIM_DIR" \
	PATH="$PATH" "${CENV[@]}" "$B/bin/gs-alloc" --api plain --chunk 256MiB)
jcheck "$res" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and 8 * 2**30 <= d["allocated_bytes"] <= 10 * 2**30'
echo "MIG 1g.10gb: $(jq_py "$res" 'round(d["allocated_bytes"] / 2**30, 2)') GiB before CUDA_ERROR_OUT_OF_MEMORY"

# A second MIG claim: a second instance, the first one untouched.
claim m2 "${U}02" gpu-0-mig-2g-20gb-2 '{}' \
	'[{"source": "FromClass", "opaque": {"driver": "gpuslice.io", "parameters": {"apiVersion": "gpuslice.io/v1alpha1", "kind": "SliceConfig", "priority": "low"}}}]'
jcheck "$(kdra prepare ns m2 "${U}02")" 'd["error"] is None'
jcheck "$(api GET "/v1/slices/k8s-${U}02")" 'd["mig"]["profile"] == "2g.20gb" and d["mig"]["uuid"] != "'"$mig_uuid"'" and d["priority"] == "low"'
jcheck "$(api GET "/v1/slices/k8s-${U}01")" 'd["mig"]["uuid"] == "'"$mig_uuid"'"'
# The instances sit where the scheduler placed them (gpusliced's planner
# chooses; the driver warns when it differs).
jcheck "$(api GET /v1/gpus)" 'sorted((i["profile"], i["start"]) for i in d["gpus"][0]["mig"]["instances"]) == [("1g.10gb", 0), ("2g.20gb", 2)]'

# A placement gpusliced's planner would not pick (1g.10gb at 6): the claim
# gets a 1g.10gb instance of its own (never m1's, though it has the same
# profile) at exactly start 6 (the slice carries mig_start), and the driver
# has no placement difference to report.
claim m3 "${U}03" gpu-0-mig-1g-10gb-6 '{}'
jcheck "$(kdra prepare ns m3 "${U}03")" 'd["error"] is None'
s3=$(api GET "/v1/slices/k8s-${U}03")
jcheck "$s3" 'd["mig"]["profile"] == "1g.10gb" and d["mig"]["uuid"] != "'"$mig_uuid"'" and d["spec"]["mig_start"] == 6'
start3=$(api GET /v1/gpus | python3 -c '
import json, sys
d = json.load(sys.stdin)
print([i["start"] for i in d["gpus"][0]["mig"]["instances"] if i["uuid"] == sys.argv[1]][0])' "$(jq_py "$s3" 'd["mig"]["uuid"]')")
expect_eq "start of the 1g.10gb instance asked at 6" "$start3" 6
if grep -q "the scheduler chose" "$WORK/probe.log"; then
	fail "the driver reported a placement difference: $(grep 'the scheduler chose' "$WORK/probe.log")"
fi

# A placement held by another claim's instance: refused, naming the
# placement and the slice using it; m1's instance is untouched.
claim m4 "${U}04" gpu-0-mig-1g-10gb-0 '{}'
out=$(kdra prepare ns m4 "${U}04")
jcheck "$out" 'd["error"] is not None and "1g.10gb@0" in d["error"] and "k8s-'"${U}"'01" in d["error"]'
jcheck "$(api GET "/v1/slices/k8s-${U}01")" 'd["mig"]["uuid"] == "'"$mig_uuid"'"'
jcheck "$(api GET /v1/gpus)" 'any(i["uuid"] == "'"$mig_uuid"'" and i["start"] == 0 for i in d["gpus"][0]["mig"]["instances"])'

out=$(kdra unprepare ns m1 "${U}01" unprepare ns m2 "${U}02" unprepare ns m3 "${U}03")
[ "$(grep -c '"error":null' <<<"$out")" = 3 ] || fail "unprepare: $out"
expect_eq "slices after unprepare" "$(slices | tr '\n' ' ')" ""
[ -z "$(ls "$CDI")" ] || fail "CDI specs left: $(ls "$CDI")"
echo ok
