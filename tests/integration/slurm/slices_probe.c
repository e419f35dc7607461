/*
 * slices_probe.c - gs-slurm-slices DIR: every live slice of the shared
 * region in DIR, one JSON line each, with its limits and how many
 * processes (and of them slurmstepd runners) are attached:
 *
 *   {"name":"slurm-3","mem_limit":4294967296,"compute_pct":30,
 *    "priority":1,"mode":0,"flags":1,"n_procs":2,"runners":1}
 *
 * Reads as a tenant and reaps nothing, so a test sees the region exactly
 * as the plugin left it. Prints nothing when the region does not exist.
 * Exit 0, 1 when the region exists but cannot be read.
 */
#include <stdio.h>
#include <sys/stat.h>

#include "gs/region.h"

int main(int argc, char **argv)
{
	struct gs_slice_ref it = {.slot = -1};
	char path[GS_REGION_DIR_MAX + 16];
	struct gs_region *r;
	struct stat st;

	if (argc != 2) {
		fprintf(stderr, "usage: gs-slurm-slices DIR\n");
		return 2;
	}
	(void)snprintf(path, sizeof(path), "%s/%s", argv[1],
	               GS_REGION_LIMITS_FILE);
	if (stat(path, &st) != 0)
		return 0;
	if (gs_region_open(argv[1], GS_REGION_TENANT, &r, NULL) != GS_OK)
		return 1;
	while (gs_region_slice_next(r, &it)) {
		struct gs_slice_limits lim;
		struct gs_proc_ref p = {.slot = -1};
		struct gs_proc_info info;
		unsigned n = 0, runners = 0;

		if (gs_region_slice_limits(r, &it, &lim) != GS_OK)
			continue;
		while (gs_region_proc_next(r, &p, &info)) {
			if (info.slice.slot != it.slot ||
			    info.slice.generation != it.generation)
				continue;
			n++;
			if (info.flags & GS_PROC_RUNNER)
				runners++;
		}
		printf("{\"name\":\"%s\",\"mem_limit\":%llu,\"compute_pct\":%u,"
		       "\"priority\":%u,\"mode\":%u,\"flags\":%u,"
		       "\"n_procs\":%u,\"runners\":%u}\n",
		       lim.name, (unsigned long long)lim.mem_limit,
		       lim.compute_pct, lim.priority, lim.mode, lim.flags, n,
		       runners);
	}
	gs_region_close(r);
	return 0;
}
