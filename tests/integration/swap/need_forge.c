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
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "region_int.h"

#include "forge_need.h"

int main(int argc, char **argv)
{
	struct gs_ro_file *ro;
	struct gs_ru_proc *p;

	if (argc != 6) {
		fprintf(stderr, "usage: %s DIR SLOT GEN BYTES SEC\n", argv[0]);
		return 2;
	}
	p = forge_need(argv[1], atoi(argv[2]), strtoull(argv[3], NULL, 10),
	               strtoull(argv[4], NULL, 10), 1, &ro);
	if (p == NULL)
		return 1;
	printf("posted slot %d\n", (int)(p - ro->proc));
	fflush(stdout);
	sleep((unsigned)atoi(argv[5]));
	p->state = GS_RU_PROC_FREE;
	return 0;
}
