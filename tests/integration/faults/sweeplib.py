"""What the fault sweeps share (sim_sweep.py, shim_sweep.py): a private
simulated node, the environment that points programs at it, and whether
it holds anything after a run.

A sweep makes one Node(BUILD_DIR, WORK_DIR) and asks it for the
workload kit's programs (prog), a fresh node (fresh), the environment
(env) and what a run left behind (leftovers).
"""
import json
import os
import re
import subprocess


class Node:
    def __init__(self, build, work):
        self.build = build
        self.gpuslice = os.path.join(build, "bin", "gpuslice")
        self.sim_dir = os.path.join(work, "sim")

    def prog(self, name, *args):
        """A program of the workload kit, with its arguments."""
        return [os.path.join(self.build, "bin", name)] + list(args)

    def fresh(self):
        """A new one-GPU node, whatever the last run left."""
        subprocess.run([self.gpuslice, "sim", "init", "--gpus",
                        "1xH100-SXM5-80GB", "--force", "--dir",
                        self.sim_dir], check=True, capture_output=True)

    def env(self, drop=()):
        """The environment `gpuslice sim env` exports, without `drop`."""
        out = subprocess.run([self.gpuslice, "sim", "env", "--dir",
                              self.sim_dir], check=True,
                             capture_output=True, text=True).stdout
        env = dict(os.environ)
        for line in out.splitlines():
            m = re.match(r"export (\w+)='([^']*)'(.*)$", line)
            if m:
                val = m.group(2)
                if m.group(3).startswith("${LD_LIBRARY_PATH"):
                    val += (":" + env["LD_LIBRARY_PATH"]
                            if env.get("LD_LIBRARY_PATH") else "")
                elif m.group(3).startswith(":$PATH"):
                    val += ":" + env.get("PATH", "")
                env[m.group(1)] = val
        for k in drop:
            env.pop(k, None)
        return env

    def leftovers(self, env, timeout):
        """None when the node holds nothing, else what it holds."""
        try:
            p = subprocess.run([self.gpuslice, "sim", "status", "--json",
                                "--dir", self.sim_dir], env=env,
                               capture_output=True, text=True,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            return "sim status hangs (the state lock left held?)"
        if p.returncode != 0:
            return "sim status failed: " + p.stderr.strip()
        st = json.loads(p.stdout)
        for g in st["gpus"]:
            if g["memory_used_bytes"] != 0:
                return "gpu %d: %d bytes still charged" % (
                    g["index"], g["memory_used_bytes"])
            if g["processes"]:
                return "gpu %d: processes left %s" % (g["index"],
                                                      g["processes"])
            for mi in g.get("mig_instances") or []:
                if mi.get("memory_used_bytes"):
                    return "a MIG instance still holds memory"
        if st.get("reaped_total"):
            return "%d process slot(s) had to be reaped" % st["reaped_total"]
        return None


def report(failures, what):
    """Records a failure and says it at once."""
    failures.append(what)
    print("FAIL: " + what, flush=True)
