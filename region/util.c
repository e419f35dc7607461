/*
 * util.c - the region's small helpers: clocks, the boot id, random ids,
 * a process's start time and pid namespace, the checks of slice names,
 * references and limits every entry point makes, and the file calls
 * region/ makes its files with (each a fault-injection site, see
 * include/gs/faultinj.h: "region.open", "region.create",
 * "region.truncate", "region.map", "region.publish").
 *
 * The bottom of region/: calls nothing else here. Nothing in region/
 * writes to stdout or stderr, exits, or installs signal handlers: the
 * shim links it into other people's programs.
 */
#include "region_int.h"

#include "gs/faultinj.h"
#include "gs/proc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the file calls, each a fault-injection site ----------------------- */

int gs__file_open(const char *path, int flags, mode_t mode)
{
	const char *site = flags & O_CREAT ? "region.create" : "region.open";

	if (gs_fault_hit(site)) {
		errno = EIO;
		return -1;
	}
	return open(path, flags, mode);
}

int gs__file_mkdir(const char *path, mode_t mode)
{
	if (gs_fault_hit("region.create")) {
		errno = EIO;
		return -1;
	}
	return mkdir(path, mode);
}

int gs__file_truncate(int fd, off_t size)
{
	if (gs_fault_hit("region.truncate")) {
		errno = ENOSPC;
		return -1;
	}
	return ftruncate(fd, size);
}

void *gs__file_map(size_t size, int prot, int fd)
{
	if (gs_fault_hit("region.map")) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	return mmap(NULL, size, prot, MAP_SHARED, fd, 0);
}

int gs__file_publish(const char *from, const char *to)
{
	if (gs_fault_hit("region.publish")) {
		errno = EIO;
		return -1;
	}
	return rename(from, to);
}

uint64_t gs__mono_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t gs__real_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t fnv1a(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint64_t gs__boot_id(void)
{
	char buf[64];
	ssize_t n;
	int fd =
	    open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 1;
	n = read(fd, buf, sizeof(buf));
	(void)close(fd);
	if (n <= 0)
		return 1;
	return fnv1a(buf, (size_t)n);
}

uint64_t gs__random_u64(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = gs__real_ns() ^ ((uint64_t)getpid() << 32);
	return v ? v : 1;
}

uint64_t gs__pidns_of(int32_t pid)
{
	char path[64], link[64];
	ssize_t n;
	const char *p;

	if (pid > 0)
		(void)snprintf(path, sizeof(path), "/proc/%d/ns/pid", pid);
	else
		(void)snprintf(path, sizeof(path), "/proc/self/ns/pid");
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	p = strchr(link, '[');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* Field 3 (state) and 22 (start time) of /proc/<pid>/stat (gs/proc.h);
 * false when the process is gone. */
static bool pid_stat(int32_t pid, char *state, uint64_t *start)
{
	return gs_proc_stat(pid, state, NULL, start);
}

uint64_t gs_region_pid_start_time(int32_t pid)
{
	char st;
	uint64_t start;

	return pid_stat(pid, &st, &start) ? start : 0;
}

bool gs_region_pid_alive(int32_t pid, uint64_t start_time)
{
	char st;
	uint64_t start;

	if (!pid_stat(pid, &st, &start))
		return false;
	if (st == 'Z' || st == 'X' || st == 'x')
		return false;
	return start == start_time;
}

static bool name_ok(const char *s)
{
	size_t n = strnlen(s, GS_REGION_NAME_MAX);

	if (n == 0 || n >= GS_REGION_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return false;
	}
	return true;
}

bool gs__ref_ok(const struct gs_slice_ref *ref)
{
	return ref != NULL && ref->slot >= 0 &&
	       ref->slot < GS_REGION_MAX_SLICES;
}

void gs_slice_limits_init(struct gs_slice_limits *lim, const char *name)
{
	memset(lim, 0, sizeof(*lim));
	if (name != NULL)
		(void)snprintf(lim->name, sizeof(lim->name), "%s", name);
	lim->priority = GS_REGION_PRIO_NORMAL;
	lim->weight = 1;
	lim->mode = GS_REGION_COMPUTE_STRICT;
	lim->owner_uid = (uint32_t)geteuid();
}

gs_err gs__limits_check(const struct gs_slice_limits *lim, struct gs_errbuf *eb)
{
	if (!name_ok(lim->name))
		return gs_fail(eb, GS_ERR_INVALID,
		               "slice name must be 1..63 of [A-Za-z0-9._-]");
	if (lim->compute_pct > 100)
		return gs_fail(eb, GS_ERR_RANGE,
		               "compute must be 0..100, got %u",
		               lim->compute_pct);
	if (lim->priority > GS_REGION_PRIO_HIGH)
		return gs_fail(eb, GS_ERR_RANGE, "priority out of range: %u",
		               lim->priority);
	if (lim->weight < 1 || lim->weight > 1000)
		return gs_fail(eb, GS_ERR_RANGE,
		               "weight must be 1..1000, got %u", lim->weight);
	if (lim->mode > GS_REGION_COMPUTE_SHARE)
		return gs_fail(eb, GS_ERR_RANGE,
		               "compute mode out of range: %u", lim->mode);
	return GS_OK;
}
