#!/usr/bin/env bash
# Issue #27, item 3: a quota reclaim swaps instead of killing where the
# slice allows it. Research's swap: allow slice r borrows (60 % compute,
# 512 MiB of signed memory held by its process); prod reclaims its
# guarantee for p (50 %): r is parked, not killed: swapped out, its
# process alive but stopped at its next GPU call, its memory and compute
# counted nowhere (research's usage drops, p is admitted), state
# "parked" in show, list, top and metrics, a quota.park event. A swap:
# never ballast fills the GPU so that p's process gets its memory only
# because r's went out. A daemon restart keeps r parked; while p is
# there r stays parked; p ends, and r resumes (quota.resume), is swapped
# back in, and its process reads back exactly what it wrote.
. "$(dirname "$0")/lib.sh" "$1"
park_node
"$G" create --name r --team research --compute 60 --memory 1GiB \
	--swap allow >/dev/null || fail "create r"
hold_bg r
python3 - <<'PY'
import json, os, subprocess, sys
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from hold import *
from park import *
from lib import sim_used

GPU = 24576 * MIB
r = FileHold("r")
if not r.line(60).get("ready"):
    fail("r: gs-swap-hold did not start")
ctx = sim_used()  # r's context: what one process costs the GPU
res = r.cmd("alloc 512 16")
if res["alloc"] != 512 or res["err"] != 0:
    fail(f"r could not fill its memory: {res}")
if not slice_json("r")["borrowed"]:
    fail("r should be borrowing above research's guarantee")
mem_before = team_mem("research")
# The ballast leaves room for its own context, p's, and 200 MiB.
ballast = (GPU - sim_used() - 2 * ctx - 200 * MIB) // (16 * MIB) * 16
subprocess.run([G, "create", "--name", "ballast", "--team", "infra",
                "--memory", f"{ballast + ctx // MIB + 64}MiB", "--swap", "never"],
               check=True, capture_output=True)
bl = Hold("ballast")
if bl.cmd(f"alloc {ballast} 16")["alloc"] != ballast:
    fail("ballast alloc")
free_with_r = GPU - sim_used()
print(f"context {ctx // MIB} MiB; ballast {ballast} MiB; free with r in: {free_with_r // MIB} MiB")

# prod takes its guarantee back: r is parked, p admitted.
out = subprocess.run([G, "create", "--name", "p", "--team", "prod",
                      "--compute", "50", "--memory", "1GiB", "--json"],
                     capture_output=True, text=True)
if out.returncode != 0:
    fail(f"prod's reclaim was refused: {out.stderr}")
o = json.loads(out.stdout)
if o.get("preempted") != ["r"] or o.get("parked") != ["r"]:
    fail(f"the reclaim did not park r: {out.stdout}")
s = slice_json("r")
print("r:", s["state"], "-", s["reason"])
if s["state"] != "parked" or "reclaimed its guarantee for slice p" not in s["reason"]:
    fail(f"r is not parked: {s['state']} {s['reason']}")
sw = wait_for("r swapped out by its park",
              lambda: (lambda w: w if w["swapped_bytes"] >= 512 * MIB else None)(show("r")), 30)
print("r swapped out:", sw["swapped_bytes"], "bytes")
ev = [e for e in events("r") if e["type"] == "quota.park"]
if not ev or "reclaimed its guarantee for slice p" not in ev[0]["message"]:
    fail(f"no quota.park event: {events('r')}")
print(" ", ev[0]["message"])
if any(e["type"] == "quota.reclaim" for e in events("r")):
    fail("a parked slice was also reported killed")
if team_mem("research") != mem_before - (1 << 30):
    fail(f"research's usage still counts parked r: {team_mem('research')} (was {mem_before})")
expect_metrics("gpuslice_parked_slices 1", "gpuslice_parks_total 1")
expect_listed_parked("r")
# r's process is stopped at its next GPU call while parked.
r.send("check")
if not r.quiet_for(3):
    fail(f"r's process ran while parked: {r.lines()[-1]}")
# p runs, in memory that was r's: with r in, its context and 448 MiB
# would not fit.
want = 448
if (free_with_r - ctx) // MIB >= want:
    fail(f"the ballast left too much room: {free_with_r // MIB} MiB")
p = Hold("p")
res = p.cmd(f"alloc {want} 16")
if res["alloc"] != want or res["err"] != 0:
    fail(f"the reclaimer did not get the memory r left: {res}")
if p.cmd("check")["bad"] != 0:
    fail("the reclaimer read back wrong contents")
p.close()
bl.close()
PY
# A restart keeps r parked (the store's state and park time).
daemon_stop
daemon_up --config "$WORK/cfg.yaml" 3>&-
python3 - <<'PY'
import os, subprocess, sys
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from hold import *
from park import *

r = FileHold("r")
r.seen = 2  # ready, alloc: its check is pending
s = slice_json("r")
if s["state"] != "parked" or not s.get("parked_since"):
    fail(f"a restart lost r's park: {s['state']}")
expect_metrics("gpuslice_parked_slices 1")
# r stays parked while p (the slice) holds its room.
if not r.quiet_for(2.5) or slice_json("r")["state"] != "parked":
    fail("r resumed while the reclaimer held its room")
subprocess.run([G, "delete", "p"], check=True, capture_output=True)
# p gone: r resumes, comes back in, and reads back what it wrote.
res = r.line(60)
print("r after resuming:", res)
if res.get("check", 0) == 0 or res["bad"] != 0 or res["err"] != 0:
    fail(f"r did not read back exactly what it wrote: {res}")
s = slice_json("r")
if s["state"] != "ready" or s["reason"] or "parked_since" in s:
    fail(f"r is not live again: {s['state']} {s['reason']}")
if s["swap"]["swap_ins"] < 1 or s["swap"]["swapped_bytes"] != 0:
    fail(f"r was not swapped back in: {s['swap']}")
# The resume's event is written by the store after the state changes.
ev = wait_for("a quota.resume event",
              lambda: [e for e in events("r") if e["type"] == "quota.resume"],
              5)
print(" ", ev[0]["message"])
expect_metrics("gpuslice_parked_slices 0", "gpuslice_resumes_total 1")
PY
hold_bg_end
echo "ok: parked, kept through a restart, resumed"
