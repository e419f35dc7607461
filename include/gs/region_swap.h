/*
 * gs/region_swap.h - a slice's swap record in the shared region: the
 * request word (swap the slice's processes out, or in) that the daemon or
 * `gpuslice swap` writes, and what the slice's shims answer and moved
 * (docs/swap.md). The shims carry requests out (shim/swap.c); the record
 * lives beside the slice's books and goes with them.
 */
#ifndef GS_REGION_SWAP_H
#define GS_REGION_SWAP_H

#include <stdbool.h>
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
/* As gs_region_swap_poll, after sleeping at most `ns` while the request
 * is still `seen` (a new request wakes it at once). */
gs_err gs_region_swap_poll_wait(struct gs_region *r,
                                const struct gs_proc_ref *p, uint32_t seen,
                                uint64_t ns, enum gs_swap_verb *verb,
                                uint32_t *seq);
/* For whoever asked: sleeps at most `ns` while slice `s`'s request `seq`
 * is unanswered (an answer wakes it at once; read the record after). */
gs_err gs_region_swap_answer_wait(struct gs_region *r,
                                  const struct gs_slice_ref *s, uint32_t seq,
                                  uint64_t ns);
/* Answers request `seq` (verb `verb`): `result`, `bytes` moved (added to
 * the swapped bytes on a swap-out, taken off on a swap-in), `pin` (kept
 * once set), at `now_ns` (CLOCK_REALTIME). */
gs_err gs_region_swap_answer(struct gs_region *r, const struct gs_proc_ref *p,
                             uint32_t seq, enum gs_swap_verb verb,
                             gs_err result, uint64_t bytes,
                             enum gs_swap_pin pin, uint64_t now_ns);

/* ---- a process's need for GPU memory ---------------------------------
 *
 * Memory on demand (docs/swap.md): a process of a slice that may swap and
 * is short of GPU memory (the driver refused an allocation for lack of
 * memory, or its memory is swapped out and a GPU call waits for it)
 * posts a need in its own process entry: how many more bytes it wants on
 * which GPU, 0 for its swapped contents back only. The daemon serves a
 * pending need (seq != ack) by swapping others out as the policy allows
 * (gs/swap.h) and answers it: GS_OK (room was made: try again),
 * GS_ERR_NO_FIT (swapping cannot help: out of memory, as without swap),
 * GS_ERR_BUSY (not within the daemon's wait). A newer need replaces an
 * unanswered one; an answer to an older one is dropped. The process also
 * stamps its GPU calls (active_ns), which the daemon counts as activity.
 *
 *     shim: gs_region_swap_need --> seq        daemon: gs_region_swap_need_next
 *           gs_region_swap_need_result <-- ack = seq, result  <-- ..._need_answer
 */
/* gs_swap_need.flags: the process holds movable memory (its shim answers
 * swap requests); a slice none of whose processes does has nothing that
 * a swap-out would move. */
#define GS_SWAP_PROC_MOVABLE 1u

struct gs_swap_need {
	struct gs_proc_ref proc;
	struct gs_slice_ref slice;
	int owner; /* the owner file it is in (one per uid): who asked */
	int32_t pid;
	uint32_t seq, ack;  /* pending while they differ */
	gs_err result;      /* of the last answer */
	int dev;            /* region device index */
	uint64_t bytes;     /* more bytes wanted; 0: come back in */
	uint64_t active_ns; /* CLOCK_REALTIME of its last stamped call; 0 */
	uint32_t flags;     /* GS_SWAP_PROC_* */
};

/* For a process's shim: posts a need of `bytes` more on region device
 * `dev` (0: its swapped contents back), at `now_ns` (CLOCK_REALTIME,
 * also stamped as activity). OUT: *seq, the need's number. */
gs_err gs_region_swap_need(struct gs_region *r, const struct gs_proc_ref *p,
                           int dev, uint64_t bytes, uint64_t now_ns,
                           uint32_t *seq);
/* For a process's shim: whether need `seq` is answered. OUT: *answered,
 * *result (when answered). */
gs_err gs_region_swap_need_result(struct gs_region *r,
                                  const struct gs_proc_ref *p, uint32_t seq,
                                  bool *answered, gs_err *result);
/* As gs_region_swap_need_result, after sleeping at most `ns` while need
 * `seq` is unanswered (the daemon's answer wakes it at once). */
gs_err gs_region_swap_need_wait(struct gs_region *r,
                                const struct gs_proc_ref *p, uint32_t seq,
                                uint64_t ns, bool *answered, gs_err *result);
/*
 * How long a process waits for the answer to a need of more memory
 * before it answers out-of-memory (a parked slice's processes wait on):
 * a node setting (gpusliced's swap.need_wait), written by the region's
 * creator into its limits and every view of them, read by each process
 * at each need. GS_REGION_NEED_WAIT_MS_DEFAULT where none was written.
 */
#define GS_REGION_NEED_WAIT_MS_DEFAULT 30000u
#define GS_REGION_NEED_WAIT_MS_MAX     3600000u
/* For the region's creator: sets it (1..GS_REGION_NEED_WAIT_MS_MAX ms).
 * GS_ERR_RANGE outside it, GS_ERR_PERM where the limits are not this
 * handle's to write; on error the setting is unchanged. */
gs_err gs_region_set_need_wait(struct gs_region *r, uint32_t wait_ms,
                               struct gs_errbuf *eb);
/* The setting, in nanoseconds (no lock; a plain word). */
uint64_t gs_region_need_wait_ns(struct gs_region *r);
/* Wakes the daemon's swapper to look at the needs now (posting a need
 * does it; a process whose need is not yet taken up rings again, in case
 * the swapper was between its look and its sleep). Anyone may ring: the
 * swapper bounds what ringing costs it. */
void gs_region_swap_bell(struct gs_region *r);
/* For the daemon's swapper: sleeps at most `ns`, or until rung. */
void gs_region_swap_bell_wait(struct gs_region *r, uint64_t ns);
/* For a process's shim: it holds movable memory (GS_SWAP_PROC_MOVABLE). */
gs_err gs_region_swap_movable(struct gs_region *r,
                              const struct gs_proc_ref *p);
/* For a process's shim: stamps a GPU call at `now_ns` (CLOCK_REALTIME). */
gs_err gs_region_swap_active(struct gs_region *r, const struct gs_proc_ref *p,
                             uint64_t now_ns);
/*
 * For the daemon: iterates over the live processes' need records (start
 * with it->slot = -1, which also looks for owner files made since the
 * last look, or GS_REGION_NEED_NO_SCAN, which does not: for frequent
 * polls; false when there are no more). Only a process whose owner file
 * serves its slice is listed (a tenant cannot post a need for another
 * tenant's slice). OUT: *it, *out.
 */
#define GS_REGION_NEED_NO_SCAN (-2)
bool gs_region_swap_need_next(struct gs_region *r, struct gs_proc_ref *it,
                              struct gs_swap_need *out);
/* For the daemon: answers process `p`'s need `seq` with `result` (dropped
 * when the process posted a newer one or is gone: GS_ERR_NOT_FOUND). */
gs_err gs_region_swap_need_answer(struct gs_region *r,
                                  const struct gs_proc_ref *p, uint32_t seq,
                                  gs_err result);

#endif
