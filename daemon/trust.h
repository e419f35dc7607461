/*
 * trust.h - confirming a region entry's process with the kernel, and
 * signalling a slice's confirmed processes (trust.c).
 */
#ifndef GS_DAEMON_TRUST_H
#define GS_DAEMON_TRUST_H

#include <stdbool.h>

#include "gs/region.h"
#include "slice.h"

struct gs_node;
struct gs__nslice;

/*
 * Whether region entry `pi` of slice `s` stands for a process that asked
 * for this slice: alive with the recorded start time, running as the
 * slice's owner or root (any uid when the owner is root), and naming the
 * slice in its environment (GPUSLICE_SLICE) or being the `gpuslice`
 * runner. The region's process table is writable by tenants: only entries
 * that pass this are acted on. Reads /proc. OUT: *why (static text),
 * when not genuine; `why` may be NULL.
 */
bool gs__trust_entry_genuine(const struct gs_proc_info *pi,
                             const struct gs_slice *s, const char **why);
/* Sends `sig` to the confirmed processes of slice `ns` (lock held). */
void gs__trust_signal(struct gs_node *node, struct gs__nslice *ns, int sig);

#endif
