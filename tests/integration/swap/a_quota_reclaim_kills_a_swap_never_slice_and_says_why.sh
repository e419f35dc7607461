#!/usr/bin/env bash
# Issue #27, item 3, the other side: where a reclaim's victim cannot be
# parked it is killed as before, and the event says why it was not
# parked. Research's borrowing slice n is swap: never (its process holds
# memory); prod reclaims its guarantee: n is preempted (gone, its process
# ended by SIGTERM), quota.reclaim says "not parked: its slice is swap:
# never", and nothing is counted as parked.
. "$(dirname "$0")/lib.sh" "$1"
park_node
"$G" create --name n --team research --compute 60 --memory 1GiB \
	--swap never >/dev/null || fail "create n"
python3 - <<'PY'
import json, os, subprocess, sys
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from hold import *
from park import *

n = Hold("n")
res = n.cmd("alloc 256 16")
if res["alloc"] != 256 or res["err"] != 0:
    fail(f"n could not allocate: {res}")
out = subprocess.run([G, "create", "--name", "p", "--team", "prod",
                      "--compute", "50", "--memory", "1GiB"],
                     capture_output=True, text=True)
if out.returncode != 0:
    fail(f"prod's reclaim was refused: {out.stderr}")
print(out.stdout.strip())
if "preempted slice n to make room" not in out.stdout:
    fail("the CLI does not say n was preempted")
lst = subprocess.run([G, "list", "--json"], capture_output=True, text=True,
                     check=True).stdout
if "\"n\"" in lst:
    fail(f"n is still there: {lst}")
ev = [e for e in events("n") if e["type"] == "quota.reclaim"]
if not ev or "not parked: its slice is swap: never" not in ev[0]["message"]:
    fail(f"quota.reclaim does not say why n was not parked: {events('n')}")
print(" ", ev[0]["message"])
if any(e["type"] == "quota.park" for e in events("n")):
    fail("a swap: never slice was parked")
try:
    n.p.wait(timeout=30)
except subprocess.TimeoutExpired:
    fail("n's process was not ended")
expect_metrics("gpuslice_parked_slices 0", "gpuslice_parks_total 0",
               "gpuslice_reclaims_total 1")
PY
echo "ok: a swap: never victim is killed, and the event says why"
