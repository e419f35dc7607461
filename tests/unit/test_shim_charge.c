/*
 * test_shim_charge.c - what a batch of launches is charged (shim/charge.c,
 * gs__charge_of): the GPU time in its events' span told apart from the
 * host's, from the host times around its two records.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "shim_int.h"

/* A probe: one launch, its end recorded right after it (its launch
 * call: the issue time less the delay and 50 ns of the shim's own). */
static struct gs__span_rec probe(uint64_t lead, uint64_t issue,
                                 uint64_t delay)
{
	struct gs__span_rec r = {.n = 1, .probe = true, .known = true};

	r.lead = lead;
	r.issue = issue;
	r.delay = delay;
	r.call = issue - delay - 50;
	r.window = lead + issue + 100; /* the end record's call: 100 ns */
	return r;
}

/* The quickest probe seen before: one like probe(100, 300, 20). */
static const struct gs__probe_min seen = {.window = 500, .calls = 330};

static void a_probe_behind_our_queued_work_is_its_span_less_the_delay(void **state)
{
	struct gs__span_rec r = probe(100, 300, 20);
	struct gs__probe_min wmin = {0};
	bool lesson;

	(void)state;
	assert_int_equal(gs__charge_of(&r, 2000, &wmin, &lesson), 1980);
	assert_true(lesson);
	assert_int_equal(wmin.window, r.window);
}

static void a_probe_on_a_drained_stream_loses_the_host_calls_in_front(void **state)
{
	struct gs__span_rec r = probe(200, 300, 20);
	struct gs__probe_min wmin = seen;
	bool lesson;

	(void)state;
	r.idle_start = true;
	/* the start event took the end of its record; the kernel began
	 * when its launch call returned: delay 20 + the call 230 */
	assert_int_equal(gs__charge_of(&r, 2400, &wmin, &lesson), 2150);
	assert_true(lesson);
}

/* A cold process's first probe (slow calls) has no quicker one to be
 * judged against: it is charged, but only the next one teaches. */
static void a_first_probe_teaches_nothing(void **state)
{
	struct gs__span_rec r = probe(1400, 4300, 30);
	struct gs__probe_min wmin = {0};
	bool lesson;

	(void)state;
	r.idle_start = true;
	r.known = false;
	/* drained: nothing to judge it by; the tail after its launch
	 * call (5800 - 1400 - 30 - 4220) */
	assert_int_equal(gs__charge_of(&r, 5000, &wmin, &lesson), 150);
	assert_false(lesson);
	assert_int_equal(wmin.window, r.window);
	r = probe(1400, 4300, 30);
	wmin = (struct gs__probe_min){0};
	r.idle_start = true;
	/* backed: delay 30 + the call 4220 */
	assert_int_equal(gs__charge_of(&r, 6500, &wmin, &lesson), 2250);
	assert_false(lesson);
	assert_int_equal(wmin.calls, 1400 + 4220);
	/* a cold first launch call of 200 ms (the sim's first) */
	r = probe(1400, 200000000, 30);
	wmin = (struct gs__probe_min){0};
	r.idle_start = true;
	r.known = false;
	assert_int_equal(gs__charge_of(&r, r.window - 1000, &wmin, &lesson),
	                 150);
	assert_int_equal(wmin.calls, 0); /* drained: its calls tell nothing */
}

static void an_empty_kernel_is_charged_and_taught_nothing(void **state)
{
	struct gs__span_rec r = probe(100, 300, 20);
	struct gs__probe_min wmin = seen;
	bool lesson;

	(void)state;
	/* The end event completed within its record: the span is the
	 * host's. */
	assert_int_equal(gs__charge_of(&r, 350, &wmin, &lesson), 0);
	assert_true(lesson);
}

static void a_slow_drained_probe_teaches_nothing_and_pays_its_estimate(void **state)
{
	struct gs__span_rec r = probe(3000, 2000, 20);
	struct gs__probe_min wmin = {.window = 500};
	bool lesson;

	(void)state;
	r.est = 1500;
	assert_int_equal(gs__charge_of(&r, 4000, &wmin, &lesson), 1500);
	assert_false(lesson);
	assert_int_equal(wmin.window, 500);
	/* nothing learned yet: the window's tail after the launch call
	 * (5100 - 3000 - 20 - 1930), not the host's calls in the span */
	r.known = false;
	assert_int_equal(gs__charge_of(&r, 4000, &wmin, &lesson), 150);
	assert_false(lesson);
}

static void a_batch_issued_faster_than_its_work_is_charged_its_span(void **state)
{
	struct gs__span_rec r = {.n = 100, .est = 200000, .known = true};
	struct gs__probe_min wmin = {0};
	bool lesson;

	(void)state;
	r.lead = 100;
	r.issue = 50000;
	r.window = 50300;
	assert_int_equal(gs__charge_of(&r, 210000, &wmin, &lesson), 210000);
	assert_false(lesson);
}

static void a_batch_issued_slower_is_its_estimate_within_the_span(void **state)
{
	struct gs__span_rec r = {.n = 100, .est = 100000, .known = true};
	struct gs__probe_min wmin = {0};
	bool lesson;

	(void)state;
	r.lead = 100;
	r.issue = 150000;
	r.window = 150300;
	/* backed: the GPU time lies in [span - window, span] */
	assert_int_equal(gs__charge_of(&r, 180000, &wmin, &lesson), 100000);
	r.est = 10000;
	assert_int_equal(gs__charge_of(&r, 180000, &wmin, &lesson), 29700);
	/* drained: the estimate, at most the span */
	r.est = 200000;
	assert_int_equal(gs__charge_of(&r, 120000, &wmin, &lesson), 120000);
	r.est = 1000;
	assert_int_equal(gs__charge_of(&r, 120000, &wmin, &lesson), 1000);
	assert_false(lesson);
}

/* The host preempted inside the launch call before the kernel was
 * queued: the kernel started late and the span grew with the window,
 * so the probe still looks backed and the half-call guess over-charges.
 * It is charged the guess but teaches nothing. */
/* A first probe of a long kernel teaches, whatever its cold calls took:
 * a process whose first kernels run for milliseconds must not run them
 * with no estimate (two in flight, uncharged until they end). */
static void a_first_probe_of_a_long_kernel_teaches(void **state)
{
	struct gs__span_rec r = probe(800, 1300, 20);
	struct gs__probe_min wmin = {0};
	bool lesson;

	(void)state;
	r.idle_start = true;
	r.known = false;
	(void)gs__charge_of(&r, 6000000, &wmin, &lesson);
	assert_true(lesson);
	/* a cold 2 us probe does not */
	wmin = (struct gs__probe_min){0};
	(void)gs__charge_of(&r, 4000, &wmin, &lesson);
	assert_false(lesson);
}

/* A launch call that blocked for milliseconds with its kernel queued
 * (a full queue, another context's time slice) is not taken off the
 * kernel's time beyond what the quickest call took. */
static void a_launch_call_that_blocked_is_not_taken_off_the_kernel(void **state)
{
	struct gs__span_rec r = probe(100, 300, 20);
	struct gs__probe_min wmin = seen;
	bool lesson;

	(void)state;
	r.idle_start = true;
	r.call = 30000000; /* 30 ms in the call */
	r.issue = r.call + 70;
	r.window = r.lead + r.issue + 100;
	assert_int_equal(gs__charge_of(&r, 60000000, &wmin, &lesson),
	                 60000000 - 20 - (330 + 1000));
}

static void a_backed_probe_with_slow_calls_teaches_nothing(void **state)
{
	struct gs__span_rec r = probe(100, 300, 20);
	struct gs__probe_min wmin = seen;
	bool lesson;

	(void)state;
	r.idle_start = true;
	/* calls 100 + 230, the quickest's: a 2 us kernel */
	assert_int_equal(gs__charge_of(&r, 2250, &wmin, &lesson), 2000);
	assert_true(lesson);
	/* a 50 us kernel, the host preempted for 2 us in its launch call
	 * after the kernel was queued: of the call, only what the quickest
	 * took (330 ns) and 1 us of slack is taken off, so the guess is
	 * 1.1 us short (the whole call: 2 us), and teaches nothing */
	r = probe(100, 2300, 20);
	r.idle_start = true;
	assert_int_equal(gs__charge_of(&r, 50250, &wmin, &lesson),
	                 50250 - 20 - (330 + 1000));
	assert_false(lesson);
	/* the quickest creeps toward slower calls by 1/64 */
	assert_int_equal(wmin.calls, 330 + (2330 - 330) / 64);
}

/* A record call the host was preempted in lies inside the window, not
 * in the issue time: idle hidden there is no GPU time either. */
static void a_slow_record_call_is_not_charged_as_gpu_time(void **state)
{
	struct gs__span_rec r = {.n = 20, .est = 40000, .known = true};
	struct gs__probe_min wmin = {0};
	bool lesson;

	(void)state;
	r.lead = 60000; /* preempted in the start record, after its push */
	r.issue = 2000000;
	r.window = 2060300;
	/* the end event backed by 40 us of ours: span > window */
	assert_int_equal(gs__charge_of(&r, 2100000, &wmin, &lesson), 40000);
	assert_false(lesson);
}

/* A pipelined turn change: the next holder's first batch waited on the
 * GPU behind the last holder's kernel, and the last holder's kernel may
 * have been time-sliced with the next one's. Either span holds another
 * slice's work: the batch is charged its estimate and teaches nothing. */
static void a_span_shared_with_another_slice_is_charged_its_estimate(void **state)
{
	struct gs__span_rec r = probe(100, 300, 20);
	struct gs__probe_min wmin = seen;
	bool lesson;

	(void)state;
	r.shared = true;
	r.est = 1000000;
	assert_int_equal(gs__charge_of(&r, 1150000, &wmin, &lesson), 1000000);
	assert_false(lesson);
	r.est = 2000000; /* never more than the span */
	assert_int_equal(gs__charge_of(&r, 1150000, &wmin, &lesson), 1150000);
	assert_int_equal(wmin.window, seen.window); /* nothing learned */
	/* A 60 ms kernel of a process whose average launch is 1 ms: never
	 * less than its span less what another slice can hold of it (the
	 * demo's low-priority burn ran nearly free at every hand-over). */
	r.est = 1000000;
	assert_int_equal(gs__charge_of(&r, 60000000, &wmin, &lesson),
	                 60000000 - 2500000);
	assert_false(lesson);
}

/* Launches are measured for a limit, a weight, a report, and for the
 * turns a slice below high priority takes; an MPS slice takes no turns,
 * so a light server in an MPS slice of its own (the study's server B,
 * low priority) is not measured, and pays no event pair per request. */
static void an_mps_slice_without_a_limit_is_not_measured(void **state)
{
	struct gs_slice_limits l = {.weight = 1,
	                            .priority = GS_REGION_PRIO_LOW,
	                            .flags = GS_SLICE_MPS};

	(void)state;
	assert_false(gs__launch_measured(&l));
	l.priority = GS_REGION_PRIO_NORMAL;
	assert_false(gs__launch_measured(&l));
	l.flags = 0; /* taking turns: measured */
	assert_true(gs__launch_measured(&l));
	l.priority = GS_REGION_PRIO_HIGH;
	assert_false(gs__launch_measured(&l));
	l.flags = GS_SLICE_MPS;
	l.compute_pct = 50;
	assert_true(gs__launch_measured(&l));
	l.compute_pct = 0;
	l.weight = 2;
	assert_true(gs__launch_measured(&l));
	l.weight = 1;
	l.flags |= GS_SLICE_MEASURE;
	assert_true(gs__launch_measured(&l));
}

/* A batch of one that is not a probe (closed by a synchronisation right
 * after its launch) is charged like one: its kernel started when its
 * launch call returned. (Taking half the start record instead charged
 * 8 us kernels with a synchronisation after each 10 % too much.) */
static void a_batch_of_one_on_a_drained_stream_loses_its_launch_call(void **state)
{
	struct gs__span_rec r = probe(200, 300, 20);
	struct gs__probe_min wmin = seen;
	bool lesson;

	(void)state;
	r.probe = false;
	r.idle_start = true;
	/* delay 20 + the call 230 */
	assert_int_equal(gs__charge_of(&r, 8250, &wmin, &lesson), 8000);
	assert_true(lesson);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(a_probe_behind_our_queued_work_is_its_span_less_the_delay),
	    cmocka_unit_test(a_probe_on_a_drained_stream_loses_the_host_calls_in_front),
	    cmocka_unit_test(an_empty_kernel_is_charged_and_taught_nothing),
	    cmocka_unit_test(a_slow_drained_probe_teaches_nothing_and_pays_its_estimate),
	    cmocka_unit_test(a_batch_issued_faster_than_its_work_is_charged_its_span),
	    cmocka_unit_test(a_batch_issued_slower_is_its_estimate_within_the_span),
	    cmocka_unit_test(a_first_probe_teaches_nothing),
	    cmocka_unit_test(a_backed_probe_with_slow_calls_teaches_nothing),
	    cmocka_unit_test(a_first_probe_of_a_long_kernel_teaches),
	    cmocka_unit_test(a_launch_call_that_blocked_is_not_taken_off_the_kernel),
	    cmocka_unit_test(a_slow_record_call_is_not_charged_as_gpu_time),
	    cmocka_unit_test(a_span_shared_with_another_slice_is_charged_its_estimate),
	    cmocka_unit_test(an_mps_slice_without_a_limit_is_not_measured),
	    cmocka_unit_test(a_batch_of_one_on_a_drained_stream_loses_its_launch_call),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
