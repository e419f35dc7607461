/*
 * charge.c - what a batch of launches is charged: the GPU time in the
 * span between its two events, told apart from the time its stream sat
 * idle waiting for the host, from the host times around the two records
 * (launch.c takes them; no launch in between reads the clock). Pure: no
 * driver, no region, no clock; launch.c calls it under its ring's mutex.
 */
#include "shim_int.h"

/* A probe's host window this much over twice the quickest is a slow one. */
#define GS__PROBE_SLACK_NS 1000ULL

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/*
 * The GPU time of a batch whose events are `span` apart; *win_min is
 * the quickest probe's host window on its GPU so far (updated). OUT:
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
 *            it (launch.c's drained()), half the start record's call and
 *            half the launch call (the start event took the time of its
 *            record, the kernel started inside its launch call). Several
 *            launches, issued faster than their estimated GPU time: the
 *            queue never ran dry, the span. Issued slower: idle can only hide while the
 *            host issued them, so the GPU time lies in [span - issue,
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
uint64_t gs__charge_of(const struct gs__span_rec *f, uint64_t span,
                       uint64_t *win_min, bool *lesson)
{
	*lesson = false;
	if (f->probe && (*win_min == 0 || f->window < *win_min))
		*win_min = f->window;
	if (span > f->window) {
		if (f->probe || f->n == 1) {
			uint64_t front = f->delay;

			/* On a drained stream the start event took the time
			 * of its record, and the kernel started inside its
			 * launch call: half of each, at a guess (of the launch
			 * call when known: a probe's). */
			if (f->idle_start)
				front += f->lead / 2 +
				         (f->probe ? (f->issue - f->delay) / 2 : 0);
			*lesson = true;
			return span > front ? span - front : 0;
		}
		if (f->issue <= f->est)
			return span;
		return clamp(f->est, span > f->issue ? span - f->issue : 0,
		             span);
	}
	if (f->probe) {
		/* Host calls slower than this GPU's quickest probe (a loaded
		 * host, a contended driver) could hide a kernel as long as
		 * they were: no lesson from such a probe. */
		*lesson = f->window <= 2 * *win_min + GS__PROBE_SLACK_NS;
		if (*lesson)
			return 0;
		return f->known ? clamp(f->est, 0, span) : span;
	}
	return clamp(f->est, 0, span);
}

