#!/usr/bin/env bash
# A slice's swap counts and times outlive the daemon: an idle swap: allow
# slice on an oversubscribed GPU is swapped out by the daemon and back in
# when its process calls the GPU; after a restart `show` gives the same
# swap-outs/ins, last swap times and the time the daemon's moves took,
# and after a restart with the region made again (its files removed
# while the daemon was down) the same.
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
  host_memory: 64GiB
YAML
daemon_up --config "$WORK/cfg.yaml"
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"
# A swap: never ballast holds most of the GPU (untouched: it costs the
# sim no host memory); keep fills 512 MiB and goes idle; other then asks
# for more than the GPU has left, and the daemon swaps keep out for it.
"$G" create --name ballast --memory 21GiB --swap never >/dev/null || fail "create ballast"
"$G" create --name keep --memory 1GiB --swap allow >/dev/null || fail "create keep"
"$G" create --name other --memory 3GiB --swap allow >/dev/null || fail "create other"
export B WORK SOCK GS_SRC=$SRC SIMDIR=$GPUSLICE_SIM_DIR
python3 - <<'PY'
import json, os, sys, time
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from hold import *
from lib import sim_used
bl = Hold("ballast")
if bl.cmd("alloc 20992 16")["alloc"] != 20992:
    fail("ballast alloc")
h = Hold("keep")
r = h.cmd("alloc 512 16")
if r["alloc"] != 512 or r["err"] != 0:
    fail(f"keep alloc: {r}")
time.sleep(3)  # keep is idle
o = Hold("other")
free_mib = (24576 * MIB - sim_used()) // MIB
want = (free_mib // 16 + 8) * 16
r = o.cmd(f"alloc {want} 16", timeout=300)
if r["alloc"] != want or r["err"] != 0:
    fail(f"other did not get {want} MiB (free {free_mib}): {r}")
sw = wait_for("keep swapped out by the daemon",
              lambda: (lambda w: w if w["swap_outs"] >= 1 and
                       w["last_swap_out_seconds"] is not None else None)(show("keep")), 30)
o.close()
r = h.cmd("check", timeout=300)
if r["bad"] != 0 or r["err"] != 0:
    fail(f"check after the swap round trip: {r}")
sw = wait_for("keep swapped back in by the daemon",
              lambda: (lambda w: w if w["swap_ins"] >= 1 and
                       w["last_swap_in_seconds"] is not None else None)(show("keep")), 30)
h.close()
bl.close()
print("before the restart:", sw)
json.dump(sw, open(os.environ["WORK"] + "/before.json", "w"))
PY
same() {
	python3 - "$1" <<'PY'
import json, os, subprocess, sys
before = json.load(open(os.environ["WORK"] + "/before.json"))
now = json.loads(subprocess.run([os.environ["B"] + "/bin/gpuslice", "show", "keep", "--json"],
                                capture_output=True, text=True, check=True).stdout)["swap"]
print(sys.argv[1] + ":", now)
keys = ("swap_outs", "swap_ins", "last_swap_out_ns", "last_swap_in_ns",
        "swap_out_seconds_total", "swap_in_seconds_total",
        "last_swap_out_seconds", "last_swap_in_seconds")
bad = [k for k in keys if now[k] != before[k]]
if bad or now["swap_outs"] < 1 or now["swap_ins"] < 1:
    print(f"FAIL: {sys.argv[1]}: {bad} differ: {before} -> {now}", file=sys.stderr)
    sys.exit(1)
PY
}
# The swapper stores what changed each second and on stopping.
sleep 1.5
daemon_stop
daemon_up --config "$WORK/cfg.yaml"
same "after a restart" || fail "a restart lost the swap figures"
daemon_stop
rm -f "$RUNDIR/region/"* "$RUNDIR/"{limits,usage,limits.lock} 2>/dev/null || true
daemon_up --config "$WORK/cfg.yaml"
same "after a restart with a new region" || fail "a new region lost the swap figures"
echo ok
