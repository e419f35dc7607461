#!/usr/bin/env bash
# The sim's copies to and from VMM memory (what a swap moves) give the
# same bytes as a plain memmove, aligned or not, zeros onto data included;
# and a copy into fresh physical memory makes host pages only for the
# pages that are not zero (so a sparse allocation's swap-in costs the host
# its touched pages, not its size).
. "$(dirname "$0")/../shim/lib.sh" "$1"
sim_up
out=$("$B/tests/gs-swap-sparse-prog") || fail "gs-swap-sparse-prog: $out"
echo "$out"
jcheck "$out" 'd["bad_out"] == 0 and d["bad_in"] == 0 and d["bad_d2d"] == 0 and d["bad_unaligned"] == 0 and d["bad_zero_onto_data"] == 0'
# host pages of the fresh handle after the copy in: the non-zero pages
# (a plain memmove would have made all of them)
jcheck "$out" 'd["nonzero_pages"] <= d["resident_after_in"] <= d["nonzero_pages"] + 16 < d["pages"]'
echo ok
