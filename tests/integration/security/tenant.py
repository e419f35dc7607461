#!/usr/bin/env python3
"""tenant.py - an interactive CUDA driver-API tenant for the hostile-tenant
tests: it loads libcuda.so.1 (under the shim when LD_PRELOAD names it),
makes a context on device 0, prints "pid N", then serves one command per
line on stdin, answering one line each on stdout:

    alloc BYTES   -> "alloc BYTES RC"   (RC: the CUresult of cuMemAlloc_v2)
    quit          -> exits 0
"""
import ctypes
import os
import sys

cu = ctypes.CDLL("libcuda.so.1")
rc = cu.cuInit(0)
if rc != 0:
    print("init %d" % rc, flush=True)
    sys.exit(1)
dev = ctypes.c_int(0)
ctx = ctypes.c_void_p()
cu.cuDeviceGet(ctypes.byref(dev), 0)
rc = cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
if rc == 0:
    rc = cu.cuCtxSetCurrent(ctx)
if rc != 0:
    print("context %d" % rc, flush=True)
    sys.exit(1)
print("pid %d" % os.getpid(), flush=True)
for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    if words[0] == "quit":
        break
    if words[0] == "alloc":
        ptr = ctypes.c_uint64()
        rc = cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(int(words[1])))
        print("alloc %s %d" % (words[1], rc), flush=True)
