#!/usr/bin/env bash
# A claim's CDI spec alone makes a working container, with no NVIDIA
# container runtime: the driver's libraries (the sim's libcuda and NVML,
# found in --driver-dirs as they would be in the ldconfig cache) and
# binaries (nvidia-smi at /usr/bin) are mounted, NVIDIA_VISIBLE_DEVICES is
# void, LD_LIBRARY_PATH names their directory. The workload runs in a fresh
# mount namespace under a new root that holds only libc, the workload's
# binary and the spec's edits (cdi_run.py): it is capped at the claim's
# 8 GiB, and nvidia-smi runs. Without the spec's libcuda mount the same
# workload cannot load libcuda (the control: nothing leaks from the host).
# The spec's createContainer hook refuses an image whose libc (glibc 2.12,
# musl) cannot load the shim, saying why.
. "$(dirname "$0")/lib.sh" "$1"
command -v unshare >/dev/null && command -v chroot >/dev/null ||
	{ echo "SKIP: unshare or chroot missing"; exit 77; }
[ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null || { echo "SKIP: needs root or sudo for mount namespaces"; exit 77; }
SUDO=()
[ "$(id -u)" -eq 0 ] || SUDO=(sudo -n)
"${SUDO[@]}" unshare -m --propagation private true 2>/dev/null ||
	{ echo "SKIP: cannot make a mount namespace here"; exit 77; }
node_up
SIMLIB=$B/sim
UID1=4f1c2a9e-0000-4000-8000-0000000000c1
claim c1 "$UID1" gpu-1 '{"memory": "8Gi", "compute": "25"}'
out=$(kdra --driver-dirs "$SIMLIB" prepare ns c1 "$UID1")
jcheck "$out" 'd["error"] is None and d["devices"][0]["cdi"] == ["gpuslice.io/slice=k8s-'"$UID1"'"]'
spec=$CDI/gpuslice.io-slice_k8s-$UID1.json
cdi_valid "$spec" || { rc=$?; [ $rc -eq 77 ] && exit 77; fail "CDI spec does not validate"; }
e=$(cat "$spec")
jcheck "$e" '"NVIDIA_VISIBLE_DEVICES=void" in d["devices"][0]["containerEdits"]["env"]'
jcheck "$e" '"LD_LIBRARY_PATH='"$SIMLIB"':/usr/local/nvidia/lib:/usr/local/nvidia/lib64" in d["devices"][0]["containerEdits"]["env"]'
jcheck "$e" '{"'"$SIMLIB"'/libcuda.so.1", "'"$SIMLIB"'/libnvidia-ml.so.1"} <= {m["hostPath"] for m in d["devices"][0]["containerEdits"]["mounts"]}'
jcheck "$e" '[m["containerPath"] for m in d["devices"][0]["containerEdits"]["mounts"] if m["hostPath"] == "'"$SIMLIB"'/nvidia-smi"] == ["/usr/bin/nvidia-smi"]'
jcheck "$e" 'all("ro" in m["options"] for m in d["devices"][0]["containerEdits"]["mounts"] if m["hostPath"].startswith("'"$SIMLIB"'/"))'

ctr() { # [--drop-mount S] -- CMD...: runs CMD in the spec's container
	local root=$WORK/root.$RANDOM
	"${SUDO[@]}" unshare -m --propagation private python3 "$SRC/tests/integration/k8s_driver/cdi_run.py" \
		"$spec" "$root" --keep-env GPUSLICE_SIM_DIR="$GPUSLICE_SIM_DIR" \
		--rw "$GPUSLICE_SIM_DIR" --image "$B/bin/gs-alloc" "$@"
}
res=$(ctr -- "$B/bin/gs-alloc" --api plain --chunk 256MiB 2>"$WORK/ctr.err") ||
	{ rc=$?; [ $rc -eq 3 ] && { echo "SKIP: $(tail -1 "$WORK/ctr.err")"; exit 77; }; }
jcheck "$res" 'd["error"] == "CUDA_ERROR_OUT_OF_MEMORY" and 7 * 2**30 <= d["allocated_bytes"] <= 8 * 2**30'
echo "in a container from the CDI spec alone: $(jq_py "$res" 'd["allocated_bytes"] / 2**30') GiB before CUDA_ERROR_OUT_OF_MEMORY"
smi=$(ctr -- /usr/bin/nvidia-smi -L 2>>"$WORK/ctr.err") || fail "nvidia-smi in the container: $(tail -3 "$WORK/ctr.err")"
grep -q "^GPU 1:" <<<"$smi" || fail "nvidia-smi -L in the container: $smi"
echo "nvidia-smi in the container: $(head -1 <<<"$smi")"
# Control: the same container without the spec's libcuda.
res=$(ctr --drop-mount libcuda.so -- "$B/bin/gs-alloc" --api plain --chunk 256MiB 2>>"$WORK/ctr.err") || true
jcheck "$res" 'd["error"] == "LIBCUDA_LOAD_FAILED"'
echo "without the spec's libcuda: $(jq_py "$res" 'd["error"]')"

# The spec's createContainer hook (cdi_run.py runs it as a runtime does):
# the container above passed it (its libc is this host's glibc); one whose
# libc cannot load the shim is refused before it runs, with the reason.
jcheck "$e" 'd["devices"][0]["containerEdits"]["hooks"] == [{"hookName": "createContainer", "path": "'"$B"'/bin/gpuslice-cdi-hook", "args": ["gpuslice-cdi-hook", "check-libc", "--shim", "'"$SHIM"'"]}]'
OLD_LIBC=$B/tests/fixtures/libgs_fake_glibc_2.12.so
[ -f "$OLD_LIBC" ] || fail "$OLD_LIBC is missing: build test_k8s_cdi_hook's fixtures"
for image in "$OLD_LIBC=/lib64/libc.so.6" "$OLD_LIBC=/lib/ld-musl-x86_64.so.1"; do
	rc=0
	ctr --no-host-libc --put "$image" -- "$B/bin/gs-alloc" --api plain \
		>/dev/null 2>"$WORK/hook.err" || rc=$?
	[ $rc -eq 4 ] || fail "image with ${image#*=}: cdi_run exit $rc, not refused by the hook: $(tail -2 "$WORK/hook.err")"
	grep -q "gpuslice-cdi-hook: the container.*would run with no GPU limits" "$WORK/hook.err" ||
		fail "the hook's refusal gives no reason: $(cat "$WORK/hook.err")"
	echo "refused by the hook: $(grep -o 'gpuslice-cdi-hook: .*' "$WORK/hook.err" | head -1)"
done

# NVIDIA's own CDI spec for the GPU: the claim references its device and
# mounts no driver files of its own.
uuid=$(jq_py "$(api GET /v1/gpus)" 'd["gpus"][0]["uuid"]')
cat >"$CDI/nvidia.yaml" <<Y
cdiVersion: 0.5.0
kind: nvidia.com/gpu
devices:
- name: "0"
  containerEdits: {deviceNodes: [{path: /dev/nvidia0}]}
- name: $uuid
  containerEdits: {deviceNodes: [{path: /dev/nvidia0}]}
Y
UID2=4f1c2a9e-0000-4000-8000-0000000000c2
claim c2 "$UID2" gpu-0 '{"memory": "2Gi", "compute": "10"}'
out=$(kdra --driver-dirs "$SIMLIB" prepare ns c2 "$UID2")
jcheck "$out" 'd["error"] is None and d["devices"][0]["cdi"] == ["gpuslice.io/slice=k8s-'"$UID2"'", "nvidia.com/gpu='"$uuid"'"]'
jcheck "$(cat "$CDI/gpuslice.io-slice_k8s-$UID2.json")" 'not any(m["hostPath"].startswith("'"$SIMLIB"'/") for m in d["devices"][0]["containerEdits"]["mounts"])'
rm "$CDI/nvidia.yaml"

# The plugin in a container sees the host's / at --driver-root: the host's
# ldconfig cache (built here for a fake host root holding the sim's
# libcuda as a versioned driver library) names host paths, and the spec
# mounts those.
HR=$WORK/hostroot
mkdir -p "$HR/usr/lib/x86_64-linux-gnu" "$HR/usr/bin" "$HR/etc"
cp "$SIMLIB/libcuda.so.1" "$HR/usr/lib/x86_64-linux-gnu/libcuda.so.580.65.06"
cp "$SIMLIB/nvidia-smi" "$HR/usr/bin/"
echo /usr/lib/x86_64-linux-gnu >"$HR/etc/ld.so.conf"
if ldconfig -r "$HR" 2>/dev/null; then
	UID3=4f1c2a9e-0000-4000-8000-0000000000c3
	claim c3 "$UID3" gpu-1 '{"memory": "1Gi", "compute": "10"}'
	out=$(kdra --driver-root "$HR" prepare ns c3 "$UID3")
	jcheck "$out" 'd["error"] is None'
	m=$(cat "$CDI/gpuslice.io-slice_k8s-$UID3.json")
	jcheck "$m" '{(x["hostPath"], x["containerPath"]) for x in d["devices"][0]["containerEdits"]["mounts"]} >= {("/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"), ("/usr/bin/nvidia-smi", "/usr/bin/nvidia-smi")}'
	out=$(kdra unprepare ns c3 "$UID3")
	jcheck "$out" 'd["error"] is None'
	echo "--driver-root: the host's ldconfig cache gives host paths"
else
	echo "SKIP (part): ldconfig -r cannot build a cache for a fake root here"
fi
out=$(kdra unprepare ns c1 "$UID1" unprepare ns c2 "$UID2")
[ "$(grep -c '"error":null' <<<"$out")" = 2 ] || fail "unprepare: $out"
echo ok
