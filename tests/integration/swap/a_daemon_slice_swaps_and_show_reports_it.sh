#!/usr/bin/env bash
# On a node with swap.oversubscribe 2, a slice made with --swap allow gets
# movable memory (the daemon sets GS_SLICE_SWAP in its region limits) and
# a slice with --swap never does not. `gpuslice swap out` moves the first
# one's process's memory to host memory; `gpuslice show` then reports the
# swapped bytes, one swap-out and resident = promised - swapped, and after
# `gpuslice swap in` nothing swapped, one swap-in and the contents intact.
# A process killed while swapped out leaves nothing counted as swapped
# once reaped. The never slice's process is not moved: nobody answers.
. "$(dirname "$0")/../daemon/lib.sh" "$1"
cat >"$WORK/cfg.yaml" <<'YAML'
node:
  sim_count: 1
  default_mode: timeslice
swap:
  oversubscribe: 2
  host_memory: 64GiB
YAML
[ -e "$B/sim/libcuda.so.1" ] || { echo "SKIP: no sim libcuda"; exit 77; }
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR" 2>/dev/null || true)"
daemon_up --config "$WORK/cfg.yaml"
eval "$("$G" sim env --dir "$GPUSLICE_SIM_DIR")"
"$G" create --name mov --memory 8GiB --swap allow >/dev/null || fail "create mov"
"$G" create --name fix --memory 8GiB --swap never >/dev/null || fail "create fix"
export B WORK SIMDIR=$GPUSLICE_SIM_DIR GS_SRC=$SRC RUNDIR
python3 - <<'PY'
import json, os, subprocess, sys
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from lib import *
G = os.environ["B"] + "/bin/gpuslice"

def show(name):
    return json.loads(subprocess.run([G, "show", name, "--json"], capture_output=True,
                                     text=True, check=True).stdout)["swap"]

p = Prog(slice="mov", memory=None, run_dir=os.environ["RUNDIR"])
ready = p.line()
ok, moved, sec, why, rec = p.swap("out")
if not ok or moved == 0:
    fail(f"swap out of a daemon slice: {why} {rec}")
sw = show("mov")
print("after swap-out:", sw)
if (sw["swapped_bytes"] != moved or sw["swap_outs"] != 1 or
        sw["resident_bytes"] != (8 << 30) - moved or sw["last_swap_out_ns"] is None):
    fail(f"show does not report the swap-out of {moved} bytes: {sw}")
ok, back, sec, why, rec = p.swap("in")
sw = show("mov")
if not ok or sw["swapped_bytes"] != 0 or sw["swap_ins"] != 1:
    fail(f"swap in: {why} {sw}")
p.send("check")
chk = p.line()
if chk["bad"] != 0 or chk["chased"] != ready["expect_chased"]:
    fail(f"contents after the round trip: {chk}")
p.close()

# A process killed while swapped out: its bytes leave the record once its
# slot is reaped.
import signal, time
k = Prog(slice="mov", memory=None, run_dir=os.environ["RUNDIR"])
k.line()
ok, moved, sec, why, rec = k.swap("out")
if not ok or show("mov")["swapped_bytes"] != moved:
    fail(f"second swap-out: {why} {show('mov')}")
os.kill(k.prog_pid(), signal.SIGKILL)
k.p.wait(timeout=30)
t0 = time.time()
while show("mov")["swapped_bytes"] != 0 and time.time() - t0 < 15:
    time.sleep(0.2)
sw = show("mov")
print(f"after the kill ({time.time() - t0:.1f} s):", sw)
if sw["swapped_bytes"] != 0 or sw["resident_bytes"] != 8 << 30 or sw["swap_outs"] != 2:
    fail(f"a dead process's swapped bytes stay in the record: {sw}")

f = Prog(slice="fix", memory=None, run_dir=os.environ["RUNDIR"])
f.line()
ok, moved, sec, why, rec = f.swap("out", timeout=2)
if ok or "no process answered" not in why:
    fail(f"a swap: never slice's process moved or the refusal is unclear: {ok} {why}")
f.close()
print("ok")
PY
