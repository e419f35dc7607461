#!/usr/bin/env bash
# A claim whose SliceConfig asks for mode: mps gets an MPS slice: its CDI
# spec carries the MPS client environment gpusliced gives (pipe directory,
# per-client limits) and mounts the pipe directory, and a workload with the
# spec's env runs as an MPS client held to the 4 GiB it was allocated.
. "$(dirname "$0")/lib.sh" "$1"
node_up
U=a11ce000-0000-4000-8000-0000000000
claim p1 "${U}01" gpu-0 '{"memory": "4Gi", "compute": "40"}' \
	'[{"source": "FromClaim", "opaque": {"driver": "gpuslice.io", "parameters": {"apiVersion": "gpuslice.io/v1alpha1", "kind": "SliceConfig", "mode": "mps"}}}]'
out=$(kdra prepare ns p1 "${U}01")
jcheck "$out" 'd["error"] is None'
s=$(api GET "/v1/slices/k8s-${U}01")
jcheck "$s" 'd["mode"] == "mps" and d["memory_bytes"] == 4 * 2**30 and d["compute"] == 40'
pipe=$(jq_py "$s" 'd["env"]["CUDA_MPS_PIPE_DIRECTORY"]')
spec=$CDI/gpuslice.io-slice_k8s-${U}01.json
cdi_valid "$spec" || { rc=$?; [ $rc -eq 77 ] && exit 77; fail "MPS CDI spec does not validate"; }
jcheck "$(cat "$spec")" 'any(m["hostPath"] == "'"$pipe"'" for m in d["devices"][0]["containerEdits"]["mounts"])'
cdi_env "k8s-${U}01" >"$WORK/env"
grep -qx "CUDA_MPS_PIPE_DIRECTORY=$pipe" "$WORK/env" || fail "no MPS pipe in the CDI env: $(cat "$WORK/env")"
mapfile -t CENV <"$WORK/env"
res=$(env -i LD_LIBRARY_PATH="$LD_LIBRARY_PATH" GPUSLICE_SIM_DIR="$GPUSLICE_SIM_DIR" \
	PATH="$PATH" "${CENV[@]}" "$B/bin/gs-alloc" --api plain --chunk 256MiB)
jcheck "$res" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and 3 * 2**30 <= d["allocated_bytes"] <= 4 * 2**30'
echo "MPS slice: $(jq_py "$res" 'round(d["allocated_bytes"] / 2**30, 2)') GiB before CUDA_ERROR_OUT_OF_MEMORY"
jcheck "$(kdra unprepare ns p1 "${U}01")" 'd["error"] is None'
expect_eq "slices after unprepare" "$(slices | tr '\n' ' ')" ""
echo ok
