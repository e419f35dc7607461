/*
 * books.c - the GPU table (devices keyed by UUID in the shared file) and
 * the memory books: reserving, releasing and viewing a process's memory
 * on a GPU against its slice's cap, atomically across processes. The
 * common path takes no lock: each update is memword.c's (one
 * compare-and-swap on the slice's bytes that refuses to pass the cap);
 * the owner lock is taken only when a recount or a new slice generation
 * is in the way, or to reap dead processes when the cap is reached.
 *
 * Calls limits.c, lock.c, memword.c, usage.c and util.c.
 */
#include "region_int.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- devices and memory books ----------------------------------------- */

/* The UUID without its "GPU-"/"MIG-" prefix. */
static const char *uuid_core(const char *u)
{
	if (strncmp(u, "GPU-", 4) == 0 || strncmp(u, "MIG-", 4) == 0)
		return u + 4;
	return u;
}

static bool uuid_same(const char *a, const char *b)
{
	return strncmp(uuid_core(a), uuid_core(b), GS_REGION_UUID_MAX) == 0;
}

int gs_region_device(struct gs_region *r, const char *uuid,
                     uint64_t total_bytes)
{
	int slot = -(int)GS_ERR_NO_FIT;
	gs_err err;

	if (uuid == NULL || uuid[0] == '\0' ||
	    strlen(uuid) >= GS_REGION_UUID_MAX)
		return -(int)GS_ERR_INVALID;
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gs_ru_device *dv = &r->ru->dev[d];

		if (__atomic_load_n(&dv->in_use, __ATOMIC_ACQUIRE) &&
		    uuid_same(dv->uuid, uuid))
			return d;
	}
	if (r->arb_client)
		return -(int)GS_ERR_NOT_FOUND; /* the daemon registers GPUs */
	err = gs__shared_lock(r);
	if (err != GS_OK)
		return -(int)err;
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gs_ru_device *dv = &r->ru->dev[d];

		if (dv->in_use) {
			if (uuid_same(dv->uuid, uuid)) {
				slot = d;
				break;
			}
			continue;
		}
		(void)snprintf(dv->uuid, sizeof(dv->uuid), "%s", uuid);
		dv->total_bytes = total_bytes;
		dv->sched.holder = -1;
		__atomic_store_n(&dv->sched.gate, GS_GATE_ALWAYS,
		                 __ATOMIC_RELEASE);
		__atomic_store_n(&dv->in_use, 1, __ATOMIC_RELEASE);
		r->dev_copy[d] = *dv;
		slot = d;
		break;
	}
	gs__shared_unlock(r);
	return slot;
}

const char *gs_region_device_uuid(struct gs_region *r, int dev)
{
	if (dev < 0 || dev >= GS_REGION_MAX_DEVICES ||
	    !__atomic_load_n(&r->ru->dev[dev].in_use, __ATOMIC_ACQUIRE))
		return NULL;
	return r->ru->dev[dev].uuid;
}

/*
 * Owner lock of r->me held: the live proc for `p` and its live slice's
 * books on `dev`. OUT: *limit (the slice's cap). NULL when the proc or
 * its slice is gone, or the slice is no longer this file's owner's (the
 * caller fails closed).
 */
static struct gs_ru_proc *books_of(struct gs_region *r,
                                   const struct gs_proc_ref *p, int dev,
                                   struct gs_ru_books **sb, uint64_t *limit)
{
	struct gs_ru_proc *pr = gs__region_proc_get(r, p);
	struct gs_own *o;
	struct gs_rl_slice *sl;

	if (pr == NULL || dev < 0 || dev >= GS_REGION_MAX_DEVICES ||
	    pr->slice < 0 || pr->slice >= GS_REGION_MAX_SLICES)
		return NULL;
	o = &r->own[r->me];
	sl = &r->rl->slice[pr->slice];
	if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != GS_RL_LIVE ||
	    __atomic_load_n(&sl->generation, __ATOMIC_ACQUIRE) !=
	        pr->slice_gen ||
	    !gs__own_serves(o, sl, pr->slice))
		return NULL;
	gs__books_sync(r, o, pr->slice);
	*sb = &o->ro->slice[pr->slice].dev[dev];
	if (limit != NULL)
		*limit = __atomic_load_n(&sl->lim.mem_limit, __ATOMIC_ACQUIRE);
	return pr;
}

/*
 * The time the memory books' byte-seconds are integrated with, at the
 * coarse clock's resolution (a few ms): on the allocation path a
 * CLOCK_MONOTONIC read cost more than everything else the shim adds to a
 * cuMemAlloc+cuMemFree pair (#30: 50 ns a read on a loaded VM, the coarse
 * one 15). The coarse clock lags the fine one by at most its resolution,
 * so where a fine tick came last the integral errs by that much time.
 */
static uint64_t books_now(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The owner file `p` lives in, when it is this handle's own; NULL. */
static struct gs_own *own_of(struct gs_region *r, const struct gs_proc_ref *p)
{
	int i, k = gs__ref_own(r, p, &i);

	return k >= 0 && k == r->me ? &r->own[k] : NULL;
}

/* What the lock-free path needs of `p`'s books on `dev`, read without
 * the lock (memword.c rechecks the generation inside each update). */
struct books_at {
	struct gs_ru_slice *us; /* its slice's books */
	struct gs_ru_books *pb; /* its own on dev */
	uint64_t gen;           /* the slice generation it attached to */
	uint64_t limit;         /* the slice's cap; 0: none */
};

/*
 * No lock: `p`'s books, as books_of finds them. GS_ERR_NOT_FOUND when
 * the process or its slice is gone (fail closed); GS_ERR_BUSY when its
 * slice's books are not yet at its generation (the locked path brings
 * them there).
 */
static gs_err books_at(struct gs_region *r, struct gs_own *o,
                       const struct gs_proc_ref *p, int dev,
                       struct books_at *at)
{
	struct gs_ru_proc *pr = gs__region_proc_get(r, p);
	struct gs_rl_slice *sl;
	int s;

	if (pr == NULL || dev < 0 || dev >= GS_REGION_MAX_DEVICES)
		return GS_ERR_NOT_FOUND;
	s = pr->slice;
	at->gen = pr->slice_gen;
	if (s < 0 || s >= GS_REGION_MAX_SLICES)
		return GS_ERR_NOT_FOUND;
	sl = &r->rl->slice[s];
	if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != GS_RL_LIVE ||
	    __atomic_load_n(&sl->generation, __ATOMIC_ACQUIRE) != at->gen ||
	    !gs__own_serves(o, sl, s))
		return GS_ERR_NOT_FOUND;
	at->us = &o->ro->slice[s];
	at->pb = gs__region_proc_books(r, pr, dev);
	at->limit = __atomic_load_n(&sl->lim.mem_limit, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&at->us->generation, __ATOMIC_ACQUIRE) != at->gen)
		return GS_ERR_BUSY;
	return GS_OK;
}

/*
 * The locked path a lock-free update is turned to: brings `p`'s slice's
 * books to its generation, settles a recount that is owed (or a fence a
 * dead recounter left: nobody recounts without this lock), and with
 * `reap` frees the slots of dead processes. OUT: *more when that may
 * have made room. Waiting for the lock is what lets a recount finish.
 */
static gs_err books_settle(struct gs_region *r, struct gs_own *o,
                           const struct gs_proc_ref *p, int dev, bool reap,
                           bool *more)
{
	struct gs_ru_books *sb;
	struct gs_ru_proc *pr;
	gs_err err = gs__own_lock(r, o);

	*more = false;
	if (err != GS_OK)
		return err;
	pr = books_of(r, p, dev, &sb, NULL);
	if (pr == NULL) {
		err = GS_ERR_NOT_FOUND;
	} else {
		struct gs_ru_slice *us = &o->ro->slice[pr->slice];

		if (gs__mem_owed(us))
			*more = gs__mem_recount(o->ro, pr->slice, r->pidns,
			                        gs__mono_ns() + 10000000ull);
		if (reap && gs__reap_locked(r, o) > 0)
			*more = true;
	}
	gs__own_unlock(r, o);
	return err;
}

gs_err gs_region_mem_reserve(struct gs_region *r, const struct gs_proc_ref *p,
                             int dev, uint64_t bytes)
{
	struct gs_own *o = own_of(r, p);
	struct books_at at;
	uint64_t now = books_now();
	bool reaped = false, more;
	gs_err err;

	if (o == NULL)
		return GS_ERR_NOT_FOUND;
	for (int tries = 0; tries < 64; tries++) {
		enum gs_mem_rc rc = GS_MEM_FENCED;

		gs__own_use(r);
		err = books_at(r, o, p, dev, &at);
		if (err == GS_OK)
			rc = gs__mem_add(at.us, at.gen, dev, at.pb, bytes,
			                 at.limit, now);
		gs__own_unuse(r);
		if (err == GS_ERR_NOT_FOUND)
			return err;
		if (err == GS_OK && rc == GS_MEM_OK)
			return GS_OK;
		/* Over the cap: a dead process may still hold a share, or a
		 * recount be owed; once. Fenced or a new generation: the
		 * locked path, then again. */
		if (err == GS_OK && rc == GS_MEM_QUOTA && reaped)
			return GS_ERR_QUOTA;
		err = books_settle(r, o, p, dev, rc == GS_MEM_QUOTA, &more);
		if (err != GS_OK)
			return err;
		if (rc == GS_MEM_QUOTA) {
			if (!more)
				return GS_ERR_QUOTA;
			reaped = true;
		}
	}
	return GS_ERR_BUSY; /* fenced each time: a recount keeps failing */
}

void gs_region_mem_release(struct gs_region *r, const struct gs_proc_ref *p,
                           int dev, uint64_t bytes)
{
	struct gs_own *o = own_of(r, p);
	struct books_at at;
	uint64_t now = books_now();
	bool more;

	if (o == NULL)
		return;
	for (int tries = 0; tries < 64; tries++) {
		enum gs_mem_rc rc = GS_MEM_FENCED;
		gs_err err;

		gs__own_use(r);
		err = books_at(r, o, p, dev, &at);
		if (err == GS_OK)
			rc = gs__mem_sub(at.us, at.gen, dev, at.pb, bytes, now);
		gs__own_unuse(r);
		if (err == GS_ERR_NOT_FOUND ||
		    (err == GS_OK && rc == GS_MEM_OK))
			return;
		if (books_settle(r, o, p, dev, false, &more) != GS_OK)
			return;
	}
}

gs_err gs_region_mem_view(struct gs_region *r, const struct gs_proc_ref *p,
                          int dev, uint64_t *used, uint64_t *limit)
{
	struct gs_own *o = own_of(r, p);
	struct books_at at;
	bool more;
	gs_err err = GS_ERR_BUSY;

	if (o == NULL)
		return GS_ERR_NOT_FOUND;
	for (int tries = 0; err == GS_ERR_BUSY && tries < 64; tries++) {
		gs__own_use(r);
		err = books_at(r, o, p, dev, &at);
		if (err == GS_OK) {
			*used = gs__mem_bytes(&at.us->dev[dev]);
			*limit = at.limit;
		}
		gs__own_unuse(r);
		if (err == GS_ERR_BUSY) {
			gs_err e = books_settle(r, o, p, dev, false, &more);

			if (e != GS_OK)
				return e;
		}
	}
	return err;
}

gs_err gs_region_proc_limits(struct gs_region *r, const struct gs_proc_ref *p,
                              struct gs_slice_limits *out, int32_t *slice)
{
	struct gs_ru_proc *pr;
	struct gs_slice_ref ref;
	int i, k = gs__ref_own(r, p, &i);

	if (k < 0 || k != r->me)
		return GS_ERR_NOT_FOUND;
	pr = &r->own[k].ro->proc[i];
	if (__atomic_load_n(&pr->generation, __ATOMIC_ACQUIRE) != p->generation)
		return GS_ERR_NOT_FOUND;
	ref.slot = pr->slice;
	ref.reserved = 0;
	ref.generation = pr->slice_gen;
	if (slice != NULL)
		*slice = pr->slice;
	return gs_region_slice_limits(r, &ref, out);
}
