/* test_daemon_chargeratio.c - a limited slice's charge ratio
 * (daemon/chargeratio.c): NVML's GPU time over the books', bounded,
 * smoothed, published only when it moved; and the loop it closes (the
 * ratio changes what the slice runs, which changes the ratio) settles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "chargeratio.h"
#include "gs/region_sched.h"

#define S  1000000000LL
#define MS 1000000LL

struct feed {
	struct gs__cratio *cr;
	int64_t now;
	uint64_t books;
	int publishes;
	uint32_t q; /* what was last published */
	struct gs__cratio_fig fig;
};

/* One poll `dt` long: the slice's books grew by `books`, NVML charged it
 * `nvml`, its running processes make NVML's figure `res` coarse. */
static void poll(struct feed *f, int64_t dt, uint64_t books, uint64_t nvml,
                 uint64_t res)
{
	bool publish;
	uint32_t q;

	f->now += dt;
	f->books += books;
	gs__cratio_add(f->cr, 7, nvml, res);
	q = gs__cratio_step(f->cr, 7, f->now, true, f->books, &publish,
	                    &f->fig);
	if (publish) {
		f->publishes++;
		f->q = q;
	}
	assert_true(q >= GS_CHARGE_MIN && q <= GS_CHARGE_ONE);
	assert_int_equal(q, f->q);
}

static void feed_init(struct feed *f)
{
	f->cr = gs__cratio_create();
	assert_non_null(f->cr);
	f->now = 1000 * S;
	f->books = 5 * S;
	f->publishes = 0;
	f->q = 0;
}

/* Books within a percent or two of NVML (an honest slice alone): 1 is
 * published once, and nothing after (its charge is unchanged). */
static void an_honest_slice_alone_keeps_a_ratio_of_one(void **state)
{
	struct feed f;

	(void)state;
	feed_init(&f);
	for (int i = 0; i < 120; i++)
		poll(&f, S, 400 * MS, (i % 2 ? 396 : 402) * MS, 10 * MS);
	assert_int_equal(f.q, GS_CHARGE_ONE);
	assert_int_equal(f.publishes, 1);
	gs__cratio_destroy(f.cr);
}

/* Books 1.43 times NVML (what `make demo` showed): the ratio settles at
 * NVML / books within a percent and a half, published at steps of a
 * percent (not every poll). */
static void books_above_nvml_give_nvml_over_books(void **state)
{
	struct feed f;
	double want = 1.0 / 1.43;

	(void)state;
	feed_init(&f);
	for (int i = 0; i < 60; i++)
		poll(&f, 300 * MS, 143 * MS, 100 * MS, 5 * MS);
	assert_true(fabs(f.q / 65536.0 - want) < 0.015);
	assert_true(f.fig.raw > 0 && fabs(f.fig.raw - want) < 0.005);
	assert_true(f.publishes >= 2 && f.publishes <= 30);
	gs__cratio_destroy(f.cr);
}

/* Books held at zero (a tenant lying low), or half of NVML: never above 1;
 * books 10x NVML: never below 1/4. */
static void the_ratio_stays_within_a_quarter_and_one(void **state)
{
	struct feed f;

	(void)state;
	feed_init(&f);
	for (int i = 0; i < 60; i++)
		poll(&f, S, 0, 400 * MS, 10 * MS);
	assert_int_equal(f.q, GS_CHARGE_ONE);
	for (int i = 0; i < 60; i++)
		poll(&f, S, 200 * MS, 400 * MS, 10 * MS);
	assert_int_equal(f.q, GS_CHARGE_ONE);
	assert_int_equal(f.publishes, 1);
	for (int i = 0; i < 60; i++)
		poll(&f, S, 1000 * MS, 100 * MS, 1 * MS);
	assert_int_equal(f.q, GS_CHARGE_MIN);
	gs__cratio_destroy(f.cr);
}

/*
 * A long-lived process: NVML's running figure is a percent of its life,
 * too coarse to tell a window's ratio (res 2 s per poll against 0.28 s of
 * GPU time a poll): no estimate is made, and a ratio learned before
 * goes back to 1 once it is STALE (30 s).
 */
static void too_coarse_a_figure_teaches_nothing_and_old_ratios_expire(
    void **state)
{
	struct feed f;

	(void)state;
	feed_init(&f);
	for (int i = 0; i < 30; i++)
		poll(&f, S, 400 * MS, 200 * MS, 10 * MS);
	assert_true(f.q < 40000);
	for (int i = 0; i < 25; i++) {
		poll(&f, S, 400 * MS, 280 * MS, 2 * S);
		assert_true(f.fig.raw < 0);
	}
	assert_true(f.q < 40000); /* kept a while */
	for (int i = 0; i < 10; i++)
		poll(&f, S, 400 * MS, 280 * MS, 2 * S);
	assert_int_equal(f.q, GS_CHARGE_ONE);
	gs__cratio_destroy(f.cr);
}

/* Invalid polls (books refused, accounting off) restart the window; a
 * slice forgotten starts afresh and publishes again. */
static void invalid_polls_restart_and_forget_republishes(void **state)
{
	struct feed f;
	bool publish;

	(void)state;
	feed_init(&f);
	for (int i = 0; i < 20; i++)
		poll(&f, S, 400 * MS, 200 * MS, 10 * MS);
	assert_true(f.fig.raw > 0.45 && f.fig.raw < 0.55);
	(void)gs__cratio_step(f.cr, 7, f.now + S, false, 0, &publish, &f.fig);
	assert_true(f.fig.raw < 0); /* no window right after */
	gs__cratio_forget(f.cr, 7);
	assert_int_equal(gs__cratio_step(f.cr, 7, f.now + 2 * S, true,
	                                 f.books, &publish, NULL),
	                 GS_CHARGE_ONE);
	assert_true(publish);
	gs__cratio_destroy(f.cr);
}

/*
 * The loop on a model of the time-sliced GPU: a 40 % slice with work
 * always queued beside a neighbour that runs 30 % of the GPU, all of it
 * inside the slice's spans. Charged r of its books, the slice's bucket
 * lets it run books = 0.4 / r of each second, of which the neighbour's
 * 0.3 is not its own: NVML says 0.4 / r - 0.3. The ratio settles where
 * NVML's share is 40 % (r = 0.4 / 0.7), without overshooting by much
 * and with no oscillation left, from polls of 1 s and of 300 ms.
 */
static void the_loop_settles_at_the_share_by_nvml(void **state)
{
	static const int64_t dts[] = {S, 300 * MS};

	(void)state;
	for (int k = 0; k < 2; k++) {
		struct feed f;
		double got = 0, lo = 1, hi = 0;
		int64_t dt = dts[k];
		int n = (int)(120 * S / dt);

		feed_init(&f);
		for (int i = 0; i < n; i++) {
			double r = (f.q ? f.q : GS_CHARGE_ONE) / 65536.0;
			double books = 0.4 / r, mine = books - 0.3;

			if (books > 1) {
				books = 1;
				mine = 0.7;
			}
			got = mine;
			poll(&f, dt, (uint64_t)(books * (double)dt),
			     (uint64_t)(mine * (double)dt), 10 * MS);
			if (i > n / 2) {
				lo = got < lo ? got : lo;
				hi = got > hi ? got : hi;
			}
		}
		assert_true(fabs(got - 0.4) < 0.015);
		assert_true(hi - lo < 0.02);
		gs__cratio_destroy(f.cr);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(an_honest_slice_alone_keeps_a_ratio_of_one),
	    cmocka_unit_test(books_above_nvml_give_nvml_over_books),
	    cmocka_unit_test(the_ratio_stays_within_a_quarter_and_one),
	    cmocka_unit_test(
	        too_coarse_a_figure_teaches_nothing_and_old_ratios_expire),
	    cmocka_unit_test(invalid_polls_restart_and_forget_republishes),
	    cmocka_unit_test(the_loop_settles_at_the_share_by_nvml),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
