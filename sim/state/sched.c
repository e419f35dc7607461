/*
 * sched.c - the sim's execution timeline: one per engine (whole GPU or MIG
 * instance), shared by every process through the state file, advanced
 * lazily by whoever holds the lock. There is no daemon: each process,
 * before it reads or changes an engine, simulates it from t_sim up to now,
 * which gives every process the same answer.
 *
 * Model. Each slot (process on an engine) queues ops in its ring; ops of a
 * slot run one after another in launch order. Groups take turns on the
 * engine: every non-MPS slot is a group of its own, and all MPS clients of
 * the engine form one group (the MPS server is one context). A group keeps
 * the engine for one time slice (gs_sim_timeslice_ns) while another group
 * has work waiting, then the next group in slot order gets it
 * (round-robin); a group alone keeps it. As on the GPU's runlist
 * scheduler, the slice is a timer armed when a group is scheduled in
 * and re-armed at each expiry while it finds nobody else to run: work
 * that arrives from another group waits for the running slice's end,
 * somewhere within one slice, not for a slice counted from its arrival
 * nor (a stale timer) not at all. A group that runs dry loses the
 * engine at once (the scheduler moves on from an idle channel). Inside the MPS group every client
 * with work runs at once, each on its op's SM count; when they ask for
 * more SMs than the engine has, all are slowed by engine_sms / asked.
 *
 * Ops are in SM-ns (a d-ns kernel on k SMs is d*k) and progress at k
 * SM-ns per ns (k*N/K when MPS oversubscribes), so a kernel alone takes
 * exactly its duration. Time is integer ns; everything is deterministic in
 * the sequence of (launch, time) events, and only the lock holder's clock
 * reading enters it. A waiter that oversleeps changes nothing: the
 * timeline is computed, not observed.
 *
 * Accounting: a slot's busy_ns grows by the time its op is running (its
 * turn under time-slicing; the time it runs concurrently under MPS);
 * sm_busy_ns by the SM-ns it got. engine busy_ns counts time with any op
 * running (utilization).
 */
#include "gs_sim/state.h"

#include <string.h>

/* Slice lengths for levels 0 (driver default), 1 short, 2 medium, 3 long. */
static const uint64_t timeslice_ns[GS_SIM_TIMESLICE_LEVELS] = {
    2000000ULL, 1000000ULL, 2000000ULL, 5000000ULL};

uint64_t gs_sim_timeslice_ns(uint32_t level)
{
	if (level >= GS_SIM_TIMESLICE_LEVELS)
		level = GS_SIM_TIMESLICE_LEVELS - 1;
	return timeslice_ns[level];
}

struct runner {
	int slot;
	bool mps;
	bool below; /* MPS client priority below normal */
	uint64_t num, den; /* this step's rate: k * num / den SM-ns per ns */
};

static struct gs_sim_op *head_op(struct gs_sim_proc *p)
{
	return &p->ring[p->ring_head % GS_SIM_RING];
}

/* Completes the head op of p at time t and loads the next one. */
static void complete_head(struct gs_sim_engine *e, struct gs_sim_proc *p,
                          uint64_t t)
{
	struct gs_sim_op *op = head_op(p);

	op->end_ns = t;
	if (op->flags & GS_SIM_OP_KERNEL) {
		p->n_kernels++;
		e->n_kernels++;
	}
	p->ring_head++;
	p->head_rem = p->ring_head < p->ring_tail ? head_op(p)->work : 0;
}

/* Whether the group `owner` (slot index or GS_SIM_OWNER_MPS) has work. */
static bool group_has_work(const struct runner *act, int n, int owner)
{
	for (int i = 0; i < n; i++)
		if (owner == GS_SIM_OWNER_MPS
		        ? act[i].mps
		        : (!act[i].mps && act[i].slot == owner))
			return true;
	return false;
}

/* The group key a runner belongs to. */
static int group_of(const struct runner *r)
{
	return r->mps ? GS_SIM_OWNER_MPS : r->slot;
}

/* The slot that leads a group in round-robin order: itself, or the MPS
 * group's lowest-numbered client with work. `act` is sorted by slot. */
static int group_lead(const struct runner *act, int n, int group)
{
	for (int i = 0; i < n; i++)
		if (group_of(&act[i]) == group)
			return act[i].slot;
	return -1;
}

/*
 * The first group other than `exclude` whose leading slot comes after
 * `pos`, wrapping around; GS_SIM_OWNER_NONE when there is none.
 */
static int group_after(const struct runner *act, int n, int pos, int exclude)
{
	int first = GS_SIM_OWNER_NONE;
	bool mps_seen = false;

	for (int i = 0; i < n; i++) {
		int g = group_of(&act[i]);

		if (act[i].mps) {
			if (mps_seen)
				continue;
			mps_seen = true;
		}
		if (g == exclude)
			continue;
		if (first == GS_SIM_OWNER_NONE)
			first = g;
		if (act[i].slot > pos)
			return g;
	}
	return first;
}

void gs_sim_engine_advance(struct gs_sim_state *st, uint32_t gpu,
                           uint32_t engine, uint64_t now_ns)
{
	struct gs_sim_engine *e = &st->gpus[gpu].engine[engine];
	struct runner act[GS_SIM_MAX_PROCS];
	uint64_t q = gs_sim_timeslice_ns(st->gpus[gpu].timeslice_level);
	uint64_t t = e->t_sim;
	uint32_t n_sm = e->sm_count ? e->sm_count : 1;
	int n = 0;

	if (!e->live || now_ns <= t)
		return;
	/* only the slots on this engine (slot_mask), in slot order */
	for (int w = 0; w < 4; w++) {
		uint64_t bits = e->slot_mask[w];

		while (bits != 0) {
			int i = w * 64 + __builtin_ctzll(bits);
			struct gs_sim_proc *p = &st->procs[i];

			bits &= bits - 1;
			if (p->state != GS_SIM_PROC_LIVE || p->gpu != gpu ||
			    p->engine != engine || p->ring_head >= p->ring_tail)
				continue;
			act[n].slot = i;
			act[n].mps = (p->flags & GS_SIM_PROC_MPS_CLIENT) != 0;
			act[n].below = (p->flags & GS_SIM_PROC_MPS_BELOW) != 0;
			n++;
		}
	}

	while (t < now_ns) {
		/* Zero-work ops (event markers) complete the moment they are
		 * reached; drop slots left without work. */
		int m = 0;
		for (int i = 0; i < n; i++) {
			struct gs_sim_proc *p = &st->procs[act[i].slot];

			while (p->ring_head < p->ring_tail && p->head_rem == 0)
				complete_head(e, p, t);
			if (p->ring_head < p->ring_tail)
				act[m++] = act[i];
		}
		n = m;
		if (n == 0) {
			e->slice_owner = GS_SIM_OWNER_NONE;
			t = now_ns;
			break;
		}

		/* Whose turn: the owner keeps the engine until its slice
		 * ends or it runs dry; then the next group in slot order. A
		 * group alone never gives the engine up. */
		int owner = e->slice_owner;
		int pos = (int)e->rr_next - 1;
		bool new_slice = false;
		if (owner == GS_SIM_OWNER_NONE ||
		    !group_has_work(act, n, owner)) {
			owner = group_after(act, n, pos, GS_SIM_OWNER_NONE);
			new_slice = true;
		} else if (t >= e->slice_end) {
			int g = group_after(act, n, pos, owner);
			if (g != GS_SIM_OWNER_NONE) {
				owner = g;
				new_slice = true;
			} else {
				/* Alone: the timer re-arms at each expiry,
				 * so it keeps its phase. */
				e->slice_end += (t - e->slice_end) / q * q + q;
			}
		}
		if (new_slice) {
			e->slice_owner = owner;
			e->slice_end = t + q;
			e->rr_next = (uint32_t)(group_lead(act, n, owner) + 1);
		}
		bool contended = group_after(act, n, (int)e->rr_next - 1,
		                             owner) != GS_SIM_OWNER_NONE;

		/* Who runs and how fast. Under MPS, clients of normal
		 * priority get the SMs they ask for first; those below
		 * normal (CUDA_MPS_CLIENT_PRIORITY=1) share what is left.
		 * Within a class, an oversubscribed engine slows all alike. */
		uint64_t want[2] = {0, 0};
		for (int i = 0; i < n; i++)
			if (group_of(&act[i]) == owner)
				want[act[i].below && owner == GS_SIM_OWNER_MPS] +=
				    head_op(&st->procs[act[i].slot])->sms;
		uint64_t got[2] = {want[0], want[1]};
		if (owner == GS_SIM_OWNER_MPS && want[0] + want[1] > n_sm) {
			got[0] = want[0] < n_sm ? want[0] : n_sm;
			got[1] = n_sm - got[0] < want[1] ? n_sm - got[0]
			                                 : want[1];
		}
		uint64_t t_next = now_ns;
		if (contended && e->slice_end < t_next)
			t_next = e->slice_end;
		for (int i = 0; i < n; i++) {
			struct gs_sim_proc *p = &st->procs[act[i].slot];
			uint64_t k = head_op(p)->sms ? head_op(p)->sms : 1;
			int c = act[i].below && owner == GS_SIM_OWNER_MPS;

			if (group_of(&act[i]) != owner)
				continue;
			act[i].num = got[c] < want[c] ? got[c] : 1;
			act[i].den = got[c] < want[c] ? want[c] : 1;
			if (act[i].num == 0)
				continue; /* waits for SMs */
			/* ceil(rem / (k * num / den)) */
			unsigned __int128 need =
			    ((unsigned __int128)p->head_rem * act[i].den +
			     (unsigned __int128)k * act[i].num - 1) /
			    ((unsigned __int128)k * act[i].num);
			if (need < t_next - t)
				t_next = t + (uint64_t)need;
		}
		if (t_next <= t)
			t_next = t + 1;

		uint64_t dt = t_next - t;
		for (int i = 0; i < n; i++) {
			struct gs_sim_proc *p = &st->procs[act[i].slot];
			uint64_t k = head_op(p)->sms ? head_op(p)->sms : 1;

			if (group_of(&act[i]) != owner || act[i].num == 0)
				continue;
			unsigned __int128 prog = (unsigned __int128)dt * k *
			                         act[i].num / act[i].den;
			uint64_t adv =
			    prog >= p->head_rem ? p->head_rem : (uint64_t)prog;
			p->busy_ns += dt;
			p->sm_busy_ns += adv;
			e->sm_busy_ns += adv;
			p->head_rem -= adv;
		}
		e->busy_ns += dt;
		t = t_next;
		/* Nobody else had work through the step: the slice timer
		 * re-armed at each expiry in it, keeping its phase. */
		if (!contended && t >= e->slice_end)
			e->slice_end += (t - e->slice_end) / q * q + q;
		for (int i = 0; i < n; i++) {
			struct gs_sim_proc *p = &st->procs[act[i].slot];

			if (group_of(&act[i]) == owner && p->head_rem == 0)
				complete_head(e, p, t);
		}
	}
	e->t_sim = t;
}

void gs_sim_advance_all(struct gs_sim_state *st, uint64_t now_ns)
{
	for (uint32_t g = 0; g < st->n_gpus && g < GS_SIM_MAX_GPUS; g++)
		for (uint32_t e = 0; e < GS_SIM_ENGINES; e++)
			if (st->gpus[g].engine[e].live)
				gs_sim_engine_advance(st, g, e, now_ns);
}

uint64_t gs_sim_proc_eta(const struct gs_sim_state *st, int i, uint64_t seq)
{
	const struct gs_sim_proc *p = &st->procs[i];
	const struct gs_sim_engine *e;
	uint64_t t;

	if (p->state != GS_SIM_PROC_LIVE || p->gpu >= st->n_gpus ||
	    p->engine >= GS_SIM_ENGINES)
		return 0;
	e = &st->gpus[p->gpu].engine[p->engine];
	t = e->t_sim;
	for (uint64_t s = p->ring_head; s <= seq && s < p->ring_tail; s++) {
		const struct gs_sim_op *op = &p->ring[s % GS_SIM_RING];
		uint64_t rem = s == p->ring_head ? p->head_rem : op->work;
		uint64_t k = op->sms ? op->sms : 1;

		t += (rem + k - 1) / k;
	}
	return t;
}
