#!/usr/bin/env bash
# Short kernels (#12 item 6): three saturating gs-burn with ~1 ms kernels
# (64 MiB, 64 FMAs per element) in slices of 20, 30 and 50 % get their
# shares and keep the GPU busy, measured by the sim's own accounting (busy
# seconds per process), not by the shim's, over a 16 s window from 2 s in.
# The target (within 2 points each, the GPU >= 97 % busy) is a figure
# `make bench` prints (section shares): typically 97.3-98.4 % here, but
# host stalls on a 2-core machine move it by a few points, so this test
# asserts generous bounds: within 3.5 points each, the GPU >= 93 % busy.
. "$(dirname "$0")/lib.sh" "$1"
sim_up

burn_shares 16 3.5 93 --memory 64MiB --iters 64
for pct in 20 30 50; do
	jcheck "$(last_json "$WORK/burn$pct")" 'd["kernels"] > 100'
done
echo ok
