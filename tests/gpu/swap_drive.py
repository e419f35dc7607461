# swap_drive.py - drives one swap round trip for gpu-check's swap check
# (swap_check.sh): runs PROGRAM under `gpuslice run --swap` in its own
# slice, waits for its {"ready": ...} line, swaps it out and back in with
# `gpuslice swap`, asks it to recompute its checksums, and prints one JSON
# line: whether they match, the bytes moved and the swap-out and swap-in
# times and rates (the shim's own, from its debug log).
#
#   swap_drive.py GPUSLICE RUN_DIR SLICE LOG MEMORY -- PROGRAM [ARGS...]
import json, os, re, select, subprocess, sys, time

gs, run_dir, slice_, log, memory = sys.argv[1:6]
cmd = sys.argv[7:]
res = {"ok": False}


def line(p, timeout):
    if not select.select([p.stdout], [], [], timeout)[0]:
        raise RuntimeError(f"no answer from the program in {timeout} s")
    l = p.stdout.readline()
    if not l:
        raise RuntimeError("the program ended early")
    return json.loads(l)


def swap(verb):
    t0 = time.time()
    r = subprocess.run([gs, "swap", verb, slice_, "--run-dir", run_dir,
                        "--timeout", "300"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"gpuslice swap {verb}: exit {r.returncode}: {r.stderr.strip()[:300]}")
    return time.time() - t0


env = dict(os.environ, GPUSLICE_LOG="debug:" + log)
p = subprocess.Popen([gs, "run", "--run-dir", run_dir, "--slice", slice_,
                      "--memory", memory, "--swap", "--"] + cmd,
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                     env=env)
try:
    ready = line(p, 600)
    if "error" in ready or not ready.get("ready"):
        raise RuntimeError(f"the program did not start: {ready}")
    res["bytes"] = ready["bytes"]
    res["checksums_before"] = ready["checksums"]
    res["cli_out_s"] = round(swap("out"), 3)
    res["cli_in_s"] = round(swap("in"), 3)
    p.stdin.write("check\n")
    p.stdin.flush()
    after = line(p, 600)
    res["checksums_after"] = after["checksums"]
    text = open(log, errors="replace").read()
    for verb in ("out", "in"):
        m = re.findall(r"swap %s: CUresult 0, (\d+) bytes in (\d+) ns" % verb, text)
        if not m:
            raise RuntimeError(f"the shim logged no successful swap {verb}")
        n, ns = int(m[-1][0]), int(m[-1][1])
        res[f"swap_{verb}_bytes"] = n
        res[f"swap_{verb}_ms"] = round(ns / 1e6, 2)
        res[f"swap_{verb}_gbps"] = round(n / ns, 2)
    res["ok"] = (res["checksums_before"] == res["checksums_after"]
                 and res["swap_out_bytes"] >= res["bytes"])
    if not res["ok"]:
        res["error"] = "checksums differ after the round trip" if res["checksums_before"] != res["checksums_after"] else "fewer bytes moved than the program holds"
except Exception as e:
    res["error"] = str(e)[:400]
finally:
    try:
        p.stdin.close()
    except Exception:
        pass
    try:
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
print(json.dumps(res))
