/*
 * region_probe.c - gs-region-probe DIR SLICE: a slice's books as the shared
 * region holds them, read without reaping anything (so a test can see
 * when a dead process's share came back, and who gave it back).
 *
 * Prints one JSON line: found, mem_used, mem_peak, n_procs, busy_ns,
 * throttled_ns, launches, and devs: the UUIDs of the GPUs the slice has
 * books on. Exit 0, or 1 when the region cannot be opened.
 */
#include <stdio.h>

#include "gs/region.h"

int main(int argc, char **argv)
{
	struct gs_region *r;
	struct gs_slice_ref s;
	struct gs_slice_usage u = {0};
	bool found;

	if (argc != 3) {
		fprintf(stderr, "usage: gs-region-probe DIR SLICE\n");
		return 2;
	}
	if (gs_region_open(argv[1], GS_REGION_TENANT, &r, NULL) != GS_OK) {
		printf("{\"found\":false}\n");
		return 1;
	}
	found = gs_region_slice_find(r, argv[2], &s) == GS_OK &&
	        gs_region_slice_usage(r, &s, &u) == GS_OK;
	printf("{\"found\":%s,\"mem_used\":%llu,\"mem_peak\":%llu,"
	       "\"n_procs\":%u,\"busy_ns\":%llu,\"throttled_ns\":%llu,"
	       "\"launches\":%llu,\"devs\":[",
	       found ? "true" : "false", (unsigned long long)u.mem_used,
	       (unsigned long long)u.mem_peak, u.n_procs,
	       (unsigned long long)u.busy_ns,
	       (unsigned long long)u.throttled_ns,
	       (unsigned long long)u.launches);
	for (uint32_t d = 0; d < u.n_dev; d++)
		printf("%s\"%s\"", d ? "," : "", u.dev[d].uuid);
	printf("]}\n");
	gs_region_close(r);
	return 0;
}
