/*
 * trace_bench_report.c - the trace benchmark's figures (see
 * trace_bench.h): per policy, the unallocated GPU % and the
 * fragmentation % by arrival level as text tables and JSON on stdout, a
 * CSV of every level and the chart of the unallocated curves (SVG,
 * written by svg_chart.c).
 */
#include "svg_chart.h"
#include "trace_bench.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>

/* ---- Output ----------------------------------------------------------- */

static const int table_levels[] = {90, 95, 100, 105, 110, 120, 130};
#define N_TABLE_LEVELS (sizeof(table_levels) / sizeof(table_levels[0]))

static void print_table(const struct gs_trace_bench *b, bool frag)
{
	printf(
	    "%s (%% of GPU capacity, mean \xc2\xb1 sd over %zu seed%s) by arrived workload %%\n",
	    frag ? "Fragmentation" : "Unallocated GPU", b->n_seeds,
	    b->n_seeds == 1 ? "" : "s");
	printf("%-11s", "policy");
	for (size_t k = 0; k < N_TABLE_LEVELS; k++)
		printf(" %13d", table_levels[k]);
	if (!frag)
		printf(" %9s", "cpu s/run");
	putchar('\n');
	for (size_t p = 0; p < b->n_policies; p++) {
		printf("%-11s", gs_trace_policy_display(b->policies[p]));
		for (size_t k = 0; k < N_TABLE_LEVELS; k++) {
			struct gs_trace_bench_stat st = gs_trace_bench_stat_of(
			    b, p, (size_t)table_levels[k], frag);
			if (st.n == 0)
				printf(" %13s", "-");
			else
				printf(" %6.2f \xc2\xb1 %4.2f", st.mean, st.sd);
		}
		if (!frag)
			printf(" %9.3f", gs_trace_bench_seconds(b, p));
		putchar('\n');
	}
}

void gs_trace_bench_print_text(const struct gs_trace_bench *b)
{
	int64_t gpus = 0, demand = 0;
	size_t tasks = 0, failed = 0;

	for (size_t i = 0; i < b->n_nodes; i++)
		gpus += b->nodes[i].gpus;
	for (size_t i = 0; i < b->n_pods; i++)
		demand += (int64_t)b->pods[i].num_gpu * b->pods[i].gpu_milli;
	for (size_t k = 0; k < b->n_job; k++) {
		tasks += b->job[k].res.tasks;
		failed += b->job[k].res.failed;
	}
	printf(
	    "trace: %zu nodes, %lld GPUs; %zu tasks asking for %.1f%% of GPU capacity; inflated to %.2fx; %.0f tasks per run, %.1f%% failed\n\n",
	    b->n_nodes, (long long)gpus, b->n_pods,
	    gpus ? 100.0 * (double)demand / (double)(gpus * 1000) : 0.0,
	    b->tune, (double)tasks / (double)b->n_job,
	    tasks ? 100.0 * (double)failed / (double)tasks : 0.0);
	print_table(b, false);
	putchar('\n');
	print_table(b, true);
}

static json_t *num_or_null(double v)
{
	return isnan(v) ? json_null() : json_real(round(v * 1000.0) / 1000.0);
}

gs_err gs_trace_bench_print_json(const struct gs_trace_bench *b,
                                 struct gs_errbuf *eb)
{
	json_t *root = json_object(), *arr = json_array();
	char *s;

	if (root == NULL || arr == NULL)
		goto oom;
	for (size_t p = 0; p < b->n_policies; p++) {
		for (int a = GS_TRACE_BENCH_LEVEL_LO; a <= GS_TRACE_MAX_LEVEL;
		     a++) {
			struct gs_trace_bench_stat u =
			    gs_trace_bench_stat_of(b, p, (size_t)a, false);
			struct gs_trace_bench_stat f =
			    gs_trace_bench_stat_of(b, p, (size_t)a, true);
			json_t *e = json_pack(
			    "{s:s, s:i, s:o, s:o, s:o, s:o, s:i}", "policy",
			    gs_trace_policy_name(b->policies[p]), "arrived_pct",
			    a, "unallocated_pct_mean", num_or_null(u.mean),
			    "unallocated_pct_sd", num_or_null(u.sd),
			    "frag_pct_mean", num_or_null(f.mean), "frag_pct_sd",
			    num_or_null(f.sd), "seeds", (int)u.n);
			if (e == NULL || json_array_append_new(arr, e) != 0)
				goto oom;
		}
	}
	if (json_object_set_new(root, "results", arr) != 0) {
		arr = NULL;
		goto oom;
	}
	arr = NULL;
	s = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(6));
	if (s == NULL)
		goto oom;
	puts(s);
	free(s);
	json_decref(root);
	return GS_OK;
oom:
	json_decref(arr);
	json_decref(root);
	return gs_fail(eb, GS_ERR_NOMEM, "out of memory writing JSON");
}

void gs_trace_bench_write_csv(const struct gs_trace_bench *b, FILE *f)
{
	fprintf(
	    f,
	    "policy,arrived_pct,unallocated_pct_mean,unallocated_pct_sd,frag_pct_mean,frag_pct_sd,seeds\n");
	for (size_t p = 0; p < b->n_policies; p++) {
		for (int a = 0; a <= GS_TRACE_MAX_LEVEL; a++) {
			struct gs_trace_bench_stat u =
			    gs_trace_bench_stat_of(b, p, (size_t)a, false);
			struct gs_trace_bench_stat fr =
			    gs_trace_bench_stat_of(b, p, (size_t)a, true);
			if (u.n == 0)
				continue;
			fprintf(f, "%s,%d,%.3f,%.3f,%.3f,%.3f,%zu\n",
			        gs_trace_policy_name(b->policies[p]), a, u.mean,
			        u.sd, fr.mean, fr.sd, u.n);
		}
	}
}

/*
 * The chart: unallocated % (y) against arrived % (x, 70..130), one line
 * per policy, with a legend. Plain SVG 1.1, no scripts or fonts.
 */
gs_err gs_trace_bench_write_svg(const struct gs_trace_bench *b, FILE *f,
                                struct gs_errbuf *eb)
{
	static const char *colors[] = {"#7f7f7f", "#1f77b4", "#9467bd",
	                               "#8c564b", "#2ca02c", "#ff7f0e",
	                               "#d62728"};
	enum { X0 = 70, X1 = 130 };
	double y[GS_TRACE_POLICY__COUNT][X1 - X0 + 1];
	struct gs_svg_line line[GS_TRACE_POLICY__COUNT];
	char title[128];

	for (size_t p = 0; p < b->n_policies; p++) {
		for (int a = X0; a <= X1; a++)
			y[p][a - X0] =
			    gs_trace_bench_stat_of(b, p, (size_t)a, false).mean;
		line[p] = (struct gs_svg_line){
		    .name = gs_trace_policy_display(b->policies[p]),
		    .color = colors[b->policies[p] % 7],
		    .y = y[p]};
	}
	(void)snprintf(
	    title, sizeof(title),
	    "Unallocated GPU vs arrived workload (mean of %zu seed%s, tune %.2f)",
	    b->n_seeds, b->n_seeds == 1 ? "" : "s", b->tune);
	return gs_svg_lines_write(
	    f,
	    &(struct gs_svg_lines){.title = title,
	                           .x_label =
	                               "arrived GPU demand (% of capacity)",
	                           .y_label = "unallocated GPU (% of capacity)",
	                           .x0 = X0,
	                           .x1 = X1,
	                           .x_step = 10,
	                           .n_lines = (int)b->n_policies,
	                           .lines = line},
	    eb);
}
