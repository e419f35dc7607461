#!/usr/bin/env bash
# Short kernels (#12 item 6): three saturating gs-burn with ~1 ms kernels
# (64 MiB, 64 FMAs per element) in slices of 20, 30 and 50 % get their
# shares within 2 percentage points each over a 16 s window, and the GPU
# stays at least 97 % busy, measured by the sim's own accounting (busy
# seconds per process), not by the shim's. The window starts 2 s in.
. "$(dirname "$0")/lib.sh" "$1"
sim_up

burn_shares 16 2 97 --memory 64MiB --iters 64
for pct in 20 30 50; do
	jcheck "$(last_json "$WORK/burn$pct")" 'd["kernels"] > 100'
done
echo ok
