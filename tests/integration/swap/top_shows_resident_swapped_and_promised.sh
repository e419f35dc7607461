#!/usr/bin/env bash
# `gpuslice top` shows each slice's memory as resident, swapped and
# promised, and its swap-outs/ins: after `gpuslice swap out` of a
# --swap allow slice's process its row has the bytes `show --json`
# reports (resident = promised - swapped) and 1/0, after `swap in` nothing
# swapped and 1/1; a slice never swapped shows its whole cap resident and
# 0/0; `top --json` carries the same "swap" object per slice.
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
"$G" create --name topmov --memory 8GiB --swap allow >/dev/null || fail "create topmov"
"$G" create --name topidle --memory 4GiB --swap allow >/dev/null || fail "create topidle"
export B WORK SIMDIR=$GPUSLICE_SIM_DIR GS_SRC=$SRC RUNDIR
python3 - <<'PY'
import json, os, re, subprocess, sys
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from lib import *
G = os.environ["B"] + "/bin/gpuslice"


def fmt(b):
    """cli/view.c's gs_cli_fmt_bytes."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    v, u = float(b), 0
    while v >= 1024 and u < 4:
        v /= 1024
        u += 1
    if u == 0 or v >= 100 or v == int(v):
        return "%.0f%s" % (v, units[u])
    return "%.1f%s" % (v, units[u])


def show(name):
    return json.loads(subprocess.run([G, "show", name, "--json"], capture_output=True,
                                     text=True, check=True).stdout)["swap"]


def top_row(name):
    out = subprocess.run([G, "top", "--once"], capture_output=True, text=True,
                         check=True).stdout
    if not re.search(r"RESIDENT\s+SWAPPED\s+PROMISED\s+OUTS/INS", out):
        fail(f"top has no swap columns:\n{out}")
    for l in out.splitlines():
        if l.startswith("  " + name + " "):
            return l
    fail(f"top has no row for {name}:\n{out}")


def expect(name, outs, ins):
    sw = show(name)
    row = top_row(name)
    cells = [fmt(sw["resident_bytes"]), fmt(sw["swapped_bytes"]),
             fmt(sw["promised_bytes"]), f"{outs}/{ins}"]
    print(f"{name}: {row.strip()}")
    tok = row.split()
    if not any(tok[i:i + 4] == cells for i in range(len(tok))):
        fail(f"top's row for {name} lacks '{cells}' ({sw}):\n{row}")
    return sw


p = Prog(slice="topmov", memory=None, run_dir=os.environ["RUNDIR"])
p.line()
sw = expect("topmov", 0, 0)
if sw["swapped_bytes"] != 0 or sw["resident_bytes"] != 8 << 30:
    fail(f"before any swap: {sw}")
ok, moved, sec, why, rec = p.swap("out")
if not ok or moved == 0:
    fail(f"swap out: {why} {rec}")
sw = expect("topmov", 1, 0)
if sw["swapped_bytes"] != moved or sw["resident_bytes"] != (8 << 30) - moved:
    fail(f"after swap-out of {moved} bytes: {sw}")
js = json.loads(subprocess.run([G, "top", "--json"], capture_output=True, text=True,
                               check=True).stdout)
tj = [s for s in js["slices"] if s["name"] == "topmov"][0]["swap"]
if tj["swapped_bytes"] != moved or tj["swap_outs"] != 1 or tj["promised_bytes"] != 8 << 30:
    fail(f"top --json's swap object: {tj}")
ok, back, sec, why, rec = p.swap("in")
if not ok:
    fail(f"swap in: {why}")
sw = expect("topmov", 1, 1)
if sw["swapped_bytes"] != 0:
    fail(f"after swap-in: {sw}")
expect("topidle", 0, 0)
p.close()
print("ok")
PY
