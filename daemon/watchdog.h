/*
 * watchdog.h - the backstop a tenant cannot evade. Every interval it asks
 * NVML how much memory each process holds (nvmlDeviceGetComputeRunning-
 * Processes_v3), maps processes to slices (the region's process table,
 * processes attached through the API, and their descendants), and compares
 * each slice's total with its limit: a process that allocates around the
 * shim still shows up in NVML. The configured action follows (flag: mark
 * the slice flagged and log an event; kill: also SIGKILL the processes).
 *
 * It also drains NVML's Xid events: the slice that faulted is marked
 * faulted; in MPS mode every slice sharing the server is, and the MPS
 * control daemon is restarted.
 */
#ifndef GS_DAEMON_WATCHDOG_H
#define GS_DAEMON_WATCHDOG_H

#include "node.h"
#include "gs/region.h"
#include "reconcile.h"

struct gs_watchdog;

/* `kernel_log`: where the driver's Xid lines are read from, to name a
 * faulting process (/dev/kmsg; the simulated driver's <dir>/kmsg), or
 * NULL/"" for none. */
gs_err gs_watchdog_create(struct gs_node *node, struct gs_reconciler *rec,
                          const char *kernel_log, struct gs_watchdog **out,
                          struct gs_errbuf *eb);
void gs_watchdog_destroy(struct gs_watchdog *w);

/* One memory check of every slice. */
void gs_watchdog_tick(struct gs_watchdog *w);
/*
 * Notes which process belongs to which slice (cheap; the tick calls it
 * every 100 ms), so that a process that faults and exits at once is still
 * placed when its Xid is read.
 */
void gs_watchdog_remember(struct gs_watchdog *w);
/*
 * Waits up to `timeout_ms` for NVML's Xid events and handles those queued
 * (the daemon runs it in a thread of its own, so a fault is seen within
 * milliseconds, while the process that caused it usually still lives).
 */
void gs_watchdog_events(struct gs_watchdog *w, int timeout_ms);

/*
 * Whether region entry `pi` of slice `s` stands for a process that asked
 * for this slice: alive with the recorded start time, running as the
 * slice's owner or root (any uid when the owner is root), and naming the
 * slice in its environment (GPUSLICE_SLICE) or being the `gpuslice`
 * runner. The region's process table is writable by tenants: only entries
 * that pass this are acted on. Reads /proc. OUT: *why (static text),
 * when not genuine; `why` may be NULL.
 */
bool gs_watchdog_entry_genuine(const struct gs_proc_info *pi,
                               const struct gs_slice *s, const char **why);

#endif
