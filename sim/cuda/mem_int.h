/*
 * mem_int.h - private to the sim driver's memory files (addr.c, mem.c,
 * vmm.c, array.c, copy.c): the address table's editing calls and the
 * mappings behind device ranges, which addr.c owns. Lock (gs__drv.mu)
 * held for all of them. The lookups other parts of the driver use
 * (gs__alloc_find, gs__charge, gs__dwrite, ...) are in cuda_int.h.
 */
#ifndef GS_SIM_MEM_INT_H
#define GS_SIM_MEM_INT_H

#include "cuda_int.h"

/* v rounded up to a multiple of a. */
uint64_t gs__round_up(uint64_t v, uint64_t a);
/* Index of the first range whose base is above p. */
int gs__alloc_lower_bound(uint64_t p);
/* The range starting exactly at base, or NULL. */
struct gs__alloc *gs__alloc_exact(uint64_t base);
/* Adds a range (copied) in base order; false when out of host memory. */
bool gs__alloc_insert(const struct gs__alloc *a);
/* Drops a range from the table (its mapping is the caller's). */
void gs__alloc_remove(struct gs__alloc *a);
/* A host mapping of len bytes (readable/writable when backed), reused
 * from the cache when one of that length is there; NULL on failure. */
void *gs__map_range(uint64_t len, bool backed);
/* Gives a mapping back (to the cache when it fits there). */
void gs__unmap_range(void *p, uint64_t len, bool backed);
/* Allocates `size` bytes of kind `kind` for ctx's device: charges, maps,
 * records. OUT: *dptr. */
CUresult gs__dev_alloc(struct gs__ctx *ctx, uint64_t size,
                       enum gs__akind kind, struct gs__pool *pool,
                       CUdeviceptr *dptr);
/* Frees one entry (any kind that we mapped). */
void gs__alloc_free(struct gs__alloc *a);
/* Frees the arrays and mipmapped arrays a context owns (array.c). */
void gs__array_ctx_gone(struct gs__ctx *ctx);

#endif
