/*
 * charge.c - what a batch of launches is charged: the GPU time in the
 * span between its two events, told apart from the time its stream sat
 * idle waiting for the host, from the host times around the two records
 * (launch.c takes them; no launch in between reads the clock), and
 * whether a slice's launches are measured at all. Pure: no driver, no
 * region, no clock; launch.c calls it under its ring's mutex.
 */
#include "shim_int.h"

/*
 * A span shared with another slice's kernels holds at most this much of
 * theirs: the pipelined hand-over's lead (150 us) and one time slice of
 * the driver's default (2 ms; the sim's level 0) during which the GPU
 * ran their context instead of ours. A shared batch is charged its
 * estimate, but never less than its span less this: the estimate is the
 * process's per-launch average, and a batch of longer kernels than its
 * average (a burn after short setup kernels) would otherwise run nearly
 * free whenever it shares the GPU.
 */
#define GS__SHARED_SLACK_NS 2500000ULL

/* A probe's host window this much over twice the quickest is a slow one. */
#define GS__PROBE_SLACK_NS 1000ULL

/* A launch call longer than this, before any quick one was seen, is taken
 * to have blocked past its kernel's start (call_before). */
#define GS__COLD_CALL_NS 1000000ULL

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * The GPU time of a batch whose events are `span` apart; *win_min is
 * the quickest probe's host times on its GPU so far (updated). OUT:
 * *lesson, whether it teaches the per-launch estimate.
 *
 * The span is the batch's kernels plus the time its stream sat idle
 * waiting for the host: an event on a drained stream takes the time it
 * was recorded. What the host did around the records tells them apart
 * without a clock read per launch:
 *
 *   backed   span > window: the end event completed after its record
 *            returned, so our work was still queued then. A probe (and
 *            a batch of one) ran its kernel from right after its start
 *            record: the span less the host's delay between that record
 *            and the launch call, and, when our work had drained before
 *            it (launch.c's drained()), its launch call too (the kernel
 *            was queued at the end of it); it teaches when those calls
 *            took about what the quickest seen did. Several launches,
 *            issued faster than their estimated GPU time: the queue
 *            never ran dry, the span. Issued slower: idle can only hide
 *            while the host had not queued the next op (the record
 *            calls included), so the GPU time lies in [span - window,
 *            span]; the estimate, clamped there.
 *   drained  otherwise: the stream ran dry before the end record, and
 *            the span is the host's (the events took the times of their
 *            records). A probe's kernel was shorter than the rest of its
 *            launch call and the end record: it is charged and teaches
 *            0, when those calls were quick; slow calls (a loaded host)
 *            could hide a longer kernel, and such a probe is charged
 *            like a batch and teaches nothing. Several launches: the
 *            estimate, at most the span. (So a kernel shorter than the
 *            launch call that follows it goes free on a stream that
 *            drains after each: its slice pays a launch call of CPU for
 *            each, so uses the GPU less than half the time; the NVML
 *            watchdog sees the rest.)
 *
 * Only probes and backed batches of one teach: a batch of several would
 * teach its idle time back to the estimate it was clamped with.
 */
/* The quickest probe's calls, kept near the low end of what they take
 * now: it creeps up toward slower calls by 1/64 of the difference a
 * probe, so one outlier does not silence every lesson after it. */
static void calls_seen(struct gs__probe_min *min, uint64_t calls)
{
	if (min->calls == 0 || calls < min->calls)
		min->calls = calls;
	else
		min->calls += (calls - min->calls) / 64;
}

/*
 * Of a drained batch of one's launch call, what came before its kernel
 * was queued: all of it, up to what the quickest call seen took (with
 * slack; GS__COLD_CALL_NS before any was seen). A launch call can block
 * with its kernel already queued or running (a full queue, a time slice
 * given to another context: the sim's, under a neighbour, for tens of
 * milliseconds), and what it blocked for was the kernel's: subtracted
 * whole, a long kernel behind such a call was charged almost nothing
 * (the demo's 30 % burn ran at 60 to 80 %, killed by the watchdog).
 */
static uint64_t call_before(const struct gs__span_rec *f,
                            const struct gs__probe_min *seen)
{
	uint64_t cap = seen->calls != 0 ? seen->calls + GS__PROBE_SLACK_NS
	                                : GS__COLD_CALL_NS;

	return f->call < cap ? f->call : cap;
}

uint64_t gs__charge_of(const struct gs__span_rec *f, uint64_t span,
                       struct gs__probe_min *min, bool *lesson)
{
	uint64_t calls = f->lead + f->call, busy;
	struct gs__probe_min seen = *min; /* before this probe */

	*lesson = false;
	if (f->shared) {
		/* Its span holds another slice's kernels too (queued
		 * behind them, or time-sliced with them on the GPU): its
		 * estimate within [span - slack, span], and nothing
		 * learned. */
		if (!f->known)
			return span;
		return clamp(f->est,
		             span > GS__SHARED_SLACK_NS ? span - GS__SHARED_SLACK_NS
		                                        : 0,
		             span);
	}
	if (f->probe && (min->window == 0 || f->window < min->window))
		min->window = f->window;
	if (span > f->window) {
		if ((f->probe || f->n == 1) && f->idle_start)
			calls_seen(min, calls);
		if (f->probe || f->n == 1) {
			uint64_t front = f->delay;

			/* On a drained stream the start event took the time
			 * of its record, and the kernel started inside its
			 * launch call. A driver queues an op at the end of the
			 * call that makes it (it checks and encodes first,
			 * then rings the doorbell): the kernel of a batch of
			 * one started when its launch call returned (launch.c
			 * times it), its start event when its record did. (On
			 * the sim, under load, 2 us probes so charged err by
			 * -20 to +20 ns; at half of each call, as before, by
			 * +2 to +5 %.) */
			if (f->idle_start)
				front += call_before(f, &seen);
			busy = span > front ? span - front : 0;
			/* It errs by what of those calls came after the op
			 * was queued (a preemption there, on a loaded host).
			 * It teaches only when they took about what the
			 * quickest seen did (within 1/32 of its kernel); a
			 * slower one is charged the guess but teaches
			 * nothing. The first has nothing to compare with (a
			 * cold process's calls are slow): it teaches only when
			 * its calls were within 1/32 of its kernel whatever
			 * they were (a kernel of milliseconds: a process whose
			 * first kernels are long must not run them unknown,
			 * two in flight uncharged, past its share). */
			*lesson = !f->idle_start ||
			          (seen.calls != 0
			               ? calls <= seen.calls + busy / 32 +
			                              GS__PROBE_SLACK_NS / 4
			               : calls <= busy / 32);
			return busy;
		}
		if (f->issue <= f->est)
			return span;
		/* Idle can hide anywhere the host had not queued the next
		 * op yet: in the window, the record calls included. */
		return clamp(f->est, span > f->window ? span - f->window : 0,
		             span);
	}
	if (f->probe) {
		/* Host calls slower than this GPU's quickest probe before
		 * (a loaded host, a contended driver; the first probe's, a
		 * cold process's) could hide a kernel as long as they were:
		 * no lesson from such a probe. */
		uint64_t before = f->lead + f->delay + f->call, tail;

		*lesson = seen.window != 0 &&
		          f->window <= 2 * seen.window + GS__PROBE_SLACK_NS;
		if (*lesson)
			return 0;
		if (f->known)
			return clamp(f->est, 0, span);
		/* Nothing learned yet (a cold process's first launches):
		 * its kernel was queued at the end of its launch call and
		 * ended before its end record did, the tail of the window
		 * (not the span: a cold first launch call can take 200 ms
		 * of the host's). */
		tail = f->window > before ? f->window - before : 0;
		return tail < span ? tail : span;
	}
	return clamp(f->est, 0, span);
}

/*
 * Whether launches of a slice with these limits are measured: for a
 * limit, a weight or a report, and for the turns a slice below high
 * priority takes. An MPS slice takes no turns (the server runs its
 * kernels alongside the others', a low one as a below-normal client), so
 * without a limit, weight or report nothing needs its GPU time: a light
 * server in an MPS slice of its own pays no event pair per request
 * (#30 item 5).
 */
bool gs__launch_measured(const struct gs_slice_limits *l)
{
	return l->compute_pct > 0 || l->weight != 1 ||
	       (l->flags & GS_SLICE_MEASURE) ||
	       (l->priority != GS_REGION_PRIO_HIGH &&
	        !(l->flags & GS_SLICE_MPS));
}
