/*
 * region_sched.h - the compute scheduler's decisions (region/gpusched.c),
 * as pure functions over the state that lives in the shared region (one
 * struct gs_sched_dev per GPU, one struct gs_sched_slice per slice and
 * GPU). No clock, no I/O, no locks: the caller (shim/launch.c) holds the
 * region lock, passes `now` (CLOCK_MONOTONIC ns) and sleeps when told to
 * wait; include/gs/region_launch.h hands it the records. The unit tests
 * drive it with a fake clock.
 *
 * What it enforces on one GPU, in this order:
 *
 *   1. Priority. A slice does not submit while a slice of higher priority
 *      is active there: it has work in flight, a process waiting to
 *      submit, or was active less than `linger` ago (so a latency-bound
 *      server that sends a request every few hundred microseconds keeps
 *      the GPU between requests). Between two MPS slices only a process
 *      waiting counts: the MPS server runs both and gives the SMs to the
 *      normal-priority client first (the low slice is a below-normal
 *      client, CUDA_MPS_CLIENT_PRIORITY=1).
 *   2. Compute limit. A slice with a limit holds a token bucket in GPU
 *      nanoseconds, refilled at pct% of wall time and capped at `burst`.
 *      The bucket lives in the owner's private file and only the
 *      slice's own processes refill or charge it; the others see when it
 *      will have tokens again (broke_until_ns) in the shared record.
 *      Admission charges an estimate, completion corrects it with the
 *      measured GPU time (closed loop). STRICT: no tokens, no submission.
 *      SHARE (work-conserving): without tokens it may still submit when
 *      no other slice on the GPU is waiting for a turn; its debt is
 *      forgiven beyond `burst`.
 *   3. Turns (not for MPS slices, which run alongside each other on
 *      the MPS server). One slice at a time has work on the GPU: a slice waits
 *      while another has work in flight or holds the turn. The holder
 *      keeps the turn for `quantum` when others wait, then hands it to
 *      the best waiting slice: highest priority, then lowest virtual
 *      time, where a slice's virtual time grows by its measured GPU time
 *      divided by its weight (x its compute %, when it has a limit). So
 *      weights divide contended time among equals, and slices of 20, 30
 *      and 50 % get time in that ratio. Turns also keep measurements
 *      honest: on a time-sliced GPU a kernel's measured duration would
 *      otherwise include the slices that other contexts ran.
 *      The turn changes pipelined (without an arbiter): the holder's
 *      last launch - the admission whose work is estimated to end past
 *      its quantum - hands the turn to the best waiting slice at once;
 *      that slice may submit once the last holder's work in flight is
 *      estimated to end within `handover` (the estimate not run out),
 *      so its work is queued while the last holder's final kernel runs
 *      and the GPU does not idle through the wake-up between holders.
 *
 *   LEASES: a process may be admitted for several launches at once (the
 *   estimate of all of them is charged); it launches them without asking
 *   again while gs_sched_dev.want is unchanged. want changes whenever a
 *   slice starts waiting, is given the turn, or becomes active after being
 *   idle, so a lease never delays a higher priority or a turn hand-over
 *   by more than the lease's own launches.
 *
 *   GATE: gs_sched_dev.gate is the word the launch fast path reads
 *   without a lock. GS_GATE_ALWAYS is always set; GS_GATE_ENFORCED is set
 *   while some slice that needs the scheduler (a compute limit, a
 *   priority other than normal, a weight other than 1) was active within
 *   `presence`. A plain slice (none of these) launches without the
 *   scheduler while ENFORCED is clear.
 *
 * Slot state machine of one slice on one GPU:
 *
 *     idle --admit:GO--> in flight --complete (inflight 0)--> lingering
 *      ^  \--admit:WAIT--> waiting --admit:GO--/                |
 *      +------------------------- linger passed ----------------+
 */
#ifndef GS_REGION_SCHED_H
#define GS_REGION_SCHED_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#define GS_GATE_ALWAYS   0x80000000u
#define GS_GATE_ENFORCED 0x1u

/* Per GPU, in the usage file (the arbiter's in a daemon's region). gate
 * and seq are read without the lock. */
struct gs_sched_dev {
	uint32_t gate;  /* GS_GATE_* (atomic) */
	uint32_t seq;   /* bumped on every change waiters care about */
	int32_t holder; /* slice slot holding the turn, -1 none */
	uint32_t want;  /* bumped when a slice starts waiting, is given the
	                   turn, or becomes active: a process holding a lease
	                   of launches (shim/launch.c) gives it up (atomic) */
	uint64_t holder_gen; /* its generation */
	uint64_t holder_since_ns;
	uint64_t vclock;      /* the holder's virtual time: where a
	                         slice that arrives or comes back starts */
	uint64_t enforced_ns; /* last activity of an enforcing slice */
	uint64_t arb_ns;      /* the arbiter's last pass (0: no arbiter) */
	uint64_t drained_ns;  /* the arbiter's: when the holder was last held
	                         back by others' work in flight */
};
static_assert(sizeof(struct gs_sched_dev) == 64, "gs_sched_dev layout");

/*
 * Per slice and GPU: what the other slices of the GPU must see to
 * arbitrate (priority, turns). In a daemon's region each slice's
 * processes write theirs in their owner's file (gs_ro_file.ask) and the
 * arbiter publishes a checked copy in the shared usage file, which only
 * the daemon writes; in a region without a daemon the slices write the
 * shared copy themselves. Nothing here gives tokens or lifts a limit:
 * the bucket is struct gs_sched_bucket, in the slice owner's file.
 * gpusched reads other slices' records as untrusted: a time in the
 * future, a waiter not seen lately, work in flight past `busy_max` or a
 * "broke" past what a refill can take are ignored.
 */
struct gs_sched_slice {
	uint64_t generation;     /* slice generation this state belongs to */
	uint64_t broke_until_ns; /* out of tokens until then (published by
	                            the owner from its bucket); 0 = has some */
	uint64_t seen_ns;        /* last admission asked by the slice */
	uint64_t vtime;          /* weighted GPU time */
	uint64_t last_active_ns;
	uint64_t busy_until_ns; /* estimated end of its work in flight */
	uint32_t inflight;      /* launches admitted and not completed */
	uint32_t waiting;       /* processes waiting to submit */
	uint64_t held_ns; /* published records: when it last held the turn
	                     (the arbiter's) */
};
static_assert(sizeof(struct gs_sched_slice) == 64, "gs_sched_slice layout");

/* Per slice and GPU, in the slice owner's usage file (mode 0600): the
 * token bucket. Only the acting slice's own bucket is ever touched. */
struct gs_sched_bucket {
	uint64_t generation; /* slice generation this bucket belongs to */
	int64_t tokens_ns;   /* GPU ns the slice may still use */
	uint64_t refill_ns;  /* when tokens were last refilled */
	uint64_t reserved;
};
static_assert(sizeof(struct gs_sched_bucket) == 32, "gs_sched_bucket layout");

/* A slice's limits as the scheduler sees them (process-local copy). */
struct gs_sched_cfg {
	uint64_t generation;
	bool live;
	uint32_t pct;    /* 0 = no limit */
	uint32_t prio;   /* enum gs_region_priority */
	uint32_t weight; /* >= 1 */
	uint32_t mode;   /* enum gs_region_compute_mode */
	bool mps;        /* an MPS slice: no turns (rule 3) for it */
	/* what the slice's bucket is charged of a batch's measured GPU
	 * time, in 1/65536 (GS_CHARGE_MIN..GS_CHARGE_ONE; 0: all of it) */
	uint32_t charge_q16;
};

/*
 * The charge ratio (gs_sched_cfg.charge_q16). On a time-sliced GPU the
 * span between the events around a batch also covers what other contexts
 * ran meanwhile, so a slice's measured GPU time runs above the driver's
 * count; the daemon publishes, per limited slice, NVML's GPU time over
 * the books' (daemon/chargeratio.c), at most 1 and at least 1/4, and the
 * shim charges the slice's bucket (and virtual time) that share of each
 * batch's measured time. The books keep the measured figure.
 */
#define GS_CHARGE_ONE 65536u
#define GS_CHARGE_MIN 16384u

/* Tunables, in ns. gs_sched_params_default() gives the documented ones. */
struct gs_sched_params {
	uint64_t quantum;  /* turn length while others wait */
	uint64_t linger;   /* a higher priority stays "active" this long */
	uint64_t burst;    /* token bucket cap */
	uint64_t idle;     /* a holder without work for this long lets go */
	uint64_t presence; /* GS_GATE_ENFORCED outlives activity this long */
	uint64_t stale;    /* in-flight work past its estimate by this much
	                      no longer blocks others (its owner is busy
	                      elsewhere and has not looked); a lower
	                      priority: `linger` */
	uint64_t wait_seen; /* a waiter not heard from for this long (it
	                       asks again every 10 ms at most) no longer
	                       counts: a dead or forged one */
	uint64_t busy_max;  /* another slice's work "in flight" further
	                       ahead than this is a forgery: ignored */
	uint64_t drain;     /* arbiter: how long after losing the turn a
	                       slice's work in flight still holds others */
	uint64_t handover;  /* a new holder queues its work this long before
	                       the last holder's is estimated to end (0: only
	                       after it completed) */
};

void gs_sched_params_default(struct gs_sched_params *p);

/*
 * One GPU's scheduler state plus the slices' configs (indexed by slot).
 * bk[s] is read and written only for the slice `s` a call acts for (the
 * caller's own slice: the shim maps only its owner's buckets); other
 * slices' token state is seen through sl[t].broke_until_ns.
 */
struct gs_sched_view {
	struct gs_sched_dev *dev;
	struct gs_sched_slice *sl;      /* [n] */
	struct gs_sched_bucket *bk;     /* [n] */
	const struct gs_sched_cfg *cfg; /* [n] */
	int n;
	const struct gs_sched_params *par;
	/*
	 * ARBITRATED regions (a daemon's: see gs_sched_arbitrate): dev and
	 * sl[] are what the arbiter published, and a call never writes them;
	 * the acting slice `self` keeps its own record in `mine` (in its
	 * owner's file), and a call sets *bell when the arbiter should look
	 * now (the caller wakes it). Without an arbiter (NULL mine): the
	 * slices arbitrate among themselves in dev and sl[] (one uid's
	 * region, whose processes trust each other).
	 */
	struct gs_sched_slice *mine;
	int self;
	bool *bell;
};

/* What slice `s`'s bucket is charged for a batch measured at `busy_ns`
 * (its charge ratio: a multiply). */
static inline uint64_t gs_sched_charge(const struct gs_sched_view *v, int s,
                                       uint64_t busy_ns)
{
	uint32_t q = s >= 0 && s < v->n ? v->cfg[s].charge_q16 : 0;

	if (q == 0 || q >= GS_CHARGE_ONE || (busy_ns >> 47) != 0)
		return busy_ns;
	return busy_ns * q >> 16;
}

/* Whether a slice with these limits needs the scheduler on every launch. */
bool gs_sched_cfg_enforcing(const struct gs_sched_cfg *c);

enum gs_sched_verdict {
	GS_SCHED_GO = 0,
	GS_SCHED_WAIT = 1,
};

/* Why a WAIT: the caller sleeps differently for each. */
enum gs_sched_why {
	GS_SCHED_WHY_NONE = 0,
	GS_SCHED_WHY_PRIORITY = 1, /* a higher priority is active: sleep */
	GS_SCHED_WHY_LIMIT = 2,    /* out of tokens: sleep until refilled */
	GS_SCHED_WHY_TURN = 3,     /* another slice's turn: wake on dev->seq */
};

/*
 * Slice `s` wants to submit work estimated at `est_ns` GPU time at `now`.
 * GO: the work is admitted (inflight + 1, tokens - est, turn taken);
 * when it was the holder's last launch of its turn, the turn is handed
 * over and dev->seq moved (the caller wakes the waiters).
 * WAIT: OUT *retry_ns = how long to sleep at most before asking again
 * (for GS_SCHED_WHY_TURN a wake-up through dev->seq may come sooner),
 * OUT *why. A caller that waits registers once (gs_sched_wait_begin) and
 * unregisters when it gets GO or gives up (gs_sched_wait_end).
 */
enum gs_sched_verdict gs_sched_admit(const struct gs_sched_view *v, int s,
                                     uint64_t est_ns, uint64_t now,
                                     uint64_t *retry_ns,
                                     enum gs_sched_why *why);

/*
 * Whether work of another slice that takes turns with `s` (its priority,
 * not MPS) is in flight at `now`: what `s` queues now may wait behind it
 * on the GPU (a pipelined turn change), so its events' span is not its
 * own time alone.
 */
bool gs_sched_behind(const struct gs_sched_view *v, int s, uint64_t now);

/* Registers / unregisters a waiting process of slice `s`. */
void gs_sched_wait_begin(const struct gs_sched_view *v, int s, uint64_t now);
void gs_sched_wait_end(const struct gs_sched_view *v, int s);

/*
 * Admitted work of slice `s` completed after `busy_ns` of measured GPU
 * time; `est_ns` is what admission charged. Corrects the tokens, advances
 * the virtual time, ends the turn's hold when nothing is left in flight.
 * True when a waiting process may now be let through (the caller wakes
 * the waiters): some process waits in admission, and the slice has
 * nothing left in flight and does not hold the turn with quantum left.
 */
bool gs_sched_complete(const struct gs_sched_view *v, int s, uint64_t busy_ns,
                       uint64_t est_ns, uint64_t now);

/*
 * Admitted work of slice `s` is forgotten without a measurement (its
 * process died or its context went away): inflight - n.
 */
void gs_sched_forget(const struct gs_sched_view *v, int s, uint32_t n);

/* Refreshes GS_GATE_ENFORCED from activity (called on the slow path). */
void gs_sched_gate_refresh(const struct gs_sched_view *v, uint64_t now);

/*
 * THE ARBITER (daemon regions). There the shared file is the daemon's
 * alone: each slice's processes write their own record (`ask`, in their
 * owner's file, which no other tenant can open) and the arbiter - a
 * thread of gpusliced - reads every ask, publishes a checked copy (pub[])
 * and decides the turns (dev). The shims only read pub[] and dev. So a
 * tenant can lie about its own slice only, and what it gains is bounded:
 *   - turns are given and taken back by the arbiter: a holder keeps the
 *     turn for `quantum` at most while others wait, whatever it claims;
 *   - the virtual time that orders turns is charged by the arbiter for
 *     the wall time the GPU was a slice's while others waited: the time
 *     it held the turn, and the time its work still in flight held the
 *     next holder back (never less than what the slice itself reports),
 *     so claiming to have used nothing, or to be busy, wins no extra
 *     time: a liar gets the share of the GPU its weight gives, and wastes
 *     it;
 *   - work "in flight" of a slice that has not held the turn for `drain`
 *     is not published (it cannot hold back the holder for longer), and
 *     a holder's quantum starts once such work no longer holds it back;
 *   - everything else read from an ask gets the same checks as before
 *     (times in the future, silent waiters, work too far ahead).
 * A lying slice therefore gets about the turns an honest busy one would:
 * its neighbours keep their share. Its own limit is its bucket's, which
 * it can also lie about; the NVML watchdog catches that (docs/security.md).
 */
struct gs_sched_arb {
	struct gs_sched_dev *dev;   /* written */
	struct gs_sched_slice *pub; /* [n] written */
	/* [n] each slice's own record, NULL when none may be read; never
	 * trusted */
	const struct gs_sched_slice *const *ask;
	const struct gs_sched_cfg *cfg; /* [n] */
	int n;
	const struct gs_sched_params *par;
};

/*
 * One pass of the arbiter over one GPU at `now`. True when waiters should
 * be woken (dev->seq moved). OUT: *next_ns, how soon it wants to look
 * again without being asked.
 */
bool gs_sched_arbitrate(const struct gs_sched_arb *a, uint64_t now,
                        uint64_t *next_ns);

#endif
