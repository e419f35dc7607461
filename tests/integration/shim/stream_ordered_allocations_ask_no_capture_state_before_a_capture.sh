#!/usr/bin/env bash
# cuMemAllocAsync in a slice with a memory cap asks the driver whether its
# stream is capturing (a captured allocation is a graph node, charged when
# the graph runs) only once the process has begun a capture: behind a
# driver that counts cuStreamIsCapturing (libgs-capture-counter.so over
# the sim), 100 allocation/free pairs before any capture ask nothing; an
# allocation in a capture is asked about and not charged; the pairs after
# the capture are asked about again.
. "$(dirname "$0")/lib.sh" "$1"
sim_up
COUNTER=$B/tests/libgs-capture-counter.so
[ -e "$COUNTER" ] || fail "missing $COUNTER"
out=$(GPUSLICE_REAL_LIBCUDA=$COUNTER "$B/bin/gpuslice" run --slice capq \
	--memory 1GiB -- "$B/tests/gs-capture-probe" "$COUNTER") ||
	fail "probe failed: $out"
echo "$out"
jcheck "$out" "d['before'] == 0"
jcheck "$out" "d['in_capture'] >= 1"
jcheck "$out" "d['captured_charged'] == 0"
jcheck "$out" "d['after'] >= 100"
echo ok
