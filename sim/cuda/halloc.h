/*
 * halloc.h - the sim driver's host allocations of its own bookkeeping
 * (contexts, streams, events, modules, graphs, the handle and address
 * tables, parsed PTX, ...), all made through these wrappers so that the
 * fault-injection site "sim.malloc" (GPUSLICE_FAULT, gs/faultinj.h) can
 * fail any one of them: a failed one returns NULL as malloc would, and
 * every caller answers CUDA_ERROR_OUT_OF_MEMORY with nothing left behind.
 * Unset, a wrapper costs gs_fault_hit's load and branch. Memory from them
 * is freed with free().
 */
#ifndef GS_SIM_HALLOC_H
#define GS_SIM_HALLOC_H

#include <stdlib.h>
#include <string.h>

#include "gs/faultinj.h"

static inline void *gs__malloc(size_t n)
{
	return gs_fault_malloc("sim.malloc", n);
}

static inline void *gs__calloc(size_t n, size_t size)
{
	return gs_fault_calloc("sim.malloc", n, size);
}

/* Like realloc: on failure `p` is left as it was. */
static inline void *gs__realloc(void *p, size_t n)
{
	return gs_fault_hit("sim.malloc") ? NULL : realloc(p, n);
}

static inline char *gs__strdup(const char *s)
{
	return gs_fault_hit("sim.malloc") ? NULL : strdup(s);
}

#endif
