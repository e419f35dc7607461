/*
 * swap.c - a slice's swap figures as the API shows them (the "swap"
 * object of GET /v1/slices/NAME, docs/api.md, docs/swap.md).
 *
 * Promised is the slice's memory cap; swapped what its processes hold in
 * host memory (gs_slice_swap); resident the rest. Until the shim moves
 * memory, swapped is 0 and resident equals promised: the figures are
 * real (read from the slice), there is just nothing moving them yet, and
 * "mechanism" says so, so that a reader never mistakes the 0 for a
 * measurement of a working swap.
 */
#include "api_int.h"

#include "gs/spec.h"

json_t *gs__api_swap_json(const struct gs_slice *s)
{
	json_t *o = json_object();
	uint64_t promised = s->spec.memory_bytes;
	uint64_t swapped = s->swap.swapped_bytes;

	json_object_set_new(o, "mode",
	                    json_string(gs_swap_mode_name(s->spec.swap)));
	json_object_set_new(o, "promised_bytes",
	                    json_integer((json_int_t)promised));
	json_object_set_new(
	    o, "resident_bytes",
	    json_integer(
	        (json_int_t)(promised > swapped ? promised - swapped : 0)));
	json_object_set_new(o, "swapped_bytes",
	                    json_integer((json_int_t)swapped));
	json_object_set_new(o, "swap_outs",
	                    json_integer((json_int_t)s->swap.swap_outs));
	json_object_set_new(o, "swap_ins",
	                    json_integer((json_int_t)s->swap.swap_ins));
	json_object_set_new(o, "last_swap_out_ns",
	                    s->swap.last_out_ns
	                        ? json_integer(s->swap.last_out_ns)
	                        : json_null());
	json_object_set_new(o, "last_swap_in_ns",
	                    s->swap.last_in_ns
	                        ? json_integer(s->swap.last_in_ns)
	                        : json_null());
	json_object_set_new(o, "pinned",
	                    s->swap.pinned[0] ? json_string(s->swap.pinned)
	                                      : json_null());
	json_object_set_new(o, "mechanism",
	                    json_string("not built: nothing is swapped yet"));
	return o;
}
