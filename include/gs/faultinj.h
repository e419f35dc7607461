/*
 * faultinj.h - fault injection for tests, SQLite-style: make the Nth call
 * of a named site fail, so that every error path of a component can be
 * driven from the outside.
 *
 *   GPUSLICE_FAULT="site:N[,site:N+...]"
 *
 * "site:N" fails the Nth call of that site (1 = the first), "site:N+" the
 * Nth and every later one. Sites are the names the code passes to
 * gs_fault_hit(): gpusliced's store and region writes, the simulated
 * NVML's MIG calls and state file, the simulated CUDA driver's
 * allocation and I/O sites ("sim.malloc", "sim.dev_alloc", ...), the
 * shim's ("shim.malloc", "shim.dlopen", ...) and the region's files
 * ("region.open", "region.map", ...); docs/testing.md lists them all.
 *
 *   GPUSLICE_FAULT_COUNTS=FILE
 *
 * appends "SITE CALLS" lines to FILE at exit, one per site the process
 * passed through (with or without rules), so a sweep can tell which
 * sites a run reaches and how often. Unset (production), gs_fault_hit()
 * is one load and a branch.
 */
#ifndef GS_FAULTINJ_H
#define GS_FAULTINJ_H

#include <stdbool.h>
#include <stdlib.h>

/* Counts a call of `site`; true when this call must fail. Thread-safe. */
bool gs_fault_hit(const char *site);

/* An allocation that is also the fault site `site`: NULL, as when out of
 * memory, when the site fails this call. */
static inline void *gs_fault_malloc(const char *site, size_t n)
{
	return gs_fault_hit(site) ? NULL : malloc(n);
}

static inline void *gs_fault_calloc(const char *site, size_t n, size_t size)
{
	return gs_fault_hit(site) ? NULL : calloc(n, size);
}

#endif
