#!/usr/bin/env bash
# Pipelined turn changes (#30 item 4): three saturating gs-burn with the
# default ~65 ms kernels in slices of 20, 30 and 50 % change turns at every
# kernel (a kernel is longer than a 20 ms turn). The next holder is given
# the turn at the holder's launch and queues its kernel just before the
# holder's ends, so the GPU does not idle through each hand-over, by the
# sim's own accounting over an 8 s window from 2 s in. The goal (>= 99 %
# busy) is a `make bench` figure (section shares); host stalls on a 2-core
# machine move it, so this asserts a generous bound: >= 97 % busy, each
# share within 3 points.
. "$(dirname "$0")/lib.sh" "$1"
sim_up

burn_shares 8 3 97
echo ok
