#!/usr/bin/env bash
# A program that allocates through the sim's libcuda.so.1 is listed by
# the sim's NVML (nvmlDeviceGetComputeRunningProcesses_v3, nvidia-smi
# --query-compute-apps) with at least the memory it allocated, on the
# whole GPU and, selected by CUDA_VISIBLE_DEVICES=MIG-<uuid>, on a MIG
# device with its GI/CI ids; it leaves the list when it is killed.
# Skipped with a note while the sim driver is not built.
. "$(dirname "$0")/lib.sh" "$1"
if [ ! -f "$LIBCUDA" ]; then
	echo "note: $LIBCUDA not built yet; skipping (nothing to list)"
	exit 0
fi
"$PROBE" init 2xH100-SXM5-80GB

start_alloc() { # MIB OUTFILE
	"$ALLOC" "$LIBCUDA" "$1" >"$2" 2>&1 &
	local p=$!
	disown
	PIDS+=("$p")
	wait_for grep -q ready "$2"
	echo "$p"
}

a=$(start_alloc 1024 "$WORK/a")
line=$("$PROBE" nvml-procs 0 | grep "^$a ") || fail "pid $a not listed on GPU 0"
read -r _ bytes gi ci <<<"$line"
[ "$bytes" -ge $((1024 << 20)) ] || fail "usedGpuMemory $bytes < 1 GiB"
expect_eq "no MIG ids" "$gi $ci" "-1 -1"
expect_in "nvidia-smi apps" \
	"$("$SMI" --query-compute-apps=pid,used_memory --format=csv,noheader,nounits)" "^$a, [0-9]+$"
kill -9 "$a"
wait_for not_alive "$a"
if "$PROBE" nvml-procs 0 | grep -q "^$a "; then fail "killed process still listed"; fi

# On a MIG device.
"$SMI" -i 1 -mig 1 >/dev/null
"$SMI" mig -i 1 -cgi 14 -C >/dev/null
mig=$("$SMI" -L | grep -o 'MIG-[0-9a-f-]*' | head -n 1)
[ -n "$mig" ] || fail "no MIG device"
b=$(CUDA_VISIBLE_DEVICES=$mig start_alloc 256 "$WORK/b")
line=$("$PROBE" nvml-procs 1 | grep "^$b ") || fail "pid $b not listed on GPU 1"
read -r _ bytes gi ci <<<"$line"
[ "$bytes" -ge $((256 << 20)) ] || fail "usedGpuMemory $bytes < 256 MiB"
[ "$gi" != "-1" ] && [ "$ci" = "0" ] || fail "MIG ids: gi=$gi ci=$ci"
if "$SMI" mig -i 1 -dci 2>/dev/null; then fail "destroyed a CI with a process in it"; fi
kill -9 "$b"
wait_for not_alive "$b"
"$SMI" mig -i 1 -dci >/dev/null
"$SMI" mig -i 1 -dgi >/dev/null
echo ok
