/*
 * gs/region_swap.h - a slice's swap record in the shared region: the
 * request word (swap the slice's processes out, or in) that the daemon or
 * `gpuslice swap` writes, and what the slice's shims answer and moved
 * (docs/swap.md). The shims carry requests out (shim/swap.c); the record
 * lives beside the slice's books and goes with them.
 */
#ifndef GS_REGION_SWAP_H
#define GS_REGION_SWAP_H

#include <stdint.h>

#include "gs/err.h"
#include "gs/region.h"

enum gs_swap_verb {
	GS_SWAP_VERB_NONE = 0,
	GS_SWAP_VERB_OUT = 1,
	GS_SWAP_VERB_IN = 2,
};

/* Why a slice's memory cannot move (the first reason its shim saw). */
enum gs_swap_pin {
	GS_SWAP_PIN_NONE = 0,
	GS_SWAP_PIN_IPC_EXPORT = 1, /* cuIpcGetMemHandle */
	GS_SWAP_PIN_IPC_IMPORT = 2, /* cuIpcOpenMemHandle */
	GS_SWAP_PIN_PEER = 3,       /* cuCtxEnablePeerAccess */
	GS_SWAP_PIN_GRAPH_MEM = 4,  /* cuGraphAddMemAllocNode */
};

/* The pin's words for show and errors ("" for none). */
const char *gs_swap_pin_reason(enum gs_swap_pin pin);

struct gs_swap_rec {
	uint32_t req_seq;
	enum gs_swap_verb req_verb;
	uint32_t ack_seq; /* == req_seq once answered */
	gs_err result;    /* of the last answer */
	enum gs_swap_pin pinned;
	uint64_t swapped_bytes; /* in host memory now */
	uint32_t swap_outs, swap_ins;
	uint64_t last_out_ns, last_in_ns; /* CLOCK_REALTIME; 0: never */
};

/* Asks slice `s`'s processes to swap out or in. OUT: *seq, the request's
 * number (its answer has ack_seq == *seq). GS_ERR_NOT_FOUND: no such
 * slice, or its books are not this handle's to write. */
gs_err gs_region_swap_request(struct gs_region *r,
                              const struct gs_slice_ref *s,
                              enum gs_swap_verb verb, uint32_t *seq);
/* Reads slice `s`'s swap record. OUT: *out (zero when it has no books
 * yet). */
gs_err gs_region_swap_read(struct gs_region *r, const struct gs_slice_ref *s,
                           struct gs_swap_rec *out);

/* For a process's shim: its slice's request. OUT: *verb, *seq. */
gs_err gs_region_swap_poll(struct gs_region *r, const struct gs_proc_ref *p,
                           enum gs_swap_verb *verb, uint32_t *seq);
/* Answers request `seq` (verb `verb`): `result`, `bytes` moved (added to
 * the swapped bytes on a swap-out, taken off on a swap-in), `pin` (kept
 * once set), at `now_ns` (CLOCK_REALTIME). */
gs_err gs_region_swap_answer(struct gs_region *r, const struct gs_proc_ref *p,
                             uint32_t seq, enum gs_swap_verb verb,
                             gs_err result, uint64_t bytes,
                             enum gs_swap_pin pin, uint64_t now_ns);

#endif
