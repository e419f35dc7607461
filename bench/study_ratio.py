#!/usr/bin/env python3
"""study_ratio.py - the study's gpuslice column against the others, per row.

Reads one or more study.json files (`gpuslice bench study --json` or the
file it writes) and prints, per workload and run, gpuslice's figure, the
best sharing strategy's (time-slicing, MPS, MPS with limits, MIG), the
exclusive column's (one whole GPU per job: the ceiling, not a way to
share one), and gpuslice's ratio to each, oriented so that >= 1 means
gpuslice is as good or better. Figures: inference rows, requests/s (both
servers); batch rows, completion time of the slowest job.

Used by scripts/bench.sh's `study` section.
"""
import json
import sys

SHARING = ("time-slicing", "mps", "mps-limits", "mig")
ROWS = {
    "inference-light": ("throughput", True, "req/s"),
    "inference-heavy": ("throughput", True, "req/s"),
    "small-batch": ("completion_s", False, "s"),
    "gpu-intensive": ("completion_s", False, "s"),
}


def ratio(ours, theirs, higher):
    if not ours or not theirs:
        return None
    return ours / theirs if higher else theirs / ours


def main(paths):
    if not paths:
        print("usage: study_ratio.py STUDY.json...", file=sys.stderr)
        return 2
    for run, path in enumerate(paths, 1):
        with open(path) as f:
            cells = json.load(f)
        by = {}
        for c in cells:
            if c.get("status") == "ok":
                by[(c["workload"], c["strategy"])] = c
        for w, (key, higher, unit) in ROWS.items():
            ours = by.get((w, "gpuslice"), {}).get(key)
            if ours is None:
                continue
            best, best_s = None, None
            for s in SHARING:
                v = by.get((w, s), {}).get(key)
                if v is None:
                    continue
                if best is None or (v > best if higher else v < best):
                    best, best_s = v, s
            excl = by.get((w, "exclusive"), {}).get(key)
            r_best = ratio(ours, best, higher)
            r_excl = ratio(ours, excl, higher)
            line = f"run {run} {w:16s} gpuslice {ours:10.3f} {unit}"
            if best is not None:
                line += f" | best sharing ({best_s}) {best:10.3f}: x{r_best:.4f}"
            if excl is not None:
                line += f" | exclusive {excl:10.3f}: x{r_excl:.4f}"
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
