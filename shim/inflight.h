/*
 * inflight.h - a thread's launches and gated calls in the driver: the
 * mark each launch hook (launch.c) and each gated call (gate.c) sets
 * before it tests the gate and the swap stop and takes back once the
 * driver returned, and the list of every thread's mark that a swap-out
 * waits on (swap.c, which owns the list: see its "Launches and the
 * stop"). Private to the shim; launch.c, gate.c and swap.c include it.
 */
#ifndef GS_SHIM_INFLIGHT_H
#define GS_SHIM_INFLIGHT_H

#include "shim_int.h"

/*
 * A thread's launches in the driver: `n` counts its launch calls (and
 * gate.c's gated calls: copies, memsets, event and stream calls) between
 * their test of the stop and their return from the driver, so that a
 * swap-out, after raising the stop, waits for the calls already past it
 * before it drains (no kernel is queued, and no copy lands, onto memory
 * being moved).
 * Only its thread writes `n`, with plain stores ordered by a compiler
 * barrier; the swap-out's membarrier(2) makes every thread's order hold
 * for it (swap.c, quiesce). `reg`: on swap.c's list of threads.
 */
struct gs__lin {
	uint32_t n;
	bool reg;
	struct gs__lin *next; /* swap.c's list, under its lock */
};
extern __thread struct gs__lin gs__lin_tls
    __attribute__((tls_model("initial-exec")));
/* Puts the calling thread on the list (once; it leaves it at its exit).
 * False when it could not (no memory): its launches are refused. */
bool gs__lin_register(void);

/* The gate test. The stop is tested on its own too: a concurrent
 * gs__fast_update may have pointed fast_gate back at a device's gate
 * after the swap-out raised the stop. */
static inline bool gs__launch_fast(void)
{
	const uint32_t *g = __atomic_load_n(&gs__g.fast_gate, __ATOMIC_ACQUIRE);

	return ((__atomic_load_n(g, __ATOMIC_RELAXED) &
	         __atomic_load_n(&gs__g.fast_mask, __ATOMIC_RELAXED)) |
	        (uint32_t)__atomic_load_n(&gs__g.swap_stopped,
	                                  __ATOMIC_RELAXED)) == 0;
}

static inline void gs__lin_mark(uint32_t n)
{
	__atomic_store_n(&gs__lin_tls.n, n, __ATOMIC_RELAXED);
	/* what swap.c's membarrier completes into a full barrier */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* Fast path: marks the thread, then tests the gate; true (marked) when
 * the launch goes straight to the driver, to be unmarked by
 * gs__lin_leave(). */
static inline bool gs__lin_enter_fast(void)
{
	uint32_t n = __atomic_load_n(&gs__lin_tls.n, __ATOMIC_RELAXED);

	if (GS_UNLIKELY(!gs__lin_tls.reg) && !gs__lin_register())
		return false; /* the slow path refuses it */
	gs__lin_mark(n + 1);
	if (GS_LIKELY(gs__launch_fast()))
		return true;
	gs__lin_mark(n);
	return false;
}

/* Slow path, right before its call into the driver: marks the thread once
 * the stop is down (waiting while it is up). False when the thread
 * cannot be marked (no memory): the launch is refused. */
static inline bool gs__lin_enter_slow(void)
{
	uint32_t n = __atomic_load_n(&gs__lin_tls.n, __ATOMIC_RELAXED);

	if (!gs__lin_tls.reg && !gs__lin_register())
		return false;
	for (;;) {
		gs__lin_mark(n + 1);
		if (!__atomic_load_n(&gs__g.swap_stopped, __ATOMIC_RELAXED))
			return true;
		gs__lin_mark(n);
		gs__swap_wait_slow();
	}
}

/* After the driver returned `r`: the launch is out of it. */
static inline CUresult gs__lin_leave(CUresult r)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&gs__lin_tls.n,
	                 __atomic_load_n(&gs__lin_tls.n, __ATOMIC_RELAXED) - 1,
	                 __ATOMIC_RELEASE);
	return r;
}

/* `r` = the slow path's call `call` into the driver, made marked
 * (CUDA_ERROR_OUT_OF_MEMORY when the thread cannot be marked). */
#define GS__MARKED(r, call)                                                    \
	do {                                                                   \
		if (!gs__lin_enter_slow())                                     \
			(r) = CUDA_ERROR_OUT_OF_MEMORY;                        \
		else                                                           \
			(r) = gs__lin_leave(call);                             \
	} while (0)

#endif
