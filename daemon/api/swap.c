/*
 * swap.c - a slice's swap figures as the API shows them (the "swap"
 * object of GET /v1/slices/NAME, docs/api.md, docs/swap.md).
 *
 * Promised is the slice's memory cap; swapped what its processes hold in
 * host memory (gs_slice_swap, copied from the slice's swap record in the
 * region, which its shims write); resident the rest. The shims move
 * memory when asked: by the daemon's swapper (swapper.c, which also
 * keeps the time its moves took) or by hand (`gpuslice swap`).
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
	json_object_set_new(o, "swap_out_seconds_total",
	                    json_real((double)s->swap.out_ns_total / 1e9));
	json_object_set_new(o, "swap_in_seconds_total",
	                    json_real((double)s->swap.in_ns_total / 1e9));
	json_object_set_new(o, "last_swap_out_seconds",
	                    s->swap.last_out_took_ns
	                        ? json_real((double)s->swap.last_out_took_ns / 1e9)
	                        : json_null());
	json_object_set_new(o, "last_swap_in_seconds",
	                    s->swap.last_in_took_ns
	                        ? json_real((double)s->swap.last_in_took_ns / 1e9)
	                        : json_null());
	json_object_set_new(
	    o, "mechanism",
	    json_string("daemon: idle slices swapped out, processes' needs served (docs/swap.md); gpuslice swap moves memory by hand"));
	return o;
}
