/*
 * oversub.c - declared oversubscription: how much memory admission may
 * promise on one GPU when swap.oversubscribe is above 1 (gs/swap.h).
 *
 * Promised memory may reach ratio x physical, but only memory that can
 * leave the GPU makes up the excess: the slices with swap: never, plus
 * the largest slice that can swap, must fit the physical memory, so that
 * whichever swappable slice becomes active can be brought in beside the
 * ones that never leave (the policy's rule 4 then always has an answer).
 *
 * Pure: no I/O, clock, globals or allocation.
 */
#include <inttypes.h>
#include <stdio.h>

#include "gs/swap.h"

uint64_t gs_swap_oversub_capacity(uint64_t physical, double ratio,
                                  const struct gs_swap_gpu_load *load,
                                  uint64_t req_bytes, bool req_never, char *why,
                                  size_t why_size)
{
	uint64_t never = load->never, largest = load->largest_swappable;
	double cap;

	if (why && why_size)
		why[0] = '\0';
	if (!(ratio > 1.0))
		return physical;
	if (req_never)
		never += req_bytes;
	else if (req_bytes > largest)
		largest = req_bytes;
	if (never + largest > physical) {
		if (why && why_size)
			snprintf(
			    why, why_size,
			    "slices that cannot swap (%" PRIu64
			    " MiB) and the largest that can (%" PRIu64
			    " MiB) would be over the GPU's %" PRIu64
			    " MiB; only swap: allow memory is oversubscribed",
			    never >> 20, largest >> 20, physical >> 20);
		return load->promised;
	}
	cap = (double)physical * ratio;
	if (cap >= 18446744073709551615.0)
		return UINT64_MAX;
	return (uint64_t)cap; /* rounds down */
}
