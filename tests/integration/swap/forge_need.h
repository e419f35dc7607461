/*
 * forge_need.h - what the hostile-tenant programs (gs-swap-need-forge,
 * gs-swap-bell-ring) do with their own hands before anything else: open
 * the region as a tenant may (the caller's own owner file writable, the
 * shared file read-only) and post a need in a process entry they fill in
 * themselves, without the region's lock, as an attacker would. Include
 * once per program, after region_int.h.
 */
#ifndef GS_TEST_SWAP_FORGE_NEED_H
#define GS_TEST_SWAP_FORGE_NEED_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Maps the first `size` bytes of `path` (shared; writable when `prot`
 * says so). NULL, the reason on stderr, when it is shorter or cannot be
 * had. */
static void *forge_map(const char *path, size_t size, int prot)
{
	struct stat st;
	void *p;
	int fd = open(path, prot & PROT_WRITE ? O_RDWR : O_RDONLY);

	if (fd < 0 || fstat(fd, &st) != 0 || (size_t)st.st_size < size) {
		perror(path);
		return NULL;
	}
	p = mmap(NULL, size, prot, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		perror("mmap");
		return NULL;
	}
	return p;
}

/*
 * Takes a free process entry in the caller's own owner file, DIR/usage.
 * <euid>, and makes it live for this process: slice `slot` of generation
 * `gen` (any slice, another tenant's included), a need of `bytes` on
 * device 0 numbered `seq` (0: none posted yet), stamped active now.
 * NULL, the reason on stderr, when the file or a free entry cannot be
 * had. OUT: *out_ro, the mapped file.
 */
static struct gs_ru_proc *forge_need(const char *dir, int slot, uint64_t gen,
                                     uint64_t bytes, uint32_t seq,
                                     struct gs_ro_file **out_ro)
{
	char path[4096];
	struct gs_ro_file *ro;
	struct gs_ru_proc *p = NULL;
	struct timespec ts;

	snprintf(path, sizeof(path), "%s/%s.%u", dir, GS_REGION_USAGE_FILE,
	         (unsigned)geteuid());
	ro = forge_map(path, sizeof(*ro), PROT_READ | PROT_WRITE);
	if (ro == NULL)
		return NULL;
	for (int i = 0; i < GS_REGION_MAX_PROCS && p == NULL; i++)
		if (ro->proc[i].state == GS_RU_PROC_FREE)
			p = &ro->proc[i];
	if (p == NULL) {
		fprintf(stderr, "process table full\n");
		return NULL;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	p->generation++;
	p->pid = getpid();
	p->slice = slot;
	p->slice_gen = gen;
	p->uid = (uint32_t)geteuid();
	p->need_dev = 0;
	p->need_bytes = bytes;
	p->need_ack = 0;
	p->need_seq = seq;
	p->active_ns =
	    (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	p->state = GS_RU_PROC_LIVE;
	*out_ro = ro;
	return p;
}

#endif
