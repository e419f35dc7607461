/*
 * svg_chart.h - grouped bar charts written as standalone SVG, with no
 * runtime dependency (no gnuplot): one group of bars per category on the
 * x axis (e.g. a sharing strategy), one bar per series in each group
 * (e.g. p50 and p99), a value label on every bar, a legend, and a
 * subtitle line that says where the figures come from.
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

/*
 * The "nice" axis step for values up to `max` with about `ticks` ticks:
 * 1, 2 or 5 times a power of ten. For max <= 0 returns 1.
 */
double gs_svg_nice_step(double max, int ticks);

#endif
