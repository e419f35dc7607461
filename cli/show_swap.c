/*
 * show_swap.c - the "swap:" lines of `gpuslice show` (docs/swap.md):
 * the slice's swap mode, where its promised memory is (resident on the
 * GPU, swapped to host memory), its swap counts, the time the daemon's
 * moves of it took (once it made one), and why it cannot swap
 * when something pins it. Prints nothing for a daemon that sends no
 * "swap" object (one from before swap).
 */
#include <stdio.h>

#include "cli.h"
#include "gs/client.h"

void gs_cli_show_swap(json_t *sw)
{
	char res[32], prom[32], swp[32];
	const char *mech, *pinned;

	if (!json_is_object(sw))
		return;
	gs_cli_fmt_bytes(
	    (unsigned long long)gs_client_int(sw, "resident_bytes"), res,
	    sizeof(res));
	gs_cli_fmt_bytes(
	    (unsigned long long)gs_client_int(sw, "promised_bytes"), prom,
	    sizeof(prom));
	gs_cli_fmt_bytes((unsigned long long)gs_client_int(sw, "swapped_bytes"),
	                 swp, sizeof(swp));
	printf(
	    "swap:        %s; %s resident of %s promised, %s swapped; swap-outs %lld, swap-ins %lld\n",
	    gs_client_str(sw, "mode"), res, prom, swp,
	    gs_client_int(sw, "swap_outs"), gs_client_int(sw, "swap_ins"));
	if (json_is_number(json_object_get(sw, "last_swap_out_seconds")) ||
	    json_is_number(json_object_get(sw, "last_swap_in_seconds")))
		printf("             the daemon's moves took %.2f s out, %.2f s in (the last: %.2f s out, %.2f s in)\n",
		       json_number_value(json_object_get(sw, "swap_out_seconds_total")),
		       json_number_value(json_object_get(sw, "swap_in_seconds_total")),
		       json_number_value(json_object_get(sw, "last_swap_out_seconds")),
		       json_number_value(json_object_get(sw, "last_swap_in_seconds")));
	pinned = json_string_value(json_object_get(sw, "pinned"));
	if (pinned)
		printf("             cannot swap: %s\n", pinned);
	mech = json_string_value(json_object_get(sw, "mechanism"));
	if (mech)
		printf("             (swap mechanism %s)\n", mech);
}
