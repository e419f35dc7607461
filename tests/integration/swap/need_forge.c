/*
 * need_forge.c - gs-swap-need-forge: what a hostile tenant can write of
 * the need protocol (gs/region_swap.h) with its own hands, for the test
 * that checks it moves nobody else's memory:
 *
 *   gs-swap-need-forge DIR SLOT GEN BYTES SEC
 *
 * adds a live process entry (this process) to the caller's own owner
 * file, DIR/usage.<euid>, claiming slice SLOT of generation GEN (any
 * slice, another tenant's included) and a pending need of BYTES on
 * device 0, stamped active now; keeps it for SEC seconds, then frees
 * it. Writes without the region's lock, as an attacker would. Prints
 * "posted slot N". Exit 1 when the file cannot be had, 2 on usage.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "region_int.h"

int main(int argc, char **argv)
{
	char path[4096];
	struct gs_ro_file *ro;
	struct gs_ru_proc *p = NULL;
	struct timespec ts;
	struct stat st;
	int fd, i;

	if (argc != 6) {
		fprintf(stderr, "usage: %s DIR SLOT GEN BYTES SEC\n", argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/%s.%u", argv[1], GS_REGION_USAGE_FILE,
	         (unsigned)geteuid());
	fd = open(path, O_RDWR);
	if (fd < 0 || fstat(fd, &st) != 0 ||
	    (size_t)st.st_size < sizeof(*ro)) {
		perror(path);
		return 1;
	}
	ro = mmap(NULL, sizeof(*ro), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (ro == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (i = 0; i < GS_REGION_MAX_PROCS && p == NULL; i++)
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
	p->need_seq = 1;
	p->active_ns =
	    (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	p->state = GS_RU_PROC_LIVE;
	printf("posted slot %d\n", (int)(p - ro->proc));
	fflush(stdout);
	sleep((unsigned)atoi(argv[5]));
	p->state = GS_RU_PROC_FREE;
	return 0;
}
