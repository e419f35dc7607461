/*
 * svg_chart.h - the one SVG writer of bench/ and the CLI: charts written
 * as standalone SVG, with no runtime dependency (no gnuplot).
 *
 * Bar charts (the seed study): one group of bars per category on the
 * x axis (e.g. a sharing strategy), one bar per series in each group
 * (e.g. p50 and p99), a value label on every bar, a legend, and a
 * subtitle line that says where the figures come from.
 *
 * Line charts (the trace replay): one line per series over integer x
 * values, a grid, axis labels and a legend on the right.
 *
 * A value that is NaN is drawn as "n/a" in place of its bar, so a chart
 * can show a cell that was skipped without inventing a number. All text
 * is XML-escaped. The chart owns nothing: every pointer is borrowed for
 * the duration of the call.
 */
#ifndef GS_CLI_SVG_CHART_H
#define GS_CLI_SVG_CHART_H

#include <stdio.h>

#include "gs/err.h"

#define GS_SVG_MAX_GROUPS 16
#define GS_SVG_MAX_SERIES 8

struct gs_svg_series {
	const char *name;     /* legend text */
	const double *values; /* one per group; NaN = no figure */
};

struct gs_svg_bars {
	const char *title;
	const char *subtitle; /* the figures' source, always shown */
	const char *y_label;  /* unit, e.g. "ms" */
	int n_groups;
	const char *const *groups; /* x-axis labels */
	int n_series;
	const struct gs_svg_series *series;
};

/*
 * Writes the chart to `f`. GS_ERR_INVALID for counts out of range or a
 * missing label, GS_ERR_IO when writing fails; `f` may then hold part of
 * a chart.
 */
gs_err gs_svg_bars_write(FILE *f, const struct gs_svg_bars *c,
                         struct gs_errbuf *eb);

/* One line of a line chart: y[x - x0] for every x of the axis. */
struct gs_svg_line {
	const char *name;  /* legend text */
	const char *color; /* an SVG color, e.g. "#1f77b4" */
	const double *y;   /* x1 - x0 + 1 values; NaN = no point there */
};

struct gs_svg_lines {
	const char *title;
	const char *x_label;
	const char *y_label;
	int x0, x1, x_step; /* the x axis: x0..x1, a grid line every x_step */
	int n_lines;
	const struct gs_svg_line *lines;
};

/*
 * Writes the line chart to `f` on a fixed 760 x 460 canvas. The y axis
 * starts at 0 and ends at the first multiple of 5 at or above the largest
 * value (at least 5). A line is drawn through its points in x order (a
 * NaN leaves a point out). GS_ERR_INVALID for counts out of range or a
 * missing label, GS_ERR_IO when writing fails; `f` may then hold part of
 * a chart.
 */
gs_err gs_svg_lines_write(FILE *f, const struct gs_svg_lines *c,
                          struct gs_errbuf *eb);

/*
 * The "nice" axis step for values up to `max` with about `ticks` ticks:
 * 1, 2 or 5 times a power of ten. For max <= 0 returns 1.
 */
double gs_svg_nice_step(double max, int ticks);

#endif
