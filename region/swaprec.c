/*
 * swaprec.c - a slice's swap record (gs/region_swap.h): the request word
 * and the shims' answers, kept in the slice's entry of its owner file
 * (struct gs_ru_swap, under the owner file's lock, reset with the books
 * when the slice's generation changes).
 *
 * Also each process's need for GPU memory and its activity stamp (in its
 * own process entry, struct gs_ru_proc), which the daemon serves.
 *
 * Waking (futexes on the shared files' words, never FUTEX_PRIVATE: the
 * words are in files mapped by several processes): whoever writes one
 * of the four words a waiter sleeps on wakes it right after, so a need
 * is seen, a request carried out and an answer read at once, not at the
 * next poll. Every wait has a deadline, so a wake that is lost (the
 * daemon's bell rung just before it sleeps) costs one poll period, as
 * before the bells:
 *
 *   word                       written by        waited on by
 *   ru header swap_bell        (never changed)   the daemon's swapper
 *                              rung by a process posting a need
 *   slice swap.req_seq         daemon / CLI      the slice's shims' watchers
 *   slice swap.ack_seq         a shim answering  the daemon's move
 *   proc need_ack              the daemon        the process that asked
 *
 * Calls lock.c, owner.c, usage.c and util.c.
 */
#include "region_int.h"

#include "gs/region_swap.h"

#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Wakes whoever sleeps on shared word `w`. */
static void word_wake(uint32_t *w)
{
	(void)syscall(SYS_futex, w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* Sleeps while shared word `w` holds `v`, at most `ns`; returns at once
 * when it holds another value (a wake, a signal or the deadline also end
 * it: the caller reads its word again). */
static void word_wait(uint32_t *w, uint32_t v, uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
	                      .tv_nsec = (long)(ns % 1000000000ull)};

	if (ns == 0 || __atomic_load_n(w, __ATOMIC_ACQUIRE) != v)
		return;
	(void)syscall(SYS_futex, w, FUTEX_WAIT, v, &ts, NULL, 0);
}

const char *gs_swap_pin_reason(enum gs_swap_pin pin)
{
	switch (pin) {
	case GS_SWAP_PIN_IPC_EXPORT:
		return "exports memory over IPC (cuIpcGetMemHandle)";
	case GS_SWAP_PIN_IPC_IMPORT:
		return "maps memory of another process (cuIpcOpenMemHandle)";
	case GS_SWAP_PIN_PEER:
		return "uses peer access (cuCtxEnablePeerAccess)";
	case GS_SWAP_PIN_GRAPH_MEM:
		return "has graph memory nodes (cuGraphAddMemAllocNode)";
	default:
		return "";
	}
}

/* The owner file of slice `ref` when this handle may open it; NULL. */
static struct gs_own *slice_own(struct gs_region *r,
                                const struct gs_slice_ref *ref)
{
	struct own_key key;
	int k;

	if (!gs__ref_ok(ref) ||
	    __atomic_load_n(&r->rl->slice[ref->slot].generation,
	                    __ATOMIC_ACQUIRE) != ref->generation)
		return NULL;
	key = gs__slice_key(&r->rl->slice[ref->slot], ref->slot);
	if (key.slot >= 0)
		key.gen = ref->generation;
	k = gs__owner_find_key(r, &key, false, NULL);
	return k >= 0 ? &r->own[k] : NULL;
}

/* Locks `o` and returns slot `s`'s record (synced to its generation). */
static struct gs_ru_swap *rec_lock(struct gs_region *r, struct gs_own *o,
                                   int s, gs_err *err)
{
	*err = gs__own_lock(r, o);
	if (*err != GS_OK)
		return NULL;
	gs__books_sync(r, o, s);
	return &o->ro->slice[s].swap;
}

gs_err gs_region_swap_request(struct gs_region *r,
                              const struct gs_slice_ref *s,
                              enum gs_swap_verb verb, uint32_t *seq)
{
	struct gs_own *o = slice_own(r, s);
	struct gs_ru_swap *w;
	gs_err err;

	if (verb != GS_SWAP_VERB_OUT && verb != GS_SWAP_VERB_IN)
		return GS_ERR_INVALID;
	if (o == NULL)
		return GS_ERR_NOT_FOUND;
	w = rec_lock(r, o, s->slot, &err);
	if (w == NULL)
		return err;
	w->req_verb = (uint16_t)verb;
	__atomic_store_n(&w->req_seq, w->req_seq + 1, __ATOMIC_RELEASE);
	*seq = w->req_seq;
	gs__own_unlock(r, o);
	word_wake(&w->req_seq);
	return GS_OK;
}

gs_err gs_region_swap_answer_wait(struct gs_region *r,
                                  const struct gs_slice_ref *s, uint32_t seq,
                                  uint64_t ns)
{
	struct gs_own *o = slice_own(r, s);
	struct gs_ru_swap *w;
	uint32_t ack;
	gs_err err;

	if (o == NULL)
		return GS_ERR_NOT_FOUND;
	w = rec_lock(r, o, s->slot, &err);
	if (w == NULL)
		return err;
	ack = w->ack_seq;
	gs__own_unlock(r, o);
	if (ack != seq)
		word_wait(&w->ack_seq, ack, ns);
	return GS_OK;
}

gs_err gs_region_swap_read(struct gs_region *r, const struct gs_slice_ref *s,
                           struct gs_swap_rec *out)
{
	struct gs_own *o = slice_own(r, s);
	struct gs_ru_swap *w;
	gs_err err;

	memset(out, 0, sizeof(*out));
	if (o == NULL)
		return gs__ref_ok(s) ? GS_OK : GS_ERR_NOT_FOUND;
	w = rec_lock(r, o, s->slot, &err);
	if (w == NULL)
		return err;
	out->req_seq = w->req_seq;
	out->req_verb = (enum gs_swap_verb)w->req_verb;
	out->ack_seq = w->ack_seq;
	out->result = (gs_err)w->result;
	out->pinned = (enum gs_swap_pin)w->pinned;
	out->swapped_bytes = w->swapped_bytes;
	out->swap_outs = w->swap_outs;
	out->swap_ins = w->swap_ins;
	out->last_out_ns = w->last_out_ns;
	out->last_in_ns = w->last_in_ns;
	gs__own_unlock(r, o);
	return GS_OK;
}

/* The record of process `p`'s slice in this handle's own file, locked;
 * NULL when the process or its slice is gone. */
static struct gs_ru_swap *proc_rec_lock(struct gs_region *r,
                                        const struct gs_proc_ref *p,
                                        struct gs_own **o,
                                        struct gs_ru_proc **out, gs_err *err)
{
	struct gs_ru_proc *pr = gs__region_proc_get(r, p);
	struct gs_rl_slice *sl;

	*err = GS_ERR_NOT_FOUND;
	if (pr == NULL || pr->slice < 0 || pr->slice >= GS_REGION_MAX_SLICES ||
	    r->me < 0)
		return NULL;
	*o = &r->own[r->me];
	sl = &r->rl->slice[pr->slice];
	if (__atomic_load_n(&sl->generation, __ATOMIC_ACQUIRE) !=
	        pr->slice_gen ||
	    !gs__own_serves(*o, sl, pr->slice))
		return NULL;
	*out = pr;
	return rec_lock(r, *o, pr->slice, err);
}

gs_err gs_region_swap_poll(struct gs_region *r, const struct gs_proc_ref *p,
                           enum gs_swap_verb *verb, uint32_t *seq)
{
	struct gs_own *o;
	struct gs_ru_proc *pr;
	struct gs_ru_swap *w;
	gs_err err;

	w = proc_rec_lock(r, p, &o, &pr, &err);
	if (w == NULL)
		return err;
	*verb = (enum gs_swap_verb)w->req_verb;
	*seq = w->req_seq;
	gs__own_unlock(r, o);
	return GS_OK;
}

gs_err gs_region_swap_poll_wait(struct gs_region *r,
                                const struct gs_proc_ref *p, uint32_t seen,
                                uint64_t ns, enum gs_swap_verb *verb,
                                uint32_t *seq)
{
	struct gs_own *o;
	struct gs_ru_proc *pr;
	struct gs_ru_swap *w;
	gs_err err;

	w = proc_rec_lock(r, p, &o, &pr, &err);
	if (w == NULL)
		return err;
	*seq = w->req_seq;
	gs__own_unlock(r, o);
	if (*seq == seen)
		word_wait(&w->req_seq, seen, ns);
	return gs_region_swap_poll(r, p, verb, seq);
}

gs_err gs_region_swap_answer(struct gs_region *r, const struct gs_proc_ref *p,
                             uint32_t seq, enum gs_swap_verb verb,
                             gs_err result, uint64_t bytes,
                             enum gs_swap_pin pin, uint64_t now_ns)
{
	struct gs_own *o;
	struct gs_ru_proc *pr;
	struct gs_ru_swap *w;
	gs_err err;

	w = proc_rec_lock(r, p, &o, &pr, &err);
	if (w == NULL)
		return err;
	if (w->pinned == GS_SWAP_PIN_NONE)
		w->pinned = (uint16_t)pin;
	if (result == GS_OK && verb == GS_SWAP_VERB_OUT && bytes > 0) {
		w->swapped_bytes += bytes;
		pr->swapped_bytes += bytes;
		w->swap_outs++;
		w->last_out_ns = now_ns;
	} else if (result == GS_OK && verb == GS_SWAP_VERB_IN && bytes > 0) {
		w->swapped_bytes -= bytes < w->swapped_bytes ? bytes
		                                              : w->swapped_bytes;
		pr->swapped_bytes -= bytes < pr->swapped_bytes
		                         ? bytes
		                         : pr->swapped_bytes;
		w->swap_ins++;
		w->last_in_ns = now_ns;
	}
	w->result = (int32_t)result;
	__atomic_store_n(&w->ack_seq, seq, __ATOMIC_RELEASE);
	gs__own_unlock(r, o);
	word_wake(&w->ack_seq);
	return GS_OK;
}

/* ---- a process's need (memory on demand) ------------------------------ */

/* This process's own entry, its owner file locked; NULL when gone. */
static struct gs_ru_proc *own_proc_lock(struct gs_region *r,
                                        const struct gs_proc_ref *p,
                                        struct gs_own **o, gs_err *err)
{
	struct gs_ru_proc *pr = gs__region_proc_get(r, p);

	*err = GS_ERR_NOT_FOUND;
	if (pr == NULL || r->me < 0)
		return NULL;
	*o = &r->own[r->me];
	*err = gs__own_lock(r, *o);
	if (*err != GS_OK)
		return NULL;
	if (pr->state != GS_RU_PROC_LIVE || pr->generation != p->generation) {
		gs__own_unlock(r, *o);
		*err = GS_ERR_NOT_FOUND;
		return NULL;
	}
	return pr;
}

gs_err gs_region_swap_need(struct gs_region *r, const struct gs_proc_ref *p,
                           int dev, uint64_t bytes, uint64_t now_ns,
                           uint32_t *seq)
{
	struct gs_own *o;
	struct gs_ru_proc *pr;
	gs_err err;

	if (dev < 0 || dev >= GS_REGION_MAX_DEVICES)
		return GS_ERR_INVALID;
	pr = own_proc_lock(r, p, &o, &err);
	if (pr == NULL)
		return err;
	pr->need_dev = dev;
	pr->need_bytes = bytes;
	pr->active_ns = now_ns;
	/* 0 is "never asked": skip it when the counter wraps */
	pr->need_seq = pr->need_seq + 1 ? pr->need_seq + 1 : 1;
	*seq = pr->need_seq;
	gs__own_unlock(r, o);
	gs_region_swap_bell(r);
	return GS_OK;
}

void gs_region_swap_bell(struct gs_region *r)
{
	struct gs_ru_file *ru = __atomic_load_n(&r->ru, __ATOMIC_ACQUIRE);

	if (ru != NULL)
		word_wake(&ru->h.swap_bell);
}

void gs_region_swap_bell_wait(struct gs_region *r, uint64_t ns)
{
	struct gs_ru_file *ru = __atomic_load_n(&r->ru, __ATOMIC_ACQUIRE);

	if (ru != NULL)
		word_wait(&ru->h.swap_bell,
		          __atomic_load_n(&ru->h.swap_bell, __ATOMIC_ACQUIRE),
		          ns);
}

gs_err gs_region_swap_need_result(struct gs_region *r,
                                  const struct gs_proc_ref *p, uint32_t seq,
                                  bool *answered, gs_err *result)
{
	struct gs_own *o;
	struct gs_ru_proc *pr;
	gs_err err;

	pr = own_proc_lock(r, p, &o, &err);
	if (pr == NULL)
		return err;
	*answered = pr->need_ack == seq;
	if (*answered)
		*result = (gs_err)pr->need_result;
	gs__own_unlock(r, o);
	return GS_OK;
}

gs_err gs_region_swap_need_wait(struct gs_region *r,
                                const struct gs_proc_ref *p, uint32_t seq,
                                uint64_t ns, bool *answered, gs_err *result)
{
	struct gs_own *o;
	struct gs_ru_proc *pr;
	uint32_t ack;
	gs_err err;

	pr = own_proc_lock(r, p, &o, &err);
	if (pr == NULL)
		return err;
	ack = pr->need_ack;
	gs__own_unlock(r, o);
	if (ack != seq)
		word_wait(&pr->need_ack, ack, ns);
	return gs_region_swap_need_result(r, p, seq, answered, result);
}

gs_err gs_region_swap_active(struct gs_region *r, const struct gs_proc_ref *p,
                             uint64_t now_ns)
{
	struct gs_own *o;
	struct gs_ru_proc *pr;
	gs_err err;

	pr = own_proc_lock(r, p, &o, &err);
	if (pr == NULL)
		return err;
	pr->active_ns = now_ns;
	gs__own_unlock(r, o);
	return GS_OK;
}

gs_err gs_region_swap_movable(struct gs_region *r,
                              const struct gs_proc_ref *p)
{
	struct gs_own *o;
	struct gs_ru_proc *pr;
	gs_err err;

	pr = own_proc_lock(r, p, &o, &err);
	if (pr == NULL)
		return err;
	pr->swap_flags |= GS_SWAP_PROC_MOVABLE;
	gs__own_unlock(r, o);
	return GS_OK;
}

/* Whether entry `pr` of owner file `o` may speak for its slice: live, and
 * its slice live at its generation and served by `o`. Lock held. */
static bool need_trusted(struct gs_region *r, const struct gs_own *o,
                         const struct gs_ru_proc *pr)
{
	const struct gs_rl_slice *sl;

	if (pr->state != GS_RU_PROC_LIVE || pr->slice < 0 ||
	    pr->slice >= GS_REGION_MAX_SLICES)
		return false;
	sl = &r->rl->slice[pr->slice];
	return __atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) == GS_RL_LIVE &&
	       __atomic_load_n(&sl->generation, __ATOMIC_ACQUIRE) ==
	           pr->slice_gen &&
	       gs__own_serves(o, sl, pr->slice);
}

/* gs_region_swap_need_next's step: a trusted entry's need and activity. */
static bool need_of(struct gs_region *r, struct gs_own *o, int i,
                    const struct gs_proc_ref *ref, void *arg)
{
	struct gs_swap_need *out = arg;
	const struct gs_ru_proc *p = &o->ro->proc[i];

	if (!need_trusted(r, o, p))
		return false;
	memset(out, 0, sizeof(*out));
	out->proc = *ref;
	out->owner = ref->slot / GS_REGION_MAX_PROCS;
	out->slice.slot = p->slice;
	out->slice.generation = p->slice_gen;
	out->pid = p->pid;
	out->seq = p->need_seq;
	out->ack = p->need_ack;
	out->result = (gs_err)p->need_result;
	out->dev = p->need_dev;
	out->bytes = p->need_bytes;
	out->active_ns = p->active_ns;
	out->flags = p->swap_flags;
	return true;
}

bool gs_region_swap_need_next(struct gs_region *r, struct gs_proc_ref *it,
                              struct gs_swap_need *out)
{
	return gs__proc_walk(r, it,
	                     it->slot < 0 && it->slot != GS_REGION_NEED_NO_SCAN,
	                     need_of, out);
}

gs_err gs_region_swap_need_answer(struct gs_region *r,
                                  const struct gs_proc_ref *p, uint32_t seq,
                                  gs_err result)
{
	struct gs_own *o;
	struct gs_ru_proc *pr;
	gs_err err = GS_ERR_NOT_FOUND;
	int i, k = gs__ref_own(r, p, &i);

	if (k < 0)
		return GS_ERR_NOT_FOUND;
	o = &r->own[k];
	err = gs__own_lock(r, o);
	if (err != GS_OK)
		return err;
	pr = &o->ro->proc[i];
	if (pr->state == GS_RU_PROC_LIVE && pr->generation == p->generation &&
	    pr->need_seq == seq) {
		pr->need_result = (int32_t)result;
		__atomic_store_n(&pr->need_ack, seq, __ATOMIC_RELEASE);
		err = GS_OK;
	} else {
		err = GS_ERR_NOT_FOUND;
	}
	gs__own_unlock(r, o);
	if (err == GS_OK)
		word_wake(&pr->need_ack);
	return err;
}
