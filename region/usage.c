/*
 * usage.c - processes and the books of slices: attaching a process to a
 * slice (a slot in its owner file), detaching it, reaping dead ones and
 * giving their share back, a slice's usage and its processes listed.
 *
 * Calls lock.c, owner.c and util.c.
 */
#include "region_int.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- usage ------------------------------------------------------------ */

static void books_export(struct gs_region *r, int d,
                         const struct gs_ru_books *b, struct gs_dev_usage *u)
{
	memset(u, 0, sizeof(*u));
	memcpy(u->uuid, r->ru->dev[d].uuid, sizeof(u->uuid));
	u->uuid[GS_REGION_UUID_MAX - 1] = '\0';
	u->mem_used = gs__mem_bytes(b);
	u->mem_peak = b->mem_peak;
	u->mem_byte_s = b->mem_byte_s;
	u->busy_ns = b->busy_ns;
	u->throttled_ns = b->throttled_ns;
	u->launches = b->launches;
}

static bool books_any(const struct gs_ru_books *b)
{
	return gs__mem_bytes(b) || b->mem_peak || b->busy_ns ||
	       b->throttled_ns || b->launches;
}

/* The file holding the books of slice `ref` (not created), or NULL: none
 * yet, or not ours to open. */
static struct gs_own *slice_owner(struct gs_region *r,
                                  const struct gs_slice_ref *ref)
{
	struct own_key key = gs__slice_key(&r->rl->slice[ref->slot], ref->slot);
	int k;

	if (key.slot >= 0)
		key.gen = ref->generation;
	k = gs__owner_find_key(r, &key, false, NULL);
	return k >= 0 ? &r->own[k] : NULL;
}

gs_err gs_region_slice_usage(struct gs_region *r,
                             const struct gs_slice_ref *ref,
                             struct gs_slice_usage *out)
{
	struct gs_ru_slice *us;
	struct gs_own *o;
	uint64_t now = gs__mono_ns();
	gs_err err;

	memset(out, 0, sizeof(*out));
	if (!gs__ref_ok(ref))
		return GS_ERR_NOT_FOUND;
	if (__atomic_load_n(&r->rl->slice[ref->slot].generation,
	                    __ATOMIC_ACQUIRE) != ref->generation)
		return GS_ERR_NOT_FOUND;
	o = slice_owner(r, ref);
	if (o == NULL)
		return GS_OK; /* no books yet, or not ours to read: none */
	err = gs__own_lock(r, o);
	if (err != GS_OK)
		return err;
	gs__books_sync(r, o, ref->slot);
	us = &o->ro->slice[ref->slot];
	out->n_procs = us->n_procs;
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gs_ru_books *b = &us->dev[d];

		if (!r->ru->dev[d].in_use)
			continue;
		gs__books_tick(b, now);
		if (!books_any(b))
			continue;
		books_export(r, d, b, &out->dev[out->n_dev++]);
		out->mem_used += b->mem_used;
		if (b->mem_peak > out->mem_peak)
			out->mem_peak = b->mem_peak;
		out->mem_byte_s += b->mem_byte_s;
		out->busy_ns += b->busy_ns;
		out->throttled_ns += b->throttled_ns;
		out->launches += b->launches;
	}
	gs__own_unlock(r, o);
	return GS_OK;
}

/* Owner lock held: the slot of the calling process in `o`, if attached. */
static int proc_find_self(struct gs_region *r, struct gs_own *o, int32_t pid,
                          uint64_t start)
{
	for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
		struct gs_ru_proc *p = &o->ro->proc[i];

		if (p->state == GS_RU_PROC_LIVE && p->pid == pid &&
		    p->start_time == start && p->pidns == r->pidns)
			return i;
	}
	return -1;
}

/* A process's work in flight and waits, taken off its slice's record. */
static void sched_give_back(struct gs_sched_slice *ss,
                            const struct gs_ru_books *pb)
{
	ss->inflight -=
	    pb->inflight <= ss->inflight ? pb->inflight : ss->inflight;
	ss->waiting -= pb->waiting <= ss->waiting ? pb->waiting : ss->waiting;
}

/*
 * Owner lock held: frees proc slot i of `o`, giving its share back to its
 * slice: memory in the owner's books, its work in flight and waits in
 * the shared scheduler records (under the shared lock, taken after the
 * owner's; skipped when it cannot be had - gpusched lets those counts
 * go stale).
 */
static void proc_free_locked(struct gs_region *r, struct gs_own *o, int i)
{
	struct gs_ro_file *ro = o->ro;
	struct gs_ru_proc *p = &ro->proc[i];
	int s = p->slice;
	bool recount = false;

	if (s >= 0 && s < GS_REGION_MAX_SLICES) {
		struct gs_ru_slice *us = &ro->slice[s];

		gs__books_sync(r, o, s);
		if (us->generation == p->slice_gen) {
			bool sched = false;

			recount = !gs__mem_give_back(ro, i, r->pidns);
			for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
				struct gs_ru_books *pb = &ro->proc_dev[i][d];

				sched = sched || pb->inflight || pb->waiting;
			}
			/* A process gone while swapped out: its host copy went
			 * with it. */
			us->swap.swapped_bytes -=
			    p->swapped_bytes <= us->swap.swapped_bytes
			        ? p->swapped_bytes
			        : us->swap.swapped_bytes;
			p->swapped_bytes = 0;
			if (sched && gs__arbitrated(r)) {
				/* The slice's own record; the arbiter
				 * publishes it. */
				for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
					sched_give_back(&ro->ask[d][s],
					                &ro->proc_dev[i][d]);
				gs_region_bell(r);
			} else if (sched && gs__shared_lock(r) == GS_OK) {
				for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
					sched_give_back(&r->ru->sched[d][s],
					                &ro->proc_dev[i][d]);
				gs__shared_unlock(r);
			}
			if (us->n_procs > 0)
				us->n_procs--;
		}
	}
	memset(ro->proc_dev[i], 0, sizeof(ro->proc_dev[i]));
	p->state = GS_RU_PROC_FREE;
	p->generation++;
	if (recount) /* it died inside a memory update */
		(void)gs__mem_recount(ro, s, r->pidns,
		                      gs__mono_ns() + 10000000ull);
	if (r->arb_client)
		return; /* the arbiter wakes whom it concerns */
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
		__atomic_add_fetch(&r->ru->dev[d].sched.seq, 1,
		                   __ATOMIC_RELEASE);
}

/* Whether `o` is the file that holds the books of slice `sl` (slot s). */
bool gs__own_serves(const struct gs_own *o, const struct gs_rl_slice *sl, int s)
{
	struct own_key key = gs__slice_key(sl, s);

	return o->uid == key.uid && o->slot == key.slot &&
	       (key.slot < 0 ||
	        __atomic_load_n(&o->gen, __ATOMIC_ACQUIRE) == key.gen);
}

/*
 * The uid a live process runs as (the owner of /proc/<pid>, its effective
 * uid), or -1 when it is gone.
 */
static int64_t pid_uid(int32_t pid)
{
	char path[64];
	struct stat st;

	(void)snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st) != 0)
		return -1;
	return (int64_t)st.st_uid;
}

/*
 * Owner lock held: frees the process slots of `o` that stand for nothing
 * - a process of this pid namespace that is gone, one whose uid may not
 * be in its slice or is not the uid it attached with (an entry forged
 * with a victim's pid), one in a slice of another owner than the file's,
 * and a copy of an entry (same process, same slice); and a uid's entries
 * past GS_REGION_PROCS_PER_UID. The file is writable by its owner's
 * processes (and, for uid 0's, by everyone); these checks rest on what
 * the kernel says.
 */
int gs__reap_locked(struct gs_region *r, struct gs_own *o)
{
	struct gs_ro_file *ro = o->ro;
	int n = 0;

	for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
		struct gs_ru_proc *p = &ro->proc[i];
		bool bad;

		if (p->state != GS_RU_PROC_LIVE || p->pidns != r->pidns)
			continue;
		bad = !gs_region_pid_alive(p->pid, p->start_time) ||
		      (o->slot >= 0 &&
		       (p->slice != o->slot ||
		        p->slice_gen !=
		            __atomic_load_n(&o->gen, __ATOMIC_ACQUIRE)));
		if (!bad && p->slice >= 0 && p->slice < GS_REGION_MAX_SLICES) {
			const struct gs_rl_slice *sl = &r->rl->slice[p->slice];
			bool live = sl->state == GS_RL_LIVE &&
			            sl->generation == p->slice_gen;
			int64_t uid = pid_uid(p->pid);

			bad = (live && !gs__own_serves(o, sl, p->slice)) ||
			      (live && sl->lim.owner_uid != 0 && uid != 0 &&
			       uid != (int64_t)sl->lim.owner_uid) ||
			      (uid >= 0 && uid != (int64_t)p->uid);
		}
		for (int k = 0; !bad && k < i; k++)
			bad = ro->proc[k].state == GS_RU_PROC_LIVE &&
			      ro->proc[k].pid == p->pid &&
			      ro->proc[k].start_time == p->start_time &&
			      ro->proc[k].pidns == p->pidns &&
			      ro->proc[k].slice == p->slice &&
			      ro->proc[k].slice_gen == p->slice_gen;
		if (!bad)
			continue;
		proc_free_locked(r, o, i);
		ro->h.reaped_total++;
		n++;
	}
	/* Entries written past the per-uid limit (attach refuses them; a
	 * tenant writing the table by hand does not ask): the newest go. */
	for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
		struct gs_ru_proc *p = &ro->proc[i];
		int before = 0;

		if (p->state != GS_RU_PROC_LIVE || p->uid == 0)
			continue;
		for (int k = 0; k < i && before < GS_REGION_PROCS_PER_UID; k++)
			before += ro->proc[k].state == GS_RU_PROC_LIVE &&
			          ro->proc[k].uid == p->uid;
		if (before < GS_REGION_PROCS_PER_UID)
			continue;
		proc_free_locked(r, o, i);
		ro->h.reaped_total++;
		n++;
	}
	return n;
}

/* Owner lock held: live process slots of `o` recorded for `uid`. */
static int uid_slots(const struct gs_own *o, uint32_t uid)
{
	int n = 0;

	for (int k = 0; k < GS_REGION_MAX_PROCS; k++)
		if (o->ro->proc[k].state == GS_RU_PROC_LIVE &&
		    o->ro->proc[k].uid == uid)
			n++;
	return n;
}

/* The own[] index and slot a process reference names; -1 when none. */
int gs__ref_own(struct gs_region *r, const struct gs_proc_ref *p, int *i)
{
	int k;

	if (p == NULL || p->slot < 0)
		return -1;
	k = p->slot / GS_REGION_MAX_PROCS;
	*i = p->slot % GS_REGION_MAX_PROCS;
	return k < __atomic_load_n(&r->n_own, __ATOMIC_ACQUIRE) ? k : -1;
}

/* Drops the calling process's entry from owner file k (it moves to a
 * slice of another owner). */
static void leave_owner(struct gs_region *r, int k, int32_t pid, uint64_t start)
{
	struct gs_own *o = &r->own[k];
	int i;

	if (gs__own_lock(r, o) != GS_OK)
		return;
	i = proc_find_self(r, o, pid, start);
	if (i >= 0)
		proc_free_locked(r, o, i);
	gs__own_unlock(r, o);
}

gs_err gs_region_proc_attach(struct gs_region *r,
                             const struct gs_slice_ref *slice, uint32_t flags,
                             struct gs_proc_ref *out, struct gs_errbuf *eb)
{
	int32_t pid = (int32_t)getpid();
	uint64_t start = gs_region_pid_start_time(pid);
	uint32_t me = (uint32_t)geteuid(), owner;
	struct gs_rl_slice *sl;
	struct gs_ro_file *ro;
	struct gs_own *o;
	struct own_key key;
	int i, k, free_slot = -1;
	gs_err err;

	if (!gs__ref_ok(slice))
		return gs_fail(eb, GS_ERR_NOT_FOUND, "no such slice");
	sl = &r->rl->slice[slice->slot];
	key = gs__slice_key(sl, slice->slot);
	owner = key.uid;
	if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != GS_RL_LIVE ||
	    __atomic_load_n(&sl->generation, __ATOMIC_ACQUIRE) !=
	        slice->generation)
		return gs_fail(eb, GS_ERR_NOT_FOUND, "slice is gone");
	/* A slice is its owner's: another tenant cannot join it and spend
	 * its budget. Root may (it can anyway). */
	if (owner != 0 && me != 0 && me != owner)
		return gs_fail(eb, GS_ERR_PERM,
		               "slice %s belongs to uid %u, not to uid %u",
		               sl->lim.name, (unsigned)owner, (unsigned)me);
	if (key.slot >= 0 && key.gen != slice->generation)
		return gs_fail(eb, GS_ERR_NOT_FOUND, "slice is gone");
	/* Its books: the owner's file, or (private books) the slice's own,
	 * which on the host only root may open, and in a pod only the
	 * pod's own slice's is mounted. */
	k = gs__owner_find_key(r, &key, false, eb);
	if (k < 0)
		return gs_fail(eb, (gs_err)-k,
		               "no usage file for slice %s (uid %u) in %s",
		               sl->lim.name, (unsigned)owner, r->dir);
	if (r->me >= 0 && r->me != k)
		leave_owner(r, r->me, pid, start);
	o = &r->own[k];
	ro = o->ro;
	err = gs__own_lock(r, o);
	if (err != GS_OK)
		return gs_fail(eb, err, "region lock: %s", gs_strerror(err));
	if (sl->state != GS_RL_LIVE || sl->generation != slice->generation ||
	    !gs__own_serves(o, sl, slice->slot)) {
		gs__own_unlock(r, o);
		return gs_fail(eb, GS_ERR_NOT_FOUND, "slice is gone");
	}
	gs__books_sync(r, o, slice->slot);
	i = proc_find_self(r, o, pid, start);
	if (i >= 0 && (ro->proc[i].slice != slice->slot ||
	               ro->proc[i].slice_gen != slice->generation)) {
		proc_free_locked(r, o, i); /* moving to another slice */
		i = -1;
	}
	if (i < 0 && me != 0 &&
	    (uid_slots(o, me) >= GS_REGION_PROCS_PER_UID &&
	     (gs__reap_locked(r, o) == 0 ||
	      uid_slots(o, me) >= GS_REGION_PROCS_PER_UID))) {
		gs__own_unlock(r, o);
		return gs_fail(
		    eb, GS_ERR_QUOTA,
		    "uid %u already holds %d process slots (the most one user may)",
		    (unsigned)me, GS_REGION_PROCS_PER_UID);
	}
	if (i < 0) {
		for (int q = 0; q < GS_REGION_MAX_PROCS; q++)
			if (ro->proc[q].state == GS_RU_PROC_FREE) {
				free_slot = q;
				break;
			}
		if (free_slot < 0 && gs__reap_locked(r, o) > 0)
			for (int q = 0; q < GS_REGION_MAX_PROCS; q++)
				if (ro->proc[q].state == GS_RU_PROC_FREE) {
					free_slot = q;
					break;
				}
		if (free_slot < 0) {
			gs__own_unlock(r, o);
			return gs_fail(eb, GS_ERR_NO_FIT,
			               "process table full (%d)",
			               GS_REGION_MAX_PROCS);
		}
		i = free_slot;
		{
			struct gs_ru_proc *p = &ro->proc[i];
			uint64_t gen = gs__proc_gen_next(ro, p);

			memset(p, 0, sizeof(*p));
			memset(ro->proc_dev[i], 0, sizeof(ro->proc_dev[i]));
			p->generation = gen;
			p->pid = pid;
			p->start_time = start;
			p->pidns = r->pidns;
			p->slice = slice->slot;
			p->slice_gen = slice->generation;
			p->flags = flags;
			p->attached_ns = gs__real_ns();
			p->uid = me;
			p->state = GS_RU_PROC_LIVE;
			ro->slice[slice->slot].n_procs++;
		}
	}
	out->slot = k * GS_REGION_MAX_PROCS + i;
	out->reserved = 0;
	out->generation = ro->proc[i].generation;
	r->me = k;
	gs__own_unlock(r, o);
	return GS_OK;
}

struct gs_ru_books *gs__region_proc_books(struct gs_region *r,
                                          const struct gs_ru_proc *pr, int dev)
{
	struct gs_ro_file *ro = r->own[r->me].ro;

	return &ro->proc_dev[pr - ro->proc][dev];
}

struct gs_ru_proc *gs__region_proc_get(struct gs_region *r,
                                       const struct gs_proc_ref *p)
{
	struct gs_ru_proc *pr;
	int i, k = gs__ref_own(r, p, &i);

	if (k < 0 || k != r->me)
		return NULL;
	pr = &r->own[k].ro->proc[i];
	if (pr->state != GS_RU_PROC_LIVE || pr->generation != p->generation)
		return NULL;
	return pr;
}

gs_err gs_region_proc_detach(struct gs_region *r, const struct gs_proc_ref *p)
{
	struct gs_own *o;
	struct gs_ru_proc *pr;
	int i, k = gs__ref_own(r, p, &i);
	gs_err err;

	if (k < 0)
		return GS_ERR_NOT_FOUND;
	o = &r->own[k];
	err = gs__own_lock(r, o);
	if (err != GS_OK)
		return err;
	pr = &o->ro->proc[i];
	if (pr->state != GS_RU_PROC_LIVE || pr->generation != p->generation)
		err = GS_ERR_NOT_FOUND;
	else
		proc_free_locked(r, o, i);
	gs__own_unlock(r, o);
	return err;
}

int gs_region_reap(struct gs_region *r)
{
	int n = 0, nown;
	gs_err first = GS_OK;

	gs__owners_scan(r);
	nown = __atomic_load_n(&r->n_own, __ATOMIC_ACQUIRE);
	for (int k = 0; k < nown; k++) {
		gs_err err = gs__own_lock(r, &r->own[k]);

		if (err != GS_OK) {
			if (first == GS_OK)
				first = err;
			continue;
		}
		n += gs__reap_locked(r, &r->own[k]);
		gs__own_unlock(r, &r->own[k]);
	}
	return n == 0 && first != GS_OK ? -(int)first : n;
}

int gs_region_slice_nprocs(struct gs_region *r, const struct gs_slice_ref *s)
{
	struct gs_own *o;
	gs_err err;
	int n = 0;

	if (!gs__ref_ok(s))
		return 0;
	o = slice_owner(r, s);
	if (o == NULL)
		return 0;
	err = gs__own_lock(r, o);
	if (err != GS_OK)
		return -(int)err;
	for (int i = 0; i < GS_REGION_MAX_PROCS; i++)
		if (gs__proc_in_slice(&o->ro->proc[i], s->slot, s->generation))
			n++;
	gs__own_unlock(r, o);
	return n;
}

bool gs__proc_walk(struct gs_region *r, struct gs_proc_ref *it, bool scan,
                   gs__proc_walk_fn fn, void *arg)
{
	int next = it->slot < 0 ? 0 : it->slot + 1, nown;

	if (scan)
		gs__owners_scan(r);
	nown = __atomic_load_n(&r->n_own, __ATOMIC_ACQUIRE);
	for (int k = next / GS_REGION_MAX_PROCS; k < nown; k++) {
		struct gs_own *o = &r->own[k];
		int i0 = k == next / GS_REGION_MAX_PROCS
		             ? next % GS_REGION_MAX_PROCS
		             : 0;

		if (gs__own_lock(r, o) != GS_OK)
			continue;
		for (int i = i0; i < GS_REGION_MAX_PROCS; i++) {
			const struct gs_ru_proc *p = &o->ro->proc[i];
			struct gs_proc_ref ref;

			if (p->state != GS_RU_PROC_LIVE)
				continue;
			ref.slot = k * GS_REGION_MAX_PROCS + i;
			ref.reserved = 0;
			ref.generation = p->generation;
			if (!fn(r, o, i, &ref, arg))
				continue;
			gs__own_unlock(r, o);
			*it = ref;
			return true;
		}
		gs__own_unlock(r, o);
	}
	return false;
}

/* gs_region_proc_next's step: a process of the slice its owner file
 * serves, with its books. */
static bool proc_info_of(struct gs_region *r, struct gs_own *o, int i,
                         const struct gs_proc_ref *ref, void *arg)
{
	struct gs_proc_info *out = arg;
	const struct gs_ru_proc *p = &o->ro->proc[i];
	uint64_t now;

	/* A slice's private books name only its processes: an entry for
	 * another slice was written by hand by the pod that holds the
	 * file. */
	if (o->slot >= 0 &&
	    (p->slice != o->slot ||
	     p->slice_gen != __atomic_load_n(&o->gen, __ATOMIC_ACQUIRE)))
		return false;
	memset(out, 0, sizeof(*out));
	out->ref = *ref;
	out->slice.slot = p->slice;
	out->slice.generation = p->slice_gen;
	out->pid = p->pid;
	out->flags = p->flags;
	out->start_time = p->start_time;
	out->attached_ns = p->attached_ns;
	out->local = p->pidns == r->pidns;
	now = gs__mono_ns();
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gs_ru_books *pb = &o->ro->proc_dev[i][d];

		if (!r->ru->dev[d].in_use)
			continue;
		gs__books_tick(pb, now);
		if (books_any(pb))
			books_export(r, d, pb, &out->dev[out->n_dev++]);
	}
	return true;
}

bool gs_region_proc_next(struct gs_region *r, struct gs_proc_ref *it,
                         struct gs_proc_info *out)
{
	return gs__proc_walk(r, it, it->slot < 0, proc_info_of, out);
}
