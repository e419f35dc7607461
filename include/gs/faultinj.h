/*
 * faultinj.h - fault injection for tests, SQLite-style: make the Nth call
 * of a named site fail, so that every error path of a component can be
 * driven from the outside.
 *
 *   GPUSLICE_FAULT="site:N[,site:N+...]"
 *
 * "site:N" fails the Nth call of that site (1 = the first), "site:N+" the
 * Nth and every later one. Sites are the names the code passes to
 * gs_fault_hit(): in gpusliced "sqlite.exec", "sqlite.write",
 * "region.write", "alloc.write"; in the simulated NVML the function names
 * of its MIG calls (e.g. "nvmlDeviceCreateGpuInstanceWithPlacement").
 * docs/testing.md lists them. Unset (production), gs_fault_hit() is one
 * load and a branch.
 */
#ifndef GS_FAULTINJ_H
#define GS_FAULTINJ_H

#include <stdbool.h>

/* Counts a call of `site`; true when this call must fail. Thread-safe. */
bool gs_fault_hit(const char *site);

#endif
