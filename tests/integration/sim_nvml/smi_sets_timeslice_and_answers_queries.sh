#!/usr/bin/env bash
# nvidia-smi (sim): `compute-policy --set-timeslice N` writes the GPU's
# time-slice level into the node state (one GPU by index or UUID, or all);
# -L and --query-gpu print the real formats; -c sets the compute mode;
# MIG mode, profiles, placements, instance creation and destruction work
# over the simulated NVML with the real error texts; unknown options and
# fields fail with a message and a non-zero status. Banners say
# "(simulated)".
. "$(dirname "$0")/lib.sh" "$1"
"$PROBE" init 1xH100-SXM5-80GB,1xA100-SXM4-40GB

expect_in "banner" "$("$SMI")" "\(simulated"
out=$("$SMI" -L)
expect_eq "-L lines" "$(printf '%s\n' "$out" | wc -l)" "2"
expect_in "-L GPU 0" "$out" "^GPU 0: NVIDIA H100 80GB HBM3 \(UUID: GPU-[0-9a-f-]{36}\)$"

out=$("$SMI" --query-gpu=index,uuid,name,memory.total,memory.used --format=csv)
expect_in "csv header" "$out" "^index, uuid, name, memory.total \[MiB\], memory.used \[MiB\]$"
expect_in "csv row" "$out" "^1, GPU-[0-9a-f-]+, NVIDIA A100-SXM4-40GB, [0-9]+ MiB, 0 MiB$"
out=$("$SMI" --query-gpu=index,memory.used --format=csv,noheader,nounits)
expect_eq "noheader,nounits" "$out" "$(printf '0, 0\n1, 0')"

for bad in "--bogus" "-q -z" "compute-policy --frobnicate" "mig -xyz"; do
	# shellcheck disable=SC2086
	if err=$("$SMI" $bad 2>&1); then fail "nvidia-smi $bad succeeded"; fi
	expect_in "nvidia-smi $bad" "$err" "Invalid combination of input arguments|Invalid"
done
if err=$("$SMI" --query-gpu=index,bogus --format=csv 2>&1); then fail "bad field accepted"; fi
expect_in "bad field" "$err" 'Field "bogus" is not a valid field to query'
set +e
"$SMI" --query-gpu=index --format=csv -i 7 >/dev/null 2>&1
rc=$?
set -e
expect_eq "unknown GPU exit status" "$rc" "6"

# Time slice: per GPU, by index and by UUID, then all GPUs.
"$SMI" compute-policy -i 1 --set-timeslice 2 >/dev/null
expect_eq "GPU 1 level" "$("$PROBE" timeslice 1)" "2"
expect_eq "GPU 0 untouched" "$("$PROBE" timeslice 0)" "0"
uuid0=$("$SMI" -i 0 --query-gpu=uuid --format=csv,noheader)
out=$("$SMI" compute-policy -i "$uuid0" --set-timeslice 1)
expect_in "message" "$out" "SHORT"
expect_eq "GPU 0 level" "$("$PROBE" timeslice 0)" "1"
"$SMI" compute-policy --set-timeslice 3 >/dev/null
expect_eq "all GPUs" "$("$PROBE" timeslice 0)$("$PROBE" timeslice 1)" "33"
if "$SMI" compute-policy --set-timeslice 4 2>/dev/null; then fail "level 4 accepted"; fi
if "$SMI" compute-policy -i 0 2>/dev/null; then fail "compute-policy without a setting"; fi
expect_eq "levels kept after refusals" "$("$PROBE" timeslice 0)" "3"

# Compute mode.
expect_in "-c" "$("$SMI" -i 0 -c EXCLUSIVE_PROCESS)" "Set compute mode to EXCLUSIVE_PROCESS"
expect_eq "mode in state" "$("$PROBE" compute-mode 0)" "3"
expect_eq "query" "$("$SMI" -i 0 --query-gpu=compute_mode --format=csv,noheader)" "Exclusive_Process"
"$SMI" -i 0 -c DEFAULT >/dev/null
expect_eq "mode back" "$("$PROBE" compute-mode 0)" "0"
if "$SMI" -i 0 -c SOMETIMES 2>/dev/null; then fail "bad compute mode"; fi

# MIG on the H100: immediate.
expect_in "-mig 1" "$("$SMI" -i 0 -mig 1)" "Enabled MIG Mode"
expect_in "-lgip" "$("$SMI" mig -i 0 -lgip)" "MIG 3g.40gb +9 +2/2 "
expect_in "-lgip banner" "$("$SMI" mig -i 0 -lgip)" "\(simulated\)"
expect_in "-lgipp" "$("$SMI" mig -i 0 -lgipp)" "^GPU  0 Profile ID 19 Placements: \{0,1,2,3,4,5,6\}:1$"
out=$("$SMI" mig -i 0 -cgi 9,1g.10gb -C)
expect_eq "created" "$(printf '%s\n' "$out" | grep -c '^Successfully created')" "4"
expect_eq "-L shows MIG devices" "$("$SMI" -L | grep -c 'MIG-')" "2"
expect_in "-lgi" "$("$SMI" mig -i 0 -lgi)" "MIG 3g.40gb +9 +[0-9]+ +0:4"
set +e
err=$("$SMI" mig -i 0 -cgi 19:7 2>&1)
rc=$?
set -e
expect_eq "invalid placement status" "$rc" "2"
expect_in "invalid placement" "$err" "Invalid Argument"
set +e
err=$("$SMI" mig -i 0 -cgi 9:0 2>&1)
rc=$?
set -e
expect_eq "overlap status" "$rc" "1"
expect_in "overlap" "$err" "Insufficient resources"
if err=$("$SMI" mig -i 0 -dgi 2>&1); then fail "destroyed GIs that have CIs"; fi
expect_in "GI in use" "$err" "In use by another client"
"$SMI" mig -i 0 -dci >/dev/null
"$SMI" mig -i 0 -dgi >/dev/null
expect_eq "no MIG devices left" "$("$SMI" -L | grep -c 'MIG-' || true)" "0"

# MIG on the A100: pending until a reset.
out=$("$SMI" -i 1 -mig 1)
expect_in "pending" "$out" "pending enable"
expect_eq "still off" "$("$SMI" -i 1 --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader)" \
	"Disabled, Enabled"
"$SMI" -i 1 -r >/dev/null
expect_eq "on after reset" "$("$SMI" -i 1 --query-gpu=mig.mode.current --format=csv,noheader)" "Enabled"
echo ok
