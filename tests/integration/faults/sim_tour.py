#!/usr/bin/env python3
"""sim_tour.py - a small CUDA driver API program, through ctypes, for the
parts of the simulated driver the workload kit does not reach: a created
(not primary) context, a module and a library read from a PTX file,
events, a stream capture turned into a graph and launched, pinned host
memory, an array; and a context destroyed with a stream, an event, a
module, an array and device memory still in it, after which the device
must have all its memory back and the stale handles must be refused
(errors "LEAKED_MEMORY", "STALE_HANDLE_ANSWERS" otherwise). Prints one JSON line like the kit's programs ("error":
null, or the CUDA error name and the failing call) and exits 1 on a CUDA
error. Used by sim_sweep.py, which makes each sim fault site fail in turn.

usage: sim_tour.py KERNELS.PTX     (libcuda.so.1 from LD_LIBRARY_PATH)
"""
import ctypes as C
import json
import sys

cu = C.CDLL("libcuda.so.1")
VP, U = C.c_void_p, C.c_uint


def chk(r, call):
    if r != 0:
        s = C.c_char_p()
        cu.cuGetErrorName(r, C.byref(s))
        print(json.dumps({"error": s.value.decode() if s.value else str(r),
                          "call": call}))
        sys.exit(1)


def call(name, *args):
    chk(getattr(cu, name)(*args), name)


def die(error, call):
    print(json.dumps({"program": "sim_tour", "error": error, "call": call}))
    sys.exit(1)


def free_bytes():
    free, total = C.c_size_t(), C.c_size_t()
    call("cuMemGetInfo_v2", C.byref(free), C.byref(total))
    return free.value


path = sys.argv[1].encode()
ctx, mod, lib, fn, st, ev0, ev1 = (VP() for _ in range(7))
graph, gexec, host, arr = VP(), VP(), VP(), VP()
pctx, mod2, st2, ev2, arr2, fn2 = (VP() for _ in range(6))
dptr, dptr2 = C.c_uint64(), C.c_uint64()
call("cuInit", U(0))
call("cuDevicePrimaryCtxRetain", C.byref(pctx), C.c_int(0))
call("cuCtxSetCurrent", pctx)
free0 = free_bytes()
call("cuCtxCreate_v2", C.byref(ctx), U(0), C.c_int(0))
call("cuModuleLoad", C.byref(mod), C.c_char_p(path))
call("cuModuleGetFunction", C.byref(fn), mod, C.c_char_p(b"gs_fill"))
call("cuLibraryLoadFromFile", C.byref(lib), C.c_char_p(path), None, None,
     U(0), None, None, U(0))
call("cuStreamCreate", C.byref(st), U(1))
call("cuEventCreate", C.byref(ev0), U(0))
call("cuEventCreate", C.byref(ev1), U(0))
call("cuMemAlloc_v2", C.byref(dptr), C.c_size_t(1 << 20))
call("cuMemAllocHost_v2", C.byref(host), C.c_size_t(1 << 16))

n = C.c_uint64(1024)
val = C.c_float(1.5)
p = C.c_uint64(dptr.value)
params = (VP * 3)(C.cast(C.byref(p), VP), C.cast(C.byref(n), VP),
                  C.cast(C.byref(val), VP))
call("cuEventRecord", ev0, st)
call("cuLaunchKernel", fn, U(4), U(1), U(1), U(256), U(1), U(1), U(0), st,
     params, None)
call("cuStreamBeginCapture_v2", st, U(0))
for _ in range(3):
    call("cuLaunchKernel", fn, U(4), U(1), U(1), U(256), U(1), U(1), U(0),
         st, params, None)
call("cuStreamEndCapture", st, C.byref(graph))
call("cuGraphInstantiateWithFlags", C.byref(gexec), graph, C.c_ulonglong(0))
call("cuGraphLaunch", gexec, st)
call("cuEventRecord", ev1, st)
call("cuMemcpyDtoHAsync_v2", host, C.c_uint64(dptr.value),
     C.c_size_t(4096), st)
call("cuStreamSynchronize", st)


class ArrayDesc(C.Structure):
    _fields_ = [("Width", C.c_size_t), ("Height", C.c_size_t),
                ("Format", C.c_int), ("NumChannels", U)]


desc = ArrayDesc(256, 256, 0x20, 1)  # CU_AD_FORMAT_FLOAT
call("cuArrayCreate_v2", C.byref(arr), C.byref(desc))
call("cuArrayDestroy", arr)
call("cuGraphExecDestroy", gexec)
call("cuGraphDestroy", graph)
call("cuMemFreeHost", host)
call("cuMemFree_v2", C.c_uint64(dptr.value))
call("cuEventDestroy_v2", ev0)
call("cuEventDestroy_v2", ev1)
call("cuStreamDestroy_v2", st)
call("cuLibraryUnload", lib)
call("cuModuleUnload", mod)
# What the context still holds when it is destroyed goes with it.
call("cuModuleLoad", C.byref(mod2), C.c_char_p(path))
call("cuStreamCreate", C.byref(st2), U(1))
call("cuEventCreate", C.byref(ev2), U(0))
call("cuArrayCreate_v2", C.byref(arr2), C.byref(desc))
call("cuMemAlloc_v2", C.byref(dptr2), C.c_size_t(1 << 20))
call("cuCtxDestroy_v2", ctx)
call("cuCtxSetCurrent", pctx)
if free_bytes() != free0:
    die("LEAKED_MEMORY", "cuCtxDestroy_v2")
if cu.cuStreamQuery(st2) == 0 or cu.cuEventQuery(ev2) == 0 or \
        cu.cuModuleGetFunction(C.byref(fn2), mod2,
                               C.c_char_p(b"gs_fill")) == 0:
    die("STALE_HANDLE_ANSWERS", "cuCtxDestroy_v2")
call("cuDevicePrimaryCtxRelease_v2", C.c_int(0))
print(json.dumps({"program": "sim_tour", "error": None}))
