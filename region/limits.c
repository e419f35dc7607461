/*
 * limits.c - slices in the limits file: seqlock reads (no lock; retried
 * on a torn read), and the writers' operations under the writers' lock
 * (create, ensure, join, leave, update, delete), the daemon's charge
 * ratio of each slice (gs_region_slice_set_charge), the node's need wait
 * (gs_region_set_need_wait), the scheduler's config copied out for the
 * shim and the arbiter (gs_region_sched_cfg), and the gates poked when
 * limits change.
 *
 * Calls lock.c, owner.c, usage.c (a slice's processes, for join and
 * leave) and util.c.
 */
#include "region_int.h"

#include "gs/region_swap.h"

#include <string.h>
#include <unistd.h>

#define SEQ_READ_TRIES 100000
/* Reads of the limits under the usage lock (gs_region_sched_cfg). */
#define CFG_READ_TRIES 256

/* ---- limits: seqlock readers, flock writers --------------------------- */

static void rl_copy_slot(const struct gs_rl_slice *src, struct gs_rl_slice *dst)
{
	/* Field by field through relaxed atomics: no torn 8-byte values. */
	const uint64_t *s = (const uint64_t *)(const void *)src;
	uint64_t *d = (uint64_t *)(void *)dst;

	for (size_t i = 0; i < sizeof(*src) / 8; i++)
		d[i] = __atomic_load_n(&s[i], __ATOMIC_RELAXED);
}

/* A consistent copy of slot s. GS_ERR_BUSY when a writer never finishes. */
static gs_err rl_read_tries(struct gs_region *r, int s, struct gs_rl_slice *out,
                            int tries)
{
	const uint64_t *seq = &r->rl->h.seq;

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < tries; i++) {
		uint64_t a = __atomic_load_n(seq, __ATOMIC_ACQUIRE), b;

		if (a & 1) {
			if (i > 64)
				(void)sched_yield();
			continue;
		}
		rl_copy_slot(&r->rl->slice[s], out);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		b = __atomic_load_n(seq, __ATOMIC_RELAXED);
		if (a == b) {
			out->lim.name[GS_REGION_NAME_MAX - 1] = '\0';
			return GS_OK;
		}
	}
	return GS_ERR_BUSY;
}

static gs_err rl_read(struct gs_region *r, int s, struct gs_rl_slice *out)
{
	return rl_read_tries(r, s, out, SEQ_READ_TRIES);
}

/*
 * After a slice's limits changed: raise every GPU's GS_GATE_ENFORCED for a
 * moment, so that processes on the launch fast path (which never read the
 * limits) take the slow path, where they notice the new epoch. (Creating
 * or deleting a slice changes no running process's limits.)
 */
static void poke_gates(struct gs_region *r)
{
	uint64_t now = gs__mono_ns();

	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gs_sched_dev *sd = &r->ru->dev[d].sched;

		if (!__atomic_load_n(&r->ru->dev[d].in_use, __ATOMIC_ACQUIRE))
			continue;
		__atomic_store_n(&sd->enforced_ns, now, __ATOMIC_RELAXED);
		__atomic_or_fetch(&sd->gate, GS_GATE_ENFORCED,
		                  __ATOMIC_RELEASE);
	}
}

static int find_locked(struct gs_region *r, const char *name)
{
	for (int s = 0; s < GS_REGION_MAX_SLICES; s++) {
		struct gs_rl_slice *sl = &r->rl->slice[s];

		if (sl->state == GS_RL_LIVE &&
		    strncmp(sl->lim.name, name, GS_REGION_NAME_MAX) == 0)
			return s;
	}
	return -1;
}

/* The flags the region decides itself: private books for uid 0's slices
 * of a privileged region. */
static uint32_t flags_of(const struct gs_region *r, uint32_t flags,
                         uint32_t owner_uid)
{
	flags &= ~GS_SLICE_PRIVATE_BOOKS;
	if (gs_region_books_private(gs_region_is_privileged(r), owner_uid))
		flags |= GS_SLICE_PRIVATE_BOOKS;
	return flags;
}

/*
 * Writers' lock held, sequence even: makes the slice in a free slot and
 * publishes it (its own wseq_open .. wseq_close). Its books come first,
 * with the sequence still even: a slice without them cannot be joined.
 */
static gs_err create_in_wlock(struct gs_region *r,
                              const struct gs_slice_limits *lim,
                              struct gs_slice_ref *out, struct gs_errbuf *eb)
{
	uint32_t flags = flags_of(r, lim->flags, lim->owner_uid);
	struct gs_rl_slice *sl = NULL;
	struct own_key key = {lim->owner_uid, -1, 0};
	int s, k;

	for (s = 0; s < GS_REGION_MAX_SLICES && sl == NULL; s++)
		if (r->rl->slice[s].state == GS_RL_FREE)
			sl = &r->rl->slice[s];
	if (sl == NULL)
		return gs_fail(eb, GS_ERR_NO_FIT,
		               "slice table full (%d slices)",
		               GS_REGION_MAX_SLICES);
	s--;
	if (flags & GS_SLICE_PRIVATE_BOOKS) {
		/* A file of its own, made for this generation. */
		key.slot = s;
		key.gen = sl->generation + 1;
	}
	k = gs__owner_find_key(r, &key, true, eb);
	if (k < 0)
		return (gs_err)-k;
	gs__wseq_open(r);
	sl->lim = *lim;
	sl->lim.flags = flags;
	sl->lim.name[GS_REGION_NAME_MAX - 1] = '\0';
	sl->created_ns = gs__real_ns();
	sl->charge_q16 = 0; /* none published for it yet */
	sl->generation++;
	sl->state = GS_RL_LIVE;
	gs__wseq_close(r);
	out->slot = s;
	out->reserved = 0;
	out->generation = sl->generation;
	return GS_OK;
}

gs_err gs_region_slice_create(struct gs_region *r,
                              const struct gs_slice_limits *lim,
                              struct gs_slice_ref *out, struct gs_errbuf *eb)
{
	gs_err err = gs__limits_check(lim, eb);

	if (err != GS_OK)
		return err;
	err = gs__wlock_even(r, eb);
	if (err != GS_OK)
		return err;
	if (find_locked(r, lim->name) >= 0)
		err = gs_fail(eb, GS_ERR_EXISTS, "slice '%s' already exists",
		              lim->name);
	else
		err = create_in_wlock(r, lim, out, eb);
	gs__wlock_drop(r);
	return err;
}

gs_err gs_region_slice_ensure(struct gs_region *r,
                              const struct gs_slice_limits *lim,
                              struct gs_slice_ref *out, bool *created,
                              struct gs_errbuf *eb)
{
	gs_err err = gs__limits_check(lim, eb);
	int s;

	if (created != NULL)
		*created = false;
	if (err != GS_OK)
		return err;
	if (!r->limits_writable) {
		err = gs_region_slice_find(r, lim->name, out);
		if (err == GS_ERR_NOT_FOUND)
			return gs_fail(eb, GS_ERR_NOT_FOUND,
			               "slice '%s' does not exist and limits in %s are read-only here",
			               lim->name, r->dir);
		return err;
	}
	err = gs__wlock_even(r, eb);
	if (err != GS_OK)
		return err;
	s = find_locked(r, lim->name);
	if (s >= 0) {
		out->slot = s;
		out->reserved = 0;
		out->generation = r->rl->slice[s].generation;
	} else {
		err = create_in_wlock(r, lim, out, eb);
		if (err == GS_OK && created != NULL)
			*created = true;
	}
	gs__wlock_drop(r);
	return err;
}

gs_err gs_region_slice_join(struct gs_region *r,
                            const struct gs_slice_limits *lim,
                            uint32_t proc_flags, struct gs_slice_ref *slice,
                            struct gs_proc_ref *proc, bool *created,
                            struct gs_errbuf *eb)
{
	bool locked = false;
	gs_err err;
	int s;

	if (created != NULL)
		*created = false;
	err = gs__limits_check(lim, eb);
	if (err != GS_OK)
		return err;
	if (r->limits_writable) {
		err = gs__wlock_even(r, eb);
		if (err != GS_OK)
			return err;
		locked = true;
		s = find_locked(r, lim->name);
		if (s >= 0) {
			slice->slot = s;
			slice->reserved = 0;
			slice->generation = r->rl->slice[s].generation;
		} else {
			/* Published before attaching (see wseq_open); the
			 * limits lock, still held, keeps a leaving run from
			 * deleting it. */
			err = create_in_wlock(r, lim, slice, eb);
			if (err == GS_OK && created != NULL)
				*created = true;
		}
	} else if (gs_region_slice_find(r, lim->name, slice) != GS_OK) {
		err = gs_fail(eb, GS_ERR_NOT_FOUND,
		              "slice '%s' does not exist and limits in %s are read-only here",
		              lim->name, r->dir);
	}
	if (err == GS_OK)
		err = gs_region_proc_attach(r, slice, proc_flags, proc, eb);
	if (locked)
		gs__wlock_drop(r);
	return err;
}

gs_err gs_region_slice_leave(struct gs_region *r,
                             const struct gs_slice_ref *slice,
                             const struct gs_proc_ref *proc, bool *deleted)
{
	struct gs_rl_slice *sl;
	gs_err err;
	int n;

	if (deleted != NULL)
		*deleted = false;
	if (!r->limits_writable) {
		(void)gs_region_proc_detach(r, proc);
		return GS_OK;
	}
	if (!gs__ref_ok(slice))
		return GS_ERR_NOT_FOUND;
	/* The limits lock, not the odd sequence, around the usage work
	 * (see wseq_open): no writer can add a process meanwhile. */
	err = gs__wlock_take(r, NULL);
	if (err != GS_OK)
		return err;
	(void)gs_region_proc_detach(r, proc);
	(void)gs_region_reap(r);
	sl = &r->rl->slice[slice->slot];
	n = gs_region_slice_nprocs(r, slice);
	if (sl->state == GS_RL_LIVE && sl->generation == slice->generation &&
	    (sl->lim.flags & GS_SLICE_EPHEMERAL) && n == 0) {
		gs__wseq_open(r);
		sl->state = GS_RL_FREE;
		sl->generation++;
		gs__wseq_close(r);
		if (deleted != NULL)
			*deleted = true;
	}
	gs__wlock_drop(r);
	return GS_OK;
}

gs_err gs_region_slice_find(struct gs_region *r, const char *name,
                            struct gs_slice_ref *out)
{
	struct gs_rl_slice sl;

	for (int s = 0; s < GS_REGION_MAX_SLICES; s++) {
		if (rl_read(r, s, &sl) != GS_OK || sl.state != GS_RL_LIVE)
			continue;
		if (strncmp(sl.lim.name, name, GS_REGION_NAME_MAX) == 0) {
			out->slot = s;
			out->reserved = 0;
			out->generation = sl.generation;
			return GS_OK;
		}
	}
	return GS_ERR_NOT_FOUND;
}

gs_err gs_region_slice_update(struct gs_region *r,
                              const struct gs_slice_ref *ref,
                              const struct gs_slice_limits *lim,
                              struct gs_errbuf *eb)
{
	struct gs_rl_slice *sl;
	struct own_key key = {0, -1, 0};
	bool changed = false;
	uint32_t flags;
	gs_err err;

	if (!gs__ref_ok(ref))
		return gs_fail(eb, GS_ERR_NOT_FOUND, "no such slice");
	err = gs__limits_check(lim, eb);
	if (err != GS_OK)
		return err;
	err = gs__wlock_even(r, eb);
	if (err != GS_OK)
		return err;
	sl = &r->rl->slice[ref->slot];
	flags = flags_of(r, lim->flags, lim->owner_uid);
	key.uid = lim->owner_uid;
	if (flags & GS_SLICE_PRIVATE_BOOKS) {
		key.slot = ref->slot;
		key.gen = ref->generation;
	}
	if (sl->state != GS_RL_LIVE || sl->generation != ref->generation) {
		err = gs_fail(eb, GS_ERR_NOT_FOUND, "slice is gone");
	} else if (gs__owner_find_key(r, &key, true, eb) < 0) {
		/* (its books made with the sequence even: see wlock_even) */
		err = gs_fail(eb, GS_ERR_IO, "no usage file for uid %u",
		              (unsigned)lim->owner_uid);
	} else {
		struct gs_slice_limits now = *lim;

		memcpy(now.name, sl->lim.name, sizeof(now.name));
		now.flags = flags;
		changed = memcmp(&now, &sl->lim, sizeof(now)) != 0;
		if (changed) {
			gs__wseq_open(r);
			sl->lim = now;
			gs__wseq_close(r);
		}
	}
	gs__wlock_drop(r);
	if (err == GS_OK && changed)
		poke_gates(r);
	return err;
}

gs_err gs_region_slice_set_charge(struct gs_region *r,
                                  const struct gs_slice_ref *ref,
                                  uint32_t charge_q16, struct gs_errbuf *eb)
{
	struct gs_rl_slice *sl;
	gs_err err;

	if (!gs__ref_ok(ref))
		return gs_fail(eb, GS_ERR_NOT_FOUND, "no such slice");
	if (charge_q16 < GS_CHARGE_MIN || charge_q16 > GS_CHARGE_ONE)
		return gs_fail(eb, GS_ERR_INVALID,
		               "charge ratio %u/65536 is outside 1/4..1",
		               (unsigned)charge_q16);
	err = gs__wlock_even(r, eb);
	if (err != GS_OK)
		return err;
	sl = &r->rl->slice[ref->slot];
	if (sl->state != GS_RL_LIVE || sl->generation != ref->generation) {
		err = gs_fail(eb, GS_ERR_NOT_FOUND, "slice is gone");
	} else if (sl->charge_q16 != charge_q16) {
		/* A new epoch: each process of the slice reads it at its
		 * next settle (cfg_refresh), nothing on the launch path. */
		gs__wseq_open(r);
		sl->charge_q16 = charge_q16;
		gs__wseq_close(r);
	}
	gs__wlock_drop(r);
	return err;
}

gs_err gs_region_set_need_wait(struct gs_region *r, uint32_t wait_ms,
                               struct gs_errbuf *eb)
{
	gs_err err;

	if (wait_ms < 1 || wait_ms > GS_REGION_NEED_WAIT_MS_MAX)
		return gs_fail(eb, GS_ERR_RANGE,
		               "need wait %u ms is outside 1..%u ms",
		               (unsigned)wait_ms,
		               (unsigned)GS_REGION_NEED_WAIT_MS_MAX);
	err = gs__wlock_even(r, eb);
	if (err != GS_OK)
		return err;
	if (r->rl->h.need_wait_ms != wait_ms) {
		/* Under the seq, so that the views get it (views_publish). */
		gs__wseq_open(r);
		__atomic_store_n(&r->rl->h.need_wait_ms, wait_ms,
		                 __ATOMIC_RELAXED);
		gs__wseq_close(r);
	}
	gs__wlock_drop(r);
	return GS_OK;
}

uint64_t gs_region_need_wait_ns(struct gs_region *r)
{
	uint32_t ms = __atomic_load_n(&r->rl->h.need_wait_ms, __ATOMIC_RELAXED);

	if (ms == 0)
		ms = GS_REGION_NEED_WAIT_MS_DEFAULT;
	return (uint64_t)ms * 1000000ULL;
}

gs_err gs_region_slice_delete(struct gs_region *r,
                              const struct gs_slice_ref *ref,
                              struct gs_errbuf *eb)
{
	struct gs_rl_slice *sl;
	bool private_books = false;
	gs_err err;

	if (!gs__ref_ok(ref))
		return gs_fail(eb, GS_ERR_NOT_FOUND, "no such slice");
	err = gs__wlock(r, eb);
	if (err != GS_OK)
		return err;
	sl = &r->rl->slice[ref->slot];
	if (sl->state != GS_RL_LIVE || sl->generation != ref->generation) {
		err = gs_fail(eb, GS_ERR_NOT_FOUND, "slice is gone");
	} else {
		private_books = (sl->lim.flags & GS_SLICE_PRIVATE_BOOKS) != 0;
		sl->state = GS_RL_FREE;
		sl->generation++;
	}
	gs__wseq_close(r);
	if (private_books) {
		/* Its books go with it (under the writers' lock, so never
		 * the file of a slice made in the slot next; the sequence
		 * even again): a pod still
		 * holding this one holds nothing anybody reads; this handle
		 * keeps its mapping for listings until the slot's next file
		 * replaces it. */
		char path[GS_REGION_DIR_MAX + GS_RO_NAME_MAX];

		(void)gs_region_books_path(r->dir, true, 0, ref->slot, path,
		                           sizeof(path));
		(void)unlink(path);
	}
	gs__wlock_drop(r);
	return err;
}

gs_err gs_region_slice_limits(struct gs_region *r,
                              const struct gs_slice_ref *ref,
                              struct gs_slice_limits *out)
{
	struct gs_rl_slice sl;
	gs_err err;

	if (!gs__ref_ok(ref))
		return GS_ERR_NOT_FOUND;
	err = rl_read(r, ref->slot, &sl);
	if (err != GS_OK)
		return err;
	if (sl.state != GS_RL_LIVE || sl.generation != ref->generation)
		return GS_ERR_NOT_FOUND;
	*out = sl.lim;
	/* The region's own decision, not part of what the creator set. */
	out->flags &= ~GS_SLICE_PRIVATE_BOOKS;
	return GS_OK;
}

bool gs_region_slice_private_books(struct gs_region *r,
                                   const struct gs_slice_ref *ref)
{
	struct gs_rl_slice sl;

	return gs__ref_ok(ref) && rl_read(r, ref->slot, &sl) == GS_OK &&
	       sl.state == GS_RL_LIVE && sl.generation == ref->generation &&
	       (sl.lim.flags & GS_SLICE_PRIVATE_BOOKS) != 0;
}

bool gs_region_slice_next(struct gs_region *r, struct gs_slice_ref *it)
{
	struct gs_rl_slice sl;

	for (int s = it->slot + 1; s < GS_REGION_MAX_SLICES; s++) {
		if (rl_read(r, s, &sl) != GS_OK || sl.state != GS_RL_LIVE)
			continue;
		it->slot = s;
		it->reserved = 0;
		it->generation = sl.generation;
		return true;
	}
	return false;
}

bool gs_region_sched_cfg(struct gs_region *r, struct gs_sched_cfg *cfg,
                            uint64_t *epoch)
{
	uint64_t e = __atomic_load_n(&r->rl->h.epoch, __ATOMIC_ACQUIRE);
	struct gs_sched_cfg tmp[GS_REGION_MAX_SLICES]; /* 10 KiB of stack */
	struct gs_rl_slice sl;

	if (e == *epoch && *epoch != 0)
		return false;
	/* Called under the usage lock: a short bounded read, and a slot
	 * caught mid-write keeps the cache as it was (asked again on the
	 * next call) - never "not live", which would fail the slice's own
	 * processes closed. */
	for (int s = 0; s < GS_REGION_MAX_SLICES; s++) {
		struct gs_sched_cfg *c = &tmp[s];

		memset(c, 0, sizeof(*c));
		if (rl_read_tries(r, s, &sl, CFG_READ_TRIES) != GS_OK)
			return false;
		if (sl.state != GS_RL_LIVE)
			continue;
		c->generation = sl.generation;
		c->live = true;
		c->pct = sl.lim.compute_pct;
		c->prio = sl.lim.priority;
		c->weight = sl.lim.weight ? sl.lim.weight : 1;
		c->mode = sl.lim.mode;
		c->mps = (sl.lim.flags & GS_SLICE_MPS) != 0;
		c->charge_q16 = sl.charge_q16 == 0 ||
		                        sl.charge_q16 > GS_CHARGE_ONE
		                    ? GS_CHARGE_ONE
		                    : sl.charge_q16 < GS_CHARGE_MIN
		                          ? GS_CHARGE_MIN
		                          : sl.charge_q16;
	}
	memcpy(cfg, tmp, sizeof(tmp));
	*epoch = e ? e : 1;
	return true;
}
