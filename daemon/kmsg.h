/*
 * kmsg.h - the kernel log as the watchdog reads it: Xid reports
 * (gs/xidlog.h) from /dev/kmsg on a real node, or from the file the
 * simulated driver appends the same lines to. Only what is logged after
 * open is read. Not thread-safe: the watchdog's thread owns it.
 *
 * Ownership: gs_kmsg_open() returns a reader freed by gs_kmsg_close().
 */
#ifndef GS_DAEMON_KMSG_H
#define GS_DAEMON_KMSG_H

#include <stdbool.h>
#include <stdint.h>

#include "gs/err.h"
#include "gs/xidlog.h"

struct gs_kmsg;

/* Opens `path` (/dev/kmsg, or a plain file that is appended to). A file
 * that does not exist yet is opened when it appears. */
gs_err gs_kmsg_open(const char *path, struct gs_kmsg **out,
                    struct gs_errbuf *eb);
void gs_kmsg_close(struct gs_kmsg *k);

/*
 * Reads what was logged since the last call, then takes the newest Xid
 * report for PCI (domain, bus, device) and `xid` not taken before that
 * was logged at most `max_age_ms` ago. Waits up to `wait_ms` for it to
 * appear (the kernel log and NVML's event arrive independently). False
 * when there is none.
 */
bool gs_kmsg_take_xid(struct gs_kmsg *k, uint32_t domain, uint32_t bus,
                      uint32_t device, uint64_t xid, int max_age_ms,
                      int wait_ms, struct gs_xid_line *out);

#endif
