#!/usr/bin/env python3
"""No circle of files: no two product .c files call each other, directly or
around a loop (docs/architecture.md, "which way calls go").

Reads the object files of a build (nm): a file "calls" another when it uses
a global symbol (function or variable) that the other defines. Product
files are those outside tests/; objects built for tests or fuzzing from
product sources count as their source. Prints every strongly connected
group of files (a circle) and exits 1 if there is one.

Usage: check-circles.py BUILD_DIR [--graph]   (--graph prints every edge)
"""
import collections
import os
import re
import subprocess
import sys


def objects(build):
    """Map object path -> source path relative to the source root."""
    out = {}
    for root, _dirs, files in os.walk(build):
        for f in files:
            if f.endswith(".c.o"):
                out[os.path.join(root, f)] = None
    return out


def source_of(obj, build, src_root):
    # CMake: <build>/<subdir>/CMakeFiles/<target>.dir/<path-in-subdir>.c.o;
    # sources outside the subdir appear as __/ for ".."
    rel = os.path.relpath(obj, build)
    m = re.match(r"(.*?)/?CMakeFiles/[^/]+\.dir/(.*)\.o$", rel)
    if not m:
        return None
    sub, path = m.group(1), m.group(2).replace("__/", "../")
    src = os.path.normpath(os.path.join(src_root, sub, path))
    if not os.path.exists(src):
        return None
    return os.path.relpath(src, src_root)


def nm(obj):
    r = subprocess.run(["nm", "--defined-only", "-g", obj],
                       capture_output=True, text=True)
    defs = {ln.split()[-1] for ln in r.stdout.splitlines()
            if len(ln.split()) >= 3}
    r = subprocess.run(["nm", "-u", obj], capture_output=True, text=True)
    uses = {ln.split()[-1] for ln in r.stdout.splitlines() if ln.strip()}
    return defs, uses


def sccs(graph):
    """Tarjan's strongly connected components (iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = os.path.abspath(argv[1])
    src_root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
    cache = os.path.join(build, "CMakeCache.txt")
    if os.path.exists(cache):
        for ln in open(cache, encoding="utf-8", errors="replace"):
            if ln.startswith("CMAKE_HOME_DIRECTORY:"):
                src_root = ln.split("=", 1)[1].strip()
    defs_by_file = collections.defaultdict(set)
    uses_by_file = collections.defaultdict(set)
    for obj in objects(build):
        src = source_of(obj, build, src_root)
        if not src or src.startswith("tests/") or "/tests/" in src:
            continue
        d, u = nm(obj)
        defs_by_file[src] |= d
        uses_by_file[src] |= u
    definers = collections.defaultdict(set)
    for f, ds in defs_by_file.items():
        for s in ds:
            definers[s].add(f)
    graph = collections.defaultdict(set)
    for f, us in uses_by_file.items():
        graph[f]
        for s in us:
            ds = definers.get(s, set()) - {f}
            if len(ds) > 1:
                # one symbol in several programs (main, a stand-in's entry
                # point): only a definer of the caller's own folder counts
                ds = {d for d in ds
                      if os.path.dirname(d) == os.path.dirname(f)}
            for d in ds:
                graph[f].add(d)
    if "--graph" in argv:
        for f in sorted(graph):
            for d in sorted(graph[f]):
                print(f"{f} -> {d}")
    circles = sccs(graph)
    for comp in circles:
        print("circle: " + " <-> ".join(comp))
        for f in comp:
            for d in sorted(graph[f] & set(comp)):
                print(f"    {f} -> {d}")
    print(f"{len(graph)} product files, {len(circles)} circle(s)")
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
