#!/usr/bin/env bash
# Three saturating gs-burn in slices of 20, 30 and 50 % on one GPU: each
# gets its share within 3 percentage points over a 10 s window, measured
# by the sim's own accounting (busy seconds per process from `gpuslice
# sim status --json`), not by the shim's. The window starts 2 s in, when
# all three are running.
. "$(dirname "$0")/lib.sh" "$1"
sim_up
burn_shares 10 3 0
echo ok
