/*
 * swapper.c - the daemon acting on the swap policy (see swapper.h): core's
 * gs/swap.h decides, this carries its plans out through the slices' swap
 * records in the region, which their processes' shims answer.
 *
 * One thread, so moves never overlap. It reads the needs the processes
 * posted (gs_region_swap_need_next) and serves the pending ones, higher
 * priority first, as soon as a process rings the region's swap bell
 * (posting a need does), at the latest every SCAN_NS; every IDLE_TICK_NS
 * it refreshes each slice's activity and runs the idle tick on each GPU.
 * What ringing may cost it is bounded: two looks at the needs are at
 * least BELL_GAP_NS apart, and the needs of one owner (a uid's owner
 * file) are served at most once per SCAN_NS, as without the bell, so a
 * tenant that rings or asks in a loop neither burns the daemon nor
 * delays another tenant's need by more than a move. Its waits for a
 * shim's answer sleep on the answer word (woken when it is written),
 * never more often than MOVE_SPIN_NS apart when the word changes without
 * the answer (a tenant writes its own owner file):
 *
 *   need posted --plan_request--> OK:     swap-outs, the requester's
 *                                         swap-in, answer OK (retry)
 *                             \-> NO_FIT: answer NO_FIT (out of memory),
 *                                         event swap.refused; a come-back
 *                                         need is asked again each idle
 *                                         tick instead (its process waits)
 *                             \-> BUSY:   kept until retry_at (a come-back
 *                                         need always; an allocation's
 *                                         while its process still waits)
 *
 * Parked slices (a quota reclaim's victims, park.c, gs/park.h): every
 * scan first swaps out the ones still holding memory (park_out; a failed
 * swap-out drops the slice the reclaim's way); their processes' needs
 * are kept unanswered while they are parked (their promise counts as 0
 * in the policy's view); each idle tick asks park.c which resume, and
 * brings their memory back as the policy allows (park_resume).
 *
 * What the policy is given, per slice on the GPU (a view built under the
 * node lock): promised = its memory cap; resident = its books' memory
 * less what its record says is swapped (for a swapped-out slice, what
 * stays is its contexts, which cannot move: it is taken off the GPU's
 * memory instead, so the slice is no victim); the last GPU activity the
 * swapper saw (its books changed: launches, GPU time, memory; NVML saw
 * its processes on the SMs; a process stamped a call or posted a need),
 * else when the swapper first saw it;
 * when it last came in (the record's last swap-in, else its creation);
 * priority, borrowing (admitted above its team's guarantee), swap mode
 * and pin. Host memory: swap.host_memory less what slices on the other
 * GPUs hold swapped, so the bound is the node's.
 *
 * Owns its table of slices' activity (by slice id) and the BUSY needs'
 * retry times; writes each slice's move times into the model (under the
 * node lock), and each idle tick (and once on stopping) notes the swap
 * counts and times the slices' records hold in the model and stores the
 * slices whose figures changed (gs__slot_swap_note), so that they
 * outlive a restart.
 */
#include "swapper.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs/log.h"
#include "gs/region_swap.h"
#include "gs/swap.h"
#include "node_int.h"
#include "park.h"
#include "slots.h"

#define SCAN_NS      (10LL * 1000 * 1000)
#define BELL_GAP_NS  (1000LL * 1000)
#define MOVE_POLL_NS (1000ULL * 1000)
#define MOVE_SPIN_NS (100LL * 1000)
/* Owner files tracked for the per-owner bound (a region has fewer; any
 * beyond share the last entry). */
#define OWNER_MAX    1024
#define IDLE_TICK_NS (1000LL * 1000 * 1000)
/* A move's answer is waited for this long (the copy of a whole GPU's
 * memory at a few GB/s, with room to spare). */
#define MOVE_WAIT_NS (120LL * 1000 * 1000 * 1000)
/* A BUSY allocation need is kept while its process still waits: the
 * node's need wait (swap.need_wait, the shim's bound), less a sixth. */
static int64_t need_keep_ns(const struct gs_config *cfg)
{
	return cfg->swap_need_wait_s * 1000000000LL / 6 * 5;
}
/* The same refusal of a slice is said at most this often. */
#define SAY_EVERY_NS (60LL * 1000 * 1000 * 1000)
#define RETRY_MAX    64

struct track {
	int64_t id;
	uint64_t fp;            /* its books' fingerprint when last looked */
	int64_t last_active_ns; /* CLOCK_REALTIME */
	int64_t said_ns;        /* the last refusal said */
	char said[GS_SWAP_WHY_MAX];
	bool pin_said;
	bool seen;       /* in this pass (pruning) */
	bool movable;    /* a process of it holds movable memory */
	bool park_tried; /* parked: its swap-out was asked for */
};

struct retry {
	int32_t slot;
	uint64_t gen;
	uint32_t seq;
	int64_t at_ns;
};

/* One GPU's view for the policy; x[i] is what the swapper keeps beside
 * the policy's s[i]. */
struct view {
	int gpu;
	size_t n;
	struct gs_swap_config cfg;
	struct gs_swap_slice s[GS_SWAP_SLICES_MAX];
	struct {
		struct gs_slice_ref ref;
		char name[GS_NAME_MAX];
		char team[GS_NAME_MAX];
		char pinned[96];
		bool pin_new; /* pinned since the swapper last said so */
		bool parked;  /* PARKED (gs/park.h): waits to resume */
	} x[GS_SWAP_SLICES_MAX];
};

struct gs_swapper {
	struct gs_node *node;
	pthread_t thread;
	bool stopping; /* atomic */
	struct track *t;
	int n, cap;
	struct retry retry[RETRY_MAX];
	int n_retry;
	/* per owner file: when its next need may be served (realtime ns) */
	int64_t owner_next[OWNER_MAX];
	struct view v; /* the thread's scratch */
	/* swap is off (swap.oversubscribe 1) but slices parked before a
	 * restart remain: only those are looked after (park_keep) */
	bool resume_only;
};

static int64_t realtime_ns(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000LL),
	                      .tv_nsec = (long)(ns % 1000000000LL)};

	if (ns > 0)
		(void)nanosleep(&ts, NULL);
}

static double mib(uint64_t b)
{
	return (double)b / (1024.0 * 1024.0);
}

/* The slice's activity record, made when first seen (then counted as
 * active: a new slice is not idle before idle_after). NULL: no memory. */
static struct track *track_get(struct gs_swapper *sw, int64_t id, int64_t now)
{
	for (int i = 0; i < sw->n; i++)
		if (sw->t[i].id == id)
			return &sw->t[i];
	if (sw->n == sw->cap) {
		int cap = sw->cap ? sw->cap * 2 : 32;
		struct track *t = realloc(sw->t, (size_t)cap * sizeof(*t));

		if (t == NULL)
			return NULL;
		sw->t = t;
		sw->cap = cap;
	}
	memset(&sw->t[sw->n], 0, sizeof(sw->t[0]));
	sw->t[sw->n].id = id;
	sw->t[sw->n].last_active_ns = now;
	return &sw->t[sw->n++];
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h;
}

/* Activity the books show: a change since the last look. */
static void track_books(struct track *t, const struct gs_slice_usage *u,
                        int64_t now)
{
	uint64_t fp = mix(mix(mix(0, u->launches), u->busy_ns), u->mem_used);

	fp = mix(mix(fp, u->mem_peak), u->n_procs);
	if (fp != t->fp) {
		t->fp = fp;
		t->last_active_ns = now;
	}
}

/*
 * Builds sw->v for GPU `gpu` (false: not a GPU the policy acts on: MIG
 * mode, or unknown). Node lock held. Reads the region (its waits have
 * deadlines, as gs__slot_swap_fill's). Writes no event (that takes the
 * node lock): say_pins does, after.
 */
static bool view_build(struct gs_swapper *sw, int gpu, int64_t now)
{
	struct gs_node *node = sw->node;
	const struct gs_config *cfg = node->cfg;
	struct view *v = &sw->v;
	uint64_t other_swapped = 0;

	if (node->region == NULL || gpu < 0 || gpu >= node->gpus->n ||
	    node->gpus->gpu[gpu].mig_on)
		return false;
	memset(&v->cfg, 0, sizeof(v->cfg));
	v->gpu = gpu;
	v->n = 0;
	v->cfg.gpu_memory_bytes = node->gpus->gpu[gpu].memory_bytes;
	v->cfg.idle_after_ns = cfg->swap_idle_after_s * 1000000000LL;
	v->cfg.min_residency_ns = cfg->swap_min_residency_s * 1000000000LL;
	for (int i = 0; i < node->n; i++) {
		struct gs__nslice *ns = node->v[i];
		const struct gs_slice *s = &ns->s;
		struct gs_swap_rec rec;
		struct gs_slice_usage u;
		struct gs_swap_slice *p;
		struct track *t;
		uint64_t used;

		if (!ns->has_ref || s->state == GS_SLICE_PENDING ||
		    s->state == GS_SLICE_FAILED ||
		    gs_region_swap_read(node->region, &ns->ref, &rec) != GS_OK)
			continue;
		if (s->gpu_index != gpu || s->mode == GS_MODE_MIG ||
		    s->mode == GS_MODE_MIG_TIMESLICE ||
		    s->mode == GS_MODE_MIG_MPS) {
			other_swapped += rec.swapped_bytes;
			continue;
		}
		if (v->n == GS_SWAP_SLICES_MAX ||
		    gs_region_slice_usage(node->region, &ns->ref, &u) != GS_OK)
			continue;
		t = track_get(sw, s->id, now);
		if (t == NULL)
			continue;
		t->seen = true;
		track_books(t, &u, now);
		/* NVML saw its processes on the SMs at the ledger's last
		 * sample: launches the shim's fast path does not count */
		if (ns->live.nvml_compute_pct > 0)
			t->last_active_ns = now;
		used = u.mem_used;
		p = &v->s[v->n];
		memset(p, 0, sizeof(*p));
		p->id = s->id;
		p->promised_bytes = s->spec.memory_bytes
		                        ? s->spec.memory_bytes
		                        : v->cfg.gpu_memory_bytes;
		p->swapped_bytes = rec.swapped_bytes;
		p->resident_bytes =
		    used > rec.swapped_bytes ? used - rec.swapped_bytes : 0;
		if (rec.swapped_bytes > 0) {
			/* What a swapped-out slice keeps on the GPU cannot
			 * move (its contexts): memory the GPU does not have
			 * for anyone, not a victim's. */
			v->cfg.gpu_memory_bytes -=
			    p->resident_bytes < v->cfg.gpu_memory_bytes
			        ? p->resident_bytes
			        : v->cfg.gpu_memory_bytes;
			p->resident_bytes = 0;
		}
		/* a parked slice's promise counts nowhere while parked */
		if (s->state == GS_SLICE_PARKED)
			p->promised_bytes = 0;
		p->priority = s->spec.priority;
		p->borrowing = s->borrowed;
		p->last_active_ns = t->last_active_ns;
		p->resident_since_ns =
		    rec.last_in_ns ? (int64_t)rec.last_in_ns : s->created_ns;
		/* a slice whose processes hold no movable memory (none
		 * made a movable allocation) has nothing a swap-out moves:
		 * nobody would answer */
		p->swap_allowed = s->spec.swap == GS_SWAP_ALLOW && t->movable;
		v->x[v->n].ref = ns->ref;
		v->x[v->n].parked = s->state == GS_SLICE_PARKED;
		snprintf(v->x[v->n].name, sizeof(v->x[0].name), "%s", s->name);
		snprintf(v->x[v->n].team, sizeof(v->x[0].team), "%s", s->team);
		snprintf(v->x[v->n].pinned, sizeof(v->x[0].pinned), "%s",
		         gs_swap_pin_reason(rec.pinned));
		p->pinned = v->x[v->n].pinned[0] ? v->x[v->n].pinned : NULL;
		v->x[v->n].pin_new = p->pinned && !t->pin_said;
		if (p->pinned)
			t->pin_said = true;
		v->n++;
	}
	if (cfg->swap_host_memory == 0)
		v->cfg.host_memory_bytes = UINT64_MAX;
	else
		v->cfg.host_memory_bytes =
		    cfg->swap_host_memory > other_swapped
		        ? cfg->swap_host_memory - other_swapped
		        : 0;
	return true;
}

/* Says which slices of sw->v became pinned (node lock NOT held: an
 * event takes it). */
static void say_pins(struct gs_swapper *sw)
{
	struct view *v = &sw->v;

	for (size_t i = 0; i < v->n; i++)
		if (v->x[i].pin_new)
			gs_node_event(sw->node, "swap.pinned", v->x[i].name,
			              v->x[i].team, v->gpu,
			              "cannot swap: its process %s",
			              v->x[i].pinned);
}

/*
 * Notes each slice's swap record in the model and stores the slices whose
 * counts or times changed (one detached batch). Node lock held.
 */
static void note_counts(struct gs_node *node)
{
	struct gs__wr *wr = NULL;

	if (node->region == NULL)
		return;
	for (int i = 0; i < node->n; i++) {
		struct gs__nslice *ns = node->v[i];
		struct gs_swap_rec rec;

		if (!ns->has_ref || ns->s.state == GS_SLICE_PENDING ||
		    gs_region_swap_read(node->region, &ns->ref, &rec) !=
		        GS_OK ||
		    !gs__slot_swap_note(ns, &rec))
			continue;
		if (wr == NULL)
			wr = gs__wr_new();
		if (wr == NULL) {
			gs_warn(
			    "swapper",
			    "slice=%s swap counts not stored: out of memory",
			    ns->s.name);
			return;
		}
		gs__wr_slice_put(wr, &ns->s);
	}
	gs__node_submit_detached(node, wr);
}

/* Adds a move's time to slice `id`'s figures in the model, and stores
 * them. */
static void note_time(struct gs_swapper *sw, int64_t id, enum gs_swap_dir dir,
                      int64_t took)
{
	struct gs__nslice *ns;
	struct gs__wr *wr;

	pthread_mutex_lock(&sw->node->lock);
	ns = gs__node_find_id(sw->node, id);
	if (ns != NULL && dir == GS_SWAP_OUT) {
		ns->s.swap.out_ns_total += (uint64_t)took;
		ns->s.swap.last_out_took_ns = took;
	} else if (ns != NULL) {
		ns->s.swap.in_ns_total += (uint64_t)took;
		ns->s.swap.last_in_took_ns = took;
	}
	if (ns != NULL && ns->s.state != GS_SLICE_PENDING) {
		wr = gs__wr_new();
		if (wr == NULL)
			gs_warn("swapper",
			        "slice=%s swap times not stored: out of memory",
			        ns->s.name);
		else
			gs__wr_slice_put(wr, &ns->s);
		gs__node_submit_detached(sw->node, wr);
	}
	pthread_mutex_unlock(&sw->node->lock);
}

/*
 * Asks slice `ref`'s processes to move and waits for the first answer.
 * OUT: *moved (bytes, from the record), *took (ns). The answer's result,
 * GS_ERR_TIMEOUT when none came.
 */
static gs_err move(struct gs_swapper *sw, const struct gs_slice_ref *ref,
                   enum gs_swap_verb verb, uint64_t *moved, int64_t *took)
{
	struct gs_region *region = sw->node->region;
	struct gs_swap_rec before, rec;
	int64_t t0 = realtime_ns();
	uint32_t seq;
	gs_err err;

	*moved = 0;
	*took = 0;
	err = gs_region_swap_read(region, ref, &before);
	if (err == GS_OK)
		err = gs_region_swap_request(region, ref, verb, &seq);
	if (err != GS_OK)
		return err;
	for (int64_t last = 0;;) {
		int64_t now;

		err = gs_region_swap_read(region, ref, &rec);
		if (err != GS_OK)
			return err;
		if (rec.ack_seq == seq)
			break;
		/* gpusliced stopping does not wait for a slow answer: the
		 * shim carries the request out regardless */
		now = realtime_ns();
		if (now - t0 > MOVE_WAIT_NS ||
		    __atomic_load_n(&sw->stopping, __ATOMIC_ACQUIRE))
			return GS_ERR_TIMEOUT;
		/* woken again without the answer this soon: the word is
		 * being changed under us; look no more often than this */
		if (last != 0 && now - last < MOVE_SPIN_NS)
			sleep_ns(MOVE_SPIN_NS - (now - last));
		last = realtime_ns();
		err =
		    gs_region_swap_answer_wait(region, ref, seq, MOVE_POLL_NS);
		if (err != GS_OK)
			return err;
	}
	*took = realtime_ns() - t0;
	*moved =
	    verb == GS_SWAP_VERB_OUT
	        ? rec.swapped_bytes - (rec.swapped_bytes > before.swapped_bytes
	                                   ? before.swapped_bytes
	                                   : rec.swapped_bytes)
	        : before.swapped_bytes -
	              (before.swapped_bytes > rec.swapped_bytes
	                   ? rec.swapped_bytes
	                   : before.swapped_bytes);
	return rec.result;
}

/*
 * Carries out `plan` on sw->v, `reason` saying why (for the events).
 * Stops at the first move that fails. GS_OK or that move's error.
 */
static gs_err carry_out(struct gs_swapper *sw, const struct gs_swap_plan *plan,
                        const char *reason)
{
	struct view *v = &sw->v;

	for (size_t k = 0; k < plan->n_moves; k++) {
		const struct gs_swap_move *m = &plan->moves[k];
		size_t i = m->slice;
		bool out = m->dir == GS_SWAP_OUT;
		uint64_t moved;
		int64_t took;
		gs_err err;

		err = move(sw, &v->x[i].ref,
		           out ? GS_SWAP_VERB_OUT : GS_SWAP_VERB_IN, &moved,
		           &took);
		if (err != GS_OK) {
			gs_node_event(
			    sw->node, "swap.failed", v->x[i].name, v->x[i].team,
			    v->gpu, "swap-%s not made (%s): %s",
			    out ? "out" : "in", reason, gs_strerror(err));
			gs_warn("swapper", "slice=%s gpu=%d swap-%s failed: %s",
			        v->x[i].name, v->gpu, out ? "out" : "in",
			        gs_strerror(err));
			return err;
		}
		note_time(sw, v->s[i].id, m->dir, took);
		gs_node_event(
		    sw->node, out ? "swap.out" : "swap.in", v->x[i].name,
		    v->x[i].team, v->gpu, "swapped %s %.0f MiB in %.0f ms: %s",
		    out ? "out" : "in", mib(moved), (double)took / 1e6, reason);
		gs_info("swapper",
		        "slice=%s gpu=%d swapped %s %" PRIu64
		        " bytes in %.1f ms: %s",
		        v->x[i].name, v->gpu, out ? "out" : "in", moved,
		        (double)took / 1e6, reason);
	}
	return GS_OK;
}

/* Says a refusal of slice i (rate-limited: the same words at most once
 * per SAY_EVERY_NS). */
static void say_refused(struct gs_swapper *sw, size_t i, const char *what,
                        const char *why, int64_t now)
{
	struct view *v = &sw->v;
	struct track *t = track_get(sw, v->s[i].id, now);

	if (t != NULL && strcmp(t->said, why) == 0 &&
	    now - t->said_ns < SAY_EVERY_NS)
		return;
	if (t != NULL) {
		t->said_ns = now;
		snprintf(t->said, sizeof(t->said), "%s", why);
	}
	gs_node_event(sw->node, "swap.refused", v->x[i].name, v->x[i].team,
	              v->gpu, "%s: %s", what, why);
}

static struct retry *retry_find(struct gs_swapper *sw,
                                const struct gs_swap_need *nd)
{
	for (int i = 0; i < sw->n_retry; i++)
		if (sw->retry[i].slot == nd->proc.slot &&
		    sw->retry[i].gen == nd->proc.generation &&
		    sw->retry[i].seq == nd->seq)
			return &sw->retry[i];
	return NULL;
}

static void retry_set(struct gs_swapper *sw, const struct gs_swap_need *nd,
                      int64_t at)
{
	struct retry *r = retry_find(sw, nd);

	if (r == NULL && sw->n_retry < RETRY_MAX)
		r = &sw->retry[sw->n_retry++];
	if (r == NULL)
		return;
	r->slot = nd->proc.slot;
	r->gen = nd->proc.generation;
	r->seq = nd->seq;
	r->at_ns = at;
}

static void retry_drop(struct gs_swapper *sw, const struct gs_swap_need *nd)
{
	struct retry *r = retry_find(sw, nd);

	if (r != NULL)
		*r = sw->retry[--sw->n_retry];
}

/* The GPU of the slice at region entry `ref`, or -1. Node lock held. */
static int slice_gpu(struct gs_node *node, const struct gs_slice_ref *ref)
{
	for (int i = 0; i < node->n; i++) {
		const struct gs__nslice *ns = node->v[i];

		if (ns->has_ref && ns->ref.slot == ref->slot &&
		    ns->ref.generation == ref->generation)
			return ns->s.gpu_index;
	}
	return -1;
}

static void answer(struct gs_swapper *sw, const struct gs_swap_need *nd,
                   gs_err result)
{
	retry_drop(sw, nd);
	(void)gs_region_swap_need_answer(sw->node->region, &nd->proc, nd->seq,
	                                 result);
}

/* Serves one pending need; false when it was left for later (its retry
 * time has not come). */
static bool serve(struct gs_swapper *sw, const struct gs_swap_need *nd,
                  int64_t now)
{
	struct view *v = &sw->v;
	struct gs_swap_plan plan;
	struct gs_errbuf eb;
	struct retry *r = retry_find(sw, nd);
	char what[160], reason[256];
	size_t req = 0;
	bool found = false, built;
	struct gs_swap_rec rec;
	gs_err err;
	int gpu;

	int64_t seen = realtime_ns(), planned, moved;

	if (r != NULL && now < r->at_ns)
		return false;
	gs_errbuf_init(&eb);
	pthread_mutex_lock(&sw->node->lock);
	gpu = slice_gpu(sw->node, &nd->slice);
	built = gpu >= 0 && view_build(sw, gpu, now);
	for (size_t i = 0; built && i < v->n; i++)
		if (v->x[i].ref.slot == nd->slice.slot &&
		    v->x[i].ref.generation == nd->slice.generation) {
			req = i;
			found = true;
		}
	pthread_mutex_unlock(&sw->node->lock);
	if (built)
		say_pins(sw);
	if (!found) {
		answer(sw, nd, GS_ERR_NO_FIT);
		return true;
	}
	/* A parked slice's processes wait until it resumes (park.c): its
	 * needs are asked again each idle tick, unanswered. */
	if (v->x[req].parked) {
		retry_set(sw, nd, now + IDLE_TICK_NS);
		return true;
	}
	/* A come-back need of a slice not (yet) swapped: a swap-out of it is
	 * under way; it is served once that is answered. */
	if (nd->bytes == 0 && v->s[req].swapped_bytes == 0) {
		if (gs_region_swap_read(sw->node->region, &v->x[req].ref,
		                        &rec) == GS_OK &&
		    rec.ack_seq != rec.req_seq)
			return true;
		answer(sw, nd, GS_OK);
		return true;
	}
	v->s[req].last_active_ns = now; /* asking is a GPU call */
	if (nd->bytes > 0)
		snprintf(what, sizeof(what),
		         "its process %d asked for %.0f MiB more", (int)nd->pid,
		         mib(nd->bytes));
	else
		snprintf(what, sizeof(what),
		         "its process %d called the GPU while swapped out",
		         (int)nd->pid);
	/* The shim charges the books before it calls the driver, so the
	 * bytes a process asks for are in its slice's resident figure
	 * already, and within its cap: more is not believed. They are not
	 * on the GPU yet, so the policy weighs them as the need only. */
	if (nd->bytes > v->s[req].resident_bytes) {
		say_refused(
		    sw, req, what,
		    "more than its books hold (a need is charged to the slice first)",
		    now);
		answer(sw, nd, GS_ERR_NO_FIT);
		return true;
	}
	v->s[req].resident_bytes -= nd->bytes;
	err = gs_swap_plan_request(&v->cfg, v->s, v->n, req, nd->bytes, now,
	                           &plan, &eb);
	if (err == GS_ERR_BUSY) {
		bool keep =
		    nd->bytes == 0 ||
		    plan.retry_at_ns - (int64_t)nd->active_ns <
		        need_keep_ns(sw->node->cfg);

		if (keep) {
			retry_set(sw, nd, plan.retry_at_ns);
			return true;
		}
		say_refused(sw, req, what, plan.why, now);
		answer(sw, nd, GS_ERR_BUSY);
		return true;
	}
	if (err != GS_OK) {
		say_refused(sw, req, what,
		            plan.why[0] ? plan.why : gs_errbuf_msg(&eb, err),
		            now);
		/* A stopped process waits for its memory whatever the answer:
		 * its need is asked again each idle tick, until others go
		 * idle or leave. */
		if (nd->bytes == 0 && err == GS_ERR_NO_FIT)
			retry_set(sw, nd, now + IDLE_TICK_NS);
		else
			answer(sw, nd, err);
		return true;
	}
	snprintf(reason, sizeof(reason), "for slice %s: %s", v->x[req].name,
	         what);
	planned = realtime_ns();
	err = carry_out(sw, &plan, reason);
	moved = realtime_ns();
	answer(sw, nd, err == GS_OK ? GS_OK : err);
	/* where a need's wait goes (docs/swap.md, "Memory on demand") */
	gs_info(
	    "swapper",
	    "slice=%s pid=%d need of %" PRIu64
	    " bytes served (%s): seen %.2f ms after it was posted, planned in %.2f ms, moves %.2f ms, answered %.2f ms after it was posted",
	    v->x[req].name, (int)nd->pid, nd->bytes, gs_strerror(err),
	    (double)(seen - (int64_t)nd->active_ns) / 1e6,
	    (double)(planned - seen) / 1e6, (double)(moved - planned) / 1e6,
	    (double)(moved - (int64_t)nd->active_ns) / 1e6);
	return true;
}

/* The priority of the slice at `ref` (for the order of needs). */
static int need_rank(struct gs_node *node, const struct gs_slice_ref *ref)
{
	int rank = -1;

	pthread_mutex_lock(&node->lock);
	for (int i = 0; i < node->n; i++) {
		const struct gs__nslice *ns = node->v[i];

		if (ns->has_ref && ns->ref.slot == ref->slot &&
		    ns->ref.generation == ref->generation)
			rank = (int)ns->s.spec.priority;
	}
	pthread_mutex_unlock(&node->lock);
	return rank;
}

/* Activity the processes stamped (allocations, needs), and whether any
 * holds movable memory, per slice. */
static void stamp_activity(struct gs_swapper *sw, int64_t now)
{
	struct gs_swap_need one;
	struct gs_proc_ref it = {.slot = -1};
	struct gs_node *node = sw->node;

	for (int i = 0; i < sw->n; i++)
		sw->t[i].movable = false;
	while (gs_region_swap_need_next(node->region, &it, &one)) {
		int64_t at = (int64_t)one.active_ns;

		if (at > now)
			at = now; /* a stamp from the future is not believed */
		pthread_mutex_lock(&node->lock);
		for (int i = 0; i < node->n; i++) {
			const struct gs__nslice *ns = node->v[i];
			struct track *t;

			if (!ns->has_ref || ns->ref.slot != one.slice.slot ||
			    ns->ref.generation != one.slice.generation)
				continue;
			t = track_get(sw, ns->s.id, now);
			if (t != NULL && at > t->last_active_ns)
				t->last_active_ns = at;
			if (t != NULL && (one.flags & GS_SWAP_PROC_MOVABLE))
				t->movable = true;
		}
		pthread_mutex_unlock(&node->lock);
	}
}

#define NEEDS_MAX 64

/* The entry of owner file `owner` in sw->owner_next. */
static int64_t *owner_next(struct gs_swapper *sw, int owner)
{
	return &sw->owner_next[owner >= 0 && owner < OWNER_MAX ? owner
	                                                       : OWNER_MAX - 1];
}

/* Reads every process's need record: stamps activity, serves the
 * pending ones, higher priority first, of each owner one per SCAN_NS.
 * True when it served one (a move may have taken a while: look again). */
static bool scan_needs(struct gs_swapper *sw, int64_t now)
{
	bool served = false;
	struct gs_swap_need nd[NEEDS_MAX], one;
	int rank[NEEDS_MAX], n = 0;
	bool later[NEEDS_MAX];
	struct gs_proc_ref it = {.slot = GS_REGION_NEED_NO_SCAN};

	while (gs_region_swap_need_next(sw->node->region, &it, &one)) {
		if (one.seq == one.ack || n == NEEDS_MAX)
			continue;
		nd[n] = one;
		rank[n] = need_rank(sw->node, &one.slice);
		n++;
	}
	/* forget the retry times of needs no longer pending (answered by
	 * a newer one, or their process gone) */
	for (int k = 0; k < sw->n_retry;) {
		bool live = false;

		for (int i = 0; i < n && !live; i++)
			live = sw->retry[k].slot == nd[i].proc.slot &&
			       sw->retry[k].gen == nd[i].proc.generation &&
			       sw->retry[k].seq == nd[i].seq;
		if (live)
			k++;
		else
			sw->retry[k] = sw->retry[--sw->n_retry];
	}
	/* the activity walk looks for new owner files too: not for needs
	 * that all wait for their owner's turn */
	for (int i = 0; i < n; i++)
		if (now >= *owner_next(sw, nd[i].owner)) {
			stamp_activity(sw, now);
			break;
		}
	/* higher priority first (enum gs_priority grows with it) */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && rank[j] > rank[j - 1]; j--) {
			struct gs_swap_need t = nd[j];
			int k = rank[j];

			nd[j] = nd[j - 1];
			rank[j] = rank[j - 1];
			nd[j - 1] = t;
			rank[j - 1] = k;
		}
	/* decided before serving, so that all the needs one look found of
	 * an owner are served together */
	for (int i = 0; i < n; i++)
		later[i] = now < *owner_next(sw, nd[i].owner);
	for (int i = 0; i < n; i++) {
		if (later[i])
			continue; /* served its needs just now */
		if (serve(sw, &nd[i], now)) {
			*owner_next(sw, nd[i].owner) = now + SCAN_NS;
			served = true;
		}
	}
	return served;
}

/* Says why idle slices the idle tick left in stayed (host memory). */
static void say_host_full(struct gs_swapper *sw,
                          const struct gs_swap_plan *plan, int64_t now)
{
	struct view *v = &sw->v;
	uint64_t used = 0;
	char why[GS_SWAP_WHY_MAX];

	for (size_t i = 0; i < v->n; i++)
		used += v->s[i].swapped_bytes;
	used += plan->freed_bytes;
	for (size_t i = 0; i < v->n; i++) {
		bool planned = false;

		for (size_t k = 0; k < plan->n_moves; k++)
			planned = planned || plan->moves[k].slice == i;
		if (planned || !gs_swap_is_idle(&v->cfg, &v->s[i], now) ||
		    !gs_swap_is_movable(&v->cfg, &v->s[i], now, NULL) ||
		    used + v->s[i].resident_bytes <= v->cfg.host_memory_bytes)
			continue;
		snprintf(
		    why, sizeof(why),
		    "its %.0f MiB would take the host memory for swapped contents past swap.host_memory (%.0f MiB held, %.0f MiB left)",
		    mib(v->s[i].resident_bytes), mib(used),
		    mib(v->cfg.host_memory_bytes > used
		            ? v->cfg.host_memory_bytes - used
		            : 0));
		say_refused(sw, i, "idle, not swapped out", why, now);
	}
}

#define PARK_MAX 16

/*
 * Swaps out the parked slices still holding memory on the GPU (park.c
 * parked them; their processes are stopped at their next GPU call once
 * it is out). A swap-out that fails drops the slice the reclaim's way
 * (gs__park_fail). Each is asked once, again only after it was out and
 * came back in (`gpuslice swap in` by hand).
 */
static void park_out(struct gs_swapper *sw, int64_t now)
{
	struct gs_node *node = sw->node;
	struct {
		struct gs_slice_ref ref;
		int64_t id;
		int gpu;
		char name[GS_NAME_MAX], team[GS_NAME_MAX], why[128];
	} out[PARK_MAX];
	int n = 0;

	pthread_mutex_lock(&node->lock);
	for (int i = 0; i < node->n; i++) {
		struct gs__nslice *ns = node->v[i];
		struct gs_swap_rec rec;
		struct gs_slice_usage u;
		struct track *t;

		if (ns->s.state != GS_SLICE_PARKED) {
			for (int k = 0; k < sw->n; k++)
				if (sw->t[k].id == ns->s.id)
					sw->t[k].park_tried = false;
			continue;
		}
		t = track_get(sw, ns->s.id, now);
		if (t == NULL || n == PARK_MAX || !ns->has_ref ||
		    gs_region_swap_read(node->region, &ns->ref, &rec) !=
		        GS_OK ||
		    gs_region_slice_usage(node->region, &ns->ref, &u) != GS_OK)
			continue;
		t->seen = true;
		/* out: asked again should it come back in (by hand) */
		if (rec.swapped_bytes > 0)
			t->park_tried = false;
		if (t->park_tried || rec.swapped_bytes > 0 || u.mem_used == 0 ||
		    rec.ack_seq != rec.req_seq)
			continue;
		t->park_tried = true;
		out[n].ref = ns->ref;
		out[n].id = ns->s.id;
		out[n].gpu = ns->s.gpu_index;
		snprintf(out[n].name, sizeof(out[n].name), "%s", ns->s.name);
		snprintf(out[n].team, sizeof(out[n].team), "%s", ns->s.team);
		snprintf(out[n].why, sizeof(out[n].why), "%s", ns->s.reason);
		n++;
	}
	pthread_mutex_unlock(&node->lock);
	for (int k = 0; k < n; k++) {
		uint64_t moved;
		int64_t took;
		gs_err err;

		err = move(sw, &out[k].ref, GS_SWAP_VERB_OUT, &moved, &took);
		if (err != GS_OK) {
			gs__park_fail(node, out[k].id, gs_strerror(err));
			continue;
		}
		note_time(sw, out[k].id, GS_SWAP_OUT, took);
		gs_node_event(node, "swap.out", out[k].name, out[k].team,
		              out[k].gpu,
		              "swapped out %.0f MiB in %.0f ms: parked: %s",
		              mib(moved), (double)took / 1e6, out[k].why);
		gs_info("swapper",
		        "slice=%s gpu=%d swapped out %" PRIu64
		        " bytes in %.1f ms: parked",
		        out[k].name, out[k].gpu, moved, (double)took / 1e6);
	}
}

/*
 * Resumes the parked slices that have room again (park.c decides with
 * core's gs/park.h) and brings each one's memory back in as the swap
 * policy allows; what it does not allow now comes back when the slice's
 * process next calls the GPU (its need, served as any other).
 */
static void park_resume(struct gs_swapper *sw, int64_t now)
{
	struct gs_node *node = sw->node;
	struct view *v = &sw->v;
	int64_t ids[PARK_MAX];
	int n = 0;

	pthread_mutex_lock(&node->lock);
	gs__park_resume(node, ids, PARK_MAX, &n);
	pthread_mutex_unlock(&node->lock);
	for (int k = 0; k < n; k++) {
		struct gs_swap_plan plan;
		struct gs_errbuf eb;
		struct gs__nslice *ns;
		char reason[200];
		bool built = false;
		size_t req = 0;
		int found = 0;

		gs_errbuf_init(&eb);
		pthread_mutex_lock(&node->lock);
		ns = gs__node_find_id(node, ids[k]);
		if (ns != NULL)
			built = view_build(sw, ns->s.gpu_index, now);
		for (size_t i = 0; built && i < v->n; i++)
			if (v->s[i].id == ids[k]) {
				req = i;
				found = 1;
			}
		pthread_mutex_unlock(&node->lock);
		if (!found || v->s[req].swapped_bytes == 0 ||
		    gs_swap_plan_request(&v->cfg, v->s, v->n, req, 0, now,
		                         &plan, &eb) != GS_OK)
			continue;
		snprintf(reason, sizeof(reason),
		         "slice %s resumed from parking", v->x[req].name);
		(void)carry_out(sw, &plan, reason);
	}
}

/*
 * Swap off, slices still parked (a restart with swap.oversubscribe 1):
 * resumes those that fit again, as with swap on (gs__park_resume: the
 * GPU's memory, which is no longer oversubscribed, and the team's quota
 * have room for the promise), and asks each one's memory back in at
 * once: with room for its whole promise, nothing needs to go out first.
 * Returns how many stay parked. Takes the node lock.
 */
static int park_keep(struct gs_swapper *sw)
{
	struct gs_node *node = sw->node;
	int64_t ids[PARK_MAX];
	int n = 0, left = 0;

	pthread_mutex_lock(&node->lock);
	gs__park_resume(node, ids, PARK_MAX, &n);
	for (int k = 0; k < n; k++) {
		struct gs__nslice *ns = gs__node_find_id(node, ids[k]);
		struct gs_swap_rec rec;
		uint32_t seq;
		gs_err err;

		if (ns == NULL || !ns->has_ref ||
		    gs_region_swap_read(node->region, &ns->ref, &rec) != GS_OK ||
		    rec.swapped_bytes == 0)
			continue;
		err = gs_region_swap_request(node->region, &ns->ref,
		                             GS_SWAP_VERB_IN, &seq);
		if (err != GS_OK)
			gs_warn("swapper",
			        "slice=%s resumed but its memory was not asked back in: %s; it comes back at its next GPU call",
			        ns->s.name, gs_strerror(err));
	}
	for (int i = 0; i < node->n; i++)
		if (node->v[i]->s.state == GS_SLICE_PARKED)
			left++;
	pthread_mutex_unlock(&node->lock);
	return left;
}

static void idle_tick(struct gs_swapper *sw, int64_t now)
{
	struct gs_node *node = sw->node;
	int n_gpus;

	pthread_mutex_lock(&node->lock);
	n_gpus = node->gpus->n;
	for (int i = 0; i < sw->n; i++)
		sw->t[i].seen = false;
	note_counts(node);
	pthread_mutex_unlock(&node->lock);
	for (int g = 0; g < n_gpus; g++) {
		struct gs_swap_plan plan;
		struct gs_errbuf eb;
		char reason[200];
		bool built;

		gs_errbuf_init(&eb);
		pthread_mutex_lock(&node->lock);
		built = view_build(sw, g, now);
		pthread_mutex_unlock(&node->lock);
		if (built)
			say_pins(sw);
		if (!built || sw->v.n == 0 ||
		    gs_swap_plan_idle(&sw->v.cfg, sw->v.s, sw->v.n, now, &plan,
		                      &eb) != GS_OK)
			continue;
		say_host_full(sw, &plan, now);
		if (plan.n_moves == 0)
			continue;
		snprintf(reason, sizeof(reason),
		         "idle for %" PRId64
		         " s or more on an oversubscribed GPU",
		         node->cfg->swap_idle_after_s);
		(void)carry_out(sw, &plan, reason);
	}
	park_resume(sw, now);
	/* forget slices that are gone */
	for (int i = 0; i < sw->n;) {
		if (!sw->t[i].seen)
			sw->t[i] = sw->t[--sw->n];
		else
			i++;
	}
}

static void *swapper_main(void *arg)
{
	struct gs_swapper *sw = arg;
	int64_t next_idle = 0, last = 0;

	while (!__atomic_load_n(&sw->stopping, __ATOMIC_ACQUIRE)) {
		int64_t now = realtime_ns();
		bool served;

		if (sw->resume_only) {
			if (park_keep(sw) == 0) {
				gs_info("swapper",
				        "no parked slice left: stopping (swap is off)");
				break;
			}
			gs_region_swap_bell_wait(sw->node->region,
			                         IDLE_TICK_NS);
			continue;
		}
		/* a bell rung again right after a look waits out the gap */
		if (now - last < BELL_GAP_NS)
			sleep_ns(BELL_GAP_NS - (now - last));
		now = last = realtime_ns();
		park_out(sw, now);
		served = scan_needs(sw, now);
		if (realtime_ns() >= next_idle) {
			now = realtime_ns();
			stamp_activity(sw, now);
			idle_tick(sw, now);
			next_idle = now + IDLE_TICK_NS;
		}
		/* needs posted while a move ran were rung for in vain */
		if (served || __atomic_load_n(&sw->stopping, __ATOMIC_ACQUIRE))
			continue;
		gs_region_swap_bell_wait(sw->node->region, SCAN_NS);
	}
	/* what the records gained since the last tick is stored too */
	pthread_mutex_lock(&sw->node->lock);
	note_counts(sw->node);
	pthread_mutex_unlock(&sw->node->lock);
	return NULL;
}

gs_err gs_swapper_create(struct gs_node *node, struct gs_swapper **out,
                         struct gs_errbuf *eb)
{
	const struct gs_config *cfg = gs_node_config(node);
	struct gs_swapper *sw;

	int parked = 0;

	*out = NULL;
	if (node->region == NULL)
		return GS_OK;
	if (cfg->swap_oversubscribe <= 1.0) {
		pthread_mutex_lock(&node->lock);
		for (int i = 0; i < node->n; i++)
			if (node->v[i]->s.state == GS_SLICE_PARKED)
				parked++;
		pthread_mutex_unlock(&node->lock);
		if (parked == 0)
			return GS_OK;
	}
	sw = calloc(1, sizeof(*sw));
	if (sw == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	sw->node = node;
	sw->resume_only = parked > 0;
	if (pthread_create(&sw->thread, NULL, swapper_main, sw) != 0) {
		free(sw);
		return gs_fail(eb, GS_ERR_IO,
		               "cannot start the swapper thread");
	}
	if (sw->resume_only) {
		gs_info("swapper",
		        "swap is off (swap.oversubscribe 1) and %d slices are parked: each resumes when its GPU and team have room for it again, its memory asked back in then",
		        parked);
		*out = sw;
		return GS_OK;
	}
	gs_info(
	    "swapper",
	    "acting on the swap policy: oversubscribe %.2f, idle_after %" PRId64
	    " s, min_residency %" PRId64 " s, host_memory %" PRIu64 " bytes",
	    cfg->swap_oversubscribe, cfg->swap_idle_after_s,
	    cfg->swap_min_residency_s, cfg->swap_host_memory);
	*out = sw;
	return GS_OK;
}

void gs_swapper_destroy(struct gs_swapper *sw)
{
	if (sw == NULL)
		return;
	__atomic_store_n(&sw->stopping, true, __ATOMIC_RELEASE);
	gs_region_swap_bell(sw->node->region);
	pthread_join(sw->thread, NULL);
	free(sw->t);
	free(sw);
}
