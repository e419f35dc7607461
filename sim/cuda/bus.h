/*
 * bus.h - the sim's host<->device bus: how long a copy between host and
 * GPU memory takes (sim/cuda/bus.c), private to the sim's driver.
 *
 * Off unless asked for, so that copies take no time as before (the sim's
 * timings elsewhere were calibrated that way): GPUSLICE_SIM_BUS_GBPS
 * unset, "" or "0" is off; "model" takes each GPU's bandwidth from its
 * model (the table in bus.c); a number is that bandwidth in GB/s (1e9
 * bytes per second) for every GPU. Read once, at the first copy.
 *
 * What is modelled: a synchronous host-to-device or device-to-host copy
 * (cuMemcpyHtoD, cuMemcpyDtoH and their legacy and per-thread forms)
 * returns after len / bandwidth, as a copy from pinned host memory over
 * PCIe does. Not modelled: asynchronous copies (they would need a copy
 * engine on the shared timeline, sched.c), pageable-memory staging,
 * contention between processes on one bus, device-to-device copies.
 */
#ifndef GS_SIM_BUS_H
#define GS_SIM_BUS_H

#include <stdbool.h>
#include <stdint.h>

/* Pinned host<->device GB/s of a catalog model name (e.g. "H100-SXM5-80GB"):
 * PCIe Gen5 x16 GPUs 50, Gen4 x16 25, unknown models 25. */
double gs__bus_model_gbps(const char *model);

/* Reads a GPUSLICE_SIM_BUS_GBPS value. OUT: *gbps: 0 off, -1 per model,
 * else GB/s. False for text it does not read (then *gbps is 0). */
bool gs__bus_parse(const char *text, double *gbps);

/* Nanoseconds a copy of `len` bytes takes at `gbps` (<= 0: none). */
uint64_t gs__bus_copy_ns(double gbps, uint64_t len);

/* The hook: a synchronous host<->device copy of `len` bytes to or from a
 * GPU of `model` just moved its data; waits for the modelled time. */
void gs__bus_wait(const char *model, uint64_t len);

#endif
