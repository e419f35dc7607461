#!/usr/bin/env bash
# Issue #27, the gaps of parking (docs/swap.md, "Parking"): a parked slice
# is stopped, not failed, and holds no GPU memory.
#   - a process that joins it while it is parked, holding no memory yet,
#     makes no context (it would take GPU memory) until it resumes: its
#     first call that makes one waits, and the GPU's used memory does not
#     grow by a context;
#   - such a process waits past the node's need wait (swap.need_wait, 3 s
#     here: 30 s unless set) without giving up, said once in its log, and
#     starts once the slice resumes (a need that waits past the setting
#     while its slice is parked is test_shim_need_wait's);
#   - an Xid on its GPU leaves it parked (event slice.fault_while_parked);
#   - the ledger bills it no GPU memory-time nor reserved time while
#     parked (its 2 GiB cap is billed before the park), and the usage
#     (API and `gpuslice usage`) says how long it was parked.
# Then the reclaimer and the ballast go, r resumes, and every process of
# r goes on: the joiner's allocation is answered, the waiting one starts,
# and r's first process reads back exactly what it wrote.
PARK_CFG='ledger:
  interval_ms: 500'
PARK_NEED_WAIT=3s
export PARK_CFG PARK_NEED_WAIT
. "$(dirname "$0")/lib.sh" "$1"
XID=$B/tests/gs-k8s-xid
[ -x "$XID" ] || { echo "SKIP: no gs-k8s-xid in this build"; exit 77; }
export XID
park_node
"$G" create --name r --team research --compute 60 --memory 2GiB \
	--swap allow >/dev/null || fail "create r"
hold_bg r
python3 - <<'PY'
import atexit, json, math, os, re, select, subprocess, sys, time
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from hold import *
from park import *
from lib import sim_used

GPU = 24576 * MIB
WORK = os.environ["WORK"]


def usage(since, until):
    return json.loads(api_get(f"/v1/usage?by=slice&slice=r&since={since}&until={until}"))["total"]


def usage_gib(since, until):
    return usage(since, until)["gib_seconds"]


# The processes this phase starts end with it, failed or not (one
# stopped for good would hold the test's output open).
started = []
def end_started():
    for x in started:
        if x.poll() is None:
            x.terminate()  # `gpuslice run` passes it on to its program
            try:
                x.wait(timeout=10)
            except subprocess.TimeoutExpired:
                x.kill()


atexit.register(end_started)


def quiet(p, seconds):
    """True when process p wrote nothing within `seconds`."""
    return not select.select([p.stdout], [], [], seconds)[0]


r = FileHold("r")
if not r.line(60).get("ready"):
    fail("r: gs-swap-hold did not start")
ctx = sim_used()
t_live = time.time()
res = r.cmd("alloc 512 16")
if res["alloc"] != 512 or res["err"] != 0:
    fail(f"r could not fill its memory: {res}")
# The ballast fills what r's 2 GiB (it may swap) leaves of the GPU.
ballast = (GPU - 2048 * MIB - ctx - 64 * MIB) // (16 * MIB) * 16
bo = subprocess.run([G, "create", "--name", "ballast", "--team", "infra",
                "--memory", f"{ballast + ctx // MIB + 64}MiB", "--swap", "never"],
               capture_output=True, text=True)
if bo.returncode != 0:
    fail(f"create ballast: {bo.stderr}")
bl = Hold("ballast")
started.append(bl.p)
if bl.cmd(f"alloc {ballast} 16")["alloc"] != ballast:
    fail("ballast alloc")
time.sleep(1.5)  # a ledger row or more of r live
t_park0 = time.time()
out = subprocess.run([G, "create", "--name", "p", "--team", "prod",
                      "--compute", "50", "--memory", "1GiB", "--json"],
                     capture_output=True, text=True)
if out.returncode != 0 or json.loads(out.stdout).get("parked") != ["r"]:
    fail(f"the reclaim did not park r: {out.stdout} {out.stderr}")
t_park = time.time()
wait_for("r swapped out by its park",
         lambda: show("r")["swapped_bytes"] >= 512 * MIB, 30)
print(f"context {ctx // MIB} MiB; ballast {ballast} MiB; r parked")
live = usage_gib(math.floor(t_live), math.floor(t_park0))
if live <= 0:
    fail(f"r was billed no memory-time while live: {live}")

# A process joins parked r: it makes no context (GPU memory) before r
# resumes; the context is made, and its allocation answered, after.
used0 = sim_used()
j = Hold("r", wait_ready=False)
started.append(j.p)
j.p.stdin.write("alloc 16 16\n")
j.p.stdin.flush()
if not quiet(j.p, 3):
    fail(f"a process that joined parked r made its context: {j.p.stdout.readline()}")
if sim_used() - used0 >= ctx // 2:
    fail(f"the joiner took {(sim_used() - used0) // MIB} MiB of the GPU while r is parked (a context is {ctx // MIB} MiB)")
print(f"joiner: no context while r is parked (GPU used +{(sim_used() - used0) // MIB} MiB)")

# p, the reclaimer, runs.
p = Hold("p")
started.append(p.p)
# w joins parked r too, and waits past the node's need wait (3 s here)
# without giving up.
w = subprocess.Popen([G, "run", "--slice", "r", "--", B + "/tests/gs-swap-hold"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                     env=dict(os.environ, GPUSLICE_LOG="debug:" + WORK + "/w.shim.log"))
started.append(w)
NEED_WAIT = 3  # PARK_NEED_WAIT
if not quiet(w, NEED_WAIT + 4):
    fail(f"the waiting process did not wait: {w.stdout.readline()}")
if w.poll() is not None:
    fail(f"the process of parked r gave up after the need wait: exit {w.returncode}")
log = open(WORK + "/w.shim.log").read()
said = log.count("joined its slice while it is parked: its GPU calls wait until it resumes")
if said != 1:
    fail(f"the wait is said {said} times in its log, not once")
print(f"waiting process: still waiting {NEED_WAIT + 4} s on, past the {NEED_WAIT} s need wait, said once")

# An Xid on the GPU leaves r parked.
subprocess.run([os.environ["XID"], os.environ["SIMDIR"], "0", "31"], check=True)
wait_for("the watchdog's gpu.xid event",
         lambda: [e for e in events() if e["type"] == "gpu.xid"], 10)
s = slice_json("r")
if s["state"] != "parked":
    fail(f"an Xid took r out of parked: {s['state']} {s['reason']}")
ev = [e for e in events("r") if e["type"] == "slice.fault_while_parked"]
if not ev or "kept parked" not in ev[0]["message"]:
    fail(f"no slice.fault_while_parked event: {events('r')}")
print(" ", ev[0]["message"])

# r is billed no GPU memory-time while parked.
t_resume0 = time.time()
parked = usage_gib(math.ceil(t_park), math.floor(t_resume0))
print(f"GiB-seconds billed: {live:.3f} live, {parked:.3f} parked")
if parked != 0:
    fail(f"parked r was billed {parked} GiB-seconds")
# ... and the usage says how long it was parked (rows end at the park).
since, until = math.ceil(t_park), math.floor(t_resume0)
u = usage(since, until)
# (the last row may end up to a ledger tick, 0.5 s, before `until`)
if not (until - since - 1.0 <= u.get("parked_seconds", 0) <= until - since + 0.01) or u["reserved_gpu_seconds"] != 0:
    fail(f"usage over {until - since} s of the park: {u}")
txt = subprocess.run([G, "usage", "--by", "slice", "--slice", "r", "--since",
                      str(since), "--until", str(until)],
                     capture_output=True, text=True, check=True).stdout
if not re.search(r"^r was parked [0-9.]+ s \(no GPU memory", txt, re.M):
    fail(f"gpuslice usage does not say r was parked:\n{txt}")
print(f"usage: parked {u['parked_seconds']:.1f} s, reserved {u['reserved_gpu_seconds']}")

# The reclaimer and the ballast go (their processes end first, giving
# their memory back): r resumes, and its processes go on.
p.close()
bl.close()
subprocess.run([G, "delete", "p"], check=True, capture_output=True)
subprocess.run([G, "delete", "ballast"], check=True, capture_output=True)
wait_for("r resumed", lambda: slice_json("r")["state"] == "ready", 30)
j.ready()
# (its answer came with its first line: Python's buffer holds it, so it
# is read as it is, not waited for with select)
res = json.loads(j.p.stdout.readline() or "{}")
if res.get("alloc") != 16 or res["err"] != 0:
    fail(f"the joiner's allocation failed after the resume: {res}")
if not select.select([w.stdout], [], [], 60)[0]:
    fail("the waiting process did not start after the resume")
res = json.loads(w.stdout.readline())
if not res.get("ready"):
    fail(f"the waiting process did not start: {res}")
w.stdin.close()
w.wait(timeout=60)
j.close()
print("after the resume: the joiner allocated, the waiting process started")
PY
printf 'check\n' >&3
python3 - <<'PY'
import os, sys
sys.path.insert(0, os.environ["GS_SRC"] + "/tests/integration/swap")
from hold import *
r = FileHold("r")
r.seen = 2
res = r.line(60)
if res.get("check", 0) == 0 or res["bad"] != 0 or res["err"] != 0:
    fail(f"r did not read back exactly what it wrote: {res}")
PY
hold_bg_end
echo "ok: a parked slice's processes wait, an Xid keeps it parked, its memory is not billed"
