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
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "region_int.h"

#include "forge_need.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	char path[4096];
	struct gs_ro_file *ro;
	struct gs_ru_file *ru;
	struct gs_ru_proc *p;
	unsigned long rings = 0, answers = 0;
	double t0, sec;

	if (argc != 6) {
		fprintf(stderr, "usage: %s DIR SLOT GEN BYTES SEC\n", argv[0]);
		return 2;
	}
	snprintf(path, sizeof(path), "%s/%s", argv[1], GS_REGION_USAGE_FILE);
	ru = forge_map(path, sizeof(*ru), PROT_READ);
	if (ru == NULL)
		return 1;
	p = forge_need(argv[1], atoi(argv[2]), strtoull(argv[3], NULL, 10),
	               strtoull(argv[4], NULL, 10), 0, &ro);
	if (p == NULL)
		return 1;
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
