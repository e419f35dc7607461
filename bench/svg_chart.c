/*
 * svg_chart.c - the one SVG writer: grouped bar charts and line charts as
 * standalone SVG (see svg_chart.h).
 *
 * Bar chart layout, in user units of a fixed 880 x 470 canvas:
 *
 *   title, subtitle (source)                        top margin
 *   y axis with "nice" ticks | groups of bars       plot area
 *   group labels, then the legend                   bottom margin
 *
 * The y axis starts at 0 and ends at the first tick above the largest
 * value, so bars of different charts read the same way. Bars narrower
 * than a label carry their value rotated upright.
 *
 * Line chart layout, on a fixed 760 x 460 canvas: the title on top, the
 * plot area with a light grid, the legend in the right margin.
 */
#include "svg_chart.h"

#include <math.h>
#include <string.h>

#define W      880.0
#define H      470.0
#define LEFT   80.0
#define RIGHT  20.0
#define TOP    72.0
#define BOTTOM 112.0

static const char *const palette[GS_SVG_MAX_SERIES] = {
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759",
    "#76b7b2", "#edc948", "#b07aa1", "#9c755f",
};

double gs_svg_nice_step(double max, int ticks)
{
	double raw, mag, f;

	if (!(max > 0) || ticks < 1)
		return 1;
	raw = max / ticks;
	mag = pow(10, floor(log10(raw)));
	f = raw / mag;
	if (f <= 1)
		return mag;
	if (f <= 2)
		return 2 * mag;
	if (f <= 5)
		return 5 * mag;
	return 10 * mag;
}

/* Writes s with &, <, >, " escaped. */
static void esc(FILE *f, const char *s)
{
	for (; s != NULL && *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

/* A short label for a value: 3 significant digits, no exponent below 1e6. */
static void fmt_value(double v, char *out, size_t len)
{
	double a = fabs(v);

	if (a >= 1e6 || (a > 0 && a < 1e-3))
		snprintf(out, len, "%.2g", v);
	else if (a >= 100)
		snprintf(out, len, "%.0f", v);
	else if (a >= 10)
		snprintf(out, len, "%.1f", v);
	else
		snprintf(out, len, "%.2f", v);
}

static gs_err check(const struct gs_svg_bars *c, struct gs_errbuf *eb)
{
	if (c->n_groups < 1 || c->n_groups > GS_SVG_MAX_GROUPS)
		return gs_fail(eb, GS_ERR_INVALID,
		               "chart needs 1..%d groups, got %d",
		               GS_SVG_MAX_GROUPS, c->n_groups);
	if (c->n_series < 1 || c->n_series > GS_SVG_MAX_SERIES)
		return gs_fail(eb, GS_ERR_INVALID,
		               "chart needs 1..%d series, got %d",
		               GS_SVG_MAX_SERIES, c->n_series);
	if (c->title == NULL || c->subtitle == NULL || c->groups == NULL ||
	    c->series == NULL)
		return gs_fail(eb, GS_ERR_INVALID,
		               "chart without title, source, groups or series");
	for (int g = 0; g < c->n_groups; g++)
		if (c->groups[g] == NULL)
			return gs_fail(eb, GS_ERR_INVALID,
			               "chart group %d has no label", g);
	for (int s = 0; s < c->n_series; s++)
		if (c->series[s].name == NULL || c->series[s].values == NULL)
			return gs_fail(eb, GS_ERR_INVALID,
			               "chart series %d has no name or values",
			               s);
	return GS_OK;
}

/* A tick label with as many decimals as the step needs. */
static void fmt_tick(double v, double step, char *out, size_t len)
{
	int dec = 0;

	for (double s = step; dec < 6 && fabs(s - round(s)) > 1e-9; s *= 10)
		dec++;
	if (fabs(v) >= 1e6)
		snprintf(out, len, "%.3g", v);
	else
		snprintf(out, len, "%.*f", dec, v);
}

static void axis(FILE *f, const struct gs_svg_bars *c, double top_v,
                 double step)
{
	double y0 = H - BOTTOM, span = H - BOTTOM - TOP;
	char buf[32];

	for (double v = 0; v <= top_v + step / 2; v += step) {
		double y = y0 - span * v / top_v;

		fprintf(f,
		        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
		        LEFT, y, W - RIGHT, y);
		fmt_tick(v, step, buf, sizeof(buf));
		fprintf(f,
		        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" font-size=\"11\">%s</text>\n",
		        LEFT - 6, y + 4, buf);
	}
	fprintf(f,
	        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
	        LEFT, TOP, LEFT, y0);
	fprintf(f,
	        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
	        LEFT, y0, W - RIGHT, y0);
	if (c->y_label != NULL) {
		fprintf(f,
		        "<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">",
		        TOP + span / 2);
		esc(f, c->y_label);
		fputs("</text>\n", f);
	}
}

static void bars(FILE *f, const struct gs_svg_bars *c, double top_v)
{
	double y0 = H - BOTTOM, span = H - BOTTOM - TOP;
	double gw = (W - LEFT - RIGHT) / c->n_groups;
	double bw = gw * 0.78 / c->n_series;
	bool upright = bw < 30;
	char buf[32];

	for (int g = 0; g < c->n_groups; g++) {
		double gx = LEFT + g * gw + gw * 0.11;

		for (int s = 0; s < c->n_series; s++) {
			double v = c->series[s].values[g];
			double x = gx + s * bw, cx = x + bw / 2, h, y;

			if (isnan(v)) {
				fprintf(
				    f,
				    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"9\" fill=\"#888\">n/a</text>\n",
				    cx, y0 - 4);
				continue;
			}
			h = v > 0 ? span * v / top_v : 0;
			y = y0 - h;
			fprintf(f,
			        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
			        x + 1, y, bw - 2, h, palette[s]);
			esc(f, c->groups[g]);
			fputs(" / ", f);
			esc(f, c->series[s].name);
			fmt_value(v, buf, sizeof(buf));
			fprintf(f, ": %s</title></rect>\n", buf);
			if (upright)
				fprintf(f,
				        "<text transform=\"translate(%.1f %.1f) rotate(-90)\" font-size=\"10\">%s</text>\n",
				        cx + 3.5, y - 3, buf);
			else
				fprintf(f,
				        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"10\">%s</text>\n",
				        cx, y - 3, buf);
		}
		fprintf(f,
		        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"12\">",
		        LEFT + g * gw + gw / 2, y0 + 18);
		esc(f, c->groups[g]);
		fputs("</text>\n", f);
	}
}

static void legend(FILE *f, const struct gs_svg_bars *c)
{
	double x = LEFT, y = H - BOTTOM + 44;

	for (int s = 0; s < c->n_series; s++) {
		double w = 26 + 6.5 * (double)strlen(c->series[s].name);

		if (x + w > W - RIGHT && x > LEFT) {
			x = LEFT;
			y += 20;
		}
		fprintf(f,
		        "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>\n",
		        x, y - 10, palette[s]);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">",
		        x + 16, y);
		esc(f, c->series[s].name);
		fputs("</text>\n", f);
		x += w + 14;
	}
}

gs_err gs_svg_bars_write(FILE *f, const struct gs_svg_bars *c,
                         struct gs_errbuf *eb)
{
	double max = 0, step, top_v;
	gs_err err = check(c, eb);

	if (err != GS_OK)
		return err;
	for (int s = 0; s < c->n_series; s++)
		for (int g = 0; g < c->n_groups; g++) {
			double v = c->series[s].values[g];

			if (!isnan(v) && v > max)
				max = v;
		}
	step = gs_svg_nice_step(max, 5);
	top_v = step * ceil(max / step);
	if (top_v < max * 1.08)
		top_v += step; /* room for the labels above the tallest bar */

	fprintf(f,
	        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n",
	        W, H, W, H);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(f,
	        "<text x=\"%.1f\" y=\"26\" text-anchor=\"middle\" font-size=\"17\" font-weight=\"bold\">",
	        W / 2);
	esc(f, c->title);
	fprintf(f,
	        "</text>\n"
	        "<text x=\"%.1f\" y=\"48\" text-anchor=\"middle\" font-size=\"12\" fill=\"#444\">",
	        W / 2);
	esc(f, c->subtitle);
	fputs("</text>\n", f);
	axis(f, c, top_v, step);
	bars(f, c, top_v);
	legend(f, c);
	fputs("</svg>\n", f);
	if (ferror(f))
		return gs_fail(eb, GS_ERR_IO, "cannot write the chart '%s'",
		               c->title);
	return GS_OK;
}

/* ---- Line charts ------------------------------------------------------ */

#define LN_W 760.0
#define LN_H 460.0
#define LN_L 70.0
#define LN_R 170.0
#define LN_T 50.0
#define LN_B 60.0

static gs_err check_lines(const struct gs_svg_lines *c, struct gs_errbuf *eb)
{
	if (c->n_lines < 1 || c->n_lines > GS_SVG_MAX_SERIES)
		return gs_fail(eb, GS_ERR_INVALID,
		               "chart needs 1..%d lines, got %d",
		               GS_SVG_MAX_SERIES, c->n_lines);
	if (c->x1 <= c->x0 || c->x_step < 1)
		return gs_fail(eb, GS_ERR_INVALID,
		               "chart x axis %d..%d step %d is empty", c->x0,
		               c->x1, c->x_step);
	if (c->title == NULL || c->x_label == NULL || c->y_label == NULL ||
	    c->lines == NULL)
		return gs_fail(eb, GS_ERR_INVALID,
		               "chart without title, axis labels or lines");
	for (int s = 0; s < c->n_lines; s++)
		if (c->lines[s].name == NULL || c->lines[s].color == NULL ||
		    c->lines[s].y == NULL)
			return gs_fail(
			    eb, GS_ERR_INVALID,
			    "chart line %d has no name, color or values", s);
	return GS_OK;
}

gs_err gs_svg_lines_write(FILE *f, const struct gs_svg_lines *c,
                          struct gs_errbuf *eb)
{
	const int x0 = c->x0, x1 = c->x1;
	double ymax = 5;
	gs_err err = check_lines(c, eb);

	if (err != GS_OK)
		return err;
	for (int s = 0; s < c->n_lines; s++) {
		for (int a = x0; a <= x1; a++) {
			double v = c->lines[s].y[a - x0];
			if (!isnan(v) && v > ymax)
				ymax = v;
		}
	}
	ymax = ceil(ymax / 5.0) * 5.0;
#define PX(a)                                                                  \
	(LN_L + ((double)(a)-x0) * (LN_W - LN_L - LN_R) / (double)(x1 - x0))
#define PY(v) (LN_H - LN_B - (v) * (LN_H - LN_T - LN_B) / ymax)
	fprintf(
	    f,
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
	    "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
	    LN_W, LN_H, LN_W, LN_H);
	fprintf(
	    f,
	    "<text x=\"%.0f\" y=\"28\" font-size=\"15\" text-anchor=\"middle\">",
	    (LN_L + LN_W - LN_R) / 2);
	esc(f, c->title);
	fputs("</text>\n", f);
	for (double v = 0; v <= ymax + 1e-9; v += ymax > 20   ? 5
	                                          : ymax > 10 ? 2
	                                                      : 1) {
		fprintf(
		    f,
		    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n",
		    LN_L, PY(v), LN_W - LN_R, PY(v));
		fprintf(
		    f,
		    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
		    LN_L - 6, PY(v) + 4, v);
	}
	for (int a = x0; a <= x1; a += c->x_step) {
		fprintf(
		    f,
		    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n",
		    PX(a), LN_T, PX(a), LN_H - LN_B);
		fprintf(
		    f,
		    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n",
		    PX(a), LN_H - LN_B + 18, a);
	}
	fprintf(
	    f,
	    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"black\"/>\n",
	    LN_L, LN_T, LN_W - LN_L - LN_R, LN_H - LN_T - LN_B);
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
	        (LN_L + LN_W - LN_R) / 2, LN_H - 18);
	esc(f, c->x_label);
	fputs("</text>\n", f);
	fprintf(
	    f,
	    "<text transform=\"translate(20 %.1f) rotate(-90)\" text-anchor=\"middle\">",
	    (LN_T + LN_H - LN_B) / 2);
	esc(f, c->y_label);
	fputs("</text>\n", f);
	for (int s = 0; s < c->n_lines; s++) {
		const char *col = c->lines[s].color;
		bool open = false;
		for (int a = x0; a <= x1; a++) {
			double v = c->lines[s].y[a - x0];
			if (isnan(v))
				continue;
			fprintf(
			    f, "%s%.1f,%.1f",
			    open
			        ? " "
			        : "<polyline fill=\"none\" stroke-width=\"2\" points=\"",
			    PX(a), PY(v));
			open = true;
		}
		if (open)
			fprintf(f, "\" stroke=\"%s\"/>\n", col);
		fprintf(
		    f,
		    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>\n",
		    LN_W - LN_R + 14, LN_T + 10 + 20.0 * (double)s,
		    LN_W - LN_R + 38, LN_T + 10 + 20.0 * (double)s, col);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">", LN_W - LN_R + 44,
		        LN_T + 14 + 20.0 * (double)s);
		esc(f, c->lines[s].name);
		fputs("</text>\n", f);
	}
#undef PX
#undef PY
	fputs("</svg>\n", f);
	if (ferror(f))
		return gs_fail(eb, GS_ERR_IO, "cannot write the chart '%s'",
		               c->title);
	return GS_OK;
}
