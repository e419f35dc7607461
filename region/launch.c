/*
 * launch.c - the shim's launch and context paths' access to the region
 * (include/gs/region_launch.h): the scheduler records and views it
 * decides over, the limits' epoch, a process's entry and the books its
 * launches charge, a context's learned cost. What the shim once wrote
 * into the layout itself, so that the layout stays private to region/.
 *
 * Each function is a few loads and stores on the mapping; the ones
 * marked "lock held" in the header run under gs_region_lock().
 *
 * Calls usage.c (a process's entry and books); nothing in region/ calls
 * it.
 */
#include "region_int.h"

#include "gs/region_launch.h"

bool gs_region_attached(struct gs_region *r)
{
	return gs__region_own(r) != NULL;
}

uint64_t gs_region_limits_epoch(struct gs_region *r)
{
	return __atomic_load_n(&r->rl->h.epoch, __ATOMIC_ACQUIRE);
}

const uint64_t *gs_region_limits_epoch_word(struct gs_region *r)
{
	return &r->rl->h.epoch;
}

struct gs_sched_dev *gs_region_sched_dev(struct gs_region *r, int dev)
{
	return &r->ru->dev[dev].sched;
}

void gs_region_sched_view(struct gs_region *r, int dev, int s,
                          struct gs_sched_view *v)
{
	struct gs_ru_file *ru = r->ru;
	struct gs_ro_file *own = gs__region_own(r);

	v->dev = &ru->dev[dev].sched;
	v->sl = ru->sched[dev];
	v->bk = own->bucket[dev];
	v->mine = NULL;
	if (r->arb_client && s >= 0 && s < GS_REGION_MAX_SLICES)
		v->mine = &own->ask[dev][s];
}

bool gs_region_proc_entry(struct gs_region *r, const struct gs_proc_ref *p,
                          struct gs_region_entry *e)
{
	struct gs_ru_proc *pr = gs__region_proc_get(r, p);

	if (pr == NULL)
		return false;
	e->pr = pr;
	e->slice = pr->slice;
	e->slice_gen = pr->slice_gen;
	return true;
}

/* The books of e's slice on `dev`, or NULL when the slice moved on to
 * another generation since e attached. */
static struct gs_ru_books *slice_books(struct gs_region *r,
                                       const struct gs_region_entry *e, int dev)
{
	struct gs_ru_slice *us = &gs__region_own(r)->slice[e->slice];

	return us->generation == e->slice_gen ? &us->dev[dev] : NULL;
}

void gs_region_books_waiting(struct gs_region *r,
                             const struct gs_region_entry *e, int dev)
{
	gs__region_proc_books(r, e->pr, dev)->waiting++;
}

void gs_region_books_admitted(struct gs_region *r,
                              const struct gs_region_entry *e, int dev,
                              bool waited, uint64_t throttled_ns, bool measured)
{
	struct gs_ru_books *pb = gs__region_proc_books(r, e->pr, dev), *sb;

	if (waited) {
		if (pb->waiting > 0)
			pb->waiting--;
		pb->throttled_ns += throttled_ns;
		sb = slice_books(r, e, dev);
		if (sb != NULL)
			sb->throttled_ns += throttled_ns;
	}
	if (measured)
		pb->inflight++;
}

void gs_region_books_settled(struct gs_region *r,
                             const struct gs_region_entry *e, int dev,
                             uint64_t n, uint64_t busy_ns, bool booked)
{
	struct gs_ru_books *pb = gs__region_proc_books(r, e->pr, dev), *sb;

	if (booked && pb->inflight > 0)
		pb->inflight--;
	pb->launches += n;
	pb->busy_ns += busy_ns;
	sb = slice_books(r, e, dev);
	if (sb != NULL) {
		sb->busy_ns += busy_ns;
		sb->launches += n;
	}
}

uint64_t gs_region_ctx_overhead(struct gs_region *r, int dev)
{
	return __atomic_load_n(&r->ru->dev[dev].ctx_overhead, __ATOMIC_RELAXED);
}

void gs_region_ctx_overhead_learn(struct gs_region *r, int dev, uint64_t bytes)
{
	if (!r->arb_client)
		__atomic_store_n(&r->ru->dev[dev].ctx_overhead, bytes,
		                 __ATOMIC_RELAXED);
}
