/*
 * memword.c - the memory books' words: the lock-free protocol by which a
 * process charges and releases GPU memory against its slice's cap, and
 * what the owner lock's holders (reaping, repair, a new slice
 * generation) do to those words while others keep allocating.
 *
 * Two words per GPU carry a slice's memory in its owner file:
 *
 *   S  slice[s].dev[d].mem_used   the slice's bytes; only ever changed
 *                                 by one atomic read-modify-write, a
 *                                 compare-and-swap that refuses to pass
 *                                 the cap, so the cap is exact whatever
 *                                 the number of threads and processes
 *   P  proc_dev[i][d].mem_used    the process's bytes (low 48 bits) and
 *                                 how many of its threads are between
 *                                 their two updates (the high 16 bits,
 *                                 GS_MEM_BUSY_ONE each)
 *
 * A charge (gs__mem_add) and a release (gs__mem_sub):
 *
 *   add:  P += BUSY                 enter; a recount (below) waits for us
 *         fence or new generation?  -> P -= BUSY, GS_MEM_FENCED (the
 *                                      caller takes the owner lock)
 *         S: CAS S -> S + n, refused when S + n > cap (P -= BUSY, QUOTA)
 *         P += n - BUSY             commit and leave, one RMW
 *   sub:  P -= n' - BUSY            take n' = min(n, P's bytes), enter
 *         fence or new generation?  -> undo, GS_MEM_FENCED
 *         S -= n'                   (never below 0)
 *         P -= BUSY                 leave
 *
 * Invariant: for every live slice s and GPU d, S == the sum of P's bytes
 * over the live processes attached to s whose busy count is 0 plus what
 * the threads inside their two updates have done to S. A process whose
 * P has busy 0 has exactly its P's bytes in S: freeing its slot takes
 * exactly those out, once (gs__mem_give_back). A process that died
 * inside an update (busy != 0) leaves S ambiguous by one update; its
 * slot is freed and S recounted (gs__mem_recount): the fence turns new
 * updates to the owner lock (which the recounter holds), the recounter
 * waits for the busy counts of the slice's live processes to drain, sets
 * S to the sum of their P, and lifts the fence. The fence and the busy
 * counts form a Dekker pair (both sequentially consistent): either the
 * updater sees the fence, or the recounter sees its busy count.
 *
 * If the wait times out (a live process stopped inside an update), S is
 * left as it was and the slice marked owing a recount (GS_MEM_DIRTY),
 * retried the next time a charge finds the cap reached: S then errs
 * above the truth (the dead process's bytes still counted), never below,
 * so the cap holds meanwhile.
 *
 * Peaks move by an atomic maximum, only when exceeded. The byte-seconds
 * integral is stepped by whoever first sees the clock move past the last
 * step (gs__books_tick): one compare-and-swap claims the step, which
 * integrates the bytes as they are then, at the coarse clock's
 * resolution.
 *
 * Calls util.c (the clock) only.
 */
#include "region_int.h"

#include <sched.h>
#include <string.h>
#include <time.h>

#define MEM_BYTES(w) ((w)&GS_MEM_BYTES_MASK)
#define MEM_BUSY(w)  ((w) >> 48)

uint64_t gs__mem_bytes(const struct gs_ru_books *b)
{
	return MEM_BYTES(__atomic_load_n(&b->mem_used, __ATOMIC_RELAXED));
}

static void peak_max(uint64_t *peak, uint64_t v)
{
	uint64_t c = __atomic_load_n(peak, __ATOMIC_RELAXED);

	while (v > c &&
	       !__atomic_compare_exchange_n(peak, &c, v, true, __ATOMIC_RELAXED,
	                                    __ATOMIC_RELAXED))
		;
}

static void double_add(double *d, double v)
{
	double c, n;

	__atomic_load(d, &c, __ATOMIC_RELAXED);
	do
		n = c + v;
	while (!__atomic_compare_exchange(d, &c, &n, true, __ATOMIC_RELAXED,
	                                  __ATOMIC_RELAXED));
}

void gs__books_tick(struct gs_ru_books *b, uint64_t now)
{
	uint64_t t = __atomic_load_n(&b->mem_t_ns, __ATOMIC_RELAXED);
	uint64_t used;

	if (t >= now ||
	    !__atomic_compare_exchange_n(&b->mem_t_ns, &t, now, false,
	                                 __ATOMIC_RELAXED, __ATOMIC_RELAXED) ||
	    t == 0)
		return;
	used = gs__mem_bytes(b);
	if (used != 0)
		double_add(&b->mem_byte_s,
		           (double)used * ((double)(now - t) / 1e9));
}

/* Whether a recount or a new generation stands between this thread
 * (inside its update) and the books of generation `gen`. */
static bool mem_fenced(const struct gs_ru_slice *us, uint64_t gen)
{
	return (__atomic_load_n(&us->mem_fence, __ATOMIC_SEQ_CST) &
	        GS_MEM_FENCE) != 0 ||
	       __atomic_load_n(&us->generation, __ATOMIC_ACQUIRE) != gen;
}

enum gs_mem_rc gs__mem_add(struct gs_ru_slice *us, uint64_t gen, int dev,
                           struct gs_ru_books *pb, uint64_t bytes,
                           uint64_t limit, uint64_t now)
{
	struct gs_ru_books *sb = &us->dev[dev];
	uint64_t w, s;

	w = __atomic_fetch_add(&pb->mem_used, GS_MEM_BUSY_ONE,
	                       __ATOMIC_SEQ_CST);
	if (mem_fenced(us, gen)) {
		__atomic_fetch_sub(&pb->mem_used, GS_MEM_BUSY_ONE,
		                   __ATOMIC_RELEASE);
		return GS_MEM_FENCED;
	}
	if (bytes > GS_MEM_BYTES_MASK - MEM_BYTES(w)) {
		__atomic_fetch_sub(&pb->mem_used, GS_MEM_BUSY_ONE,
		                   __ATOMIC_RELEASE);
		return GS_MEM_QUOTA; /* 256 TiB: no GPU has that */
	}
	gs__books_tick(sb, now);
	gs__books_tick(pb, now);
	s = __atomic_load_n(&sb->mem_used, __ATOMIC_RELAXED);
	do {
		if ((limit != 0 && (bytes > limit || s > limit - bytes)) ||
		    bytes > GS_MEM_BYTES_MASK - s) {
			__atomic_fetch_sub(&pb->mem_used, GS_MEM_BUSY_ONE,
			                   __ATOMIC_RELEASE);
			return GS_MEM_QUOTA;
		}
	} while (!__atomic_compare_exchange_n(&sb->mem_used, &s, s + bytes,
	                                      true, __ATOMIC_ACQ_REL,
	                                      __ATOMIC_RELAXED));
	peak_max(&sb->mem_peak, s + bytes);
	w = __atomic_add_fetch(&pb->mem_used, bytes - GS_MEM_BUSY_ONE,
	                       __ATOMIC_RELEASE);
	peak_max(&pb->mem_peak, MEM_BYTES(w));
	return GS_MEM_OK;
}

/* Takes up to `bytes` off S, never below 0. */
static void slice_sub(struct gs_ru_books *sb, uint64_t bytes)
{
	uint64_t s = __atomic_load_n(&sb->mem_used, __ATOMIC_RELAXED);

	while (!__atomic_compare_exchange_n(&sb->mem_used, &s,
	                                    s - (bytes <= s ? bytes : s), true,
	                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		;
}

enum gs_mem_rc gs__mem_sub(struct gs_ru_slice *us, uint64_t gen, int dev,
                           struct gs_ru_books *pb, uint64_t bytes, uint64_t now)
{
	struct gs_ru_books *sb = &us->dev[dev];
	uint64_t w, take;

	/* The integrals step over the bytes held until now. */
	gs__books_tick(sb, now);
	gs__books_tick(pb, now);
	w = __atomic_load_n(&pb->mem_used, __ATOMIC_RELAXED);
	/* A process releases no more than it holds. */
	do
		take = bytes <= MEM_BYTES(w) ? bytes : MEM_BYTES(w);
	while (!__atomic_compare_exchange_n(
	    &pb->mem_used, &w, w - take + GS_MEM_BUSY_ONE, true,
	    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
	if (mem_fenced(us, gen)) {
		__atomic_fetch_add(&pb->mem_used, take - GS_MEM_BUSY_ONE,
		                   __ATOMIC_RELEASE);
		return GS_MEM_FENCED;
	}
	if (take != 0)
		slice_sub(sb, take);
	__atomic_fetch_sub(&pb->mem_used, GS_MEM_BUSY_ONE, __ATOMIC_RELEASE);
	return GS_MEM_OK;
}

/* Short naps while a word drains: a yield first, then 20 us. */
static void nap(unsigned i)
{
	struct timespec ts = {0, 20000};

	if (i < 8)
		(void)sched_yield();
	else
		(void)nanosleep(&ts, NULL);
}

/* Takes pb's bytes out of sb; false when pb was inside an update and
 * stayed so until `until` (mono ns; 0: no wait). */
static bool give_back(struct gs_ru_books *sb, struct gs_ru_books *pb,
                      uint64_t now, uint64_t until)
{
	uint64_t w = __atomic_load_n(&pb->mem_used, __ATOMIC_ACQUIRE);

	for (unsigned i = 0; MEM_BUSY(w) != 0; i++) {
		if (gs__mono_ns() >= until) {
			__atomic_store_n(&pb->mem_used, 0, __ATOMIC_RELEASE);
			return false;
		}
		nap(i);
		w = __atomic_load_n(&pb->mem_used, __ATOMIC_ACQUIRE);
	}
	w = __atomic_exchange_n(&pb->mem_used, 0, __ATOMIC_ACQ_REL);
	if (MEM_BUSY(w) != 0)
		return false;
	if (MEM_BYTES(w) != 0) {
		gs__books_tick(sb, now);
		slice_sub(sb, MEM_BYTES(w));
	}
	return true;
}

bool gs__mem_give_back(struct gs_ro_file *ro, int i, uint64_t pidns)
{
	const struct gs_ru_proc *p = &ro->proc[i];
	struct gs_ru_slice *us = &ro->slice[p->slice];
	uint64_t now = gs__mono_ns(), until = 0;
	bool exact = true, asked = false;

	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gs_ru_books *pb = &ro->proc_dev[i][d];

		/* A live thread leaves its update in nanoseconds, a dead one
		 * never: a live process (freeing itself, or reaped as bogus)
		 * is given a millisecond in all, a dead one nothing. */
		if (!asked && MEM_BUSY(__atomic_load_n(
		                  &pb->mem_used, __ATOMIC_ACQUIRE)) != 0) {
			asked = true;
			if (p->pidns == pidns &&
			    gs_region_pid_alive(p->pid, p->start_time))
				until = gs__mono_ns() + 1000000ull;
		}
		exact = give_back(&us->dev[d], pb, now, until) && exact;
	}
	return exact;
}

/* Whether a live process attached to slot s (any generation) is inside
 * an update on any GPU. One of this pid namespace that is dead never
 * leaves it, and is not waited for: its slot's bytes are ambiguous until
 * it is reaped, which recounts again. */
static bool slice_busy(const struct gs_ro_file *ro, int s, uint64_t pidns)
{
	for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
		const struct gs_ru_proc *p = &ro->proc[i];
		bool busy = false;

		if (p->state != GS_RU_PROC_LIVE || p->slice != s)
			continue;
		for (int d = 0; d < GS_REGION_MAX_DEVICES && !busy; d++)
			busy = MEM_BUSY(
			           __atomic_load_n(&ro->proc_dev[i][d].mem_used,
			                           __ATOMIC_SEQ_CST)) != 0;
		if (busy && (p->pidns != pidns ||
		             gs_region_pid_alive(p->pid, p->start_time)))
			return true;
	}
	return false;
}

/* Sets the fence of slot s and waits, until `until` (mono ns), for its
 * processes' updates to drain. Whether they did (the fence stays up
 * either way). */
static bool fence_and_drain(struct gs_ro_file *ro, int s, uint64_t pidns,
                            uint64_t until)
{
	__atomic_fetch_or(&ro->slice[s].mem_fence, GS_MEM_FENCE,
	                  __ATOMIC_SEQ_CST);
	for (unsigned i = 0; slice_busy(ro, s, pidns); i++) {
		if (gs__mono_ns() >= until)
			return false;
		nap(i);
	}
	return true;
}

bool gs__mem_recount(struct gs_ro_file *ro, int s, uint64_t pidns,
                     uint64_t until)
{
	struct gs_ru_slice *us = &ro->slice[s];
	uint64_t now = gs__mono_ns();

	if (!fence_and_drain(ro, s, pidns, until)) {
		__atomic_fetch_or(&us->mem_fence, GS_MEM_DIRTY,
		                  __ATOMIC_RELAXED);
		__atomic_fetch_and(&us->mem_fence, ~GS_MEM_FENCE,
		                   __ATOMIC_RELEASE);
		return false;
	}
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		uint64_t sum = 0;

		for (int i = 0; i < GS_REGION_MAX_PROCS; i++)
			if (ro->proc[i].state == GS_RU_PROC_LIVE &&
			    ro->proc[i].slice == s &&
			    ro->proc[i].slice_gen == us->generation)
				sum += gs__mem_bytes(&ro->proc_dev[i][d]);
		if (sum == gs__mem_bytes(&us->dev[d]))
			continue;
		gs__books_tick(&us->dev[d], now);
		__atomic_store_n(&us->dev[d].mem_used, sum, __ATOMIC_RELEASE);
		peak_max(&us->dev[d].mem_peak, sum);
	}
	__atomic_fetch_and(&us->mem_fence, ~(GS_MEM_FENCE | GS_MEM_DIRTY),
	                   __ATOMIC_RELEASE);
	return true;
}

bool gs__mem_owed(const struct gs_ru_slice *us)
{
	return __atomic_load_n(&us->mem_fence, __ATOMIC_ACQUIRE) != 0;
}

void gs__mem_reset(struct gs_ro_file *ro, int s, uint64_t gen, uint64_t pidns)
{
	struct gs_ru_slice *us = &ro->slice[s];

	/* Updates of the old generation drain or back off (they see the
	 * generation change); a stalled one is waited for 10 ms at most. */
	(void)fence_and_drain(ro, s, pidns, gs__mono_ns() + 10000000ull);
	memset(us, 0, sizeof(*us));
	__atomic_store_n(&us->generation, gen, __ATOMIC_RELEASE);
}
