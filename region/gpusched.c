/*
 * gpusched.c - the compute scheduler's decisions (see gs/region_sched.h for
 * the rules and the slot state machine). Pure: every function works on the
 * structs it is given and the `now` it is passed; the caller holds the
 * region lock.
 *
 * Trust: a call acts for one slice `s` (the caller's own). Its bucket
 * (bk[s], private to its owner) is the only token state read or written;
 * every other slice is judged from its record (sl[t]), so each value read
 * from there is checked first (times in the future, stale waiters and
 * work in flight too far ahead count for nothing; a holder idle for
 * `idle` loses its turn). In a daemon's region those records, and the
 * turn, are what the arbiter (below) published from each slice's own
 * record, which it checks and charges the same way: a tenant can only
 * lie about its own slice, and gains by it no more GPU time than its
 * weight gives. In a region without a daemon (one user's processes) the
 * slices write the shared records themselves.
 *
 * Costs: admission scans the slices of one GPU (at most
 * GS_REGION_MAX_SLICES small records) a few times; it runs only on the
 * launch slow path, for slices that need scheduling.
 */
#include "gs/region_sched.h"

#include <stddef.h>

#include "gs/region.h"

#define MS 1000000ULL
#define US 1000ULL

void gs_sched_params_default(struct gs_sched_params *p)
{
	/* 20 ms turns: long next to a 2 ms driver time slice (few
	 * hand-overs), short next to the 10 s windows limits are judged on. */
	p->quantum = 20 * MS;
	/* A server sending a request every few ms stays "active" between
	 * requests; one idle for 50 ms lets lower priorities run again. */
	p->linger = 50 * MS;
	/* Unused limit saved up to 100 ms: enough to ride out a turn or two
	 * of waiting, small against a 10 s window (1 point of a 10 % share). */
	p->burst = 100 * MS;
	p->idle = 1 * MS;
	/* Plain slices go back to the fast path this long after the last
	 * slice with a limit or priority was active: twice `linger`, so
	 * they stay scheduled while a high priority lingers. */
	p->presence = 100 * MS;
	/* Longer than a long kernel (gs-burn's 65 ms) run past an estimate
	 * learned from short ones (a process's first long kernels): at
	 * 50 ms the others went beside it, time-sliced, both spans were
	 * charged the overlap and the GPU idled to pay that back (#30 item
	 * 4). Its owner records the completion when it sees it; this only
	 * bounds how long a dead owner's work holds the others back. A
	 * higher priority's holds a lower one back `linger` at most. */
	p->stale = 250 * MS;
	/* Waiters ask again within 10 ms; one silent for 1 s is gone. */
	p->wait_seen = 1000 * MS;
	/* Queues are kept to a few ms of work (shim/launch.c): a record
	 * claiming 10 s ahead is not one a shim wrote. */
	p->busy_max = 10000 * MS;
	/* Under the arbiter, a slice's work still in flight holds the next
	 * holder back this long at most after it lost the turn (charged to
	 * it meanwhile; a longer kernel then shares the GPU for its rest). */
	p->drain = 100 * MS;
	/* The next holder queues its work this long before the last
	 * holder's is estimated to end: more than a futex wake-up and a
	 * launch take, small against the driver's 2 ms time slice (work
	 * queued early may get the engine for a slice at its expiry). */
	p->handover = 150 * US;
}

bool gs_sched_cfg_enforcing(const struct gs_sched_cfg *c)
{
	return c->live && (c->pct > 0 || c->prio != GS_REGION_PRIO_NORMAL ||
	                   c->weight != 1);
}

/* ---- per-slice helpers ------------------------------------------------ */

/* Slot t's record: the acting slice's own one under an arbiter, else the
 * shared one. */
static struct gs_sched_slice *R(const struct gs_sched_view *v, int t)
{
	return v->mine != NULL && t == v->self ? v->mine : &v->sl[t];
}

static bool arbitrated(const struct gs_sched_view *v)
{
	return v->mine != NULL;
}

static void ring(const struct gs_sched_view *v)
{
	if (v->bell != NULL)
		*v->bell = true;
}

static bool valid(const struct gs_sched_view *v, int t)
{
	return t >= 0 && t < v->n && v->cfg[t].live &&
	       R(v, t)->generation == v->cfg[t].generation;
}

/* Brings slot t's state (and, for the acting slice, its bucket) to its
 * config's generation (a new slice). */
static void fresh(const struct gs_sched_view *v, int t)
{
	struct gs_sched_slice *S = R(v, t);
	struct gs_sched_bucket *B = &v->bk[t];

	if (S->generation != v->cfg[t].generation) {
		*S = (struct gs_sched_slice){0};
		S->generation = v->cfg[t].generation;
	}
	if (B->generation != v->cfg[t].generation) {
		*B = (struct gs_sched_bucket){0};
		B->generation = v->cfg[t].generation;
	}
}

/* Publishes when the acting slice s will have tokens again. */
static void publish(const struct gs_sched_view *v, int s, uint64_t now)
{
	const struct gs_sched_bucket *B = &v->bk[s];
	uint32_t pct = v->cfg[s].pct;

	R(v, s)->broke_until_ns =
	    pct == 0 || B->tokens_ns > 0
	        ? 0
	        : now + ((uint64_t)(-B->tokens_ns) + 1) * 100 / pct;
}

/* Refills the acting slice s's own bucket. */
static void refill(const struct gs_sched_view *v, int s, uint64_t now)
{
	struct gs_sched_bucket *B = &v->bk[s];
	const struct gs_sched_cfg *c = &v->cfg[s];
	int64_t burst = (int64_t)v->par->burst;

	if (c->pct == 0) {
		B->refill_ns = now;
		return;
	}
	if (B->refill_ns == 0 || now < B->refill_ns) {
		B->refill_ns = now;
		return;
	}
	B->tokens_ns += (int64_t)((now - B->refill_ns) * c->pct / 100);
	if (B->tokens_ns > burst)
		B->tokens_ns = burst;
	B->refill_ns = now;
	publish(v, s, now);
}

/* Work in flight that still counts (not `stale` past its estimate, and
 * not further ahead than any shim queues). */
static bool busy_within(const struct gs_sched_view *v, int t, uint64_t now,
                        uint64_t stale)
{
	const struct gs_sched_slice *S = R(v, t);

	return S->inflight > 0 && now < S->busy_until_ns + stale &&
	       S->busy_until_ns < now + v->par->busy_max;
}

static bool busy(const struct gs_sched_view *v, int t, uint64_t now)
{
	return busy_within(v, t, now, v->par->stale);
}

/* Processes of t waiting, if it asked lately (else: dead or forged). */
static bool waits(const struct gs_sched_view *v, int t, uint64_t now)
{
	const struct gs_sched_slice *S = R(v, t);

	return S->waiting > 0 && S->seen_ns <= now &&
	       now - S->seen_ns < v->par->wait_seen;
}

/* Whether any process on the GPU waits in admission (it may sleep on the
 * GPU's seq word): a wake with none is a system call for nobody. Counts
 * only, not wait_seen: a stale count costs a wake, never a lost one. The
 * count rises under the region lock before a waiter reads seq to sleep
 * on, so a caller holding the lock that sees none has no sleeper to
 * miss. */
static bool someone_waits(const struct gs_sched_view *v)
{
	for (int t = 0; t < v->n; t++)
		if (valid(v, t) && R(v, t)->waiting > 0)
			return true;
	return false;
}

static bool active(const struct gs_sched_view *v, int t, uint64_t now)
{
	const struct gs_sched_slice *S = R(v, t);

	return busy(v, t, now) || waits(v, t, now) ||
	       (S->last_active_ns != 0 && S->last_active_ns <= now &&
	        now - S->last_active_ns < v->par->linger);
}

/* A higher priority's work in flight past its estimate by `linger` is
 * gone (a server that stopped; its record was not settled): a lower
 * priority waits for it no longer than for one that went quiet. */
static bool prio_busy(const struct gs_sched_view *v, int t, uint64_t now)
{
	return busy_within(v, t, now, v->par->linger);
}

static bool prio_active(const struct gs_sched_view *v, int t, uint64_t now)
{
	const struct gs_sched_slice *S = R(v, t);

	return prio_busy(v, t, now) || waits(v, t, now) ||
	       (S->last_active_ns != 0 && S->last_active_ns <= now &&
	        now - S->last_active_ns < v->par->linger);
}

/*
 * Out of tokens under a limit. The acting slice s reads its own bucket
 * (refilled first); another slice is judged by the time it published,
 * which no refill could put further away than burst at 1 %.
 */
static bool broke(const struct gs_sched_view *v, int t, int s, uint64_t now)
{
	uint64_t until;

	if (v->cfg[t].pct == 0)
		return false;
	if (t == s)
		return v->bk[s].tokens_ns <= 0;
	until = R(v, t)->broke_until_ns;
	return until > now && until - now <= v->par->burst * 100 + v->par->burst;
}

/*
 * Whether waiting slot t may be given a turn: 2 = yes, 1 = only if nobody
 * with 2 waits (SHARE mode out of tokens), 0 = no.
 */
static int eligibility(const struct gs_sched_view *v, int t, int s,
                       uint64_t now)
{
	if (!broke(v, t, s, now))
		return 2;
	return v->cfg[t].mode == GS_REGION_COMPUTE_SHARE ? 1 : 0;
}

static uint64_t w_eff(const struct gs_sched_cfg *c)
{
	uint64_t w = c->weight ? c->weight : 1;

	return w * (c->pct ? c->pct : 100);
}

/*
 * The best waiting slice of priority `prio` other than `skip` (-1 none):
 * highest eligibility, then lowest virtual time. Refills as it goes.
 * OUT: *elig of the winner.
 */
static int best_waiting(const struct gs_sched_view *v, uint32_t prio, int skip,
                        uint64_t now, int *elig)
{
	int best = -1, be = 0;

	for (int t = 0; t < v->n; t++) {
		int e;

		if (t == skip || !valid(v, t) || v->cfg[t].prio != prio ||
		    !waits(v, t, now))
			continue;
		e = eligibility(v, t, skip, now);
		if (e == 0)
			continue;
		if (best < 0 || e > be ||
		    (e == be && R(v, t)->vtime < R(v, best)->vtime)) {
			best = t;
			be = e;
		}
	}
	if (elig != NULL)
		*elig = be;
	return best;
}

/* Whether waiting slot b (eligibility e) should go before slot s. */
static bool prefer(const struct gs_sched_view *v, int b, int e, int s,
                   uint64_t now)
{
	int es = eligibility(v, s, s, now);

	if (es == 0)
		es = 1; /* s got past the limit check: it may borrow */
	return e > es || (e == es && R(v, b)->vtime < R(v, s)->vtime);
}

/*
 * Whether any slice but s waits for a turn it is entitled to (within its
 * limit): SHARE-mode time is only borrowed when nobody such waits.
 */
static bool any_entitled_waiting(const struct gs_sched_view *v, int s,
                                 uint64_t now)
{
	for (int t = 0; t < v->n; t++) {
		if (t == s || !valid(v, t) || !waits(v, t, now))
			continue;
		if (eligibility(v, t, s, now) == 2)
			return true;
	}
	return false;
}

/* How far past the last holder's estimated end a new holder that woke
 * late still goes without waiting for the completion to be recorded
 * (its process records it when it next looks, up to `idle` later):
 * about a host's late wake-up; work running later than that has
 * outrun its estimate (a longer kernel) and holds the new holder back. */
#define HANDOVER_LATE (1 * MS)

/*
 * The pipelined turn change: slice s was given the turn while the last
 * holder t still has work in flight. s may queue its launches once t's
 * work is estimated to end within `handover`, so they are in the GPU's
 * queue when t's end and the engine does not go idle between the two
 * (the wake-up, admission and launch of s happen during t's last
 * kernel). Only on an estimate that holds: work running past its
 * estimate by more than HANDOVER_LATE holds s back until it completes,
 * as before. Not under
 * the arbiter, whose turns and drain charge in-flight work by wall
 * time (gs_sched_arbitrate). OUT *lead:
 * how long until s may go (0 when it is not the holder).
 */
static bool handing_over(const struct gs_sched_view *v, int s, int t,
                         uint64_t now, uint64_t *lead)
{
	const struct gs_sched_dev *d = v->dev;
	uint64_t end = R(v, t)->busy_until_ns;

	*lead = 0;
	if (v->par->handover == 0 || arbitrated(v) || d->holder != s ||
	    d->holder_gen != v->cfg[s].generation)
		return false;
	if (R(v, s)->inflight > 0)
		return true; /* our turn has begun: our work is queued behind
		                theirs, whose completion their process records
		                when it next looks */
	if (end + HANDOVER_LATE < now)
		return false;
	if (end < now)
		return true; /* we woke late; its process has not looked */
	if (end - now <= v->par->handover)
		return true;
	*lead = end - now - v->par->handover;
	return false;
}

static void give_turn(const struct gs_sched_view *v, int t, uint64_t now)
{
	struct gs_sched_dev *d = v->dev;

	d->holder = t;
	d->holder_gen = t >= 0 ? v->cfg[t].generation : 0;
	d->holder_since_ns = now;
	if (t >= 0 && R(v, t)->vtime > d->vclock)
		d->vclock = R(v, t)->vtime;
	__atomic_add_fetch(&d->seq, 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&d->want, 1, __ATOMIC_RELEASE);
}

/*
 * The holder s was just admitted work that is estimated to end past its
 * quantum while another slice waits that would be preferred: this was
 * its last launch of the turn. The turn goes to that slice now, which
 * queues its work shortly before ours ends (handing_over) instead of
 * after our completion has been seen and it has been woken.
 */
static void last_launch(const struct gs_sched_view *v, int s, uint64_t now)
{
	struct gs_sched_dev *d = v->dev;
	int b, e;

	if (v->par->handover == 0 || arbitrated(v) || v->cfg[s].mps ||
	    d->holder != s || d->holder_gen != v->cfg[s].generation ||
	    d->holder_since_ns > now ||
	    R(v, s)->busy_until_ns - d->holder_since_ns < v->par->quantum)
		return;
	b = best_waiting(v, v->cfg[s].prio, s, now, &e);
	if (b >= 0 && prefer(v, b, e, s, now))
		give_turn(v, b, now);
}

void gs_sched_gate_refresh(const struct gs_sched_view *v, uint64_t now)
{
	struct gs_sched_dev *d = v->dev;
	bool on;
	uint32_t g;

	if (arbitrated(v))
		return; /* the arbiter's */
	on = d->enforced_ns != 0 && now - d->enforced_ns < v->par->presence;
	g = GS_GATE_ALWAYS | (on ? GS_GATE_ENFORCED : 0);

	if (__atomic_load_n(&d->gate, __ATOMIC_RELAXED) != g)
		__atomic_store_n(&d->gate, g, __ATOMIC_RELEASE);
}

/* ---- decisions -------------------------------------------------------- */

static uint64_t clamp(uint64_t x, uint64_t lo, uint64_t hi)
{
	return x < lo ? lo : x > hi ? hi : x;
}

static enum gs_sched_verdict admit_once(const struct gs_sched_view *v, int s,
                                        uint64_t est_ns, uint64_t now,
                                        uint64_t *retry_ns,
                                        enum gs_sched_why *why)
{
	struct gs_sched_dev *d = v->dev;
	const struct gs_sched_cfg *c;
	struct gs_sched_slice *S;
	int h, e;
	bool was_active;

	*retry_ns = 0;
	*why = GS_SCHED_WHY_NONE;
	if (s < 0 || s >= v->n || !v->cfg[s].live)
		return GS_SCHED_GO;
	c = &v->cfg[s];
	S = R(v, s);
	fresh(v, s);
	refill(v, s, now);
	S->seen_ns = now;
	was_active = active(v, s, now);
	if (!was_active && S->vtime < d->vclock)
		S->vtime = d->vclock; /* no credit for time spent idle */
	if (gs_sched_cfg_enforcing(c) && !arbitrated(v))
		d->enforced_ns = now;
	gs_sched_gate_refresh(v, now);
	if (!was_active)
		ring(v); /* the others must hear we are active */

	/* 1. A higher priority that is active keeps the GPU. Between two
	 * MPS slices the server runs both at once and gives the SMs to the
	 * client of normal priority first (a low one is a below-normal
	 * client): the lower one only holds back while the higher one has
	 * a process waiting to submit. */
	for (int t = 0; t < v->n; t++) {
		if (t == s || !valid(v, t) || v->cfg[t].prio <= c->prio ||
		    !prio_active(v, t, now))
			continue;
		if (c->mps && v->cfg[t].mps && !waits(v, t, now))
			continue;
		/* Out of tokens with nothing in flight, it cannot use the
		 * GPU before its refill: the time is ours meanwhile. */
		if (broke(v, t, s, now) && !prio_busy(v, t, now))
			continue;
		/* Sleep through its burst: nothing changes for us before it
		 * has been quiet for `linger`. */
		*retry_ns = 10 * MS;
		if (!prio_busy(v, t, now) && !waits(v, t, now))
			*retry_ns = clamp(R(v, t)->last_active_ns +
			                      v->par->linger - now,
			                  50 * US, 10 * MS);
		if (v->cfg[t].pct > 0 && *retry_ns > 1 * MS)
			*retry_ns = 1 * MS; /* it may soon be out of tokens */
		*why = GS_SCHED_WHY_PRIORITY;
		return GS_SCHED_WAIT;
	}

	/* 2. The compute limit. */
	if (broke(v, s, s, now)) {
		bool borrow = c->mode == GS_REGION_COMPUTE_SHARE &&
		              !any_entitled_waiting(v, s, now);

		if (!borrow) {
			uint64_t need = (uint64_t)(-v->bk[s].tokens_ns) + 1;

			/* Out of tokens, we hold no turn: the best waiting
			 * slice gets it now rather than at its next retry. */
			if (arbitrated(v)) {
				ring(v); /* the arbiter hands the turn on */
			} else if (d->holder == s && !c->mps) {
				int b = best_waiting(v, c->prio, s, now, &e);

				give_turn(v, b, now);
			}

			*retry_ns =
			    clamp(need * 100 / c->pct, 50 * US, 10 * MS);
			/* A borrower asks again as soon as the others may
			 * have been served. */
			*why = GS_SCHED_WHY_LIMIT;
			if (c->mode == GS_REGION_COMPUTE_SHARE) {
				*retry_ns = 500 * US;
				*why = GS_SCHED_WHY_TURN;
			}
			return GS_SCHED_WAIT;
		}
	}

	/* 3. Turns among equals; lower priorities' work does not block. An
	 * MPS slice takes none: the MPS server runs its kernels alongside
	 * the other clients' (the SM share is the server's to enforce). */
	if (c->mps)
		goto go;
	for (int t = 0; t < v->n; t++) {
		uint64_t lead;

		if (t == s || !valid(v, t) || v->cfg[t].prio != c->prio ||
		    !busy(v, t, now))
			continue;
		if (handing_over(v, s, t, now, &lead))
			continue;
		*retry_ns = 500 * US;
		if (lead > 0) /* ours next: ask when it may go */
			*retry_ns = clamp(lead, 20 * US, 10 * MS);
		*why = GS_SCHED_WHY_TURN;
		ring(v);
		return GS_SCHED_WAIT;
	}
	h = d->holder;
	if (arbitrated(v)) {
		/* The arbiter gives the turns: ours, or another's of our
		 * priority (wait), or nobody's - then go alone only while
		 * no other slice of our priority is active, else ask. */
		bool other = h >= 0 && h != s && valid(v, h) &&
		             d->holder_gen == v->cfg[h].generation &&
		             v->cfg[h].prio == c->prio && !v->cfg[h].mps;

		if (h == s && d->holder_gen == c->generation)
			goto go;
		for (int t = 0; t < v->n && !other; t++)
			other = t != s && valid(v, t) &&
			        v->cfg[t].prio == c->prio && !v->cfg[t].mps &&
			        active(v, t, now);
		if (other) {
			*retry_ns = 1 * MS; /* woken when it changes */
			*why = GS_SCHED_WHY_TURN;
			ring(v);
			return GS_SCHED_WAIT;
		}
		goto go;
	}
	/* A holder keeps the turn only while it launches (a dead or forged
	 * one is idle within `idle`), and hands it over itself once its
	 * quantum is over. */
	if (h >= 0 && h != s && valid(v, h) &&
	    d->holder_gen == v->cfg[h].generation &&
	    v->cfg[h].prio == c->prio &&
	    R(v, h)->last_active_ns <= now &&
	    now - R(v, h)->last_active_ns < v->par->idle &&
	    eligibility(v, h, s, now) >=
	        (eligibility(v, s, s, now) ? eligibility(v, s, s, now) : 1)) {
		/* The holder is between two launches and no less entitled
		 * than we are: let it go on. Ask again when it has been
		 * quiet for `idle`; if it comes back first and its quantum
		 * is over, it hands us the turn and wakes us. */
		*retry_ns = clamp(R(v, h)->last_active_ns + v->par->idle - now,
		                  20 * US, v->par->idle);
		*why = GS_SCHED_WHY_TURN;
		return GS_SCHED_WAIT;
	}
	if (h != s || d->holder_since_ns > now ||
	    now - d->holder_since_ns >= v->par->quantum) {
		/* A free turn, or ours for a full quantum: whoever is most
		 * behind (lowest virtual time) among those waiting goes. */
		int b = best_waiting(v, c->prio, s, now, &e);

		if (b >= 0 && prefer(v, b, e, s, now)) {
			give_turn(v, b, now);
			*retry_ns = 500 * US;
			*why = GS_SCHED_WHY_TURN;
			return GS_SCHED_WAIT;
		}
		if (h != s)
			give_turn(v, s, now);
		else
			d->holder_since_ns = now;
	}

go:
	if (!was_active && !arbitrated(v))
		__atomic_add_fetch(&d->want, 1, __ATOMIC_RELEASE);
	S->inflight++;
	v->bk[s].tokens_ns -= (int64_t)est_ns;
	publish(v, s, now);
	S->last_active_ns = now;
	S->busy_until_ns =
	    (S->busy_until_ns > now ? S->busy_until_ns : now) + est_ns;
	last_launch(v, s, now);
	return GS_SCHED_GO;
}

/*
 * A process that waits for a turn while its own work is in flight asks
 * again when that work is estimated to end: it records the completion
 * then (it learns of it only when it looks), which is what lets the next
 * holder go when the estimate did not. Since the turn changes at the
 * holder's last launch, the last holder is one of these.
 */
enum gs_sched_verdict gs_sched_admit(const struct gs_sched_view *v, int s,
                                     uint64_t est_ns, uint64_t now,
                                     uint64_t *retry_ns, enum gs_sched_why *why)
{
	enum gs_sched_verdict r = admit_once(v, s, est_ns, now, retry_ns, why);
	const struct gs_sched_slice *S;

	if (r != GS_SCHED_WAIT || *why != GS_SCHED_WHY_TURN ||
	    v->par->handover == 0 || arbitrated(v))
		return r;
	S = R(v, s);
	if (S->inflight > 0 && S->busy_until_ns > now &&
	    S->busy_until_ns - now < *retry_ns)
		*retry_ns = clamp(S->busy_until_ns - now, 20 * US, *retry_ns);
	return r;
}

bool gs_sched_behind(const struct gs_sched_view *v, int s, uint64_t now)
{
	if (s < 0 || s >= v->n || !v->cfg[s].live || v->cfg[s].mps)
		return false;
	for (int t = 0; t < v->n; t++)
		if (t != s && valid(v, t) && v->cfg[t].prio == v->cfg[s].prio &&
		    !v->cfg[t].mps && busy(v, t, now))
			return true;
	return false;
}

void gs_sched_wait_begin(const struct gs_sched_view *v, int s, uint64_t now)
{
	if (s < 0 || s >= v->n)
		return;
	fresh(v, s);
	R(v, s)->waiting++;
	R(v, s)->seen_ns = now;
	if (arbitrated(v))
		ring(v);
	else
		__atomic_add_fetch(&v->dev->want, 1, __ATOMIC_RELEASE);
}

void gs_sched_wait_end(const struct gs_sched_view *v, int s)
{
	if (s < 0 || s >= v->n || R(v, s)->waiting == 0)
		return;
	R(v, s)->waiting--;
}

bool gs_sched_complete(const struct gs_sched_view *v, int s, uint64_t busy_ns,
                       uint64_t est_ns, uint64_t now)
{
	struct gs_sched_slice *S;
	struct gs_sched_bucket *B;
	const struct gs_sched_cfg *c;
	int64_t burst = (int64_t)v->par->burst;

	if (s < 0 || s >= v->n)
		return false;
	S = R(v, s);
	B = &v->bk[s];
	c = &v->cfg[s];
	if (S->generation != c->generation || B->generation != c->generation)
		return true; /* the slice was replaced meanwhile */
	if (S->inflight > 0)
		S->inflight--;
	refill(v, s, now);
	B->tokens_ns += (int64_t)est_ns - (int64_t)busy_ns;
	if (B->tokens_ns > burst)
		B->tokens_ns = burst;
	if (c->mode == GS_REGION_COMPUTE_SHARE && B->tokens_ns < -burst)
		B->tokens_ns = -burst; /* borrowed time is forgiven */
	publish(v, s, now);
	S->vtime += busy_ns * 1000 / w_eff(c);
	S->last_active_ns = now;
	if (S->inflight == 0)
		S->busy_until_ns = now;
	if (arbitrated(v)) {
		/* The arbiter wakes the waiters (and hands the turn on): it
		 * is rung when one of our priority waits for a turn (those
		 * waiting for a priority sleep their time; a process of ours
		 * that waits takes our next admission). */
		for (int t = 0; t < v->n && S->inflight == 0; t++)
			if (t != s && valid(v, t) && v->cfg[t].prio == c->prio &&
			    waits(v, t, now)) {
				ring(v);
				break;
			}
		return false;
	}
	if (gs_sched_cfg_enforcing(c))
		v->dev->enforced_ns = now;
	/* The clock follows the holder: a slice that arrives (or comes back
	 * from idle) starts level with the one using the GPU, not with
	 * where that one stood when it got the turn (which would credit the
	 * newcomer with all the time the holder ran alone). */
	if (v->dev->holder == s && v->dev->holder_gen == c->generation &&
	    S->vtime > v->dev->vclock)
		v->dev->vclock = S->vtime;
	__atomic_add_fetch(&v->dev->seq, 1, __ATOMIC_RELEASE);
	/* Only the end of our work can let a waiter go, and not while we
	 * hold the turn with quantum left (waiters ask again once we have
	 * been quiet for `idle`; we wake them if we hand the turn over). */
	return S->inflight == 0 &&
	       (v->dev->holder != s || c->mps || broke(v, s, s, now) ||
	        now - v->dev->holder_since_ns >= v->par->quantum) &&
	       someone_waits(v);
}

void gs_sched_forget(const struct gs_sched_view *v, int s, uint32_t n)
{
	struct gs_sched_slice *S;

	if (s < 0 || s >= v->n)
		return;
	S = R(v, s);
	S->inflight -= n <= S->inflight ? n : S->inflight;
	if (arbitrated(v))
		ring(v);
	else
		__atomic_add_fetch(&v->dev->seq, 1, __ATOMIC_RELEASE);
}

/* ---- the arbiter -------------------------------------------------------- */

/*
 * The arbiter works on a view whose records are the published ones (pub),
 * with every check of the shim's side (valid, busy, waits, active,
 * eligibility, best_waiting) reading them; `self` is -1 so that no bucket
 * is ever read (broke() of any slice goes through its published time).
 */
static void arb_view(const struct gs_sched_arb *a, struct gs_sched_view *v)
{
	*v = (struct gs_sched_view){
	    .dev = a->dev,
	    .sl = a->pub,
	    .bk = NULL,
	    .cfg = a->cfg,
	    .n = a->n,
	    .par = a->par,
	    .mine = NULL,
	    .self = -1,
	    .bell = NULL,
	};
}

/* A time read from an ask: one in the future is a forgery (now). */
static uint64_t past(uint64_t t, uint64_t now)
{
	return t > now ? now : t;
}

/* Copies slot t's ask into its published record, checked. OUT: whether
 * it started waiting or went from idle to active (leases must end). */
static void publish_ask(const struct gs_sched_arb *a, const struct gs_sched_view *v,
                        int t, uint64_t now, bool *wanted)
{
	struct gs_sched_slice *P = &a->pub[t];
	const struct gs_sched_slice *A = a->ask[t];
	const struct gs_sched_cfg *c = &a->cfg[t];
	bool was_active, was_waiting;
	struct gs_sched_slice q;

	if (!c->live || A == NULL) {
		if (P->generation != 0 || P->inflight || P->waiting)
			*P = (struct gs_sched_slice){0};
		return;
	}
	q = *A; /* one read of memory a tenant may be rewriting */
	if (P->generation != c->generation) {
		*P = (struct gs_sched_slice){0};
		P->generation = c->generation;
		P->vtime = a->dev->vclock; /* a new slice starts level */
	}
	if (q.generation != c->generation) {
		P->inflight = P->waiting = 0;
		return;
	}
	was_active = active(v, t, now);
	was_waiting = P->waiting > 0;
	P->broke_until_ns = q.broke_until_ns;
	P->seen_ns = past(q.seen_ns, now);
	P->last_active_ns = past(q.last_active_ns, now);
	P->busy_until_ns = q.busy_until_ns;
	P->waiting = q.waiting;
	P->inflight = q.inflight;
	/* Work in flight of a slice that has not held the turn lately does
	 * not hold anyone back (an MPS slice holds none: its work runs
	 * alongside the others' on the MPS server). */
	if (t != a->dev->holder &&
	    (c->mps || P->held_ns == 0 || now - P->held_ns > a->par->drain))
		P->inflight = 0;
	/* Its own measure of its virtual time only ever raises ours. */
	if (q.vtime > P->vtime && q.vtime - P->vtime < a->par->burst * 1000)
		P->vtime = q.vtime;
	if (!was_active && active(v, t, now) && P->vtime < a->dev->vclock)
		P->vtime = a->dev->vclock; /* no credit for time idle */
	if ((!was_waiting && waits(v, t, now)) ||
	    (!was_active && active(v, t, now)))
		*wanted = true;
}

bool gs_sched_arbitrate(const struct gs_sched_arb *a, uint64_t now,
                        uint64_t *next_ns)
{
	struct gs_sched_dev *d = a->dev;
	struct gs_sched_view v;
	int h = d->holder, top = -1, b, e, old = d->holder;
	uint64_t last = d->arb_ns;
	bool wanted = false, any = false, wake = false, turns = false,
	     contended;
	uint32_t inflight_before[GS_REGION_MAX_SLICES];

	arb_view(a, &v);
	for (int t = 0; t < a->n; t++) {
		inflight_before[t] = a->pub[t].inflight;
		publish_ask(a, &v, t, now, &wanted);
	}

	/* The priority that has the GPU: the highest with a slice active. */
	for (int t = 0; t < a->n; t++) {
		if (!valid(&v, t) || !active(&v, t, now))
			continue;
		/* Turns are contended when a slice waits while another of
		 * its priority is active: then look every `idle`. */
		for (int u = 0; u < a->n && !turns; u++)
			turns = u != t && valid(&v, u) && !a->cfg[t].mps &&
			        a->cfg[u].prio == a->cfg[t].prio &&
			        waits(&v, t, now) && active(&v, u, now);
		any = true;
		if (gs_sched_cfg_enforcing(&a->cfg[t]))
			d->enforced_ns = now;
		if (!a->cfg[t].mps && (int)a->cfg[t].prio > top)
			top = (int)a->cfg[t].prio;
	}

	/* Charge the holder for the time it held the turn while others of
	 * its priority waited: what it used, whatever it says. */
	if (h >= 0 && h < a->n && valid(&v, h) &&
	    d->holder_gen == a->cfg[h].generation && last != 0 && now > last) {
		contended = false;
		for (int t = 0; t < a->n && !contended; t++)
			contended = t != h && valid(&v, t) &&
			            a->cfg[t].prio == a->cfg[h].prio &&
			            waits(&v, t, now);
		/* Not while others' work held it back (drained_ns). */
		if (contended && d->drained_ns < last)
			a->pub[h].vtime += (now - last) * 1000 / w_eff(&a->cfg[h]);
		a->pub[h].held_ns = now;
	}

	/* The turn. */
	if (h >= 0 && (h >= a->n || !valid(&v, h) ||
	               d->holder_gen != a->cfg[h].generation ||
	               a->cfg[h].mps || (int)a->cfg[h].prio != top))
		h = -1; /* gone, replaced, or of a priority that waits */
	if (h >= 0) {
		const struct gs_sched_slice *H = &a->pub[h];
		uint64_t since;
		bool idle;

		/* Held back by work still in flight of a previous holder,
		 * it could not launch: that time is not idleness, and the
		 * GPU was the other's: charged to it. */
		for (int t = 0; t < a->n; t++) {
			if (t == h || !valid(&v, t) ||
			    a->cfg[t].prio != a->cfg[h].prio || !busy(&v, t, now))
				continue;
			d->drained_ns = now;
			if (last != 0 && now > last)
				a->pub[t].vtime +=
				    (now - last) * 1000 / w_eff(&a->cfg[t]);
		}
		/* Its quantum starts once it can use the GPU. */
		if (d->drained_ns > d->holder_since_ns)
			d->holder_since_ns = d->drained_ns;
		since = H->last_active_ns > d->holder_since_ns
		            ? H->last_active_ns
		            : d->holder_since_ns;
		if (d->drained_ns > since)
			since = d->drained_ns;
		/* Idle: no work, and nothing launched for `idle` since it
		 * got the turn and could use it. */
		idle = !busy(&v, h, now) && since <= now &&
		       now - since >= a->par->idle;
		bool over = d->holder_since_ns > now ||
		            now - d->holder_since_ns >= a->par->quantum;
		bool spent = broke(&v, h, -1, now) &&
		             a->cfg[h].mode != GS_REGION_COMPUTE_SHARE;

		b = best_waiting(&v, (uint32_t)top, h, now, &e);
		/* Out of tokens, a SHARE holder borrows only while nobody
		 * entitled waits. */
		if (broke(&v, h, -1, now) && e == 2)
			spent = true;
		if (b >= 0 && (idle || spent)) {
			give_turn(&v, b, now);
		} else if (b >= 0 && over) {
			int eh = eligibility(&v, h, -1, now);

			if (e > eh || (e == eh && a->pub[b].vtime <
			                              a->pub[h].vtime))
				give_turn(&v, b, now);
			else
				d->holder_since_ns = now; /* still behind */
		} else if (b < 0 && idle && !waits(&v, h, now)) {
			d->holder = -1; /* nobody wants it */
		}
	} else if (top >= 0) {
		b = best_waiting(&v, (uint32_t)top, -1, now, &e);
		if (b < 0) /* someone runs without a turn: it is theirs */
			for (int t = 0; t < a->n && b < 0; t++)
				if (valid(&v, t) && !a->cfg[t].mps &&
				    (int)a->cfg[t].prio == top &&
				    a->ask[t] != NULL && a->ask[t]->inflight > 0)
					b = t;
		if (b >= 0)
			give_turn(&v, b, now);
		else
			d->holder = -1;
	} else {
		d->holder = -1;
	}
	if (d->holder >= 0 && d->holder < a->n) {
		a->pub[d->holder].held_ns = now;
		/* The clock follows the holder (see gs_sched_complete). */
		if (a->pub[d->holder].vtime > d->vclock)
			d->vclock = a->pub[d->holder].vtime;
	}
	/* A new holder's turn: its work in flight counts again. */
	if (d->holder >= 0 && d->holder != old && a->ask[d->holder] != NULL &&
	    a->ask[d->holder]->generation == a->cfg[d->holder].generation)
		a->pub[d->holder].inflight = a->ask[d->holder]->inflight;

	for (int t = 0; t < a->n; t++)
		if (inflight_before[t] > 0 && a->pub[t].inflight == 0)
			wake = true; /* waiters on its work may go */
	if (d->holder != old)
		wake = true; /* give_turn moved seq and want */
	else if (wanted)
		__atomic_add_fetch(&d->want, 1, __ATOMIC_RELEASE);
	if (wake && d->holder == old)
		__atomic_add_fetch(&d->seq, 1, __ATOMIC_RELEASE);
	{
		bool on = d->enforced_ns != 0 &&
		          now - d->enforced_ns < a->par->presence;
		uint32_t g = GS_GATE_ALWAYS | (on ? GS_GATE_ENFORCED : 0);

		if (__atomic_load_n(&d->gate, __ATOMIC_RELAXED) != g)
			__atomic_store_n(&d->gate, g, __ATOMIC_RELEASE);
		/* Contended turns: every `idle` (a holder gone quiet, a
		 * quantum over). Activity alone: often enough that what is
		 * published (a priority's linger) stays fresh. */
		if (turns)
			*next_ns = a->par->idle;
		else if (any)
			*next_ns = a->par->linger / 4;
		else if (on)
			*next_ns = d->enforced_ns + a->par->presence - now;
		else
			*next_ns = 100 * MS;
	}
	d->arb_ns = now;
	return wake;
}
