#!/usr/bin/env bash
# Memory on demand (issue #27): a high-priority slice allocating memory
# that a low-priority slice holds gets it, without out-of-memory, by the
# daemon swapping the low one out; the time it waited is printed beside
# the copy's time at the sim's modelled bandwidth (A30: PCIe Gen4, 25
# GB/s, GPUSLICE_SIM_BUS_GBPS=model). The goal is that time + 10 %
# (docs/swap.md, figures: met at 1, 4 and 9 GiB); the assertion is a
# generous bound, as timing on a loaded host is a figure, not a test. A
# second FIGURE line says where the wait went (the daemon's log line for
# the need, the low slice's shim's swap-out phases, the high slice's
# shim's wait for the answer).
#
# Then what a slice cannot do to its peers: a normal-priority slice
# whose allocation would need an active slice of the same priority out
# gets out-of-memory at once, the peer keeps its memory (no swap-out),
# and the event says why.
#
# A swap: never slice holds most of the simulated 24 GiB GPU (untouched,
# so it costs no host memory) so that the slices' working sets collide:
# 1 GiB each, or GS_SWAP_HI_MIB MiB (make bench's swap section gives the
# figure at 1, 4 and 9 GiB; the sim's copies are sparse, so even 9 GiB
# costs the host little).
. "$(dirname "$0")/../daemon/lib.sh" "$1"
[ -e "$B/sim/libcuda.so.1" ] || { echo "SKIP: no sim libcuda"; exit 77; }
cat >"$WORK/cfg.yaml" <<'YAML'
node:
  sim_count: 1
  sim_model: A30-24GB
  default_mode: timeslice
swap:
  oversubscribe: 3
  idle_after: 30s
  min_residency: 1s
  host_memory: 64GiB
YAML
daemon_up --config "$WORK/cfg.yaml"
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"
HOLD_MIB=${GS_SWAP_HI_MIB:-1024}
# the ballast and one working set (contexts of 500 MiB each) leave 992 MiB
# of the GPU's 24576 free: a second working set does not fit
BALLAST_MIB=$((22564 - HOLD_MIB))
SLICE_MIB=$((HOLD_MIB + 1024))
"$G" create --name ballast --memory "$((BALLAST_MIB + 520))MiB" \
	--swap never >/dev/null || fail "create ballast"
for s in lo:low hi:high n1:normal n2:normal; do
	"$G" create --name "${s%%:*}" --memory "${SLICE_MIB}MiB" \
		--priority "${s#*:}" >/dev/null || fail "create ${s%%:*}"
done
export B WORK SOCK GS_SRC=$SRC BALLAST_MIB HOLD_MIB GPUSLICE_SIM_BUS_GBPS=model
python3 - <<'PY'
import os, sys, time
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from hold import *

H = int(os.environ["HOLD_MIB"])
bl = Hold("ballast")
if bl.cmd(f"alloc {os.environ['BALLAST_MIB']} 20")["err"] != 0:
    fail("ballast")
lo = Hold("lo")
r = lo.cmd(f"alloc {H} 64")
if r["alloc"] != H:
    fail(f"lo: {r}")
time.sleep(1.5)  # past lo's minimum residency
hi = Hold("hi")
r = hi.cmd(f"alloc {H} 64", timeout=120)
print("hi", r)
if r["alloc"] != H or r["err"] != 0:
    fail(f"the high-priority slice did not get the low one's memory: {r}")
sw = show("lo")
if sw["swap_outs"] != 1 or sw["swapped_bytes"] < H * MIB:
    fail(f"lo was not swapped out: {sw}")
moved = sw["swapped_bytes"]
model = moved / 25e9
took = sw["last_swap_out_seconds"]
# r["longest"]: the one cuMemAlloc that found the memory held and waited
# for the swap-out; r["seconds"]: all of hi's allocations and signatures.
print(f"FIGURE swap-out for a high-priority allocation: {moved >> 20} MiB; "
      f"the allocation waited {r['longest']:.3f} s (all {H} MiB of allocations: {r['seconds']:.3f} s), "
      f"the swap-out took {took:.3f} s; "
      f"the copy at the modelled 25 GB/s: {model:.3f} s (+10 %: {model * 1.1:.3f} s); "
      f"ratio {r['longest'] / model:.2f}x")
# Where the wait went, from the logs: the daemon's line for the need
# (seen, planned, moves, answered: ms after the need was posted), the low
# slice's shim's phases of its swap-out (debug log), the high slice's
# shim's wait for the answer.
import re
work = os.environ["WORK"]
def last(path, pat):
    try:
        with open(path) as f:
            ms = [re.search(pat, l) for l in f]
    except OSError:
        return None
    ms = [m for m in ms if m]
    return ms[-1] if ms else None
need = last(work + "/daemon.log",
            r"slice=hi .*need of \d+ bytes served \(success\): seen ([\d.]+) ms after it was posted, planned in ([\d.]+) ms, moves ([\d.]+) ms, answered ([\d.]+) ms")
ph = last(lo.log, r"swap out phases: quiesce (\d+) ns, drain (\d+) ns, host (\d+) ns, map \d+ ns, copy (\d+) ns, unmap (\d+) ns")
whole = last(lo.log, r"swap out: CUresult 0, \d+ bytes in (\d+) ns")
got = last(hi.log, r"need of \d+ bytes: success after (\d+) ns")
parts = []
if need:
    seen, plan, mv, ans = (float(x) for x in need.groups())
    parts.append(f"the need seen by the daemon {seen:.2f} ms after it was posted, "
                 f"planned in {plan:.2f} ms, request to answer {mv:.2f} ms, "
                 f"answered {ans:.2f} ms after it was posted")
if ph and whole:
    q, d, h, c, u = (int(x) / 1e6 for x in ph.groups())
    sw_ms = int(whole.group(1)) / 1e6
    parts.append(f"the low slice's swap-out {sw_ms:.2f} ms (quiesce {q:.2f}, drain {d:.2f}, "
                 f"host copies {h:.2f}, copies {c:.2f}, freeing {u:.2f})")
    if need:
        parts.append(f"the request's and answer's passage {mv - sw_ms:.2f} ms")
if got:
    parts.append(f"the answer seen by the allocation {int(got.group(1)) / 1e6:.2f} ms after it posted the need")
print(f"FIGURE swap-out phases for a high-priority allocation ({H} MiB): "
      + ("; ".join(parts) if parts else "not found in the logs")
      + f"; the copy at 25 GB/s {model * 1e3:.2f} ms")
# Generous: the daemon's swap-out covers most of the wait, and the whole
# wait stays within the shim's bound for a need (30 s).
if r["seconds"] > 30 or took > r["seconds"] + 0.5:
    fail(f"the wait ({r['seconds']} s) is not the swap-out's ({took} s)")
if hi.cmd("check")["bad"] != 0:
    fail("hi's contents")

# Peers of equal priority: hi leaves; n1 takes 1 GiB and stays active.
hi.close()
n1 = Hold("n1")
r = n1.cmd(f"alloc {H} 64")
if r["alloc"] != H:
    fail(f"n1: {r}")
n2 = Hold("n2")
t0 = time.time()
r = n2.cmd(f"alloc {H} 64", timeout=120)
print("n2", r)
if r["err"] != 2 or r["alloc"] >= H:
    fail(f"n2 should get out-of-memory, not n1's memory: {r}")
if time.time() - t0 > 10:
    fail(f"n2's out-of-memory took {time.time() - t0:.1f} s (the daemon answers at once)")
if show("n1")["swap_outs"] != 0:
    fail(f"an active peer of equal priority was swapped out: {show('n1')}")
ev = wait_for("a swap.refused event for n2",
              lambda: [e for e in events("n2") if e["type"] == "swap.refused"], 10)
print(" ", ev[0]["message"])
if "active slices of equal or higher priority" not in ev[0]["message"]:
    fail(f"the refusal does not say why: {ev}")
if n1.cmd("check")["bad"] != 0:
    fail("n1's contents")
# lo, stopped while swapped out, comes back once the normal-priority
# slices leave (its need is asked again until then).
n1.close()
n2.close()
r = lo.cmd("check", timeout=120)
if r["bad"] != 0 or r["err"] != 0:
    fail(f"lo's contents after its round trip: {r}")
if show("lo")["swap_ins"] != 1:
    fail(f"lo was not swapped back in: {show('lo')}")
print("ok")
PY
