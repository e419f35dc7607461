/*
 * trace_bench.c - the trace benchmark's runner (see trace_bench.h):
 * loading the lists, the runs (policy x seed) on worker threads with a
 * progress line on stderr (a live line on a terminal, otherwise a line
 * every ten seconds; never on stdout), and the statistics over seeds.
 */
#include "trace_bench.h"
#include "trace_csv.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double clock_s(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* ---- Progress --------------------------------------------------------- */

static void report_progress(struct gs_trace_bench *b, bool final)
{
	double t = now_s();
	size_t done = 0, total = 0, est = 0;

	if (b->tty) {
		if (!final && t - b->last_line < 0.2)
			return;
	} else if (!final && t - b->last_line < 10.0) {
		return;
	}
	b->last_line = t;
	/* Runs of one list have about the same length: count those not
	 * started yet as long as the longest one seen so far. */
	for (size_t k = 0; k < b->n_job; k++)
		est = b->job[k].total > est ? b->job[k].total : est;
	for (size_t k = 0; k < b->n_job; k++) {
		done += b->job[k].done;
		total += b->job[k].total ? b->job[k].total : est;
	}
	if (b->tty) {
		fprintf(
		    stderr,
		    "\rgpuslice bench trace: %zu/%zu runs, %3.0f%% of tasks, %.0f s ",
		    b->finished, b->n_job,
		    total ? 100.0 * (double)done / (double)total : 0.0,
		    t - b->t0);
		if (final)
			fputc('\n', stderr);
	} else if (!final) {
		fprintf(stderr,
		        "gpuslice bench trace: %zu/%zu runs done, %.0f s\n",
		        b->finished, b->n_job, t - b->t0);
	}
}

struct progress_arg {
	struct gs_trace_bench *b;
	struct gs_trace_bench_run *j;
};

static void on_progress(void *arg, size_t done, size_t total)
{
	struct progress_arg *pa = arg;

	pthread_mutex_lock(&pa->b->lock);
	pa->j->done = done;
	pa->j->total = total;
	report_progress(pa->b, false);
	pthread_mutex_unlock(&pa->b->lock);
}

/* ---- Runs ------------------------------------------------------------- */

static void *worker(void *arg)
{
	struct gs_trace_bench *b = arg;

	for (;;) {
		struct gs_trace_replay_cfg cfg;
		struct progress_arg pa;
		struct gs_trace_bench_run *j;
		double t;

		pthread_mutex_lock(&b->lock);
		if (b->next_job == b->n_job) {
			pthread_mutex_unlock(&b->lock);
			return NULL;
		}
		j = &b->job[b->next_job++];
		pthread_mutex_unlock(&b->lock);

		gs_trace_replay_cfg_default(&cfg);
		cfg.seed = j->seed;
		cfg.tune = b->tune;
		cfg.ablate = b->ablate;
		cfg.eps = b->eps;
		pa.b = b;
		pa.j = j;
		cfg.progress = on_progress;
		cfg.progress_arg = &pa;
		gs_errbuf_init(&j->eb);
		t = clock_s(CLOCK_THREAD_CPUTIME_ID);
		j->err =
		    gs_trace_replay(b->nodes, b->n_nodes, b->pods, b->n_pods,
		                    j->policy, &cfg, &j->res, &j->eb);
		j->seconds = clock_s(CLOCK_THREAD_CPUTIME_ID) - t;

		pthread_mutex_lock(&b->lock);
		b->finished++;
		report_progress(b, false);
		pthread_mutex_unlock(&b->lock);
	}
}

gs_err gs_trace_bench_run(struct gs_trace_bench *b, struct gs_errbuf *eb)
{
	pthread_t tid[GS_TRACE_BENCH_MAX_JOBS];
	unsigned nt = b->jobs_n, started = 0;

	b->n_job = b->n_policies * b->n_seeds;
	b->job = calloc(b->n_job, sizeof(*b->job));
	if (b->job == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	for (size_t p = 0; p < b->n_policies; p++) {
		for (size_t s = 0; s < b->n_seeds; s++) {
			struct gs_trace_bench_run *j =
			    &b->job[p * b->n_seeds + s];
			j->policy = b->policies[p];
			j->seed = b->seeds[s];
		}
	}
	b->tty = isatty(STDERR_FILENO);
	b->t0 = now_s();
	b->last_line = b->t0;
	if (pthread_mutex_init(&b->lock, NULL) != 0)
		return gs_fail(eb, GS_ERR_INTERNAL, "cannot create a lock");
	if (nt > b->n_job)
		nt = (unsigned)b->n_job;
	for (unsigned k = 1; k < nt; k++) {
		if (pthread_create(&tid[k], NULL, worker, b) != 0)
			break;
		started++;
	}
	worker(b);
	for (unsigned k = 1; k <= started; k++)
		pthread_join(tid[k], NULL);
	if (b->tty)
		report_progress(b, true);
	pthread_mutex_destroy(&b->lock);
	for (size_t k = 0; k < b->n_job; k++) {
		if (b->job[k].err != GS_OK) {
			if (eb != NULL && !eb->set)
				*eb = b->job[k].eb;
			return b->job[k].err;
		}
	}
	return GS_OK;
}

/* ---- Aggregation ------------------------------------------------------ */

struct gs_trace_bench_stat
gs_trace_bench_stat_of(const struct gs_trace_bench *b, size_t p, size_t level,
                       bool frag)
{
	struct gs_trace_bench_stat st = {NAN, NAN, 0};
	double sum = 0, sq = 0;

	for (size_t s = 0; s < b->n_seeds; s++) {
		const struct gs_trace_result *r =
		    &b->job[p * b->n_seeds + s].res;
		double v = frag ? r->frag_pct[level] : r->unalloc_pct[level];
		if (isnan(v))
			continue;
		sum += v;
		st.n++;
	}
	if (st.n == 0)
		return st;
	st.mean = sum / (double)st.n;
	for (size_t s = 0; s < b->n_seeds; s++) {
		const struct gs_trace_result *r =
		    &b->job[p * b->n_seeds + s].res;
		double v = frag ? r->frag_pct[level] : r->unalloc_pct[level];
		if (!isnan(v))
			sq += (v - st.mean) * (v - st.mean);
	}
	st.sd = st.n > 1 ? sqrt(sq / (double)(st.n - 1)) : 0;
	return st;
}

double gs_trace_bench_seconds(const struct gs_trace_bench *b, size_t p)
{
	double sum = 0;

	for (size_t s = 0; s < b->n_seeds; s++)
		sum += b->job[p * b->n_seeds + s].seconds;
	return sum / (double)b->n_seeds;
}

/* ---- Loading ---------------------------------------------------------- */

gs_err gs_trace_bench_load(struct gs_trace_bench *b, const char *nodes_path,
                           const char *pods_path, struct gs_errbuf *eb)
{
	char *buf = NULL;
	size_t len;
	gs_err err;

	err = gs_trace_csv_read_file(nodes_path, &buf, &len, eb);
	if (err == GS_OK)
		err = gs_trace_csv_parse_nodes(buf, len, nodes_path, &b->models,
		                               &b->nodes, &b->n_nodes, eb);
	free(buf);
	buf = NULL;
	if (err == GS_OK)
		err = gs_trace_csv_read_file(pods_path, &buf, &len, eb);
	if (err == GS_OK)
		err = gs_trace_csv_parse_pods(buf, len, pods_path, &b->models,
		                              &b->pods, &b->n_pods, eb);
	free(buf);
	if (err == GS_OK &&
	    (b->variant.constrain_pct > 0 || b->variant.gang_pct > 0))
		err = gs_trace_variant_apply(b->pods, b->n_pods, b->nodes,
		                             b->n_nodes, &b->variant, eb);
	if (err != GS_OK)
		return err;
	for (size_t i = 0, g = 0; i < b->n_nodes; i++) {
		g += b->nodes[i].gpus;
		if (i + 1 == b->n_nodes && g == 0)
			return gs_fail(eb, GS_ERR_INVALID,
			               "%s: no node has a GPU", nodes_path);
	}
	return GS_OK;
}

void gs_trace_bench_fini(struct gs_trace_bench *b)
{
	free(b->job);
	free(b->nodes);
	free(b->pods);
	b->job = NULL;
	b->nodes = NULL;
	b->pods = NULL;
}
