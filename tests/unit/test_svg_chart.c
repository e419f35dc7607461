/*
 * test_svg_chart.c - the one SVG writer (bench/svg_chart.c): axis steps
 * from a table; the study's bar charts: well-formed SVG with its title,
 * source, escaped labels, one bar per value and "n/a" for a missing one,
 * and clean refusals of charts that cannot be drawn; the trace replay's
 * line charts: one line per series through its points, escaped labels,
 * a y axis rounded up to a multiple of 5, and refusals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svg_chart.h"

static void nice_step_is_1_2_or_5_times_a_power_of_ten(void **state)
{
	static const struct {
		double max;
		int ticks;
		double want;
	} t[] = {
	    {10, 5, 2},     {9.3, 5, 2},     {100, 5, 20}, {101, 5, 50},
	    {0.37, 5, 0.1}, {7441, 5, 2000}, {1, 5, 0.2},  {0, 5, 1},
	    {-3, 5, 1},     {4.2, 4, 2},     {50, 5, 10},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		assert_true(fabs(gs_svg_nice_step(t[i].max, t[i].ticks) -
		                 t[i].want) < 1e-9 * t[i].want);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p != NULL;
	     p = strstr(p + 1, needle))
		n++;
	return n;
}

static char *draw(const struct gs_svg_bars *c, gs_err *err)
{
	struct gs_errbuf eb = {0};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*err = gs_svg_bars_write(f, c, &eb);
	fclose(f);
	return buf;
}

static void chart_has_title_source_bars_and_na_for_missing(void **state)
{
	const char *groups[] = {"Exclusive", "MPS <limits> & co"};
	const double a[] = {1.5, NAN}, b[] = {3.25, 12};
	const struct gs_svg_series s[] = {{"p50", a}, {"p99", b}};
	const struct gs_svg_bars c = {
	    .title = "Latency",
	    .subtitle = "source: gpuslice sim",
	    .y_label = "ms",
	    .n_groups = 2,
	    .groups = groups,
	    .n_series = 2,
	    .series = s,
	};
	gs_err err;
	char *svg = draw(&c, &err);

	(void)state;
	assert_int_equal(err, GS_OK);
	assert_non_null(
	    strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_non_null(strstr(svg, ">Latency</text>"));
	assert_non_null(strstr(svg, ">source: gpuslice sim</text>"));
	assert_non_null(strstr(svg, "MPS &lt;limits&gt; &amp; co"));
	assert_null(strstr(svg, "<limits>"));
	/* background + 3 bars + 2 legend swatches */
	assert_int_equal(count(svg, "<rect"), 1 + 3 + 2);
	assert_int_equal(count(svg, ">n/a</text>"), 1);
	assert_non_null(strstr(svg, ">12.0</text>"));
	assert_non_null(strstr(svg, "</svg>\n"));
	free(svg);
}

static void chart_refuses_bad_counts_and_missing_labels(void **state)
{
	const char *groups[] = {"a", NULL};
	const double v[] = {1, 2};
	const struct gs_svg_series s[] = {{"x", v}};
	struct gs_svg_bars c = {
	    .title = "t",
	    .subtitle = "src",
	    .n_groups = 0,
	    .groups = groups,
	    .n_series = 1,
	    .series = s,
	};
	gs_err err;
	char *svg;

	(void)state;
	svg = draw(&c, &err);
	assert_int_equal(err, GS_ERR_INVALID);
	free(svg);
	c.n_groups = GS_SVG_MAX_GROUPS + 1;
	svg = draw(&c, &err);
	assert_int_equal(err, GS_ERR_INVALID);
	free(svg);
	c.n_groups = 2; /* groups[1] is NULL */
	svg = draw(&c, &err);
	assert_int_equal(err, GS_ERR_INVALID);
	free(svg);
	c.n_groups = 1;
	c.subtitle = NULL; /* a chart must say where its figures come from */
	svg = draw(&c, &err);
	assert_int_equal(err, GS_ERR_INVALID);
	free(svg);
}

static char *draw_lines(const struct gs_svg_lines *c, gs_err *err)
{
	struct gs_errbuf eb = {0};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*err = gs_svg_lines_write(f, c, &eb);
	fclose(f);
	return buf;
}

static void line_chart_draws_a_line_per_series_through_its_points(void **state)
{
	const double a[] = {1, NAN, 3}, b[] = {NAN, NAN, NAN},
	             c2[] = {7, 8, 22};
	const struct gs_svg_line l[] = {{"A & <b>", "#111111", a},
	                                {"none", "#222222", b},
	                                {"C", "#333333", c2}};
	const struct gs_svg_lines c = {
	    .title = "Unallocated",
	    .x_label = "arrived (% of capacity)",
	    .y_label = "unallocated",
	    .x0 = 10,
	    .x1 = 12,
	    .x_step = 1,
	    .n_lines = 3,
	    .lines = l,
	};
	gs_err err;
	char *svg = draw_lines(&c, &err);

	(void)state;
	assert_int_equal(err, GS_OK);
	assert_non_null(
	    strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_non_null(strstr(svg, ">Unallocated</text>"));
	assert_non_null(strstr(svg, ">arrived (% of capacity)</text>"));
	assert_non_null(strstr(svg, ">A &amp; &lt;b&gt;</text>"));
	assert_null(strstr(svg, "<b>"));
	/* a line for each series with a point; a legend entry for each */
	assert_int_equal(count(svg, "<polyline"), 2);
	assert_int_equal(count(svg, "stroke-width=\"3\""), 3);
	/* the largest value, 22, makes the y axis end at 25 */
	assert_non_null(strstr(svg, "text-anchor=\"end\">25</text>"));
	assert_null(strstr(svg, "text-anchor=\"end\">30</text>"));
	assert_non_null(strstr(svg, "</svg>\n"));
	free(svg);
}

static void line_chart_refuses_bad_counts_and_missing_labels(void **state)
{
	const double v[] = {1, 2};
	struct gs_svg_line l[] = {{"x", "#000000", v}};
	struct gs_svg_lines c = {
	    .title = "t",
	    .x_label = "x",
	    .y_label = "y",
	    .x0 = 0,
	    .x1 = 1,
	    .x_step = 1,
	    .n_lines = 0,
	    .lines = l,
	};
	gs_err err;
	char *svg;

	(void)state;
	svg = draw_lines(&c, &err);
	assert_int_equal(err, GS_ERR_INVALID);
	free(svg);
	c.n_lines = GS_SVG_MAX_SERIES + 1;
	svg = draw_lines(&c, &err);
	assert_int_equal(err, GS_ERR_INVALID);
	free(svg);
	c.n_lines = 1;
	c.x1 = 0; /* an empty x axis */
	svg = draw_lines(&c, &err);
	assert_int_equal(err, GS_ERR_INVALID);
	free(svg);
	c.x1 = 1;
	l[0].color = NULL;
	svg = draw_lines(&c, &err);
	assert_int_equal(err, GS_ERR_INVALID);
	free(svg);
	l[0].color = "#000000";
	svg = draw_lines(&c, &err);
	assert_int_equal(err, GS_OK);
	free(svg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(nice_step_is_1_2_or_5_times_a_power_of_ten),
	    cmocka_unit_test(chart_has_title_source_bars_and_na_for_missing),
	    cmocka_unit_test(chart_refuses_bad_counts_and_missing_labels),
	    cmocka_unit_test(
	        line_chart_draws_a_line_per_series_through_its_points),
	    cmocka_unit_test(line_chart_refuses_bad_counts_and_missing_labels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
