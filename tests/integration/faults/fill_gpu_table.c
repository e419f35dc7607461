/*
 * fill_gpu_table.c - gs-fill-gpu-table DIR: makes (or joins, as its
 * creator) the region in DIR and fills its GPU table with made-up GPUs,
 * so that the next GPU a process meets can be given no slot there. Exit
 * 0 when the table is full, 1 otherwise.
 */
#include <stdio.h>

#include "gs/region.h"

int main(int argc, char **argv)
{
	struct gs_region *r;
	char uuid[GS_REGION_UUID_MAX];
	int d, n = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: gs-fill-gpu-table DIR\n");
		return 2;
	}
	if (gs_region_open(argv[1], GS_REGION_RUNNER, &r, NULL) != GS_OK) {
		fprintf(stderr, "gs-fill-gpu-table: cannot open %s\n", argv[1]);
		return 1;
	}
	for (int i = 0; i < GS_REGION_MAX_DEVICES + 1; i++) {
		(void)snprintf(uuid, sizeof(uuid),
		               "GPU-00000000-0000-0000-0000-%012d", i);
		d = gs_region_device(r, uuid, 1ULL << 30);
		if (d >= 0)
			n++;
	}
	gs_region_close(r);
	printf("{\"registered\":%d,\"last\":%d}\n", n, d);
	return d < 0 ? 0 : 1;
}
