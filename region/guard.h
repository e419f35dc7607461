/*
 * guard.h - keeps a truncated region file from killing the process that
 * maps it (private to region/).
 *
 * The shared `usage` file is writable by every tenant and an owner file
 * by its owner, so either can ftruncate(2) a file that gpusliced and
 * other tenants' shims have mapped; touching a page past the new end
 * raises SIGBUS, which would kill them. Each such mapping is registered
 * here; a process-wide SIGBUS handler (installed with the first one) maps
 * a private zero page over a faulting page inside a registered range, so
 * the access goes on and reads zeros, and marks the range tripped. A
 * fault anywhere else goes to the handler that was there before (or the
 * default action: the process dies as it would have).
 *
 * What the zeros mean is the caller's to decide (gs_region_truncated):
 * the mapping no longer shows the file; its books and records are gone
 * for this process.
 */
#ifndef GS_REGION_GUARD_H
#define GS_REGION_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Registers [p, p+len) (page-aligned p, as mmap returns). False when the
 * table is full (the mapping is then unguarded; logged by the caller). */
bool gs__guard_add(void *p, size_t len);
/* Forgets the range at p (before munmap). */
void gs__guard_del(void *p);
/* Whether a fault was caught in the range at p. */
bool gs__guard_tripped(const void *p);
/* Faults caught in this process, ever. */
uint64_t gs__guard_caught(void);

#endif
