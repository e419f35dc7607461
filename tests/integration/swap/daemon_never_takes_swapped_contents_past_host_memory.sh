#!/usr/bin/env bash
# swap.host_memory is enforced (issue #27): the host memory swapped
# contents take, summed over slices, never goes past it, and a move that
# would is not made, with an event saying why. Two idle slices (a, b)
# hold 1 GiB each (plus their contexts: 1.5 GiB on the books); the bound
# (1600 MiB) has room for one of them. A third slice (c) allocating gets
# its memory from one swap-out; the other idle slice stays on the GPU and
# the event names swap.host_memory.
. "$(dirname "$0")/../daemon/lib.sh" "$1"
[ -e "$B/sim/libcuda.so.1" ] || { echo "SKIP: no sim libcuda"; exit 77; }
cat >"$WORK/cfg.yaml" <<'YAML'
node:
  sim_count: 1
  sim_model: A30-24GB
  default_mode: timeslice
swap:
  oversubscribe: 2
  idle_after: 2s
  min_residency: 1s
  host_memory: 1600MiB
YAML
daemon_up --config "$WORK/cfg.yaml"
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"
BALLAST_MIB=19976
"$G" create --name ballast --memory "$((BALLAST_MIB + 520))MiB" \
	--swap never >/dev/null || fail "create ballast"
for s in a b c; do
	"$G" create --name "$s" --memory 2GiB >/dev/null || fail "create $s"
done
export B WORK SOCK GS_SRC=$SRC BALLAST_MIB
python3 - <<'PY'
import os, sys, time
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from hold import *

bl = Hold("ballast")
if bl.cmd(f"alloc {os.environ['BALLAST_MIB']} 20")["err"] != 0:
    fail("ballast")
p = {}
for s in ("a", "b"):
    p[s] = Hold(s)
    if p[s].cmd("alloc 1024 64")["alloc"] != 1024:
        fail(s)
time.sleep(4)
p["c"] = Hold("c")
r = p["c"].cmd("alloc 1024 64", timeout=120)
print("c", r)
if r["alloc"] != 1024 or r["err"] != 0:
    fail(f"c did not get its memory from one swap-out: {r}")
# Give the idle tick time to try the other one too.
time.sleep(3)
sw = {s: show(s) for s in ("a", "b")}
print(sw)
out = [s for s in sw if sw[s]["swap_outs"] > 0]
if len(out) != 1:
    fail(f"one idle slice should be swapped out, not {out}")
total = sum(sw[s]["swapped_bytes"] for s in sw)
if total > 1600 * MIB:
    fail(f"swapped contents ({total} bytes) past swap.host_memory")
kept = "b" if out == ["a"] else "a"
ev = wait_for(f"a refusal for {kept}",
              lambda: [e for e in events(kept) if e["type"] == "swap.refused"], 10)
print(" ", ev[0]["message"])
if "swap.host_memory" not in ev[0]["message"]:
    fail(f"the refusal does not name swap.host_memory: {ev}")
for s in p:
    if s != out[0] and p[s].cmd("check")["bad"] != 0:
        fail(f"{s}'s contents")
print("ok")
PY
