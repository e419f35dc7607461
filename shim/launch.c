/*
 * launch.c - launches: the compute limiter and scheduler (gpusched.c) on
 * the slow path, GPU time measured with events, and the fast path that
 * makes the shim free for slices that need none of it.
 *
 * Fast path (every launch hook): a mark in the thread's own memory (the
 * launch is in the driver: a swap-out waits for it, swap.c), one load of
 * the gate word the process watches, a test against its mask and of the
 * swap stop, the call into the driver, and the mark taken back. No atomic
 * read-modify-write, no fence, no system call.
 *
 *   process                       gate word        mask       path
 *   no slice / not attached       gs__gate_open    ALWAYS     fast
 *   plain slice, one GPU          that GPU's gate  ENFORCED   fast unless
 *                                                             a slice with
 *                                                             limits is
 *                                                             on the GPU
 *   limited/prioritised/measured  gs__gate_slow    ALWAYS     slow
 *   GPU not known yet, or several gs__gate_slow    ALWAYS     slow
 *
 * Slow path: launches go in batches, one open batch per thread. A batch
 * holds launches on one stream admitted together (a lease) and timed by
 * one pair of events, so the region lock and the two event records are
 * paid once per batch, not per launch.
 *
 *   lease  the launch is one more of the thread's open lease
 *          (lease_take) when it is on the same stream, in the context
 *          the thread had current at admission (cached per thread: sync.c
 *          and mem.c's context hooks tell launch.c when it changes), the
 *          lease is not used up, the slice's limits did not change, and
 *          the GPU's `want` word did not move since admission (nobody
 *          started waiting, got the turn, or became active: a lease never
 *          holds up a turn or a higher priority by more than its own
 *          launches); every GS__SPAN_EVERY launches, also younger than
 *          GS__SPAN_NS. Cost: thread-local loads, two plain loads of
 *          shared words, a decrement (#30: +8 to +14 ns per limited
 *          launch on the sim, against +54 to +60 ns with a clock read, a
 *          context query and a lock per launch). No clock read: a batch is charged from the
 *          host times around its two records (gs__charge_of).
 *   close  otherwise the open batch is closed (end event recorded, batch
 *          put in the in-flight ring), and a new one is opened:
 *   bound  when our work in flight on the GPU is estimated above
 *          GS__INFLIGHT_NS, wait for our oldest batch (so a turn can
 *          change hands, and a higher priority get in, within about that)
 *   admit  gs_sched_admit() under the region lock, for a lease of
 *          GS__LEASE_NS of estimated work (1 to GS__LEASE_MAX launches;
 *          1 until the GPU's per-launch time is known). Skipped for an
 *          MPS slice while no slice on the GPU has a limit or a priority
 *          (nobody to yield to). WAIT for a priority or for tokens: sleep
 *          the retry time; WAIT for a turn: sleep on the GPU's futex
 *          word. Time waited is the slice's throttled time. Unmeasured
 *          slices (high priority, no limit, weight or --report) are
 *          admitted and completed at once, and their batches only count.
 *   open   record the start event.
 *   settle when a batch's end event has completed (looked at when the
 *          bound is hit, when the host synchronises, while waiting), its
 *          GPU time (charge_of its events' span) goes to
 *          gs_sched_complete() and to the
 *          slice's and process's books, with its launches.
 *
 * The host's synchronising calls close the calling thread's batch first,
 * so what they wait for includes its end event; an unmeasured batch has
 * none and stays open while younger than GS__SPAN_NS. For an MPS slice
 * without a compute limit the sync ends the batch, not its lease: the
 * next launch on the stream resumes the lease (lease_resume) without
 * admission, and what the sync waited for, when short, is settled at the
 * next sync while the GPU works (defer_ok), so a light server's request
 * pays neither on its way (#30 item 5). A thread's batch is closed when
 * the thread exits, and forgotten when its context goes. Closed batches
 * are settled oldest first. Events are pooled per context and created
 * with CU_EVENT_BLOCKING_SYNC, so waiting sleeps. The launch entry points
 * themselves are launch_hooks.c's.
 */
#include "launch_int.h"
#include "inflight.h"

#include "gs/faultinj.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define GS__RING        64 /* closed batches in flight per process, at most */
#define GS__INFLIGHT_NS 2000000ULL
#define GS__POOL_MAX    128
#define GS__LEASE_MAX   1024       /* launches in one batch, at most */
#define GS__LEASE_NS    500000ULL  /* estimated GPU work of a batch, at most */
#define GS__PROBE_EVERY 8          /* one batch in so many is a probe */
#define GS__JUMP_NS     100000ULL /* a lesson this far over 2x replaces it */
#define GS__DEFER_NS    1000000ULL /* estimated work a sync leaves unsettled */

#define GS__LDECL(sym, base, ver, pt) GS_EXPORT __typeof__(sym) sym;
GS_CU_HOOKS(GS__LDECL)
#undef GS__LDECL

/* A closed batch whose end event has not been looked at yet. */
struct inflight {
	CUcontext ctx;
	CUevent start, end;
	int dev;
	int32_t slice;
	uint64_t charged; /* what admission charged for the batch */
	bool timed;       /* start and end recorded */
	bool booked;      /* admitted and counted in flight by the scheduler */
	struct gs__span_rec rec; /* its launches and host times (charge.c) */
};

struct pooled {
	CUcontext ctx;
	CUevent ev;
};

/* One batch's result, charged under the region lock (settle()). */
struct done {
	int dev;
	int32_t slice;
	uint32_t n;
	uint64_t busy, charged;
	bool booked; /* gs_sched_complete() is owed */
};


static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* ring, pool, est */
static struct inflight ring[GS__RING]; /* [head, tail) in flight */
static uint32_t head, tail;            /* tail read without mu */
/* A sync left completed batches in the ring to settle at the next one
 * (gs__launch_after_sync); any thread's harvest settles them too. */
static bool deferred;
static struct pooled pool[GS__POOL_MAX];
static int n_pool;
static uint64_t est_ns[GS_REGION_MAX_DEVICES];  /* EWMA per launch */
static bool est_known[GS_REGION_MAX_DEVICES];   /* measured at least once */
static struct gs__probe_min probe_min[GS_REGION_MAX_DEVICES]; /* charge.c */

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct batch *batches; /* reg_mu */
static pthread_key_t batch_key;
static pthread_once_t batch_once = PTHREAD_ONCE_INIT;
__thread struct batch *gs__my_batch
    __attribute__((tls_model("initial-exec")));

/* Scheduler config cache and parameters: under the region lock. */
static struct gs_sched_cfg cfg[GS_REGION_MAX_SLICES];
static uint64_t cfg_epoch;
static int cfg_n; /* highest live slot + 1 */
static struct gs_sched_params par;
static pthread_once_t par_once = PTHREAD_ONCE_INIT;

static void close_batch(struct batch *b);
static void start_batch(struct batch *b, bool measure, CUcontext ctx,
                        CUstream stream, bool pt, uint32_t lease,
                        uint64_t each, uint64_t *now);

static void par_init(void)
{
	gs_sched_params_default(&par);
}

/* Region lock held: refreshes the config cache. */
static void cfg_refresh(void)
{
	if (!gs_region_sched_cfg(gs__g.region, cfg, &cfg_epoch))
		return;
	cfg_n = 0;
	for (int s = 0; s < GS_REGION_MAX_SLICES; s++)
		if (cfg[s].live)
			cfg_n = s + 1;
}

/* ---- events ----------------------------------------------------------- */

/* mu held. */
static CUevent pool_get(CUcontext ctx)
{
	CUevent ev = NULL;

	for (int i = n_pool - 1; i >= 0; i--) {
		if (pool[i].ctx != ctx)
			continue;
		ev = pool[i].ev;
		pool[i] = pool[--n_pool];
		return ev;
	}
	/* "shim.event" (tests): no event, so the batch is charged its
	 * estimate instead of its measured time. */
	if (gs_fault_hit("shim.event") ||
	    gs__real.cuEventCreate(&ev, CU_EVENT_BLOCKING_SYNC) != CUDA_SUCCESS)
		return NULL;
	return ev;
}

/* mu held. */
static void pool_put(CUcontext ctx, CUevent ev)
{
	if (ev == NULL)
		return;
	if (n_pool < GS__POOL_MAX) {
		pool[n_pool].ctx = ctx;
		pool[n_pool].ev = ev;
		n_pool++;
		return;
	}
	(void)gs__real.cuEventDestroy_v2(ev);
}

static bool elapsed_ns(CUevent a, CUevent b, uint64_t *ns)
{
	float ms = 0;
	CUresult r = CUDA_ERROR_NOT_SUPPORTED;

	if (gs__real.cuEventElapsedTime_v2 != NULL)
		r = gs__real.cuEventElapsedTime_v2(&ms, a, b);
	if (r != CUDA_SUCCESS && gs__real.cuEventElapsedTime != NULL)
		r = gs__real.cuEventElapsedTime(&ms, a, b);
	if (r != CUDA_SUCCESS || !(ms >= 0))
		return false;
	*ns = (uint64_t)((double)ms * 1e6);
	return true;
}

static CUresult record(CUevent ev, CUstream stream, bool pt)
{
	if (pt)
		return gs__real.cuEventRecord_ptsz(ev, stream);
	return gs__real.cuEventRecord(ev, stream);
}

/* Whether `stream` is being captured into a graph (events recorded there
 * would become part of the graph). */
static bool capturing(CUstream stream, bool pt)
{
	return gs__gmem_capturing(stream, pt); /* no driver call before the
	                                          process's first capture */
}

/* ---- region side ------------------------------------------------------ */


static void futex_wake(uint32_t *w)
{
	(void)syscall(SYS_futex, w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ULL),
	                      .tv_nsec = (long)(ns % 1000000000ULL)};

	(void)nanosleep(&ts, NULL);
}

static void futex_wait(uint32_t *w, uint32_t val, uint64_t ns)
{
	struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ULL),
	                      .tv_nsec = (long)(ns % 1000000000ULL)};

	(void)syscall(SYS_futex, w, FUTEX_WAIT, val, &ts, NULL, 0);
}

/* Region lock held, attached (so our owner file is mapped): the view of
 * GPU `dev` for our slice `s`, with our owner's token buckets; in a
 * daemon's region, with our slice's own record and the arbiter's bell
 * (*bell set when it should be rung). */
static void view_of(int dev, int s, struct gs_sched_view *v, bool *bell)
{
	(void)pthread_once(&par_once, par_init);
	gs_region_sched_view(gs__g.region, dev, s, v);
	v->cfg = cfg;
	v->n = cfg_n;
	v->par = &par;
	v->self = s;
	v->bell = bell;
}

/* Region lock held: charges one settled batch. */
static void settle_one(const struct gs_region_entry *e, const struct done *d,
                       uint64_t now, bool *wake, bool *bell)
{
	struct gs_sched_view v;

	view_of(d->dev, d->slice, &v, bell);
	if (d->booked && gs_sched_complete(&v, d->slice,
	                                   gs_sched_charge(&v, d->slice, d->busy),
	                                   d->charged, now))
		*wake = true;
	gs_sched_gate_refresh(&v, now);
	if (e == NULL || e->slice != d->slice)
		return;
	gs_region_books_settled(gs__g.region, e, d->dev, d->n, d->busy,
	                        d->booked);
}

/* Charges settled batches; region lock not held. */
static void settle(const struct done *d, int n)
{
	struct gs_region_entry e;
	bool have;
	uint64_t now = gs__now();
	bool wake[GS_REGION_MAX_DEVICES] = {false}, bell = false;

	if (n == 0 || !gs_region_attached(gs__g.region) ||
	    gs_region_lock(gs__g.region) != GS_OK)
		return;
	cfg_refresh();
	have = gs_region_proc_entry(gs__g.region, &gs__g.proc, &e);
	for (int i = 0; i < n; i++) {
		settle_one(have ? &e : NULL, &d[i], now, &wake[d[i].dev],
		           &bell);
	}
	gs_region_unlock(gs__g.region);
	if (bell)
		gs_region_bell(gs__g.region);
	for (int k = 0; k < GS_REGION_MAX_DEVICES; k++)
		if (wake[k])
			futex_wake(&gs_region_sched_dev(gs__g.region, k)->seq);
}

/* ---- settling --------------------------------------------------------- */

/* mu held: whether none of our work is in flight (the newest batch in the
 * ring completed, or there is none). Asks the driver: batches of one
 * only (long kernels, and probes). */
static bool drained(void)
{
	const struct inflight *f;

	if (tail == head)
		return true;
	f = &ring[(tail - 1) % GS__RING];
	return f->timed && gs__real.cuEventQuery(f->end) == CUDA_SUCCESS;
}

/* mu held: folds a batch's GPU time per launch into the estimate; a
 * probe's weighs more, and one over twice it (longer kernels) replaces it. */
static void ewma(int dev, uint64_t busy, uint32_t n, bool probe)
{
	uint64_t e = est_ns[dev], x = n ? busy / n : busy;
	uint64_t v = x / 2 > e && x - e > GS__JUMP_NS ? x
	             : probe ? (e * 3 + x) / 4 : (e * 7 + x) / 8;

	__atomic_store_n(&est_ns[dev], est_known[dev] ? v : x,
	                 __ATOMIC_RELAXED);
	__atomic_store_n(&est_known[dev], true, __ATOMIC_RELAXED);
}

/* What collect() takes off the ring. */
enum reap {
	REAP_DONE,   /* the batches that completed, up to the first running */
	REAP_FORGET, /* every batch of the context, uncharged */
	REAP_EXIT,   /* every batch, charged its estimate without asking
	                the driver (at exit it may be gone already) */
};

/*
 * Takes the batches that completed off the ring, oldest first, stopping
 * at the first one still running (REAP_FORGET: taking everything of
 * `ctx`, or of every context when NULL, complete or not; REAP_EXIT:
 * everything). mu held.
 * A batch's GPU time is gs__charge_of() its events' span.
 * OUT: out[] (GS__RING entries), returns the count.
 */
static int collect(CUcontext ctx, enum reap how, struct done *out)
{
	int n = 0;
	uint32_t i, keep = head;
	bool forget = how == REAP_FORGET;

	for (i = head; i != tail; i++) {
		struct inflight *f = &ring[i % GS__RING];
		bool mine = ctx == NULL || f->ctx == ctx;
		CUresult q = CUDA_SUCCESS;
		uint64_t busy = f->rec.est, span;

		if (how == REAP_EXIT)
			q = CUDA_ERROR_NOT_FOUND; /* not asked: its estimate */
		else if (mine && f->timed && !forget)
			q = gs__real.cuEventQuery(f->end);
		if (!mine || q == CUDA_ERROR_NOT_READY) {
			if (!forget)
				break;
			ring[keep++ % GS__RING] = *f; /* not ours: keep */
			continue;
		}
		if (q == CUDA_SUCCESS && f->timed && !forget &&
		    elapsed_ns(f->start, f->end, &span)) {
			bool lesson;

			busy = gs__charge_of(&f->rec, span, &probe_min[f->dev],
			                     &lesson);
			if (lesson)
				ewma(f->dev, busy, f->rec.n, f->rec.probe);
		}
		out[n].dev = f->dev;
		out[n].slice = f->slice;
		out[n].n = f->rec.n;
		out[n].busy = forget ? 0 : busy;
		out[n].charged = f->charged;
		out[n].booked = f->booked;
		n++;
		pool_put(f->ctx, f->start);
		pool_put(f->ctx, f->end);
	}
	if (forget) {
		__atomic_store_n(&tail, keep, __ATOMIC_RELEASE);
	} else {
		head = i;
	}
	return n;
}

void gs__launch_harvest(CUcontext ctx, bool wait_all)
{
	struct done d[GS__RING];
	int n;

	(void)ctx;
	(void)wait_all;
	if (__atomic_load_n(&tail, __ATOMIC_ACQUIRE) == head ||
	    gs__g.region == NULL)
		return;
	(void)pthread_mutex_lock(&mu);
	n = collect(NULL, REAP_DONE, d);
	(void)pthread_mutex_unlock(&mu);
	settle(d, n);
}

/*
 * Forgets `b` if it is open in `ctx` (NULL: any): its launches are
 * counted, nothing measured (the context is going away). b->mu held.
 * OUT: *d when it returns true.
 */
static bool forget_batch(struct batch *b, CUcontext ctx, struct done *d)
{
	if (!b->open || (ctx != NULL && b->ctx != ctx))
		return false;
	b->open = false;
	b->left = 0;
	d->dev = b->dev;
	d->slice = b->slice;
	d->n = b->n;
	d->busy = 0;
	d->charged = b->charged;
	d->booked = b->booked && b->measure;
	if (b->start != NULL)
		(void)gs__real.cuEventDestroy_v2(b->start);
	b->start = NULL;
	return true;
}

void gs__launch_ctx_gone(CUcontext ctx)
{
	struct done d[GS__RING];
	struct done od[64];
	int n, no = 0;

	gs__dev_ctx_gone();
	if (ctx == NULL || gs__g.region == NULL)
		return;
	gs__launch_harvest(NULL, false);
	(void)pthread_mutex_lock(&reg_mu);
	for (struct batch *b = batches; b != NULL; b = b->next) {
		(void)pthread_mutex_lock(&b->mu);
		/* Whichever thread had it current no longer has it. */
		b->cur = GS__CTX_UNKNOWN;
		b->resume_left = 0;
		if (forget_batch(b, ctx, &od[no])) {
			no++;
			if (no == 64) {
				(void)pthread_mutex_unlock(&b->mu);
				settle(od, no);
				no = 0;
				continue;
			}
		}
		(void)pthread_mutex_unlock(&b->mu);
	}
	(void)pthread_mutex_unlock(&reg_mu);
	settle(od, no);
	(void)pthread_mutex_lock(&mu);
	n = collect(ctx, REAP_FORGET, d);
	for (int i = n_pool - 1; i >= 0; i--) {
		if (pool[i].ctx != ctx)
			continue;
		(void)gs__real.cuEventDestroy_v2(pool[i].ev);
		pool[i] = pool[--n_pool];
	}
	(void)pthread_mutex_unlock(&mu);
	settle(d, n);
}

/*
 * Our work in flight on `dev` (-1: any): estimated GPU time. OUT: the
 * oldest end event on it, the batches on it, the batches in the ring.
 */
static uint64_t ours(int dev, CUevent *oldest_end, uint32_t *on_dev,
                     uint32_t *all)
{
	uint64_t ns = 0;

	*oldest_end = NULL;
	*on_dev = 0;
	(void)pthread_mutex_lock(&mu);
	*all = tail - head;
	for (uint32_t i = head; i != tail; i++) {
		struct inflight *f = &ring[i % GS__RING];

		if (dev >= 0 && f->dev != dev)
			continue;
		ns += f->rec.est;
		(*on_dev)++;
		if (*oldest_end == NULL && f->timed)
			*oldest_end = f->end;
	}
	(void)pthread_mutex_unlock(&mu);
	return ns;
}

/* Whether our queue on a GPU is short enough to add a batch: two
 * batches, or GS__INFLIGHT_NS of estimated work, whichever is more;
 * two batches while the GPU's per-launch time is not known yet (their
 * estimates are 0: a fire-and-forget launcher would queue without end
 * until the first probe taught one). */
static bool short_queue(uint64_t ns, uint32_t on_dev, uint32_t all,
                        bool known)
{
	return all < GS__RING - 2 &&
	       (on_dev < 2 || (known && ns < GS__INFLIGHT_NS));
}

/* Waits while our own work in flight on `dev` is above the bound. */
static void bound(int dev)
{
	for (int k = 0; k < GS__RING; k++) {
		CUevent oldest;
		uint32_t on_dev, all;
		uint64_t ns = ours(dev, &oldest, &on_dev, &all);
		bool known = __atomic_load_n(&est_known[dev], __ATOMIC_RELAXED);

		if (short_queue(ns, on_dev, all, known))
			return;
		gs__launch_harvest(NULL, false);
		ns = ours(dev, &oldest, &on_dev, &all);
		known = __atomic_load_n(&est_known[dev], __ATOMIC_RELAXED);
		if (short_queue(ns, on_dev, all, known))
			return;
		if (oldest == NULL ||
		    gs__real.cuEventSynchronize(oldest) != CUDA_SUCCESS)
			return;
	}
}

/*
 * Before sleeping in admission: wait for our oldest batch still in flight
 * and settle it, so that others (waiting for our turn to end) see it the
 * moment it completes. False when there was none.
 */
static bool drain_one(void)
{
	CUevent oldest;
	uint32_t on_dev, all;

	gs__launch_harvest(NULL, false);
	(void)ours(-1, &oldest, &on_dev, &all);
	if (oldest == NULL ||
	    gs__real.cuEventSynchronize(oldest) != CUDA_SUCCESS)
		return false;
	gs__launch_harvest(NULL, false);
	return true;
}

/* ---- batches ---------------------------------------------------------- */

/*
 * Closes `b` (b->mu held): records its end event and puts it in the ring
 * (charged when it completes, gs__charge_of()), or settles it at once when
 * it was not timed. The host times around its two records are what
 * gs__charge_of() needs to tell the GPU's time from the host's; no launch
 * in between read the clock.
 *
 * Probes: the first batch and one in GS__PROBE_EVERY hold one launch
 * whose end event is recorded right after it (gs__launch_end), while the
 * kernel is still queued or running, so the estimate per launch is
 * learned from spans that hold one kernel and nothing else.
 */
static void close_batch(struct batch *b)
{
	struct done d;
	CUevent end = NULL;
	bool queued = false, timed;
	uint64_t e0, e1;

	b->resume_left = 0;
	if (!b->open)
		return;
	b->open = false;
	b->left = 0;
	d.dev = b->dev;
	d.slice = b->slice;
	d.n = b->n;
	d.charged = b->charged;
	d.booked = b->booked && b->measure;
	d.busy = b->measure ? b->n * b->each : 0;
	if (!b->measure) {
		settle(&d, 1); /* counted only: admission completed it */
		return;
	}
	timed = b->timed && b->n > 0 && !capturing(b->stream, b->pt);
	(void)pthread_mutex_lock(&mu);
	if (timed)
		end = pool_get(b->ctx);
	e0 = gs__now();
	timed = end != NULL && record(end, b->stream, b->pt) == CUDA_SUCCESS;
	e1 = gs__now();
	if (tail - head < GS__RING) {
		struct inflight *f = &ring[tail % GS__RING];

		f->ctx = b->ctx;
		f->start = timed ? b->start : NULL;
		f->end = timed ? end : NULL;
		f->timed = timed;
		f->dev = b->dev;
		f->slice = b->slice;
		f->rec.n = b->n;
		f->rec.est = d.busy;
		f->charged = b->charged;
		f->booked = d.booked;
		f->rec.probe = b->probe;
		f->rec.idle_start = b->idle_start;
		f->rec.known = b->known;
		f->rec.shared = b->shared;
		f->rec.lead = b->rec1 - b->rec0;
		f->rec.issue = e0 > b->rec1 ? e0 - b->rec1 : 0;
		f->rec.window = e1 - b->rec0;
		f->rec.delay = b->lease == 1 && b->launch0 > b->rec1
		               ? b->launch0 - b->rec1
		               : 0;
		if (f->rec.delay > f->rec.issue)
			f->rec.delay = f->rec.issue;
		f->rec.call = b->lease == 1 && b->launch1 > b->launch0
		              ? b->launch1 - b->launch0
		              : 0;
		if (f->rec.call > f->rec.issue - f->rec.delay)
			f->rec.call = f->rec.issue - f->rec.delay;
		__atomic_store_n(&tail, tail + 1, __ATOMIC_RELEASE);
		queued = true;
	}
	if (!timed || !queued) {
		pool_put(b->ctx, b->start);
		pool_put(b->ctx, end);
	}
	b->start = NULL;
	(void)pthread_mutex_unlock(&mu);
	if (!queued)
		settle(&d, 1);
}

static void batch_exit(void *p)
{
	struct batch *b = p;

	(void)pthread_mutex_lock(&b->mu);
	close_batch(b);
	(void)pthread_mutex_unlock(&b->mu);
	(void)pthread_mutex_lock(&reg_mu);
	for (struct batch **pp = &batches; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == b) {
			*pp = b->next;
			break;
		}
	}
	(void)pthread_mutex_unlock(&reg_mu);
	(void)pthread_mutex_destroy(&b->mu);
	free(b);
}

static void batch_key_init(void)
{
	(void)pthread_key_create(&batch_key, batch_exit);
}

/* The calling thread's batch, made on first use; NULL without memory. */
static struct batch *batch_self(void)
{
	struct batch *b = gs__my_batch;

	if (GS_LIKELY(b != NULL))
		return b;
	(void)pthread_once(&batch_once, batch_key_init);
	/* "shim.malloc" (tests): out of host memory. */
	b = gs_fault_calloc("shim.malloc", 1, sizeof(*b));
	if (b == NULL)
		return NULL;
	(void)pthread_mutex_init(&b->mu, NULL);
	b->cur = GS__CTX_UNKNOWN;
	(void)pthread_mutex_lock(&reg_mu);
	b->next = batches;
	batches = b;
	(void)pthread_mutex_unlock(&reg_mu);
	(void)pthread_setspecific(batch_key, b);
	gs__my_batch = b;
	return b;
}

void gs__launch_close_mine(void)
{
	struct batch *b = gs__my_batch;
	int saved = errno;

	if (b == NULL || !b->open)
		return;
	(void)pthread_mutex_lock(&b->mu);
	close_batch(b);
	(void)pthread_mutex_unlock(&b->mu);
	errno = saved;
}


/* Launches one lease admits: GS__LEASE_NS of estimated work, at least one,
 * and one only until the GPU's per-launch time has been measured. */
static uint32_t lease_for(int dev, uint64_t each, bool measure)
{
	if (!measure)
		return GS__LEASE_MAX;
	if (!__atomic_load_n(&est_known[dev], __ATOMIC_RELAXED))
		return 1;
	if (each == 0 || GS__LEASE_NS / each >= GS__LEASE_MAX)
		return GS__LEASE_MAX;
	return GS__LEASE_NS / each ? (uint32_t)(GS__LEASE_NS / each) : 1;
}

/* ---- admission -------------------------------------------------------- */


/* Our batches in flight on `dev` shared the GPU with the next holder's
 * work: our last launch of the turn handed it over while they ran. */
static void share_inflight(int dev)
{
	(void)pthread_mutex_lock(&mu);
	for (uint32_t i = head; i != tail; i++)
		if (ring[i % GS__RING].dev == dev)
			ring[i % GS__RING].rec.shared = true;
	(void)pthread_mutex_unlock(&mu);
}

/* Admission of one lease; false when it runs unscheduled. */
static bool admit(struct ticket *t)
{
	struct gs_sched_view v;
	struct gs_region_entry e;
	uint64_t now, t0 = 0, retry;
	enum gs_sched_why why;
	bool waited = false, bell = false, handed, moved, done_wake = false;
	uint32_t *seq, before;

	if (!gs_region_attached(gs__g.region) ||
	    gs_region_lock(gs__g.region) != GS_OK)
		return false;
	cfg_refresh();
	if (!gs_region_proc_entry(gs__g.region, &gs__g.proc, &e) ||
	    !cfg[e.slice].live || cfg[e.slice].generation != e.slice_gen) {
		gs_region_unlock(gs__g.region);
		return false;
	}
	t->slice = e.slice;
	view_of(t->dev, t->slice, &v, &bell);
	seq = &v.dev->seq;
	now = gs__now();
	for (;;) {
		uint32_t s0;

		before = __atomic_load_n(seq, __ATOMIC_ACQUIRE);

		if (gs_sched_admit(&v, t->slice, t->measure ? t->est : 0, now,
		                   &retry, &why) == GS_SCHED_GO)
			break;
		if (!waited) {
			gs_sched_wait_begin(&v, t->slice, now);
			gs_region_books_waiting(gs__g.region, &e, t->dev);
			waited = true;
			t0 = now;
		}
		s0 = __atomic_load_n(seq, __ATOMIC_ACQUIRE);
		gs_region_unlock(gs__g.region);
		if (bell) {
			bell = false;
			gs_region_bell(gs__g.region);
		}
		if (s0 != before)
			futex_wake(seq); /* we gave the turn away: its new
			                    holder sleeps until told */
		if (drain_one())
			; /* something changed: ask again before sleeping */
		else if (why != GS_SCHED_WHY_PRIORITY)
			futex_wait(seq, s0, retry); /* a turn given to us
			                               wakes us early */
		else
			sleep_ns(retry); /* not woken by every change of a
			                    busy higher priority */
		if (gs_region_lock(gs__g.region) != GS_OK)
			return false; /* a wedged region must not wedge us */
		cfg_refresh();
		view_of(t->dev, t->slice, &v, &bell);
		now = gs__now();
		if (!gs_region_proc_entry(gs__g.region, &gs__g.proc, &e) ||
		    !cfg[t->slice].live) {
			gs_region_unlock(gs__g.region);
			return false;
		}
	}
	if (waited)
		gs_sched_wait_end(&v, t->slice);
	/* Queued behind another slice's work, or our last launch of the
	 * turn (the next holder's work will queue behind ours): spans
	 * shared with another slice's kernels. */
	handed = __atomic_load_n(seq, __ATOMIC_ACQUIRE) != before &&
	         v.dev->holder != t->slice;
	t->shared = t->measure &&
	            (handed || gs_sched_behind(&v, t->slice, now));
	gs_region_books_admitted(gs__g.region, &e, t->dev, waited, now - t0,
	                         t->measure);
	/* Our last launch of the turn handed it over (gpusched's pipelined
	 * turn change): the next holder gets ready now. */
	moved = __atomic_load_n(seq, __ATOMIC_ACQUIRE) != before;
	if (!t->measure) {
		/* Activity is all that counts: done as soon as admitted
		 * (which wakes only when someone waits: no system call per
		 * request for a light server alone). */
		done_wake = gs_sched_complete(&v, t->slice, 0, 0, now);
	}
	t->want = __atomic_load_n(&v.dev->want, __ATOMIC_ACQUIRE);
	gs_region_unlock(gs__g.region);
	if (bell)
		gs_region_bell(gs__g.region);
	if (waited || done_wake || moved)
		futex_wake(seq);
	if (handed)
		share_inflight(t->dev);
	return true;
}

/*
 * Opens a batch for this launch (b->mu held, the previous one closed):
 * the slow path's decisions, the bound on our queue, admission of a lease.
 * False when the launch goes to the driver unscheduled.
 */
static bool open_batch(struct batch *b, struct ticket *t, CUcontext ctx,
                       CUstream stream, bool pt, uint64_t *now)
{
	uint64_t epoch, each;
	uint32_t gate, lease;
	struct gs_sched_dev *sd;
	int single;

	epoch = gs_region_limits_epoch(gs__g.region);
	gs__limits_refresh();
	t->dev = gs__dev_current(NULL);
	if (t->dev < 0)
		return false;
	single = __atomic_load_n(&gs__g.single_dev, __ATOMIC_RELAXED);
	if (single == -1 || (single >= 0 && single != t->dev)) {
		__atomic_store_n(&gs__g.single_dev, single == -1 ? t->dev : -2,
		                 __ATOMIC_RELAXED);
		gs__fast_update();
	}
	gate = __atomic_load_n(&gs_region_sched_dev(gs__g.region, t->dev)->gate,
	                       __ATOMIC_ACQUIRE);
	if (!gs__g.slow && !(gate & GS_GATE_ENFORCED)) {
		gs__fast_update();
		return false;
	}
	if (capturing(stream, pt))
		return false; /* recorded into a graph, not run: its launch
		                 counts */
	t->measure = gs__launch_measured(&gs__g.lim);
	t->shared = false;
	if (t->measure)
		bound(t->dev);
	each = __atomic_load_n(&est_ns[t->dev], __ATOMIC_RELAXED);
	lease = lease_for(t->dev, each, t->measure);
	b->known = __atomic_load_n(&est_known[t->dev], __ATOMIC_RELAXED);
	b->probe = t->measure &&
	           (!b->known || ++b->opens % GS__PROBE_EVERY == 0);
	if (b->probe)
		lease = 1;
	t->est = t->measure ? each * lease : 0;
	if ((gs__g.lim.flags & GS_SLICE_MPS) && !(gate & GS_GATE_ENFORCED) &&
	    gs__g.slice >= 0 && t->measure) {
		/* An MPS slice with nobody to yield to (no slice on the GPU
		 * has a limit or a priority): measured, not admitted, so no
		 * region lock per lease. Settling books its GPU time. */
		t->slice = gs__g.slice;
		b->booked = false;
	} else if (!admit(t)) {
		return false;
	} else {
		b->booked = true;
		b->want = t->want;
	}
	sd = gs_region_sched_dev(gs__g.region, t->dev);
	if (b->booked) {
		b->watch = &sd->want;
		b->watch_mask = UINT32_MAX;
		b->watch_val = b->want;
	} else {
		b->watch = &sd->gate;
		b->watch_mask = GS_GATE_ENFORCED;
		b->watch_val = 0;
	}
	b->epoch_p = gs_region_limits_epoch_word(gs__g.region);
	b->dev = t->dev;
	b->slice = t->slice;
	b->lim_epoch = epoch;
	b->shared = t->shared;
	b->charged = t->est;
	start_batch(b, t->measure, ctx, stream, pt, lease, each, now);
	b->admitted = b->booked ? b->opened : 0;
	return true;
}

/*
 * Whether the launch may resume the lease a sync closed the calling
 * thread's batch in (b->mu held): an MPS slice without a compute limit,
 * measured (for a report), whose launches follow its sync on the same
 * stream in the same context, while the lease has launches left, is
 * younger than GS__SPAN_NS and nobody wants in or changed the limits
 * since. A light server's requests are then admitted once a lease, not
 * one by one under the region lock. The resumed batch is timed and
 * booked like any (its GPU time goes to the books), but it owes the
 * scheduler nothing: the lease's admission was completed by the batch
 * the sync closed, and a slice without a limit has no tokens to correct
 * (gpusched.c; its activity is refreshed by the next admission, at most
 * GS__SPAN_NS later).
 */
static bool lease_resume(struct batch *b, CUcontext ctx, CUstream stream,
                         bool pt, uint64_t *now)
{
	uint32_t left = b->resume_left;

	if (left == 0 || b->stream != stream || b->pt != pt || b->ctx != ctx ||
	    gs__g.lim.compute_pct > 0 || !(gs__g.lim.flags & GS_SLICE_MPS))
		return false;
	if (!lease_unmoved(b) || gs__now() - b->admitted >= GS__SPAN_NS ||
	    capturing(stream, pt))
		return false;
	b->resume_left = 0;
	b->booked = false;
	b->charged = 0;
	b->shared = false;
	b->known = __atomic_load_n(&est_known[b->dev], __ATOMIC_RELAXED);
	b->probe = false;
	start_batch(b, true, ctx, stream, pt, left,
	            __atomic_load_n(&est_ns[b->dev], __ATOMIC_RELAXED), now);
	return true;
}

/* Opens `b` (b->mu held; dev, slice, charged and the lease's watch set):
 * its fields, and its start event when it is measured. */
static void start_batch(struct batch *b, bool measure, CUcontext ctx,
                        CUstream stream, bool pt, uint32_t lease,
                        uint64_t each, uint64_t *now)
{
	*now = gs__now();
	b->open = true;
	b->measure = measure;
	b->pt = pt;
	b->ctx = ctx;
	b->stream = stream;
	b->n = 0;
	b->lease = lease;
	b->each = each;
	b->opened = *now;
	b->start = NULL;
	b->timed = false;
	if (measure) {
		(void)pthread_mutex_lock(&mu);
		b->start = pool_get(ctx);
		b->idle_start = lease == 1 && drained();
		(void)pthread_mutex_unlock(&mu);
		b->rec0 = gs__now();
		if (b->start != NULL &&
		    record(b->start, stream, pt) != CUDA_SUCCESS) {
			(void)pthread_mutex_lock(&mu);
			pool_put(ctx, b->start);
			(void)pthread_mutex_unlock(&mu);
			b->start = NULL;
		}
		b->timed = b->start != NULL;
		b->rec1 = gs__now();
	}
}

/*
 * Slow path before a launch on `stream`. Returns false when the launch
 * goes to the driver unscheduled (nothing to do afterwards); true with
 * t->b locked, to be released by gs__launch_end().
 */
bool gs__launch_begin(struct ticket *t, CUstream stream, bool pt)
{
	int saved = errno;
	struct batch *b;
	CUcontext ctx = NULL;
	uint64_t now;

	t->b = NULL;
	t->refused = CUDA_SUCCESS;
	if (!gs__enforcing()) {
		gs__fast_update();
		goto out;
	}
	b = batch_self();
	if (b == NULL) {
		/* Fails closed: never a launch around the limiter. */
		gs_warn(GS_SHIM_TAG,
		        "slice=%s pid=%d: no memory for this thread's launch batch; launch refused (CUDA_ERROR_OUT_OF_MEMORY)",
		        gs__g.cfg.slice, (int)getpid());
		t->refused = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	if (b->cur == GS__CTX_UNKNOWN || b->cur == NULL) {
		(void)gs__real.cuCtxGetCurrent(&ctx);
		b->cur = ctx;
	}
	ctx = b->cur;
	(void)pthread_mutex_lock(&b->mu);
	if (lease_resume(b, ctx, stream, pt, &now)) {
		b->n = 1;
		b->left = b->lease - 1;
		t->b = b;
		goto out;
	}
	close_batch(b);
	if (!open_batch(b, t, ctx, stream, pt, &now)) {
		(void)pthread_mutex_unlock(&b->mu);
		goto out;
	}
	b->n = 1;
	b->left = b->lease - 1;
	if (b->lease == 1)
		b->launch0 = gs__now(); /* a batch of one: charge_of's delay */
	t->b = b;
out:
	errno = saved;
	return t->b != NULL;
}

/* Slow path after the launch returned `r`. */
CUresult gs__launch_end(struct ticket *t, CUresult r)
{
	int saved = errno;
	struct batch *b = t->b;

	if (b == NULL)
		return r;
	if (b->lease == 1)
		b->launch1 = gs__now(); /* a batch of one: charge_of's call */
	if (r != CUDA_SUCCESS && b->open && b->n > 0) {
		b->n--; /* not launched: no charge */
		b->left++;
	}
	if (b->open && b->probe)
		close_batch(b);
	(void)pthread_mutex_unlock(&b->mu);
	errno = saved;
	return r;
}

/* At exit, before shim.c detaches the process (registered with shim.c at
 * load): the work a fire-and-forget program left queued, and what was
 * not harvested yet, is charged its estimate, without waiting for it and
 * without a call into the driver (whose own teardown may have run). */
static void launch_exit(void)
{
	struct done d[GS__RING + 1];
	struct batch *b = gs__my_batch;
	int n = 0;

	if (gs__g.region == NULL)
		return;
	if (b != NULL) {
		(void)pthread_mutex_lock(&b->mu);
		if (b->open) {
			b->open = false;
			b->left = 0;
			d[0].dev = b->dev;
			d[0].slice = b->slice;
			d[0].n = b->n;
			d[0].busy = b->measure ? b->n * b->each : 0;
			d[0].charged = b->charged;
			d[0].booked = b->booked && b->measure;
			n = 1;
		}
		(void)pthread_mutex_unlock(&b->mu);
	}
	(void)pthread_mutex_lock(&mu);
	n += collect(NULL, REAP_EXIT, d + n);
	(void)pthread_mutex_unlock(&mu);
	settle(d, n);
}

/* After fork, in the child (registered with shim.c at load). */
static void atfork_child(void)
{
	(void)pthread_mutex_init(&mu, NULL);
	(void)pthread_mutex_init(&reg_mu, NULL);
	head = tail = 0;
	n_pool = 0;
	cfg_epoch = 0;
	batches = NULL; /* the parent's contexts are not ours */
	gs__my_batch = NULL;
	if (pthread_once(&batch_once, batch_key_init) == 0)
		(void)pthread_setspecific(batch_key, NULL);
}

__attribute__((constructor)) static void launch_register(void)
{
	gs__on_fork_child(atfork_child);
	gs__on_exit(launch_exit);
}

/* ---- what sync.c calls ----------------------------------------------- */

void gs__launch_ctx_leaving(CUcontext next)
{
	struct batch *b = gs__my_batch;

	if (b != NULL && b->open && (next == NULL || b->ctx != next))
		gs__launch_close_mine();
}

void gs__launch_ctx_current(CUcontext ctx)
{
	struct batch *b = gs__my_batch;

	gs__dev_ctx_changed();
	if (b != NULL)
		b->cur = ctx != NULL ? ctx : GS__CTX_UNKNOWN;
}

void gs__launch_sync_begin(void)
{
	struct batch *b = gs__my_batch;
	int saved = errno;

	/* An unmeasured batch has no end event for the wait to cover: its
	 * lease outlives the sync while young (a light server is admitted
	 * once in many requests, not at each). */
	if (b != NULL && b->open &&
	    (b->measure || gs__now() - b->opened >= GS__SPAN_NS)) {
		/* (a probe's lease of one has nothing left) */
		uint32_t left = b->measure && b->admitted != 0 ? b->left : 0;

		gs__launch_close_mine();
		/* The batch is closed (its end event covered by the wait),
		 * its lease kept for the next launch (lease_resume). */
		b->resume_left = left;
	}
	/* What the last sync left to settle completed then: settled now,
	 * while the GPU works on what this sync waits for. */
	if (__atomic_load_n(&deferred, __ATOMIC_RELAXED)) {
		__atomic_store_n(&deferred, false, __ATOMIC_RELAXED);
		gs__launch_harvest(NULL, false);
	}
	errno = saved;
}

/*
 * Whether what a sync just waited for may be settled at the next one
 * instead of now (on the way back to the application, where a light
 * server's request pays for it). Only for an MPS slice: it takes no
 * turns, so nobody waits for its batches to be settled (a neighbour
 * waits for its own, or for a higher priority's process to be waiting,
 * gpusched.c), and only while our work in the ring is known to be short
 * (GS__DEFER_NS of estimate), so a process that stops synchronising
 * leaves little unbooked until its exit charges it its estimate.
 */
static bool defer_ok(void)
{
	uint64_t ns = 0;
	bool ok = true;

	if (!(gs__g.lim.flags & GS_SLICE_MPS))
		return false;
	(void)pthread_mutex_lock(&mu);
	if (tail - head > GS__RING / 4)
		ok = false;
	for (uint32_t i = head; ok && i != tail; i++) {
		const struct inflight *f = &ring[i % GS__RING];

		ns += f->rec.est;
		ok = f->timed && f->rec.known && f->rec.est > 0 &&
		     ns <= GS__DEFER_NS;
	}
	(void)pthread_mutex_unlock(&mu);
	return ok;
}

void gs__launch_after_sync(CUresult r)
{
	int saved = errno;

	if (r == CUDA_SUCCESS &&
	    __atomic_load_n(&tail, __ATOMIC_ACQUIRE) != head) {
		if (defer_ok())
			__atomic_store_n(&deferred, true, __ATOMIC_RELAXED);
		else
			gs__launch_harvest(NULL, false);
	}
	errno = saved;
}
