/*
 * arbiter.c - the arbiter of a GS_RU_ARBITER region (the daemon's): each
 * pass reads every owner file's scheduler records (never trusting them)
 * and publishes the GPU's turns in the shared file, which tenants cannot
 * write; between passes it sleeps on the bell.
 *
 * Calls limits.c, lock.c, owner.c and util.c; nothing in region/ calls
 * it.
 *
 * Rules of its own around gs_sched_arbitrate (issue #25):
 *
 *   - A slice is heard only while a process of it lives: its owner file
 *     lists an entry attached to it whose pid is alive with the start
 *     time recorded (checked every ARB_CONFIRM_NS; arb_confirmed; an
 *     entry of another pid namespace counts only in a uid-0 slice's
 *     file, a pod's). A record a tenant forged for a slice running
 *     nothing is not read.
 *     (The watchdog evicts entries the kernel does not confirm as the
 *     slice's: wrong uid, not asking for the slice.)
 *   - Fair by owner, then by slice (arb_owner_level): after each pass,
 *     every slice of one owner (a uid; each slice of uid 0 - a pod, a
 *     job - is its own owner) on a GPU is charged the virtual time any
 *     of them was charged, so its slices move together by what the owner
 *     used and keep their order among themselves; and only the latest
 *     holder among them may hold the next holder back with its work
 *     still in flight (the drain is the owner's, not each slice's). N
 *     slices of one owner get the turns one would, against any
 *     neighbour.
 *   - Best effort (arb_best_effort): a slice without a compute share
 *     gets only the time slices with a share leave unused.
 *   - Shares from what the arbiter gave (arb_turn_read/_charge): a slice
 *     with a share is out of tokens when the turns and drains the
 *     arbiter itself granted it say so, whatever its own bucket and
 *     record (its tenant's to rewrite) claim.
 */
#include "region_int.h"

#include "gs/faultinj.h"

#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* How often a slice's living process is looked for again. */
#define ARB_CONFIRM_NS 100000000ull

/* The arbiter's own token bucket of a slice on a GPU (arb_turn_*). */
struct arb_bucket {
	uint64_t generation; /* of the slice; 0 = not started */
	int64_t tokens_ns;
	uint64_t refill_ns;
};

struct gs__arb_owners {
	/* published virtual time after the last pass, and its generation */
	uint64_t last_v[GS_REGION_MAX_DEVICES][GS_REGION_MAX_SLICES];
	uint64_t last_gen[GS_REGION_MAX_DEVICES][GS_REGION_MAX_SLICES];
	/* per slot: a process of it lives (as of confirm_ns, generation) */
	bool confirmed[GS_REGION_MAX_SLICES];
	uint64_t confirm_ns[GS_REGION_MAX_SLICES];
	uint64_t confirm_gen[GS_REGION_MAX_SLICES];
	/* per GPU and slot: the ask as this pass reads it (one copy of
	 * memory its tenant may be rewriting, corrected by the bucket) */
	struct gs_sched_slice seen[GS_REGION_MAX_DEVICES][GS_REGION_MAX_SLICES];
	struct arb_bucket bk[GS_REGION_MAX_DEVICES][GS_REGION_MAX_SLICES];
};

/* Which owner slot s belongs to, for fairness: its uid, or the slot
 * itself for uid 0's slices (each a different pod or job). */
static uint64_t arb_owner_key(struct gs_region *r, int s)
{
	uint32_t uid = r->rl->slice[s].lim.owner_uid;

	return uid != 0 ? uid : (1ull << 32) | (uint64_t)s;
}

/*
 * Owner file `o` (its lock not needed: entries are read once each, and a
 * torn one only fails the check): whether a live entry attached to slot
 * s at generation `gen` names a process that is alive as recorded.
 */
static bool arb_has_process(const struct gs_region *r, const struct gs_own *o,
                            int s, uint64_t gen)
{
	/* A uid-0 slice's file is root's (a pod's or a job's, mounted into
	 * its container): its processes may live in another pid namespace,
	 * where /proc here cannot see them; any live entry counts. A
	 * tenant's own file must name a process alive here. */
	bool foreign_ok = r->rl->slice[s].lim.owner_uid == 0;

	for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
		const struct gs_ru_proc *p = &o->ro->proc[i];
		struct gs_ru_proc q;

		if (__atomic_load_n(&p->state, __ATOMIC_ACQUIRE) !=
		    GS_RU_PROC_LIVE)
			continue;
		q = *p;
		if (q.slice != s || q.slice_gen != gen || q.pid <= 0)
			continue;
		if (q.pidns != r->pidns ? foreign_ok
		                        : gs_region_pid_alive(q.pid, q.start_time))
			return true;
	}
	return false;
}

/* Remap lock held: whether slot s has a living process (cached). */
static bool arb_confirmed(struct gs_region *r, struct gs__arb_owners *ao,
                          int s, int k, uint64_t now)
{
	uint64_t gen = r->arb_cfg[s].generation;

	if (ao->confirm_gen[s] == gen && ao->confirm_ns[s] <= now &&
	    now - ao->confirm_ns[s] < ARB_CONFIRM_NS)
		return ao->confirmed[s];
	ao->confirmed[s] = arb_has_process(r, &r->own[k], s, gen);
	ao->confirm_ns[s] = now;
	ao->confirm_gen[s] = gen;
	return ao->confirmed[s];
}

/*
 * Best effort: a slice without a compute share (pct 0) gets only the time
 * the slices with a share leave unused. While one with a share, of the
 * same priority or higher, waits or was active within `linger` on device
 * d, the asks of share-less slices of that priority or lower are not
 * read this pass (they neither wait nor hold: the turn goes to the
 * others). A higher priority keeps its meaning.
 */
static void arb_best_effort(struct gs_region *r,
                            const struct gs_sched_slice **ask, int n,
                            const struct gs_sched_params *par, uint64_t now)
{
	int top = -1;

	for (int t = 0; t < n; t++) {
		const struct gs_sched_slice *A = ask[t];
		const struct gs_sched_cfg *c = &r->arb_cfg[t];
		bool wants;

		if (A == NULL || !c->live || c->pct == 0 || c->mps ||
		    A->generation != c->generation)
			continue;
		wants = (A->waiting > 0 && A->seen_ns <= now &&
		         now - A->seen_ns < par->wait_seen) ||
		        (A->last_active_ns <= now &&
		         now - A->last_active_ns < par->linger);
		if (wants && (int)c->prio > top)
			top = (int)c->prio;
	}
	if (top < 0)
		return;
	for (int t = 0; t < n; t++)
		if (ask[t] != NULL && r->arb_cfg[t].live &&
		    r->arb_cfg[t].pct == 0 && !r->arb_cfg[t].mps &&
		    (int)r->arb_cfg[t].prio <= top)
			ask[t] = NULL;
}

/*
 * The turn bucket (arb_turn_read, arb_turn_charge): a slice with a
 * compute share is out of tokens when the arbiter's count says so, not
 * only when its own bucket (in its owner's file, which its tenant can
 * rewrite) does. The arbiter's bucket is charged with what the arbiter
 * itself gave the slice while others of its priority waited - the time
 * it held the turn, and the time its work "in flight" held the next
 * holder back (the drain) - and refilled at the share plus
 * ARB_TURN_GRACE_PCT of it: a turn's hand-overs cost an honest slice a
 * little of each turn, which its own bucket does not count. By the
 * arbiter's count a slice is out of tokens below two quanta's worth
 * (not below zero): a greedy slice sits at the edge of its share, and a
 * strict neighbour that gets tokens back must not wait out a whole
 * quantum of it each time (measured on 2 loaded cores: a liar holding
 * its own bucket full and forging its records left a strict 50 %
 * neighbour 75-88 % of its rate alone with the threshold at zero, 83-94 %
 * at one quantum, 94-95 % at two). So
 * a slice that holds its own bucket full, or says it has tokens, gets no
 * more of a contended GPU than its share, and a strict neighbour keeps
 * its own. The debt is capped at one burst, as a borrower's is.
 */
#define ARB_TURN_GRACE_PCT 2

static bool arb_turn_counted(const struct gs_sched_cfg *c)
{
	return c->live && c->pct > 0 && !c->mps;
}

static void arb_turn_refill(struct arb_bucket *b, const struct gs_sched_cfg *c,
                            const struct gs_sched_params *par, uint64_t now)
{
	int64_t burst = (int64_t)par->burst;
	uint64_t dt;

	if (b->generation != c->generation) {
		b->generation = c->generation;
		b->tokens_ns = burst;
		b->refill_ns = now;
		return;
	}
	dt = now > b->refill_ns ? now - b->refill_ns : 0;
	if (dt > 10 * par->burst)
		dt = 10 * par->burst;
	b->tokens_ns += (int64_t)(dt * c->pct * (100 + ARB_TURN_GRACE_PCT) /
	                          10000);
	if (b->tokens_ns > burst)
		b->tokens_ns = burst;
	b->refill_ns = now;
}

/*
 * Before gs_sched_arbitrate on device d: each ask that may be read is
 * copied once (the copy is what the pass reads), and a slice out of
 * tokens by the arbiter's count is published as such whatever its own
 * record says.
 */
static void arb_turn_read(struct gs_region *r, struct gs__arb_owners *ao,
                          const struct gs_sched_slice **ask, int d, int n,
                          const struct gs_sched_params *par, uint64_t now)
{
	for (int t = 0; t < n; t++) {
		const struct gs_sched_cfg *c = &r->arb_cfg[t];
		struct gs_sched_slice *q = &ao->seen[d][t];
		struct arb_bucket *b = &ao->bk[d][t];
		int64_t need = 2 * (int64_t)par->quantum;
		uint64_t until;

		if (ask[t] == NULL)
			continue;
		*q = *ask[t];
		ask[t] = q;
		if (!arb_turn_counted(c) || q->generation != c->generation)
			continue;
		arb_turn_refill(b, c, par, now);
		if (b->tokens_ns > need)
			continue;
		until = ((uint64_t)(need - b->tokens_ns) + 1) * 10000 /
		        (c->pct * (100 + ARB_TURN_GRACE_PCT));
		/* further than that is a forgery to gs_sched_arbitrate */
		if (until > par->burst * 100)
			until = par->burst * 100;
		until += now;
		if (q->broke_until_ns < until)
			q->broke_until_ns = until;
	}
}

/* Whether published slot t of device d's pass at `now` waits, as
 * gs_sched_arbitrate reads it. */
static bool arb_pub_waits(const struct gs_sched_slice *P,
                          const struct gs_sched_params *par, uint64_t now)
{
	return P->waiting > 0 && P->seen_ns <= now &&
	       now - P->seen_ns < par->wait_seen;
}

static bool arb_pub_busy(const struct gs_sched_slice *P,
                         const struct gs_sched_params *par, uint64_t now)
{
	return P->inflight > 0 && now < P->busy_until_ns + par->stale &&
	       P->busy_until_ns < now + par->busy_max;
}

static void arb_turn_debit(struct arb_bucket *b, const struct gs_sched_cfg *c,
                           const struct gs_sched_params *par, uint64_t ns)
{
	if (!arb_turn_counted(c) || b->generation != c->generation)
		return;
	b->tokens_ns -= (int64_t)ns;
	if (b->tokens_ns < -(int64_t)par->burst)
		b->tokens_ns = -(int64_t)par->burst;
}

/*
 * After gs_sched_arbitrate on device d, whose holder was `h` and last
 * pass `last` before it (drained_ns then `drained`): the turn buckets
 * are charged for [last, now], as the pass charged virtual time.
 */
static void arb_turn_charge(struct gs_region *r, struct gs__arb_owners *ao,
                            const struct gs_sched_slice *pub,
                            const struct gs_sched_dev *dev, int h,
                            uint64_t last, uint64_t drained, int d, int n,
                            const struct gs_sched_params *par, uint64_t now)
{
	const struct gs_sched_cfg *cfg = r->arb_cfg;
	uint64_t dt;
	bool contended = false;

	if (h < 0 || h >= n || last == 0 || now <= last || !cfg[h].live ||
	    pub[h].generation != cfg[h].generation)
		return;
	dt = now - last;
	if (dt > par->burst)
		dt = par->burst; /* a stalled pass weighs no more */
	for (int t = 0; t < n && !contended; t++)
		contended = t != h && cfg[t].live &&
		            pub[t].generation == cfg[t].generation &&
		            cfg[t].prio == cfg[h].prio &&
		            arb_pub_waits(&pub[t], par, now);
	if (contended && drained < last)
		arb_turn_debit(&ao->bk[d][h], &cfg[h], par, dt);
	if (dev->drained_ns != now)
		return;
	/* This pass the holder was held back by others' work in flight:
	 * the GPU was theirs. */
	for (int t = 0; t < n; t++)
		if (t != h && cfg[t].live &&
		    pub[t].generation == cfg[t].generation &&
		    cfg[t].prio == cfg[h].prio && arb_pub_busy(&pub[t], par, now))
			arb_turn_debit(&ao->bk[d][t], &cfg[t], par, dt);
}

/*
 * Shared lock held, after gs_sched_arbitrate on device d: each owner's
 * slices are charged together (see the top of the file). A slice seen
 * for the first time, or replaced, is charged nothing this pass.
 */
static void arb_owner_level(struct gs_region *r, struct gs__arb_owners *ao,
                            struct gs_sched_slice *pub, int holder, int d,
                            int n)
{
	uint64_t delta[GS_REGION_MAX_SLICES];
	bool done[GS_REGION_MAX_SLICES] = {false};

	for (int t = 0; t < n; t++) {
		const struct gs_sched_cfg *c = &r->arb_cfg[t];

		delta[t] = 0;
		if (!c->live || pub[t].generation != c->generation)
			continue;
		if (ao->last_gen[d][t] == c->generation &&
		    pub[t].vtime > ao->last_v[d][t])
			delta[t] = pub[t].vtime - ao->last_v[d][t];
	}
	for (int t = 0; t < n; t++) {
		uint64_t key, sum = 0;
		int members = 0;

		if (done[t] || !r->arb_cfg[t].live ||
		    pub[t].generation != r->arb_cfg[t].generation)
			continue;
		key = arb_owner_key(r, t);
		for (int u = t; u < n; u++)
			if (!done[u] && r->arb_cfg[u].live &&
			    pub[u].generation == r->arb_cfg[u].generation &&
			    arb_owner_key(r, u) == key) {
				sum += delta[u];
				members++;
			}
		int latest = -1;

		for (int u = t; u < n; u++)
			if (!done[u] && r->arb_cfg[u].live &&
			    pub[u].generation == r->arb_cfg[u].generation &&
			    arb_owner_key(r, u) == key &&
			    (latest < 0 || pub[u].held_ns > pub[latest].held_ns))
				latest = u;
		for (int u = t; u < n; u++) {
			if (done[u] || !r->arb_cfg[u].live ||
			    pub[u].generation != r->arb_cfg[u].generation ||
			    arb_owner_key(r, u) != key)
				continue;
			done[u] = true;
			if (members > 1 && sum > delta[u])
				pub[u].vtime += sum - delta[u];
			/* Drain per owner: only the work in flight of its
			 * latest holder may hold the next holder back. */
			if (u != holder && u != latest)
				pub[u].held_ns = 0;
		}
	}
	for (int t = 0; t < n; t++) {
		ao->last_v[d][t] = pub[t].vtime;
		ao->last_gen[d][t] = pub[t].generation;
	}
}

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
	if (r->arb_own == NULL) {
		r->arb_own = gs_fault_calloc("region.malloc", 1,
		                             sizeof(*r->arb_own));
		if (r->arb_own == NULL)
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
		/* A slice with no living process says nothing. */
		if (!arb_confirmed(r, r->arb_own, s, k, gs__mono_ns()))
			continue;
		for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
			ask[d][s] = &r->own[k].ro->ask[d][s];
	}
	now = gs__mono_ns();
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		if (!__atomic_load_n(&ru->dev[d].in_use, __ATOMIC_ACQUIRE))
			continue;
		arb_best_effort(r, ask[d], n, &par, now);
	}
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gs_sched_arb a = {
		    .dev = &ru->dev[d].sched,
		    .pub = ru->sched[d],
		    .ask = ask[d],
		    .cfg = r->arb_cfg,
		    .n = n,
		    .par = &par,
		};
		uint64_t nx, last = ru->dev[d].sched.arb_ns,
		             drained = ru->dev[d].sched.drained_ns;
		int h = ru->dev[d].sched.holder;

		if (!__atomic_load_n(&ru->dev[d].in_use, __ATOMIC_ACQUIRE))
			continue;
		arb_turn_read(r, r->arb_own, ask[d], d, n, &par, now);
		wake[d] = gs_sched_arbitrate(&a, now, &nx);
		arb_turn_charge(r, r->arb_own, ru->sched[d], &ru->dev[d].sched,
		                h, last, drained, d, n, &par, now);
		arb_owner_level(r, r->arb_own, ru->sched[d],
		                ru->dev[d].sched.holder, d, n);
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
