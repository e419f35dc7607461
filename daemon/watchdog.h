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

#endif
