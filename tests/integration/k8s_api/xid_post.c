/*
 * xid_post.c - gs-k8s-xid: posts an Xid event on a GPU of the simulated
 * node, as a failing GPU would (the sim's NVML then reports it to
 * gpusliced). For the ResourceSlice health tests.
 *   gs-k8s-xid SIM_DIR GPU XID
 */
#include <stdio.h>
#include <stdlib.h>

#include "gs_sim/state.h"

int main(int argc, char **argv)
{
	struct gs_sim_map *map;
	struct gs_sim_state *st;
	struct gs_errbuf eb = {0};
	gs_err err;

	if (argc != 4) {
		fprintf(stderr, "usage: gs-k8s-xid SIM_DIR GPU XID\n");
		return 2;
	}
	err = gs_sim_state_open(argv[1], &map, &eb);
	if (err) {
		fprintf(stderr, "gs-k8s-xid: %s\n", gs_errbuf_msg(&eb, err));
		return 1;
	}
	st = gs_sim_state_get(map);
	err = gs_sim_lock(st);
	if (err) {
		fprintf(stderr, "gs-k8s-xid: lock: %s\n", gs_strerror(err));
		gs_sim_state_close(map);
		return 1;
	}
	gs_sim_xid_post(st, (uint32_t)atoi(argv[2]), (uint32_t)atoi(argv[3]), 0,
	                0, gs_sim_now_ns());
	gs_sim_unlock(st);
	gs_sim_state_close(map);
	return 0;
}
