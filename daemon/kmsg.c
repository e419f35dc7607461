/*
 * kmsg.c - reading Xid reports from the kernel log (see kmsg.h).
 *
 * /dev/kmsg hands out one record per read() and starts at the oldest
 * record, so the reader seeks to the end at open; a plain file is read in
 * chunks and split into lines. Recent Xid reports are kept in a small
 * ring with the time they were read.
 */
#include "kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RING 64

struct rec {
	struct gs_xid_line x;
	int64_t t_ms;
	bool taken;
};

struct gs_kmsg {
	char path[256];
	int fd;
	bool is_dev; /* record-oriented (/dev/kmsg) */
	char buf[8192];
	size_t len; /* partial line carried over (files) */
	struct rec ring[RING];
	int next;
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Opens the log; `at_end`: skip what is there (what was logged before
 * gs_kmsg_open). A file that did not exist then is read from its start. */
static void try_open(struct gs_kmsg *k, bool at_end)
{
	struct stat st;

	if (k->fd >= 0)
		return;
	k->fd = open(k->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (k->fd < 0)
		return;
	k->is_dev = fstat(k->fd, &st) == 0 && S_ISCHR(st.st_mode);
	if (at_end || k->is_dev)
		(void)lseek(k->fd, 0, SEEK_END);
}

gs_err gs_kmsg_open(const char *path, struct gs_kmsg **out,
                    struct gs_errbuf *eb)
{
	struct gs_kmsg *k = calloc(1, sizeof(*k));

	if (k == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	if (snprintf(k->path, sizeof(k->path), "%s", path) >=
	    (int)sizeof(k->path)) {
		free(k);
		return gs_fail(eb, GS_ERR_RANGE, "kernel log path too long");
	}
	k->fd = -1;
	try_open(k, true);
	if (k->fd < 0 && errno != ENOENT) {
		int e = errno;

		free(k);
		return gs_fail(eb, e == EACCES || e == EPERM ? GS_ERR_PERM
		                                             : GS_ERR_IO,
		               "kernel log %s: %s", path, strerror(e));
	}
	*out = k;
	return GS_OK;
}

void gs_kmsg_close(struct gs_kmsg *k)
{
	if (k == NULL)
		return;
	if (k->fd >= 0)
		(void)close(k->fd);
	free(k);
}

static void keep(struct gs_kmsg *k, const char *line)
{
	struct gs_xid_line x;

	if (!gs_xid_line_parse(line, &x))
		return;
	k->ring[k->next] = (struct rec){.x = x, .t_ms = mono_ms()};
	k->next = (k->next + 1) % RING;
}

static void drain(struct gs_kmsg *k)
{
	try_open(k, false);
	if (k->fd < 0)
		return;
	for (int i = 0; i < 4096; i++) {
		ssize_t n;

		if (k->is_dev) {
			char rec[4096];

			n = read(k->fd, rec, sizeof(rec) - 1);
			if (n < 0 && errno == EPIPE)
				continue; /* records overwritten: go on */
			if (n <= 0)
				return;
			rec[n] = '\0';
			keep(k, rec);
			continue;
		}
		n = read(k->fd, k->buf + k->len, sizeof(k->buf) - 1 - k->len);
		if (n <= 0)
			return;
		k->len += (size_t)n;
		k->buf[k->len] = '\0';
		{
			char *s = k->buf, *nl;

			while ((nl = strchr(s, '\n')) != NULL) {
				*nl = '\0';
				keep(k, s);
				s = nl + 1;
			}
			k->len = strlen(s);
			memmove(k->buf, s, k->len + 1);
			if (k->len == sizeof(k->buf) - 1)
				k->len = 0; /* a line longer than the buffer */
		}
	}
}

bool gs_kmsg_take_xid(struct gs_kmsg *k, uint32_t domain, uint32_t bus,
                      uint32_t device, uint64_t xid, int max_age_ms,
                      int wait_ms, struct gs_xid_line *out)
{
	int64_t deadline = mono_ms() + wait_ms;

	if (k == NULL)
		return false;
	for (;;) {
		int64_t now = mono_ms();
		struct rec *best = NULL;

		drain(k);
		for (int i = 0; i < RING; i++) {
			struct rec *r = &k->ring[i];

			if (r->t_ms == 0 || r->taken ||
			    now - r->t_ms > max_age_ms || r->x.xid != xid ||
			    r->x.pci_domain != domain || r->x.pci_bus != bus ||
			    r->x.pci_device != device)
				continue;
			if (best == NULL || r->t_ms > best->t_ms)
				best = r;
		}
		if (best != NULL) {
			best->taken = true;
			*out = best->x;
			return true;
		}
		if (now >= deadline)
			return false;
		(void)usleep(20000);
	}
}
