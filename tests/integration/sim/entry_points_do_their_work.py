#!/usr/bin/env python3
"""entry_points_do_their_work.py SRC - every CUDA driver entry point the
sim defines (sim/cuda/*.c: CUresult CUDAAPI cu*) either does its work or
refuses: none may return CUDA_SUCCESS having done nothing. A body that
only validates its arguments and the lock (it calls nothing but the
lookups below, writes no output, changes no state) and can return
CUDA_SUCCESS is reported, unless listed in NOTHING_TO_DO with the reason
the real driver also has nothing to do there. The weak stubs (stubs.c)
all refuse with CUDA_ERROR_NOT_SUPPORTED and are checked to stay so.
Exit 0 when clean, 1 with the list."""
import glob
import os
import re
import sys

# Calls that only look things up or take the lock: a body made of these
# alone does no work.
LOOKUPS = {
    "gs__enter", "gs__unlock", "gs__lock", "gs__ctx_get", "gs__h_is",
    "gs__stream_get", "gs__stream_peek", "gs__dev_get", "gs__func_get",
    "gs__ctx_current", "ctx_or_current", "kernel_dev_check", "sizeof",
    "if", "while", "for", "switch", "return",
}

# Entry points with nothing to do on the real driver either, and why.
NOTHING_TO_DO = {
    "cuProfilerStart": "no profiler attaches to the sim; the real driver also answers success with none attached",
    "cuProfilerStop": "as cuProfilerStart",
    "cuCtxResetPersistingL2Cache": "the sim models no L2 persisting lines, so none are left to reset",
    "cuFuncSetSharedMemConfig": "a no-op on every GPU since Volta (bank size is fixed); the sim's GPUs are Ampere or newer",
    "cuMemPoolTrimTo": "the sim's pools keep no freed memory (stream-ordered frees give it back at once), so there is none to trim",
    "cuMemPoolSetAccess": "a pool's memory is one host mapping every simulated device reaches: access is already what is asked",
    "cuCtxEnablePeerAccess": "refuses: PEER_ACCESS_UNSUPPORTED (caught only because it never succeeds)",
    "cuCtxDisablePeerAccess": "refuses: PEER_ACCESS_NOT_ENABLED",
    "cuLibraryGetUnifiedFunction": "answers NULL for every symbol, as the real driver does for a library without unified functions",
}

FUNC = re.compile(r"\nCUresult\s+CUDAAPI\s*\n?\s*(cu\w+)\s*\(([^)]*)\)\s*\{")


def body_at(text, i):
    depth, j = 1, i
    while depth and j < len(text):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
        j += 1
    return text[i:j - 1]


def does_nothing(body):
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    body = re.sub(r'"(\\.|[^"\\])*"', '""', body)
    calls = set(re.findall(r"\b(\w+)\s*\(", body)) - LOOKUPS
    writes = re.search(
        r"(\*\s*\w+|\w+(->|\.)\w+(\[[^]]*\])?|\w+\[[^]]*\])\s*([+\-|&]?=)(?!=)",
        body)
    return "CUDA_SUCCESS" in body and not calls and not writes


def main(src):
    bad, seen = [], set()
    for path in sorted(glob.glob(os.path.join(src, "sim/cuda/*.c"))):
        text = open(path, encoding="utf-8").read()
        for m in FUNC.finditer(text):
            name = m.group(1)
            seen.add(name)
            if does_nothing(body_at(text, m.end())) and name not in NOTHING_TO_DO:
                bad.append("%s: %s returns CUDA_SUCCESS without doing anything" %
                           (os.path.relpath(path, src), name))
    stale = sorted(set(NOTHING_TO_DO) - seen)
    for name in stale:
        bad.append("NOTHING_TO_DO names %s, which the sim no longer defines" % name)
    stubs = open(os.path.join(src, "sim/cuda/stubs.c"), encoding="utf-8").read()
    if "return CUDA_ERROR_NOT_SUPPORTED;" not in stubs or "CUDA_SUCCESS" in stubs:
        bad.append("sim/cuda/stubs.c: the weak stubs must refuse with CUDA_ERROR_NOT_SUPPORTED")
    if len(seen) < 250:
        bad.append("only %d entry points found: the scan no longer reads the sources" % len(seen))
    for line in bad:
        print(line)
    print("%d entry points scanned, %d allowed to have nothing to do, %d findings" %
          (len(seen), len(NOTHING_TO_DO), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
