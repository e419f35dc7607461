#!/usr/bin/env python3
"""shim_sweep.py - tortures the shim's and the region's allocation and I/O
sites (GPUSLICE_FAULT, include/gs/faultinj.h; the sites are listed in
docs/testing.md), curl-memdebug / SQLite-fault style, under
`gpuslice run --memory 1GiB --compute 50` on a fresh sim node.

Two processes take part in each run, and each is swept on its own:
  - "prog": the workload with libgpuslice.so preloaded (the shim's
    "shim.*" sites and the region's, as a tenant joining its slice): the
    fault is handed to the program alone (`-- env GPUSLICE_FAULT=... PROG`);
  - "run": `gpuslice run` itself, which makes the region and the slice
    (the region's "region.*" sites as their creator): the program gets
    `env -u GPUSLICE_FAULT`.
For each program below, one run with GPUSLICE_FAULT_COUNTS counts the
calls of every site in each process; then for each site reached and
N = 1, 2, ... (until a run no longer reaches the Nth call), and once with
"site:1+" (every call fails), a run in a fresh run directory whose Nth
call of that site fails must:
  - end by itself within RUN_TIMEOUT seconds (no hang), not by a signal;
  - either give the program's normal result (a fault absorbed), or fail
    cleanly: the program's JSON line with a CUDA_ERROR_* name and exit 1
    (gs-alloc: its growth ended by that error), or `gpuslice run`'s own
    error line ("gpuslice run: ...") and exit 1 before the program ran;
  - never hold more than the 1 GiB cap: the bytes the program got from
    the (simulated) driver and the slice's memory_peak_bytes (--report)
    at most 1 GiB, and a program that ran normally ran in its slice (the
    shim's log says it attached, and the slice counted its launches);
  - leave no half-made region file (no *.new in the run directory);
and afterwards `gpuslice sim status --json` must show nothing charged,
no process and none reaped, and a run without faults in the same run
directory (whatever the faulted run left there) must succeed, capped,
with the baseline's result.

usage: shim_sweep.py BUILD_DIR WORK_DIR [SITE...]  (default: every site)
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sweeplib import Node, report  # noqa: E402

B, WORK = sys.argv[1], sys.argv[2]
NODE = Node(B, WORK)
G = NODE.gpuslice
SIM_DIR = NODE.sim_dir
RUN_DIR = os.path.join(WORK, "run")
SHIM_LOG = os.path.join(WORK, "shim.log")
RUN_TIMEOUT = 30
MAX_N = 60
CAP = 1 << 30

SHIM_SITES = ["shim.dlopen", "shim.region_open", "shim.malloc",
              "shim.event"]
REGION_SITES = ["region.malloc", "region.open", "region.create",
                "region.truncate", "region.map", "region.publish"]
SITES = sys.argv[3:] or SHIM_SITES + REGION_SITES


prog = NODE.prog


# (label, argv, strict): strict programs must give "error": null when
# they run normally; gs-alloc grows until the cap's CUDA error.
PROGRAMS = [
    ("gs-alloc", prog("gs-alloc", "--api", "plain", "--chunk", "128MiB"),
     False),
    # Many small allocations: the shim's table of them grows twice.
    ("gs-alloc-small", prog("gs-alloc", "--api", "plain", "--chunk",
                            "384KiB"), False),
    ("gs-alloc-vmm", prog("gs-alloc", "--api", "vmm", "--chunk", "64MiB"),
     False),
    ("gs-matmul", prog("gs-matmul", "--iterations", "3", "--n", "64"),
     True),
    ("gs-infer", prog("gs-infer", "--light", "--requests", "2",
                      "--layers", "2"), True),
]
WRAP = [G, "run", "--memory", "1GiB", "--compute", "50", "--report",
        "--run-dir", RUN_DIR, "--"]
failures = []
absorbed = []
runs = 0


def sim_env():
    return NODE.env(drop=("GPUSLICE_FAULT", "GPUSLICE_FAULT_COUNTS",
                          "GPUSLICE_LOG", "GPUSLICE_SLICE",
                          "GPUSLICE_RUN_DIR"))


def fresh_node():
    NODE.fresh()

def command(argv, target, fault, counts):
    """gpuslice run ... -- env [the program's fault/counts] argv."""
    inner = ["env", "GPUSLICE_LOG=" + SHIM_LOG]
    if target == "prog":
        if fault:
            inner.append("GPUSLICE_FAULT=" + fault)
        if counts:
            inner.append("GPUSLICE_FAULT_COUNTS=" + counts)
    else:
        inner[1:1] = ["-u", "GPUSLICE_FAULT", "-u", "GPUSLICE_FAULT_COUNTS"]
    return WRAP + inner + argv


def run(argv, env, target="prog", fault=None, counts=None):
    """Runs argv under gpuslice run; returns (rc, program's JSON line or
    None, --report line or None, stderr text, shim log text)."""
    global runs
    e = dict(env)
    if target == "run" and fault:
        e["GPUSLICE_FAULT"] = fault
    if target == "run" and counts:
        e["GPUSLICE_FAULT_COUNTS"] = counts
    if os.path.exists(SHIM_LOG):
        os.unlink(SHIM_LOG)
    runs += 1
    # Its own process group, so that a hang is ended whole.
    p = subprocess.Popen(command(argv, target, fault, counts), env=e,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, None, None, "timed out", ""
    doc = rep = None
    for line in out.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            pass
    for line in err.splitlines():
        if line.startswith('{"slice"'):
            rep = json.loads(line)
    log = ""
    if os.path.exists(SHIM_LOG):
        with open(SHIM_LOG, errors="replace") as f:
            log = f.read()
    return p.returncode, doc, rep, err, log


def sane(env):
    """None when the node holds nothing, else what it holds."""
    return NODE.leftovers(env, RUN_TIMEOUT)

def capped(doc, rep):
    """None when nothing went over the cap, else what did."""
    if doc is not None and (doc.get("allocated_bytes") or 0) > CAP:
        return "the program got %d bytes, over the 1GiB cap" % \
            doc["allocated_bytes"]
    if rep is not None and rep["memory_peak_bytes"] > CAP:
        return "the slice's peak %d bytes, over the 1GiB cap" % \
            rep["memory_peak_bytes"]
    return None


def judge(label, strict, base, rc, doc, rep, err, log):
    """None when a faulted run ended cleanly, else why not."""
    if rc is None:
        return "hang (over %ds)" % RUN_TIMEOUT
    if rc < 0 or rc >= 126:
        return "exit %d (a signal, or the program did not start)" % rc
    over = capped(doc, rep)
    if over:
        return over
    if doc is None:
        # gpuslice run failed before the program ran: its error line.
        if rc == 1 and re.search(r"^gpuslice run: ", err, re.M):
            return None
        return "exit %d without the program's JSON line or gpuslice " \
               "run's error line; stderr: %s" % (rc, err[-500:])
    error = doc.get("error")
    # gs-alloc's normal result is its growth to the cap ended by the
    # baseline's error; less, with a CUDA error, is a clean failure.
    normal = error is None if strict else \
        (error == base["doc"].get("error") and
         doc.get("allocated_bytes") == base["doc"].get("allocated_bytes"))
    if rc == 0 and normal:
        # The normal result: it must have run in its slice, capped.
        if "attached" not in log:
            return "normal result, but the shim never attached (no " \
                   "limits); its log: " + log[-500:]
        if rep is None or rep.get("launches") != base["rep"]["launches"]:
            return "normal result, but the slice counted %s launches, " \
                   "the baseline %s" % ((rep or {}).get("launches"),
                                        base["rep"]["launches"])
        absorbed.append(label)
        return None
    if error is None or not str(error).startswith("CUDA_ERROR_"):
        return "exit %d, error %r (not a CUDA error name)" % (rc, error)
    if rc == 1 or (rc == 0 and not strict):
        return None
    return "exit %d with error %s" % (rc, error)


def fail(what):
    report(failures, what)

def fresh_run_dir():
    shutil.rmtree(RUN_DIR, ignore_errors=True)


def counts_of(label, argv, env, target, wipe):
    path = os.path.join(WORK, "counts.%s.%s" % (label, target))
    if os.path.exists(path):
        os.unlink(path)
    if wipe:
        fresh_run_dir()
    rc, doc, rep, err, _ = run(argv, env, target, counts=path)
    if rc != 0 or doc is None or not os.path.exists(path):
        fail("%s %s: the run without faults fails (exit %s): %s %s"
             % (label, target, rc, doc, err[-500:]))
        return {}
    n = {}
    with open(path) as f:
        for line in f:
            site, calls = line.split()
            if site in SITES:
                n[site] = max(n.get(site, 0), int(calls))
    return n


def clean_after(label, argv, strict, env, base):
    """The next run without faults, in the same run directory."""
    rc, doc, rep, err, log = run(argv, env)
    why = None
    if rc != 0 or doc is None:
        why = "exit %s %s %s" % (rc, doc, err[-300:])
    elif capped(doc, rep):
        why = capped(doc, rep)
    elif strict and doc.get("error") is not None:
        why = "error %s" % doc.get("error")
    elif not strict and doc.get("allocated_bytes") != \
            base["doc"].get("allocated_bytes"):
        why = "%s bytes, the baseline %s" % (
            doc.get("allocated_bytes"), base["doc"].get("allocated_bytes"))
    elif "attached" not in log:
        why = "the shim never attached"
    return why


def one(label, argv, strict, env, base, target, wipe, site, spec):
    """Runs with GPUSLICE_FAULT=spec in `target` (in a fresh run
    directory with `wipe`, else in the region the last run left) and
    checks it, the run directory and the node after. False when the
    fault did not fire."""
    if wipe:
        fresh_run_dir()
    rc, doc, rep, err, log = run(argv, env, target, fault=spec)
    where = log if target == "prog" else err
    tag = "%s %s GPUSLICE_FAULT=%s" % (
        label, target if wipe else "run (region there)", spec)
    if rc is not None and "fault injected: " + site not in where:
        if rc != 0 or (strict and (doc or {}).get("error") is not None):
            fail("%s: fails without the fault firing: exit %s %s %s"
                 % (tag, rc, doc, err[-300:]))
        return False
    why = judge(tag, strict, base, rc, doc, rep, err, log)
    if why:
        fail("%s: %s" % (tag, why))
    left = [f for f in (os.listdir(RUN_DIR) if os.path.isdir(RUN_DIR)
                        else []) if f.endswith(".new")]
    if left:
        fail("%s: half-made region files left: %s" % (tag, left))
    bad = sane(env)
    if bad:
        fail("%s: node not sane after: %s" % (tag, bad))
    bad2 = clean_after(label, argv, strict, env, base)
    if bad2:
        fail("%s: the next run without faults in the same run directory "
             "fails: %s" % (tag, bad2))
    bad3 = sane(env)
    if bad3 and not bad:
        fail("%s: node not sane after the next run: %s" % (tag, bad3))
    if why or bad or bad2 or bad3:
        fresh_node()
    return True


def sweep():
    reached = set()
    for label, argv, strict in PROGRAMS:
        fresh_node()
        env = sim_env()
        fresh_run_dir()
        rc, doc, rep, err, log = run(argv, env)
        if rc != 0 or doc is None or rep is None or \
                (strict and doc.get("error") is not None) or capped(doc, rep):
            fail("%s: the baseline run fails: exit %s %s %s %s"
                 % (label, rc, doc, rep, err[-500:]))
            continue
        base = {"doc": doc, "rep": rep}
        # The workload's process (the shim joining the region), and
        # gpuslice run's making the region afresh or reusing one.
        for target, wipe in (("prog", True), ("run", True),
                             ("run", False)):
            what = target if wipe else "run (region there)"
            calls = counts_of(label, argv, env, target, wipe)
            t0, n_runs = time.time(), runs
            for site in SITES:
                if calls.get(site, 0) == 0:
                    continue
                reached.add(site)
                n = 1
                while n <= MAX_N and one(label, argv, strict, env, base,
                                         target, wipe, site,
                                         "%s:%d" % (site, n)):
                    n += 1
                if n - 1 > calls[site] + 5 or n > MAX_N:
                    fail("%s %s %s: fired at %d calls, %d counted"
                         % (label, what, site, n - 1, calls[site]))
                if not one(label, argv, strict, env, base, target, wipe,
                           site, site + ":1+"):
                    fail("%s %s %s:1+: the fault never fired"
                         % (label, what, site))
            print("%-14s %-18s %s, %d runs in %.1fs" % (
                label, what, " ".join("%s=%d" % (s, calls[s])
                                      for s in SITES if calls.get(s)),
                runs - n_runs, time.time() - t0), flush=True)
    missed = [s for s in SITES if s not in reached]
    if missed:
        print("not reached by these programs: " + " ".join(missed))


t_start = time.time()
sweep()
if absorbed:
    print("absorbed (normal result despite the fault): " +
          ", ".join(absorbed))
print("%d runs in %.1fs, %d failure(s)" % (runs, time.time() - t_start,
                                           len(failures)))
sys.exit(1 if failures else 0)
