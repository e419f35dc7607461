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
 * What is modelled: a host-to-device or device-to-host copy (cuMemcpyHtoD,
 * cuMemcpyDtoH, their asynchronous, legacy and per-thread forms) returns
 * len / bandwidth after it was called, as a copy from pinned host memory
 * over PCIe takes; the sim's own memmove of the bytes happens within that
 * time (the wait is what is left of it), so a copy costs the modelled
 * time, or the host's memmove where that is slower. A wait's sleep wakes
 * late by tens of microseconds; for an asynchronous copy that lateness is
 * taken off the next copies on the same thread, so queued copies take
 * the sum of their modelled times, as on a copy engine. An asynchronous copy
 * is charged to the calling thread (no copy engine on the shared
 * timeline yet, sched.c): a program that queues copies and then
 * synchronises waits as long as on a GPU, but its thread is not free
 * meanwhile. Not modelled: pageable-memory staging, contention between
 * processes on one bus, device-to-device copies.
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

/* CLOCK_MONOTONIC now, in ns: what a copy passes to gs__bus_wait. */
uint64_t gs__bus_now(void);

/* The hook: a host<->device copy of `len` bytes to or from a GPU of
 * `model`, called at `since_ns` (gs__bus_now), just moved its data; waits
 * until since_ns + the modelled time (at once when that has passed), less
 * what earlier queued (`queued`: asynchronous) copies' waits overslept. */
void gs__bus_wait(const char *model, uint64_t len, uint64_t since_ns,
                  bool queued);

#endif
