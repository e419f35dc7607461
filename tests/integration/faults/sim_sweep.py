#!/usr/bin/env python3
"""sim_sweep.py - tortures the simulated CUDA driver's allocation and I/O
sites (GPUSLICE_FAULT, include/gs/faultinj.h; the sites are listed in
docs/testing.md), curl-memdebug / SQLite-fault style.

For each program of the workload kit below (and gs-sim-tour, sim_tour.c,
for what the kit does not reach), one run on a fresh sim node
with GPUSLICE_FAULT_COUNTS counts the calls of every sim.* site; then for
each site it reached and N = 1, 2, ... (until a run no longer reaches the
Nth call), and once with "site:1+" (every call fails), a run whose Nth
call of that site fails must:
  - end by itself within RUN_TIMEOUT seconds (no hang) and not by a signal;
  - print no sanitizer report (ASan/UBSan/LSan, when built with them);
  - either fail cleanly (exit 1 and a CUDA_ERROR_* name as its JSON
    line's "error") or give its normal result (a fault the driver
    absorbed; gs-alloc also counts growth ended by a CUDA error as its
    result, as its README says);
and afterwards the node must be sane: `gpuslice sim status --json` shows
no memory charged, no process, none reaped (the driver gave its slot back
itself: no lock left held, nothing charged to nobody), and a fresh run of
the program without faults succeeds.

Then: nvidia-smi -L under "sim.nvml_state_open" (the simulated NVML)
must fail with its driver message; the allocation sites fail one call
among gs-alloc --stress threads, after which the device's free memory
must be what it was before; and the allocation sites again under
`gpuslice run --memory 1GiB --slice S --report` (the shim in front of
the sim; not in sanitizer builds, whose programs cannot take the
uninstrumented shim): the same clean-error checks, the slice's
memory_peak_bytes never above the cap, and a fresh run in the same slice
(one budget shared by every run) reaches the baseline's allocation, so a
failed run held nothing over.

usage: sim_sweep.py BUILD_DIR WORK_DIR
"""
import json
import os
import re
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
HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
RUN_TIMEOUT = 30
MAX_N = 400
CAP = 1 << 30

SITES = ["sim.state_open", "sim.malloc", "sim.dev_alloc", "sim.dev_map",
         "sim.module_load", "sim.file_read"]
ALLOC_SITES = ["sim.malloc", "sim.dev_alloc", "sim.dev_map"]


prog = NODE.prog


# (label, argv, strict): strict programs must exit 1 on a CUDA error;
# gs-alloc may exit 0 with the error as its result.
PROGRAMS = [
    ("gs-matmul", prog("gs-matmul", "--iterations", "3", "--n", "64"), True),
    ("gs-infer", prog("gs-infer", "--light", "--requests", "2",
                      "--layers", "2"), True),
    ("gs-infer-heavy", prog("gs-infer", "--heavy", "--requests", "10",
                            "--layers", "2"), True),
    ("gs-alloc-vmm", prog("gs-alloc", "--api", "vmm", "--chunk", "64MiB",
                          "--limit", "256MiB"), False),
    ("gs-alloc-pool", prog("gs-alloc", "--api", "pool", "--chunk", "64MiB",
                           "--limit", "256MiB"), False),
    ("gs-alloc-array", prog("gs-alloc", "--api", "array", "--chunk",
                            "64MiB", "--limit", "256MiB"), False),
    ("gs-alloc-async", prog("gs-alloc", "--api", "async", "--chunk",
                            "64MiB", "--limit", "256MiB"), False),
    ("gs-alloc-managed", prog("gs-alloc", "--api", "managed", "--chunk",
                              "64MiB", "--limit", "256MiB"), False),
    ("gs-alloc-pitch", prog("gs-alloc", "--api", "pitch", "--chunk",
                            "64MiB", "--limit", "256MiB"), False),
    # What the kit does not reach (a created context, a module and a
    # library read from a file, graphs, events, pinned memory, arrays, a
    # context destroyed with objects still in it).
    ("gs-sim-tour", [os.path.join(B, "tests", "gs-sim-tour"),
                     os.path.join(SRC, "workloads", "kernels.ptx")], True),
]
# Threads allocating and freeing while one call fails (gs-alloc --stress):
# whatever a failed call charged must come back (free_bytes_after).
STRESS_APIS = ["plain", "pitch", "managed", "async", "pool", "vmm", "array"]
STRESS_N = [1, 2, 3, 5, 8, 13, 40, 60, 100]

# A sanitizer build (make build-asan): its programs cannot take the
# uninstrumented shim preloaded, so the `gpuslice run` part is left out.
SANITIZED = b"libasan" in subprocess.run(
    ["ldd", os.path.join(B, "sim", "libcuda.so.1")],
    capture_output=True).stdout
SAN_RE = re.compile(r"AddressSanitizer|LeakSanitizer|runtime error:|"
                    r"UndefinedBehaviorSanitizer")
failures = []
absorbed = []
runs = 0


def sim_env():
    return NODE.env(drop=("GPUSLICE_FAULT", "GPUSLICE_FAULT_COUNTS"))


def fresh_node():
    NODE.fresh()

def run(argv, env, fault=None, counts=None):
    """Runs argv; returns (rc, json line or None, stderr text)."""
    global runs
    e = dict(env)
    if fault:
        e["GPUSLICE_FAULT"] = fault
    if counts:
        e["GPUSLICE_FAULT_COUNTS"] = counts
    runs += 1
    # Its own process group, so that a hang is ended whole (gpuslice run
    # and the program under it).
    p = subprocess.Popen(argv, env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, None, "timed out"
    doc = None
    for line in out.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            pass
    return p.returncode, doc, err


def sane(env):
    """None when the node holds nothing, else what it holds."""
    return NODE.leftovers(env, RUN_TIMEOUT)

def judge(label, fault, strict, rc, doc, err):
    """None when a faulted run ended cleanly, else why not."""
    if rc is None:
        return "hang (over %ds)" % RUN_TIMEOUT
    if rc < 0:
        return "killed by signal %d" % -rc
    if SAN_RE.search(err):
        return "sanitizer report:\n" + err[-2000:]
    if doc is None:
        return "exit %d without a JSON line; stderr: %s" % (rc, err[-500:])
    error = doc.get("error")
    if rc == 0 and error is None:
        absorbed.append("%s %s" % (label, fault))
        return None  # the driver absorbed it: the normal result
    if error is None or not str(error).startswith("CUDA_ERROR_"):
        return "exit %d, error %r (not a CUDA error name)" % (rc, error)
    if rc == 1 or (rc == 0 and not strict):
        return None
    return "exit %d with error %s" % (rc, error)


def fail(what):
    report(failures, what)

def counts_of(argv, env, tag, strict=True):
    path = os.path.join(WORK, "counts." + tag)
    if os.path.exists(path):
        os.unlink(path)
    rc, doc, err = run(argv, env, counts=path)
    if rc != 0 or doc is None or (strict and doc.get("error") is not None):
        fail("%s: the run without faults fails (exit %s): %s %s"
             % (tag, rc, doc, err[-500:]))
        return {}
    n = {}
    with open(path) as f:
        for line in f:
            site, calls = line.split()
            n[site] = n.get(site, 0) + int(calls)
    return n


def one(label, argv, strict, env, site, spec):
    """Runs argv with GPUSLICE_FAULT=spec and checks it and the node after.
    False when the fault did not fire (the run never reached that call)."""
    rc, doc, err = run(argv, env, fault=spec)
    if rc is not None and "fault injected: " + site not in err:
        if rc != 0 or (doc or {}).get("error") is not None:
            fail("%s %s: fails without the fault firing: exit %s %s"
                 % (label, spec, rc, doc))
        return False
    why = judge(label, spec, strict, rc, doc, err)
    if why:
        fail("%s GPUSLICE_FAULT=%s: %s" % (label, spec, why))
    bad = sane(env)
    if bad:
        fail("%s GPUSLICE_FAULT=%s: node not sane after: %s"
             % (label, spec, bad))
    rc2, doc2, _ = run(argv, env)
    if rc2 != 0 or doc2 is None or doc2.get("error") is not None:
        fail("%s GPUSLICE_FAULT=%s: the next run without faults fails: "
             "exit %s %s" % (label, spec, rc2, doc2))
    if why or bad or rc2 != 0:
        fresh_node()
    return True


def sweep_direct():
    reached = set()
    for label, argv, strict in PROGRAMS:
        fresh_node()
        env = sim_env()
        calls = counts_of(argv, env, label, strict)
        t0, n_runs = time.time(), runs
        for site in SITES:
            if calls.get(site, 0) == 0:
                continue
            reached.add(site)
            n = 1
            while n <= MAX_N and one(label, argv, strict, env, site,
                                     "%s:%d" % (site, n)):
                n += 1
            # Calls may vary a little between runs (threads), not more.
            if n - 1 > calls[site] + 5 or n > MAX_N:
                fail("%s %s: fired at %d calls, %d counted"
                     % (label, site, n - 1, calls[site]))
            if not one(label, argv, strict, env, site, site + ":1+"):
                fail("%s %s:1+: the fault never fired" % (label, site))
        print("%-16s %s, %d runs in %.1fs" % (
            label, " ".join("%s=%d" % (s, calls[s]) for s in SITES
                            if calls.get(s)), runs - n_runs,
            time.time() - t0), flush=True)
    missed = [s for s in SITES if s not in reached]
    if missed:
        print("not reached by these programs: " + " ".join(missed))


def nvml():
    """The simulated NVML's state file open failing: nvidia-smi says so."""
    fresh_node()
    env = sim_env()
    smi = os.path.join(B, "sim", "nvidia-smi")
    for spec in ("sim.nvml_state_open:1", "sim.nvml_state_open:1+"):
        try:
            p = subprocess.run([smi, "-L"], env=dict(env, GPUSLICE_FAULT=spec),
                               capture_output=True, text=True,
                               timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            fail("nvidia-smi %s: hang" % spec)
            continue
        if p.returncode <= 0 or SAN_RE.search(p.stderr) or \
                "couldn't communicate with the NVIDIA driver" not in \
                p.stdout + p.stderr:
            fail("nvidia-smi GPUSLICE_FAULT=%s: exit %d, %s %s" % (
                spec, p.returncode, p.stdout[-300:], p.stderr[-300:]))
        bad = sane(env)
        if bad:
            fail("nvidia-smi %s: node not sane after: %s" % (spec, bad))
    p = subprocess.run([smi, "-L"], env=env, capture_output=True, text=True,
                       timeout=RUN_TIMEOUT)
    if p.returncode != 0:
        fail("nvidia-smi -L without faults: exit %d" % p.returncode)


def under_stress():
    """One failure among threads allocating and freeing: nothing leaks."""
    fresh_node()
    env = sim_env()
    t0, n_runs, fired = time.time(), runs, 0
    for api in STRESS_APIS:
        argv = prog("gs-alloc", "--api", api, "--stress", "2", "--seconds",
                    "0.05", "--chunk", "1MiB")
        for site in ALLOC_SITES:
            for n in STRESS_N:
                spec = "%s:%d" % (site, n)
                label = "stress:" + api
                rc, doc, err = run(argv, env, fault=spec)
                if rc is not None and "fault injected: " + site not in err:
                    continue
                fired += 1
                why = judge(label, spec, False, rc, doc, err)
                if why:
                    fail("%s GPUSLICE_FAULT=%s: %s" % (label, spec, why))
                elif doc.get("free_bytes_after") != \
                        doc.get("free_bytes_before"):
                    fail("%s GPUSLICE_FAULT=%s: %s bytes free before, %s "
                         "after: a failed call kept memory" % (
                             label, spec, doc.get("free_bytes_before"),
                             doc.get("free_bytes_after")))
                bad = sane(env)
                if bad:
                    fail("%s GPUSLICE_FAULT=%s: node not sane after: %s"
                         % (label, spec, bad))
                    fresh_node()
    print("under gs-alloc --stress: %d runs (%d faults fired) in %.1fs"
          % (runs - n_runs, fired, time.time() - t0), flush=True)


def under_run():
    """The allocation sites under gpuslice run --memory 1GiB."""
    fresh_node()
    env = sim_env()
    os.makedirs(RUN_DIR, exist_ok=True)
    wrap = [G, "run", "--memory", "1GiB", "--slice", "faultsweep",
            "--report", "--run-dir", RUN_DIR, "--"]
    cases = [
        ("run:gs-alloc", prog("gs-alloc", "--api", "plain", "--chunk",
                              "128MiB"), False),
        ("run:gs-matmul", prog("gs-matmul", "--iterations", "3", "--n",
                               "64"), True),
    ]
    t0, n_runs = time.time(), runs

    def report(err):
        for line in err.splitlines():
            if line.startswith('{"slice"'):
                return json.loads(line)
        return None

    for label, argv, strict in cases:
        calls = counts_of(wrap + argv, env, label, strict)
        rc, base, err = run(wrap + argv, env)
        base_bytes = (base or {}).get("allocated_bytes")
        for site in ALLOC_SITES:
            for n in range(1, min(calls.get(site, 0), MAX_N) + 1):
                spec = "%s:%d" % (site, n)
                rc, doc, err = run(wrap + argv, env, fault=spec)
                if rc is not None and "fault injected: " + site not in err:
                    break
                why = judge(label, spec, strict, rc, doc, err)
                if why:
                    fail("%s GPUSLICE_FAULT=%s: %s" % (label, spec, why))
                rep = report(err)
                if rep is None:
                    fail("%s %s: no --report line" % (label, spec))
                elif rep["memory_peak_bytes"] > CAP:
                    fail("%s %s: %d bytes held, over the 1GiB cap"
                         % (label, spec, rep["memory_peak_bytes"]))
                why = sane(env)
                if why:
                    fail("%s %s: node not sane after: %s"
                         % (label, spec, why))
                    fresh_node()
                rc2, doc2, _ = run(wrap + argv, env)
                if rc2 != 0 or doc2 is None or \
                        doc2.get("allocated_bytes") != base_bytes or \
                        (strict and doc2.get("error") is not None):
                    fail("%s %s: the next run in the slice does not get "
                         "what the first did (%s bytes): exit %s %s"
                         % (label, spec, base_bytes, rc2, doc2))
    print("under gpuslice run --memory 1GiB: %d runs in %.1fs"
          % (runs - n_runs, time.time() - t0), flush=True)


t_start = time.time()
sweep_direct()
nvml()
under_stress()
if SANITIZED:
    print("sanitizer build: the gpuslice run part is left out")
else:
    under_run()
if absorbed:
    print("absorbed (normal result despite the fault): " +
          ", ".join(absorbed))
print("%d runs in %.1fs, %d failure(s)" % (runs, time.time() - t_start,
                                           len(failures)))
sys.exit(1 if failures else 0)
