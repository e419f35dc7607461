/*
 * arbiter.c - the arbiter of a GS_RU_ARBITER region (the daemon's): each
 * pass reads every owner file's scheduler records (never trusting them)
 * and publishes the GPU's turns in the shared file, which tenants cannot
 * write; between passes it sleeps on the bell.
 *
 * Calls limits.c, lock.c, owner.c and util.c; nothing in region/ calls
 * it.
 */
#include "region_int.h"

#include "gs/faultinj.h"

#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

gs_err gs_region_arbitrate(struct gs_region *r, uint64_t *next_ns)
{
	const struct gs_sched_slice *(*ask)[GS_REGION_MAX_SLICES];
	struct gs_sched_params par;
	bool wake[GS_REGION_MAX_DEVICES] = {false};
	uint64_t now, next = 100000000ull;
	struct gs_ru_file *ru;
	int n = 0;
	gs_err err;

	*next_ns = next;
	if (!r->limits_writable || !gs__arbitrated(r))
		return GS_ERR_PERM;
	if (r->arb_cfg == NULL || r->arb_ask == NULL) {
		/* Each made once ("region.malloc" in tests); one that could
		 * not be is asked for again on the next pass. */
		if (r->arb_cfg == NULL)
			r->arb_cfg = gs_fault_calloc(
			    "region.malloc", GS_REGION_MAX_SLICES,
			    sizeof(*r->arb_cfg));
		if (r->arb_ask == NULL)
			r->arb_ask = gs_fault_calloc("region.malloc",
			                             GS_REGION_MAX_DEVICES,
			                             sizeof(*ask));
		if (r->arb_cfg == NULL || r->arb_ask == NULL)
			return GS_ERR_NOMEM;
	}
	ask = r->arb_ask;
	gs_sched_params_default(&par);
	/* The owner files of the live slices, mapped first, with no lock
	 * held: mapping a slot's new private books remaps under the remap
	 * lock, which own_use below holds shared. */
	for (int s = 0; s < GS_REGION_MAX_SLICES; s++) {
		struct own_key key;

		if (__atomic_load_n(&r->rl->slice[s].state, __ATOMIC_ACQUIRE) !=
		    GS_RL_LIVE)
			continue;
		key = gs__slice_key(&r->rl->slice[s], s);
		(void)gs__owner_find_key(r, &key, false, NULL);
	}
	/* The documented order: the remap lock, then the shared lock. */
	gs__own_use(r);
	err = gs__shared_lock(r);
	if (err != GS_OK) {
		gs__own_unuse(r);
		return err;
	}
	ru = gs__ru_locked;
	(void)gs_region_sched_cfg(r, r->arb_cfg, &r->arb_epoch);
	for (int s = 0; s < GS_REGION_MAX_SLICES; s++)
		if (r->arb_cfg[s].live)
			n = s + 1;
	for (int s = 0; s < n; s++) {
		struct own_key key;
		int k;

		for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
			ask[d][s] = NULL;
		if (!r->arb_cfg[s].live)
			continue;
		key = gs__slice_key(&r->rl->slice[s], s);
		k = gs__owner_lookup(r, &key);
		if (k < 0)
			continue; /* not mapped (yet): nothing it says is seen */
		for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
			ask[d][s] = &r->own[k].ro->ask[d][s];
	}
	now = gs__mono_ns();
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gs_sched_arb a = {
		    .dev = &ru->dev[d].sched,
		    .pub = ru->sched[d],
		    .ask = ask[d],
		    .cfg = r->arb_cfg,
		    .n = n,
		    .par = &par,
		};
		uint64_t nx;

		if (!__atomic_load_n(&ru->dev[d].in_use, __ATOMIC_ACQUIRE))
			continue;
		wake[d] = gs_sched_arbitrate(&a, now, &nx);
		if (nx < next)
			next = nx;
	}
	__atomic_store_n(&ru->h.arb_beat_ns, now, __ATOMIC_RELEASE);
	gs__shared_unlock(r);
	gs__own_unuse(r);
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
		if (wake[d])
			(void)syscall(SYS_futex, &ru->dev[d].sched.seq,
			              FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	*next_ns = next;
	return GS_OK;
}

void gs_region_arbiter_wait(struct gs_region *r, uint64_t ns)
{
	struct gs_ru_file *ru = __atomic_load_n(&r->ru, __ATOMIC_ACQUIRE);
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
	                      .tv_nsec = (long)(ns % 1000000000ull)};
	uint32_t v = __atomic_load_n(&ru->h.bell, __ATOMIC_ACQUIRE);

	(void)syscall(SYS_futex, &ru->h.bell, FUTEX_WAIT, v, &ts, NULL, 0);
}
