/*
 * swapneed.c - memory on demand for a slice that may swap: this process's
 * side of the need protocol in gs/region_swap.h. When the driver refuses
 * a movable allocation for lack of GPU memory (mem.c), the process posts
 * how much more it needs and waits, at most the node's need wait
 * (gs_region_need_wait_ns: gpusliced's swap.need_wait, 30 s unless set,
 * read at each need), while the daemon swaps other slices out as its
 * policy allows (posting rings the daemon's bell, and the daemon's answer
 * wakes the wait: no poll period is paid either way; a need not answered
 * within GS__NEED_RING_NS rings again, in case the first ring came while
 * the daemon was between its look and its sleep, backing off to
 * GS__NEED_RING_MAX_NS); then the caller tries again, or answers
 * out-of-memory as without swap. A process
 * stopped because its own memory is out (swap.c) posts a need of 0: its
 * contents back. Allocations also stamp the process's activity, which
 * the daemon reads as the slice's last GPU call, and the first movable
 * one says the process holds memory a swap-out would move.
 *
 * A parked slice (GS_SLICE_IS_PARKED in its limits, gs/park.h) is stopped,
 * not failed: its needs are left unanswered until it resumes, so a need
 * of its process waits past the need wait for as long as the slice
 * stays parked (said once per wait in the log); once the slice resumes,
 * or is deleted, the usual bound holds again, counted from then.
 *
 * Owns nothing but a rate limit: a stopped process repeats its need at
 * most once per GS__BACK_EVERY_NS, an activity stamp is written at most
 * once per GS__ACTIVE_EVERY_NS.
 */
#include "shim_int.h"

#include "gs/region_swap.h"

#include <errno.h>
#include <time.h>
#include <unistd.h>

#define GS__NEED_RING_NS     (2ULL * 1000 * 1000)
#define GS__NEED_RING_MAX_NS (128ULL * 1000 * 1000)
#define GS__BACK_EVERY_NS    (500ULL * 1000 * 1000)
#define GS__ACTIVE_EVERY_NS  (100ULL * 1000 * 1000)

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

bool gs__slice_parked(void)
{
	struct gs_slice_limits lim;

	/* A fresh read (a seqlock, no lock): a deleted slice is not parked. */
	if (gs__g.region == NULL || !gs__g.attached ||
	    gs_region_proc_limits(gs__g.region, &gs__g.proc, &lim, NULL) !=
	        GS_OK)
		return false;
	return (lim.flags & GS_SLICE_IS_PARKED) != 0;
}

bool gs__swap_need(int dev, uint64_t bytes)
{
	uint64_t t0 = gs__now(), start = t0, wait_ns;
	uint32_t seq;
	bool answered = false, said = false;
	gs_err result = GS_ERR_BUSY;
	int saved = errno;

	/* Only a daemon serves needs: without one, out-of-memory at once. */
	if (!gs__enforcing() || gs__g.region == NULL ||
	    !gs_region_is_privileged(gs__g.region) ||
	    gs_region_swap_need(gs__g.region, &gs__g.proc, dev, bytes,
	                        realtime_ns(), &seq) != GS_OK) {
		errno = saved;
		return false;
	}
	wait_ns = gs_region_need_wait_ns(gs__g.region);
	for (uint64_t ring = GS__NEED_RING_NS;;) {
		uint64_t now = gs__now(), left;

		/* A parked slice's processes wait for it to resume: the bound
		 * counts from the last look that found it parked, so a need
		 * has the whole wait after the resume (the daemon answers a
		 * parked slice's needs once per idle tick). */
		if (gs__slice_parked()) {
			if (!said && now - start >= wait_ns) {
				gs_info(GS_SHIM_TAG,
				        "slice=%s pid=%d gpu=%d need of %llu bytes: its slice is parked; waiting for it to resume",
				        gs__g.cfg.slice, (int)getpid(), dev,
				        (unsigned long long)bytes);
				said = true;
			}
			t0 = now;
		}
		if (now - t0 >= wait_ns)
			break;
		left = wait_ns - (now - t0);

		if (gs_region_swap_need_wait(gs__g.region, &gs__g.proc, seq,
		                             ring < left ? ring : left,
		                             &answered, &result) != GS_OK)
			break;
		if (answered)
			break;
		gs_region_swap_bell(gs__g.region);
		if (ring < GS__NEED_RING_MAX_NS)
			ring *= 2;
	}
	gs_debug(GS_SHIM_TAG,
	         "slice=%s gpu=%d need of %llu bytes: %s after %llu ns",
	         gs__g.cfg.slice, dev, (unsigned long long)bytes,
	         answered ? gs_strerror(result) : "no answer",
	         (unsigned long long)(gs__now() - start));
	errno = saved;
	return answered && result == GS_OK;
}

void gs__swap_need_back(void)
{
	static uint64_t last;
	uint64_t now = gs__now(),
	         prev = __atomic_load_n(&last, __ATOMIC_RELAXED);
	uint32_t seq;
	int dev, saved = errno;

	if (prev != 0 && now - prev < GS__BACK_EVERY_NS)
		return;
	if (!__atomic_compare_exchange_n(&last, &prev, now, false,
	                                 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return;
	dev = gs__dev_current(NULL);
	if (gs__g.region != NULL && gs_region_is_privileged(gs__g.region))
		(void)gs_region_swap_need(gs__g.region, &gs__g.proc,
		                          dev >= 0 ? dev : 0, 0, realtime_ns(),
		                          &seq);
	errno = saved;
}

void gs__swap_movable(void)
{
	static bool said;

	if (__atomic_load_n(&said, __ATOMIC_RELAXED) || gs__g.region == NULL)
		return;
	if (gs_region_swap_movable(gs__g.region, &gs__g.proc) == GS_OK)
		__atomic_store_n(&said, true, __ATOMIC_RELAXED);
}

void gs__swap_active(void)
{
	static uint64_t last;
	uint64_t now = gs__now(),
	         prev = __atomic_load_n(&last, __ATOMIC_RELAXED);

	if (prev != 0 && now - prev < GS__ACTIVE_EVERY_NS)
		return;
	__atomic_store_n(&last, now, __ATOMIC_RELAXED);
	if (gs__g.region != NULL)
		(void)gs_region_swap_active(gs__g.region, &gs__g.proc,
		                            realtime_ns());
}
