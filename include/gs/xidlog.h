/*
 * xidlog.h - the NVIDIA driver's Xid reports as the kernel log carries
 * them, e.g. (one line; /dev/kmsg prefixes "6,812,49131,-;", syslog a date
 * and host):
 *
 *   NVRM: Xid (PCI:0000:3b:00): 31, pid=4242, name=python3, Ch 00000008, ...
 *   NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.
 *   NVRM: Xid (PCI:0000:3b:00): 74, pid=<unknown>, name=<unknown>, NVLink: ...
 *
 * Older drivers print no pid at all. NVML's Xid events carry no process,
 * so this line is where a real node says whose work faulted. Pure: no I/O.
 */
#ifndef GS_XIDLOG_H
#define GS_XIDLOG_H

#include <stdbool.h>
#include <stdint.h>

struct gs_xid_line {
	uint32_t pci_domain, pci_bus, pci_device;
	uint64_t xid;
	int32_t pid;   /* -1: not given or <unknown>; 0: the driver's own */
	char name[32]; /* "" when not given */
};

/* Parses one kernel-log line; false when it is not an Xid report. */
bool gs_xid_line_parse(const char *line, struct gs_xid_line *out);

#endif
