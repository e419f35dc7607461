#!/usr/bin/env bash
# Issue #27's test of the daemon acting on the policy: four swap: allow
# slices on a simulated 24 GiB GPU (A30) with swap.oversubscribe 2, each
# holding memory with signatures in every allocation. Two (a, b) fill
# their memory and go idle; the daemon swaps them out (idle tick, or the
# need of an allocation that found the GPU full) so that the other two
# (c, d) get theirs without out-of-memory; then every process reads back
# exactly what it wrote, a and b included (their first copy stops them
# until the daemon brings their memory back, swapping an idle c or d
# out). Events name each move with its reason and time; show and the
# metrics count them.
#
# At the issue's sizes: 10 GiB slices holding 9 GiB each, in allocations
# of 256 MiB with signatures at both ends and three places inside. The
# sim's memory and copies are sparse (sim/cuda/copy.c), so the whole test
# costs the host under 100 MiB and runs in about 17 s (2 cores), the
# daemon's idle_after and min_residency sleeps most of it.
#
# Scaled down (slices of 1 GiB holding 512 MiB, a swap: never slice
# holding the rest of the GPU, untouched, so that the four still do not
# fit together and two do; there even d's context finds the GPU full and
# gets its room through the daemon) where the host would not keep large
# allocations' contents (vm.overcommit_memory=2: the sim maps them as
# address space only), or with GS_SWAP_SCALED=1.
. "$(dirname "$0")/../daemon/lib.sh" "$1"
[ -e "$B/sim/libcuda.so.1" ] || { echo "SKIP: no sim libcuda"; exit 77; }
if [ -z "${GS_SWAP_SCALED:-}" ] &&
	[ "$(cat /proc/sys/vm/overcommit_memory 2>/dev/null)" != 2 ]; then
	SLICE=10GiB HOLD_MIB=9216 PIECE=256 BALLAST_MIB=0
else
	echo "scaled down: GS_SWAP_SCALED set or strict overcommit"
	SLICE=1GiB HOLD_MIB=512 PIECE=32 BALLAST_MIB=20544
fi
cat >"$WORK/cfg.yaml" <<'YAML'
node:
  sim_count: 1
  sim_model: A30-24GB
  default_mode: timeslice
swap:
  oversubscribe: 2
  idle_after: 2s
  min_residency: 2s
  host_memory: 64GiB
YAML
daemon_up --config "$WORK/cfg.yaml"
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"
if [ "$BALLAST_MIB" -gt 0 ]; then
	"$G" create --name ballast --memory "$((BALLAST_MIB + 520))MiB" \
		--swap never >/dev/null || fail "create ballast"
fi
for s in a b c d; do
	"$G" create --name "$s" --memory "$SLICE" --swap allow >/dev/null ||
		fail "create $s"
done
export B WORK SOCK GS_SRC=$SRC HOLD_MIB PIECE BALLAST_MIB
python3 - <<'PY'
import os, subprocess, sys, time
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from hold import *
hold, piece, ballast = (int(os.environ[k]) for k in ("HOLD_MIB", "PIECE", "BALLAST_MIB"))

if ballast:
    bl = Hold("ballast")
    r = bl.cmd(f"alloc {ballast} 16")
    if r["alloc"] != ballast:
        fail(f"ballast: {r}")
p = {}
for s in ("a", "b"):
    p[s] = Hold(s)
    r = p[s].cmd(f"alloc {hold} {piece}")
    print(s, r)
    if r["alloc"] != hold or r["err"] != 0:
        fail(f"{s} could not fill its memory: {r}")
# a and b go idle; c and d start and ask for theirs.
time.sleep(4)
for s in ("c", "d"):
    p[s] = Hold(s)
    r = p[s].cmd(f"alloc {hold} {piece}", timeout=300)
    print(s, r)
    if r["alloc"] != hold or r["err"] != 0:
        fail(f"{s} did not get its memory (the daemon did not swap the idle ones out): {r}")
# Both idle slices leave: for c's or d's allocation, or at the idle tick
# so that c and d can grow to their promise.
for s in ("a", "b"):
    sw = wait_for(f"idle slice {s} swapped out",
                  lambda: (lambda w: w if w["swap_outs"] >= 1 and
                           w["swapped_bytes"] >= hold * MIB else None)(show(s)), 30)
    print(s, sw)
    ev = wait_for(f"a swap.out event for {s}",
                  lambda: [e for e in events(s) if e["type"] == "swap.out"], 10)
    if " ms: " not in ev[0]["message"]:
        fail(f"the swap.out event of {s} does not give its time and reason: {ev}")
    print(" ", ev[0]["message"])
for s in ("c", "d"):
    r = p[s].cmd("check")
    if r["bad"] != 0 or r["err"] != 0 or r["check"] == 0:
        fail(f"{s} did not read back what it wrote: {r}")
# a and b come back when they call the GPU: the daemon swaps an idle c
# or d out for each.
time.sleep(4)
for s in ("a", "b"):
    t0 = time.time()
    r = p[s].cmd("check", timeout=300)
    print(s, r, f"{time.time() - t0:.2f} s")
    if r["bad"] != 0 or r["err"] != 0 or r["check"] == 0:
        fail(f"{s} did not read back what it wrote after its swap round trip: {r}")
    sw = show(s)
    if sw["swap_ins"] < 1 or sw["last_swap_in_seconds"] is None:
        fail(f"{s} was not swapped back in by the daemon: {sw}")
    time.sleep(4)
for s in ("c", "d"):
    r = p[s].cmd("check", timeout=300)
    if r["bad"] != 0 or r["err"] != 0:
        fail(f"{s} after the others came back: {r}")
txt = subprocess.run([G, "show", "a"], capture_output=True, text=True,
                     check=True).stdout
if "the daemon's moves took" not in txt:
    fail(f"show does not give the time of the daemon's moves: {txt}")
ins = [e for e in events() if e["type"] == "swap.in"]
if len(ins) < 2:
    fail(f"swap.in events: {ins}")
m = subprocess.run(["curl", "-sf", "--unix-socket", os.environ["SOCK"],
                    "http://localhost/metrics"], capture_output=True, text=True,
                   check=True).stdout
if 'gpuslice_slice_swap_out_seconds_total{gpu="0",slice="a"' not in m:
    fail("metrics: no swap-out time for a")
for s in p:
    p[s].close()
print("ok")
PY
