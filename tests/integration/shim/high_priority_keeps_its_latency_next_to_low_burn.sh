#!/usr/bin/env bash
# gs-infer --light at high priority next to a saturating gs-burn at low
# priority keeps its p99 latency within 1.25x of its p99 alone. The
# requests are made GPU-bound (width 8192: ~2 ms of GPU per request on the
# sim) so that what is measured is the GPU, not the host: unprotected, the
# burn's time slices would double the latency (checked below as the
# control). The server's first 0.5 s are not counted (latency_pairs.sh:
# it arrives while a low kernel already runs, which nothing preempts). On
# a loaded machine host jitter moves p99 from run to run, so up to five
# alone/with pairs are measured; one pair within the bound passes.
. "$(dirname "$0")/lib.sh" "$1"
sim_up
. "$(dirname "$0")/../latency_pairs.sh"
high_infer() { "${RUN[@]}" --priority high -- "${INFER[@]}"; }
low_burn() { "${RUN[@]}" --priority low --slice batch -- "$B/bin/gs-burn" --seconds 7; }

# Control: without the shim the burn slows the server down.
unprotected
latency_pairs 1.25 || fail "p99 next to the burn above 1.25x alone in every attempt"
jcheck "$bare" "d['p50_ms'] > 1.5 * $(json_field "$alone" p50_ms)"
jcheck "$(cat "$WORK/burn")" 'd["error"] is None and d["kernels"] > 0'
echo ok
