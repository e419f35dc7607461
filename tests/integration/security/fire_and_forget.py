#!/usr/bin/env python3
"""fire_and_forget.py PTX N SECONDS - launches N gs_burn kernels on device 0
through the driver API (under the shim when LD_PRELOAD names it) and never
synchronises: it sleeps SECONDS while they run and exits. Prints "launched N"
or "error STEP RC"."""
import ctypes
import sys
import time

cu = ctypes.CDLL("libcuda.so.1")


def check(step, rc):
    if rc != 0:
        print("error %s %d" % (step, rc), flush=True)
        sys.exit(1)


ptx = open(sys.argv[1], "rb").read() + b"\0"
n_kernels, seconds = int(sys.argv[2]), float(sys.argv[3])
check("cuInit", cu.cuInit(0))
dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
check("cuDeviceGet", cu.cuDeviceGet(ctypes.byref(dev), 0))
check("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev))
check("cuCtxSetCurrent", cu.cuCtxSetCurrent(ctx))
mod, fn = ctypes.c_void_p(), ctypes.c_void_p()
check("cuModuleLoadData", cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx)))
check("cuModuleGetFunction", cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"gs_burn"))
n = ctypes.c_ulonglong(16 << 20)
buf = ctypes.c_uint64()
check("cuMemAlloc_v2", cu.cuMemAlloc_v2(ctypes.byref(buf), ctypes.c_size_t(n.value * 4)))
iters = ctypes.c_uint(256)
args = (ctypes.c_void_p * 3)(ctypes.cast(ctypes.pointer(buf), ctypes.c_void_p),
                             ctypes.cast(ctypes.pointer(n), ctypes.c_void_p),
                             ctypes.cast(ctypes.pointer(iters), ctypes.c_void_p))
cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 6 + [
    ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
for _ in range(n_kernels):
    check("cuLaunchKernel", cu.cuLaunchKernel(fn, 528, 1, 1, 256, 1, 1, 0, None, args, None))
print("launched %d" % n_kernels, flush=True)
time.sleep(seconds)
