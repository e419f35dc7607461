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

/* A probe: one launch, its end recorded right after it. */
static struct gs__span_rec probe(uint64_t lead, uint64_t issue,
                                 uint64_t delay)
{
	struct gs__span_rec r = {.n = 1, .probe = true, .known = true};

	r.lead = lead;
	r.issue = issue;
	r.delay = delay;
	r.window = lead + issue + 100; /* the end record's call: 100 ns */
	return r;
}

static void a_probe_behind_our_queued_work_is_its_span_less_the_delay(void **state)
{
	struct gs__span_rec r = probe(100, 300, 20);
	uint64_t wmin = 0;
	bool lesson;

	(void)state;
	assert_int_equal(gs__charge_of(&r, 2000, &wmin, &lesson), 1980);
	assert_true(lesson);
	assert_int_equal(wmin, r.window);
}

static void a_probe_on_a_drained_stream_loses_the_host_calls_in_front(void **state)
{
	struct gs__span_rec r = probe(200, 300, 20);
	uint64_t wmin = 0;
	bool lesson;

	(void)state;
	r.idle_start = true;
	/* delay 20 + half the start record 100 + half the launch call 140 */
	assert_int_equal(gs__charge_of(&r, 2400, &wmin, &lesson), 2140);
	assert_true(lesson);
}

static void an_empty_kernel_is_charged_and_taught_nothing(void **state)
{
	struct gs__span_rec r = probe(100, 300, 20);
	uint64_t wmin = 0;
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
	uint64_t wmin = 500;
	bool lesson;

	(void)state;
	r.est = 1500;
	assert_int_equal(gs__charge_of(&r, 4000, &wmin, &lesson), 1500);
	assert_false(lesson);
	assert_int_equal(wmin, 500);
	r.known = false; /* nothing learned yet: the span, the safe side */
	assert_int_equal(gs__charge_of(&r, 4000, &wmin, &lesson), 4000);
	assert_false(lesson);
}

static void a_batch_issued_faster_than_its_work_is_charged_its_span(void **state)
{
	struct gs__span_rec r = {.n = 100, .est = 200000, .known = true};
	uint64_t wmin = 0;
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
	uint64_t wmin = 0;
	bool lesson;

	(void)state;
	r.lead = 100;
	r.issue = 150000;
	r.window = 150300;
	/* backed: the GPU time lies in [span - issue, span] */
	assert_int_equal(gs__charge_of(&r, 180000, &wmin, &lesson), 100000);
	r.est = 10000;
	assert_int_equal(gs__charge_of(&r, 180000, &wmin, &lesson), 30000);
	/* drained: the estimate, at most the span */
	r.est = 200000;
	assert_int_equal(gs__charge_of(&r, 120000, &wmin, &lesson), 120000);
	r.est = 1000;
	assert_int_equal(gs__charge_of(&r, 120000, &wmin, &lesson), 1000);
	assert_false(lesson);
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
