/*
 * bell_ring.c - gs-swap-bell-ring: a tenant that asks for memory and rings
 * the daemon's swap bell in a loop, for the test that checks it costs the
 * daemon little and delays no other tenant:
 *
 *   gs-swap-bell-ring DIR SLOT GEN BYTES SEC
 *
 * adds a live process entry (this process) to the caller's own owner
 * file, DIR/usage.<euid>, for slice SLOT of generation GEN, then for SEC
 * seconds keeps a need of BYTES pending (posts the next one, need_seq
 * bumped without the region's lock as an attacker would, as soon as the
 * last is answered) and rings the bell in the shared file DIR/usage
 * (mapped read-only: FUTEX_WAKE needs no write access) as fast as it
 * can; frees the entry. Prints one JSON line: rings, the
 * answers the daemon wrote (need_ack changes seen) and the seconds.
 * Exit 1 when a file cannot be had, 2 on usage.
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "region_int.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *map(const char *path, size_t size, int prot)
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

int main(int argc, char **argv)
{
	char path[4096];
	struct gs_ro_file *ro;
	struct gs_ru_file *ru;
	struct gs_ru_proc *p = NULL;
	struct timespec ts;
	unsigned long rings = 0, answers = 0;
	double t0, sec;

	if (argc != 6) {
		fprintf(stderr, "usage: %s DIR SLOT GEN BYTES SEC\n", argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/%s", argv[1], GS_REGION_USAGE_FILE);
	ru = map(path, sizeof(*ru), PROT_READ);
	snprintf(path, sizeof(path), "%s/%s.%u", argv[1], GS_REGION_USAGE_FILE,
	         (unsigned)geteuid());
	ro = map(path, sizeof(*ro), PROT_READ | PROT_WRITE);
	if (ru == NULL || ro == NULL)
		return 1;
	for (int i = 0; i < GS_REGION_MAX_PROCS && p == NULL; i++)
		if (ro->proc[i].state == GS_RU_PROC_FREE)
			p = &ro->proc[i];
	if (p == NULL) {
		fprintf(stderr, "process table full\n");
		return 1;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	p->generation++;
	p->pid = getpid();
	p->slice = atoi(argv[2]);
	p->slice_gen = strtoull(argv[3], NULL, 10);
	p->uid = (uint32_t)geteuid();
	p->need_dev = 0;
	p->need_bytes = strtoull(argv[4], NULL, 10);
	p->need_ack = 0;
	p->need_seq = 0;
	p->active_ns =
	    (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	p->state = GS_RU_PROC_LIVE;
	sec = atof(argv[5]);
	__atomic_store_n(&p->need_seq, 1, __ATOMIC_RELEASE);
	for (t0 = now_s(); now_s() - t0 < sec;) {
		/* answered: count it and ask again at once */
		if (__atomic_load_n(&p->need_ack, __ATOMIC_ACQUIRE) ==
		    p->need_seq) {
			answers++;
			__atomic_store_n(&p->need_seq, p->need_seq + 1,
			                 __ATOMIC_RELEASE);
		}
		(void)syscall(SYS_futex, &ru->h.swap_bell, FUTEX_WAKE, INT_MAX,
		              NULL, NULL, 0);
		rings++;
	}
	p->state = GS_RU_PROC_FREE;
	printf("{\"rings\": %lu, \"answers\": %lu, \"seconds\": %.3f}\n", rings,
	       answers, now_s() - t0);
	return 0;
}
