/*
 * study_report.c - the seed study's outputs (study.h): study.json (the
 * cells as they are), study.md (the seed's "Which GPU sharing strategy is
 * right?" grid with the measured figures, then a table per workload) and
 * the charts (svg_chart.h). Every output carries the figures' source.
 *
 * Reads cells only through their documented keys, so a cell that was
 * skipped or failed (null figures) shows as "n/a" with its reason.
 */
#include "study.h"
#include "svg_chart.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static json_t *find_cell(json_t *cells, int w, int s)
{
	size_t i;
	json_t *c;

	json_array_foreach(cells, i, c)
	{
		const char *cw =
		    json_string_value(json_object_get(c, "workload"));
		const char *cs =
		    json_string_value(json_object_get(c, "strategy"));

		if (cw != NULL && cs != NULL &&
		    strcmp(cw, gs_study_workload_name(w)) == 0 &&
		    strcmp(cs, gs_study_strategy_name(s)) == 0)
			return c;
	}
	return NULL;
}

static bool cell_ok(json_t *c)
{
	const char *st = json_string_value(json_object_get(c, "status"));

	return st != NULL && strcmp(st, "ok") == 0;
}

static double fig(json_t *c, const char *key)
{
	json_t *v = c != NULL ? json_object_get(c, key) : NULL;

	return json_is_number(v) ? json_number_value(v) : NAN;
}

/* servers[i].key of an inference cell. */
static double server_fig(json_t *c, int i, const char *key)
{
	json_t *sv = c != NULL ? json_object_get(c, "servers") : NULL;

	return fig(json_array_get(sv, (size_t)i), key);
}

static const char *nested(json_t *c, const char *a, const char *b,
                          const char *k)
{
	json_t *v = c != NULL ? json_object_get(c, a) : NULL;

	v = json_object_get(json_object_get(v, b), k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* "1.23" or "n/a". */
static const char *f2(double v, const char *fmt, char *buf, size_t len)
{
	if (isnan(v))
		return "n/a";
	snprintf(buf, len, fmt, v);
	return buf;
}

static void mem_list(FILE *f, json_t *c)
{
	json_t *a =
	    c != NULL ? json_object_get(c, "memory_per_job_bytes") : NULL;
	size_t i;
	json_t *v;

	if (!json_is_array(a) || json_array_size(a) == 0) {
		fputs("n/a", f);
		return;
	}
	json_array_foreach(a, i, v)
	{
		if (i > 0)
			fputs(" / ", f);
		if (json_is_integer(v))
			fprintf(f, "%.0f",
			        (double)json_integer_value(v) / (1 << 20));
		else
			fputs("n/a", f);
	}
	fputs(" MiB", f);
}

/* ---- the grid ---------------------------------------------------------- */

static void grid_cell(FILE *f, json_t *c, int w, int *note, json_t *notes)
{
	char a[32], b[32], d[32], u[32];

	if (c == NULL) {
		fputs(" not run |", f);
		return;
	}
	if (!cell_ok(c)) {
		const char *st =
		    json_string_value(json_object_get(c, "status"));

		json_t *why = json_object_get(c, "reason");
		size_t i, k = json_array_size(notes);
		json_t *v;

		/* One footnote per distinct reason. */
		json_array_foreach(notes, i, v) if (json_equal(v, why))
		{
			k = i;
			break;
		}
		if (k == json_array_size(notes)) {
			json_array_append(notes, why ? why : json_null());
			++*note;
		}
		fprintf(f, " %s [%zu] |", st != NULL ? st : "?", k + 1);
		return;
	}
	switch (w) {
	case GS_STUDY_W_INFER_LIGHT:
	case GS_STUDY_W_INFER_HEAVY:
		fprintf(f, " p99 A %s / B %s ms; %s req/s; util %s%% |",
		        f2(server_fig(c, 0, "p99_ms"), "%.2f", a, sizeof(a)),
		        f2(server_fig(c, 1, "p99_ms"), "%.2f", b, sizeof(b)),
		        f2(fig(c, "throughput"), "%.0f", d, sizeof(d)),
		        f2(fig(c, "gpu_util_pct"), "%.0f", u, sizeof(u)));
		break;
	case GS_STUDY_W_SMALL_BATCH:
		fprintf(f, " 4 jobs %s s (1 alone %s s); util %s%% |",
		        f2(fig(c, "completion_s"), "%.2f", a, sizeof(a)),
		        f2(fig(c, "completion_alone_s"), "%.2f", b, sizeof(b)),
		        f2(fig(c, "gpu_util_pct"), "%.0f", d, sizeof(d)));
		break;
	case GS_STUDY_W_GPU_INTENSIVE: {
		const char *oom =
		    nested(c, "neighbour_on_oom", "neighbour", "outcome");
		const char *flt =
		    nested(c, "neighbour_on_fault", "neighbour", "outcome");

		fprintf(f,
		        " 2 jobs %s s (1 alone %s s); OOM: neighbour %s; fault: neighbour %s |",
		        f2(fig(c, "completion_s"), "%.2f", a, sizeof(a)),
		        f2(fig(c, "completion_alone_s"), "%.2f", b, sizeof(b)),
		        oom != NULL ? oom : "n/a", flt != NULL ? flt : "n/a");
		break;
	}
	}
}

void gs_study_grid_md(FILE *f, json_t *cells)
{
	json_t *notes = json_array();
	int note = 0;
	size_t i;
	json_t *v;

	fputs("| |", f);
	for (int s = 0; s < GS_STUDY_S__COUNT; s++)
		fprintf(f, " %s |", gs_study_strategy_title(s));
	fputs("\n|---|", f);
	for (int s = 0; s < GS_STUDY_S__COUNT; s++)
		fputs("---|", f);
	fputc('\n', f);
	for (int w = 0; w < GS_STUDY_W__COUNT; w++) {
		bool any = false;

		for (int s = 0; s < GS_STUDY_S__COUNT; s++)
			any = any || find_cell(cells, w, s) != NULL;
		if (!any)
			continue;
		fprintf(f, "| %s |", gs_study_workload_title(w));
		for (int s = 0; s < GS_STUDY_S__COUNT; s++)
			grid_cell(f, find_cell(cells, w, s), w, &note, notes);
		fputc('\n', f);
	}
	if (note > 0)
		fputc('\n', f);
	json_array_foreach(notes, i, v) fprintf(
	    f, "[%zu] %s\n", i + 1,
	    json_is_string(v) ? json_string_value(v) : "no reason given");
	json_decref(notes);
}

/* ---- per-workload tables ----------------------------------------------- */

static void infer_table(FILE *f, json_t *cells, int w)
{
	char b[7][32];

	fprintf(f, "\n### %s\n\n", gs_study_workload_title(w));
	fputs("| strategy | A p50 ms | A p99 ms | A req/s | B p50 ms | B p99 ms | B req/s | GPU util % | memory per job |\n",
	      f);
	fputs("|---|---|---|---|---|---|---|---|---|\n", f);
	for (int s = 0; s < GS_STUDY_S__COUNT; s++) {
		json_t *c = find_cell(cells, w, s);

		if (c == NULL)
			continue;
		fprintf(
		    f, "| %s | %s | %s | %s | %s | %s | %s | %s | ",
		    gs_study_strategy_title(s),
		    f2(server_fig(c, 0, "p50_ms"), "%.2f", b[0], 32),
		    f2(server_fig(c, 0, "p99_ms"), "%.2f", b[1], 32),
		    f2(server_fig(c, 0, "throughput_rps"), "%.0f", b[2], 32),
		    f2(server_fig(c, 1, "p50_ms"), "%.2f", b[3], 32),
		    f2(server_fig(c, 1, "p99_ms"), "%.2f", b[4], 32),
		    f2(server_fig(c, 1, "throughput_rps"), "%.0f", b[5], 32),
		    f2(fig(c, "gpu_util_pct"), "%.0f", b[6], 32));
		mem_list(f, c);
		fputs(" |\n", f);
	}
}

static void small_table(FILE *f, json_t *cells)
{
	char b[6][32];

	fprintf(f, "\n### %s\n\n",
	        gs_study_workload_title(GS_STUDY_W_SMALL_BATCH));
	fputs("| strategy | 1 job alone s | 4 at once s | slowdown | matmul/s (all 4) | GPU util % | SM util % | memory per job |\n",
	      f);
	fputs("|---|---|---|---|---|---|---|---|\n", f);
	for (int s = 0; s < GS_STUDY_S__COUNT; s++) {
		json_t *c = find_cell(cells, GS_STUDY_W_SMALL_BATCH, s);
		double a, t;

		if (c == NULL)
			continue;
		a = fig(c, "completion_alone_s");
		t = fig(c, "completion_s");
		fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | ",
		        gs_study_strategy_title(s), f2(a, "%.2f", b[0], 32),
		        f2(t, "%.2f", b[1], 32), f2(t / a, "%.2fx", b[2], 32),
		        f2(fig(c, "throughput"), "%.0f", b[3], 32),
		        f2(fig(c, "gpu_util_pct"), "%.0f", b[4], 32),
		        f2(fig(c, "sm_util_pct"), "%.0f", b[5], 32));
		mem_list(f, c);
		fputs(" |\n", f);
	}
}

static void intensive_table(FILE *f, json_t *cells)
{
	char b[6][32];

	fprintf(f, "\n### %s\n\n",
	        gs_study_workload_title(GS_STUDY_W_GPU_INTENSIVE));
	fputs("| strategy | 1 alone s | 2 at once s | slowdown | GFLOP/s (both) | GPU util % | memory per job | greedy job got | its neighbour | neighbour of a fault |\n",
	      f);
	fputs("|---|---|---|---|---|---|---|---|---|---|\n", f);
	for (int s = 0; s < GS_STUDY_S__COUNT; s++) {
		json_t *c = find_cell(cells, GS_STUDY_W_GPU_INTENSIVE, s);
		json_t *off;
		double a, t, got;
		const char *o, *fl, *oe;

		if (c == NULL)
			continue;
		a = fig(c, "completion_alone_s");
		t = fig(c, "completion_s");
		off = json_object_get(json_object_get(c, "neighbour_on_oom"),
		                      "offender");
		got = fig(off, "allocated_bytes");
		o = nested(c, "neighbour_on_oom", "neighbour", "outcome");
		oe = nested(c, "neighbour_on_oom", "offender", "error");
		fl = nested(c, "neighbour_on_fault", "neighbour", "outcome");
		fprintf(f, "| %s | %s | %s | %s | %s | %s | ",
		        gs_study_strategy_title(s), f2(a, "%.2f", b[0], 32),
		        f2(t, "%.2f", b[1], 32), f2(t / a, "%.2fx", b[2], 32),
		        f2(fig(c, "throughput"), "%.0f", b[3], 32),
		        f2(fig(c, "gpu_util_pct"), "%.0f", b[4], 32));
		mem_list(f, c);
		fprintf(f, " | %s GiB%s | %s | %s |\n",
		        f2(got / (1 << 30), "%.1f", b[5], 32),
		        oe != NULL ? " (then OOM)" : "", o != NULL ? o : "n/a",
		        fl != NULL ? fl : "n/a");
	}
}

static void setups(FILE *f, json_t *cells)
{
	size_t i;
	json_t *c;

	fputs("\n### Setups\n\n", f);
	json_array_foreach(cells, i, c)
	{
		const char *st =
		    json_string_value(json_object_get(c, "status"));
		const char *why =
		    json_string_value(json_object_get(c, "reason"));

		fprintf(f, "- **%s / %s**: %s",
		        json_string_value(json_object_get(c, "workload")),
		        json_string_value(json_object_get(c, "strategy")),
		        json_string_value(json_object_get(c, "setup")));
		if (st != NULL && strcmp(st, "ok") != 0)
			fprintf(f, " (%s: %s)", st,
			        why != NULL ? why : "no reason given");
		fputc('\n', f);
	}
}

static gs_err write_md(const char *path, json_t *cells, const char *label,
                       bool quick, struct gs_errbuf *eb)
{
	FILE *f = fopen(path, "w");
	int saved;

	if (f == NULL) {
		saved = errno;
		return gs_fail(eb, GS_ERR_IO, "cannot write %s: %s", path,
		               strerror(saved));
	}
	fputs("# The seed study: which GPU sharing strategy is right?\n\n", f);
	fprintf(f, "%s.\n\n", label);
	fprintf(
	    f,
	    "Run: `gpuslice bench study%s` (%s). The workloads and strategies of NVIDIA's KubeCon study (seeds/003), measured with gpuslice's workload kit; `gpuslice` is the shim's slices. Latencies are per server (A, B); completion times are per job; \"util\" is the share of time the GPU(s) had a kernel running.\n"
	    "\n",
	    quick ? " --quick" : "",
	    quick ? "quick: each run a few seconds" : "full length runs");
	fputs("## Which GPU sharing strategy is right? (measured)\n\n", f);
	gs_study_grid_md(f, cells);
	fputs("\n## Per workload\n", f);
	infer_table(f, cells, GS_STUDY_W_INFER_LIGHT);
	infer_table(f, cells, GS_STUDY_W_INFER_HEAVY);
	small_table(f, cells);
	intensive_table(f, cells);
	setups(f, cells);
	if (fclose(f) != 0) {
		saved = errno;
		return gs_fail(eb, GS_ERR_IO, "cannot write %s: %s", path,
		               strerror(saved));
	}
	return GS_OK;
}

/* ---- charts -------------------------------------------------------------- */

static gs_err chart(const char *dir, const char *file,
                    const struct gs_svg_bars *c, struct gs_errbuf *eb)
{
	char path[4096];
	FILE *f;
	gs_err err;
	int saved;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	f = fopen(path, "w");
	if (f == NULL) {
		saved = errno;
		return gs_fail(eb, GS_ERR_IO, "cannot write %s: %s", path,
		               strerror(saved));
	}
	err = gs_svg_bars_write(f, c, eb);
	if (fclose(f) != 0 && err == GS_OK)
		err = gs_fail(eb, GS_ERR_IO, "cannot write %s", path);
	return err;
}

static gs_err charts(const char *dir, json_t *cells, const char *label,
                     struct gs_errbuf *eb)
{
	const char *groups[GS_STUDY_S__COUNT];
	double v[6][GS_STUDY_S__COUNT];
	struct gs_svg_series ser[6];
	struct gs_svg_bars c = {.subtitle = label,
	                        .n_groups = GS_STUDY_S__COUNT,
	                        .groups = groups,
	                        .series = ser};
	gs_err err;

	for (int s = 0; s < GS_STUDY_S__COUNT; s++)
		groups[s] = gs_study_strategy_title(s);
	for (int k = 0; k < 6; k++)
		ser[k].values = v[k];

#define OKC(w, s)                                                              \
	(find_cell(cells, (w), (s)) != NULL &&                                 \
	 cell_ok(find_cell(cells, (w), (s))))
	for (int s = 0; s < GS_STUDY_S__COUNT; s++) {
		json_t *l = OKC(GS_STUDY_W_INFER_LIGHT, s)
		                ? find_cell(cells, GS_STUDY_W_INFER_LIGHT, s)
		                : NULL;
		json_t *h = OKC(GS_STUDY_W_INFER_HEAVY, s)
		                ? find_cell(cells, GS_STUDY_W_INFER_HEAVY, s)
		                : NULL;

		v[0][s] = server_fig(l, 0, "p50_ms");
		v[1][s] = server_fig(l, 0, "p99_ms");
		v[2][s] = server_fig(h, 0, "p50_ms");
		v[3][s] = server_fig(h, 0, "p99_ms");
		v[4][s] = server_fig(h, 1, "p99_ms");
	}
	ser[0].name = "light p50 (A)";
	ser[1].name = "light p99 (A)";
	ser[2].name = "heavy p50 (A)";
	ser[3].name = "heavy p99 (A)";
	ser[4].name = "heavy p99 (B)";
	c.title = "Inference latency per strategy (two servers, A and B)";
	c.y_label = "latency, ms";
	c.n_series = 5;
	err = chart(dir, "latency.svg", &c, eb);
	if (err != GS_OK)
		return err;

	for (int s = 0; s < GS_STUDY_S__COUNT; s++) {
		v[0][s] = OKC(GS_STUDY_W_INFER_LIGHT, s)
		              ? fig(find_cell(cells, GS_STUDY_W_INFER_LIGHT, s),
		                    "throughput")
		              : NAN;
		v[1][s] = OKC(GS_STUDY_W_INFER_HEAVY, s)
		              ? fig(find_cell(cells, GS_STUDY_W_INFER_HEAVY, s),
		                    "throughput")
		              : NAN;
	}
	ser[0].name = "light load";
	ser[1].name = "heavy load";
	c.title = "Inference throughput per strategy (both servers)";
	c.y_label = "requests per second";
	c.n_series = 2;
	err = chart(dir, "throughput.svg", &c, eb);
	if (err != GS_OK)
		return err;

	for (int s = 0; s < GS_STUDY_S__COUNT; s++) {
		json_t *sb = OKC(GS_STUDY_W_SMALL_BATCH, s)
		                 ? find_cell(cells, GS_STUDY_W_SMALL_BATCH, s)
		                 : NULL;
		json_t *gi = OKC(GS_STUDY_W_GPU_INTENSIVE, s)
		                 ? find_cell(cells, GS_STUDY_W_GPU_INTENSIVE, s)
		                 : NULL;

		v[0][s] = fig(sb, "completion_alone_s");
		v[1][s] = fig(sb, "completion_s");
		v[2][s] = fig(gi, "completion_alone_s");
		v[3][s] = fig(gi, "completion_s");
	}
	ser[0].name = "small batch, 1 job";
	ser[1].name = "small batch, 4 at once";
	ser[2].name = "GPU-intensive, 1 job";
	ser[3].name = "GPU-intensive, 2 at once";
	c.title = "Completion time per strategy (slowest job)";
	c.y_label = "seconds";
	c.n_series = 4;
	err = chart(dir, "completion.svg", &c, eb);
	if (err != GS_OK)
		return err;

	for (int s = 0; s < GS_STUDY_S__COUNT; s++)
		for (int w = 0; w < GS_STUDY_W__COUNT; w++)
			v[w][s] = OKC(w, s) ? fig(find_cell(cells, w, s),
			                          "gpu_util_pct")
			                    : NAN;
	for (int w = 0; w < GS_STUDY_W__COUNT; w++)
		ser[w].name = gs_study_workload_title(w);
	c.title =
	    "GPU utilisation while the jobs share (time with a kernel running)";
	c.y_label = "% of time";
	c.n_series = GS_STUDY_W__COUNT;
	return chart(dir, "utilization.svg", &c, eb);
#undef OKC
}

static gs_err mkdir_p(const char *dir, struct gs_errbuf *eb)
{
	char tmp[4096];
	size_t len = strlen(dir);
	int saved;

	if (len == 0 || len >= sizeof(tmp))
		return gs_fail(eb, GS_ERR_INVALID, "bad output directory");
	memcpy(tmp, dir, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST) {
			saved = errno;
			return gs_fail(eb, GS_ERR_IO, "cannot create %s: %s",
			               tmp, strerror(saved));
		}
		*p = '/';
	}
	if (mkdir(tmp, 0755) != 0 && errno != EEXIST) {
		saved = errno;
		return gs_fail(eb, GS_ERR_IO, "cannot create %s: %s", tmp,
		               strerror(saved));
	}
	return GS_OK;
}

gs_err gs_study_write(const char *dir, json_t *cells, const char *label,
                      bool quick, struct gs_errbuf *eb)
{
	char path[4096];
	gs_err err = mkdir_p(dir, eb);

	if (err != GS_OK)
		return err;
	snprintf(path, sizeof(path), "%s/study.json", dir);
	if (json_dump_file(cells, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) !=
	    0)
		return gs_fail(eb, GS_ERR_IO, "cannot write %s", path);
	snprintf(path, sizeof(path), "%s/study.md", dir);
	err = write_md(path, cells, label, quick, eb);
	if (err == GS_OK)
		err = charts(dir, cells, label, eb);
	return err;
}
