#!/usr/bin/env bash
# Issue #27, parking: a node restarted with swap off (swap.oversubscribe
# back to 1) still resumes the slices parked before: r is parked by
# prod's reclaim and swapped out; the daemon starts again without swap;
# r stays parked while p holds its room (the log says why and how it
# resumes); p goes, r resumes (quota.resume), its memory comes back in,
# and its process reads back exactly what it wrote.
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

r = FileHold("r")
if not r.line(60).get("ready"):
    fail("r: gs-swap-hold did not start")
res = r.cmd("alloc 256 16")
if res["alloc"] != 256 or res["err"] != 0:
    fail(f"r could not fill its memory: {res}")
out = subprocess.run([G, "create", "--name", "p", "--team", "prod",
                      "--compute", "50", "--memory", "1GiB", "--json"],
                     capture_output=True, text=True)
if out.returncode != 0 or json.loads(out.stdout).get("parked") != ["r"]:
    fail(f"the reclaim did not park r: {out.stdout} {out.stderr}")
wait_for("r swapped out by its park",
         lambda: show("r")["swapped_bytes"] >= 256 * MIB, 30)
PY
# The node starts again with swap off.
daemon_stop
sed -i '/^swap:/,$d' "$WORK/cfg.yaml"
grep -q oversubscribe "$WORK/cfg.yaml" && fail "swap is still on in the config"
daemon_up --config "$WORK/cfg.yaml" 3>&-
python3 - <<'PY'
import os, subprocess, sys, time
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from hold import *
from park import *

r = FileHold("r")
r.seen = 2  # ready, alloc
if slice_json("r")["state"] != "parked":
    fail("a restart lost r's park")
r.send("check")
if not r.quiet_for(2.5) or slice_json("r")["state"] != "parked":
    fail("r resumed while the reclaimer held its room")
subprocess.run([G, "delete", "p"], check=True, capture_output=True)
res = r.line(60)
print("r after resuming with swap off:", res)
if res.get("check", 0) == 0 or res["bad"] != 0 or res["err"] != 0:
    fail(f"r did not read back exactly what it wrote: {res}")
s = slice_json("r")
if s["state"] != "ready" or s["swap"]["swapped_bytes"] != 0:
    fail(f"r is not live and in again: {s['state']} {s['swap']}")
ev = wait_for("a quota.resume event",
              lambda: [e for e in events("r") if e["type"] == "quota.resume"],
              5)
print(" ", ev[0]["message"])
PY
grep -q "swap is off (swap.oversubscribe 1) and 1 slices are parked" "$WORK/daemon.log" ||
	fail "the daemon's log does not say how parked slices resume with swap off"
hold_bg_end
echo "ok: parked before a restart with swap off, resumed when it fit"
