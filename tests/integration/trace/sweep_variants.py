#!/usr/bin/env python3
"""sweep_variants.py - runs `gpuslice bench trace` (FGD against gpuslice) on
every task list of the trace and on the constructed variants, and prints,
per list, the mean unallocated GPU % at arrival 100 and the worst margin
over arrival 90..130 (gpuslice minus FGD; negative is better).

The split of docs/placement.md ("Evaluation protocol"):
  --split tune    lists: default, gpushare40, cpu100 and the default-list
                  variants with variant seed 101; replay seeds 1001-1005.
  --split report  every list in the trace folder and every variant with
                  variant seeds 1 and 2; replay seeds 42-51 (10 seeds).

usage: sweep_variants.py GPUSLICE TRACE_CSV_DIR [--split tune|report]
                         [--policy A,B] [--ablate TERMS]
  --split ablate  the report split's trace lists and default-list variants
                  (variant seed 1), for the ablation table.
It is a measuring tool, not a test: it asserts nothing and takes about a
minute of CPU for the report split (2 threads).
"""
import json
import os
import subprocess
import sys

CONSTRAIN = [(5, 2), (15, 2), (25, 2), (35, 2), (15, 1), (35, 1)]
GANGS = [10, 20, 30]


def runs(split, lists):
    if split == "tune":
        bases = ["default", "gpushare40", "cpu100"]
        vseeds = [101]
        vbases = ["default"]
    elif split == "ablate":
        bases = lists
        vseeds = [1]
        vbases = ["default"]
    else:
        bases = lists
        vseeds = [1, 2]
        vbases = ["default", "gpushare100", "cpu250"]
    for b in bases:
        yield b, []
    for b in vbases:
        for vs in vseeds:
            for pct, k in CONSTRAIN:
                yield ("%s+c%d/k%d/v%d" % (b, pct, k, vs),
                       ["--constrain", str(pct), "--constrain-models",
                        str(k), "--variant-seed", str(vs)])
            for pct in GANGS:
                yield ("%s+g%d/v%d" % (b, pct, vs),
                       ["--gangs", str(pct), "--variant-seed", str(vs)])


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    exe, tdir = args[0], args[1]
    split, policy, ablate = "report", "fgd,gpuslice", []
    i = 2
    while i < len(args):
        if args[i] == "--split":
            split = args[i + 1]
        elif args[i] == "--policy":
            policy = args[i + 1]
        elif args[i] == "--ablate":
            ablate = ["--ablate", args[i + 1]]
        i += 2
    seeds = "1001-1005" if split == "tune" else "42-51"
    lists = sorted(f[len("openb_pod_list_"):-4] for f in os.listdir(tdir)
                   if f.startswith("openb_pod_list_"))
    pols = policy.split(",")
    print("%-26s %s   %s" % ("list", "  ".join("%8s" % p for p in pols),
                              "d100  worst90-130"))
    tot = [0.0] * len(pols)
    nlist = 0
    for name, extra in runs(split, lists):
        base = name.split("+")[0]
        cmd = [exe, "bench", "trace", "--nodes",
               os.path.join(tdir, "openb_node_list_gpu_node.csv"),
               "--pods", os.path.join(tdir, "openb_pod_list_%s.csv" % base),
               "--policy", policy, "--seeds", seeds, "--jobs", "2",
               "--json"] + extra + ablate
        out = subprocess.run(cmd, check=True, capture_output=True,
                             text=True).stdout
        res = json.loads(out)["results"]
        by = {}
        for r in res:
            by[(r["policy"], r["arrived_pct"])] = r["unallocated_pct_mean"]
        v100 = [by.get((p, 100), float("nan")) for p in pols]
        worst = max(by.get((pols[-1], a), 0) - by.get((pols[0], a), 0)
                    for a in range(90, 131))
        for k in range(len(pols)):
            tot[k] += v100[k]
        nlist += 1
        print("%-26s %s   %+5.2f %+5.2f" % (
            name, "  ".join("%8.2f" % v for v in v100),
            v100[-1] - v100[0], worst), flush=True)
    print("%-26s %s" % ("mean", "  ".join("%8.2f" % (t / nlist)
                                          for t in tot)))


if __name__ == "__main__":
    main()
