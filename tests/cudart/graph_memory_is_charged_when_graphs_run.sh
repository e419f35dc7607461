#!/usr/bin/env bash
# Graph memory nodes (cudaMallocAsync / cudaFreeAsync captured from a
# stream) are charged to the slice when the graph runs, not when it is
# captured, and the cap holds for them (gs-cudart-graphmem, a cudart
# program, on the sim under `gpuslice run --memory`):
# - a 1 GiB alloc -> kernel -> free graph in a slice with 256 MiB of room
#   beyond its context (the sim's costs 500 MiB): its launch
#   fails with cudaErrorMemoryAllocation and runs nothing (a kernel
#   ordered before the alloc node leaves its mark untouched), and
#   capturing or instantiating it charged nothing;
# - 64 MiB within the cap: it runs twice with the right data; the books
#   show the graph allocator's 64 MiB once (not per launch) until it is
#   trimmed, and the base after trim and exec destroy;
# - the graph allocator's cache (200 MiB kept after a launch) on the
#   books does not refuse a plain 200 MiB cudaMalloc that fits once it is
#   trimmed: the shim trims it and the malloc gets the room;
# - an allocation that outlives its launch stays charged (also after its
#   exec is destroyed) until cudaFreeAsync; with auto-free-on-launch,
#   three launches keep one allocation charged, never two;
# - nodes added by hand: one graph's alloc node is charged when it runs,
#   and released when another graph's free node for it has run.
# cudaMemGetInfo under the shim shows the slice (total = the cap).
. "$(dirname "$0")/lib.sh" "$1"
shim_needs_plain_build
sim_up
prog=$B/tests/cudart/gs-cudart-graphmem
[ -x "$prog" ] || fail "$prog was not built"
M=$((1 << 20))
# The sim's context costs 500 MiB (charged to the slice, measured through
# NVML): CAP leaves 256 MiB for the program's memory.
CAP=756MiB

out=$("${RUN[@]}" --memory $CAP -- "$prog" oom 1024) || fail "oom: $out"
echo "oom: $out"
jcheck "$out" "d['launch'] == 'cudaErrorMemoryAllocation' and d['ran_nothing']"
jcheck "$out" "d['total'] == 756 * $M and d['used_before'] >= 500 * $M"
jcheck "$out" "d['after_instantiate'] == d['used_before'] == d['used_after']"

out=$("${RUN[@]}" --memory $CAP -- "$prog" run 64) || fail "run: $out"
echo "run: $out"
jcheck "$out" "d['data_ok'] == [True, True]"
jcheck "$out" "d['after_capture'] == d['base']"
jcheck "$out" "d['after_launch'] == [d['base'] + 64 * $M] * 2"
jcheck "$out" "d['after_trim'] == d['after_destroy'] == d['base']"

out=$("${RUN[@]}" --memory $CAP -- "$prog" cache 200) || fail "cache: $out"
echo "cache: $out"
jcheck "$out" "d['cached'] == d['base'] + 200 * $M"
jcheck "$out" "d['malloc'] == 'cudaSuccess' and d['with_malloc'] == d['base'] + 200 * $M"

out=$("${RUN[@]}" --memory $CAP -- "$prog" outlive 64) || fail "outlive: $out"
echo "outlive: $out"
jcheck "$out" "d['data_ok'] and d['relaunch_live'] == 'cudaErrorInvalidValue'"
jcheck "$out" "d['live'] == d['live_after_destroy'] == d['base'] + 64 * $M"
jcheck "$out" "d['freed'] == d['base']"
jcheck "$out" "d['auto_free'] == [d['base'] + 64 * $M] * 3"
jcheck "$out" "d['auto_free_end'] == d['base']"

# 200 MiB auto-freed on relaunch fits the 256 MiB of room every time (the
# allocation freed by the relaunch is not counted twice).
out=$("${RUN[@]}" --memory $CAP -- "$prog" outlive 200) || fail "outlive 200: $out"
echo "outlive 200: $out"
jcheck "$out" "d['auto_free'] == [d['base'] + 200 * $M] * 3"
# relaunching a live allocation's exec is the driver's refusal, not OOM
jcheck "$out" "d['relaunch_live'] == 'cudaErrorInvalidValue'"

# Nodes added by hand (cudaGraphAddMemAllocNode / cudaGraphAddMemFreeNode):
# charged when graph A runs, released when graph B's free node has run
# (and the cache is trimmed).
out=$("${RUN[@]}" --memory $CAP -- "$prog" added 128) || fail "added: $out"
echo "added: $out"
jcheck "$out" "d['after_instantiate'] == d['base']"
jcheck "$out" "d['live'] == d['base'] + 128 * $M"
jcheck "$out" "d['freed_by_other_graph'] == d['after_destroy'] == d['base']"
echo ok
