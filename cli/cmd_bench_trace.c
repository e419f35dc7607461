/*
 * cmd_bench_trace.c - `gpuslice bench trace`: replays a cluster trace's
 * task list on its node list with placement policies and reports, per
 * policy, the unallocated GPU % and the fragmentation % at arrival levels
 * 90..130 (mean and sd over seeds), as the FGD paper measured them
 * (docs/placement.md).
 *
 * Output: a table on stdout, or JSON with --json; with --out DIR also
 * DIR/results.csv (every level 0..130) and DIR/unallocated.svg (the
 * curves, drawn here directly). Progress goes to stderr: a live line on a
 * terminal, otherwise a line every ten seconds; never on stdout.
 *
 * Runs (policy x seed) are independent; --jobs N spreads them over N
 * threads. Each run is deterministic for its seed.
 */
#include "cli.h"
#include "trace_csv.h"

#include "gs/trace.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CMD       "bench trace"
#define MAX_SEEDS 1000
#define MAX_JOBS  64
#define LEVEL_LO  90

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: gpuslice bench trace --nodes FILE --pods FILE [options]\n"
	    "\n"
	    "Replays a cluster trace's task list on its node list, one task at a time\n"
	    "with no departures, and compares placement policies by the GPU capacity\n"
	    "they leave unallocated (the FGD paper's method; Alibaba cluster-trace-\n"
	    "gpu-v2023 CSV columns).\n"
	    "\n"
	    "options:\n"
	    "  --nodes FILE          node list (sn,cpu_milli,memory_mib,gpu,model)\n"
	    "  --pods FILE           task list (cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec])\n"
	    "  --policy NAME[,NAME]  random, dotprod, clustering, packing, bestfit, fgd,\n"
	    "                        gpuslice, or all (default: all)\n"
	    "  --seeds A-B|A,B,...   seeds to average over (default: 42-51)\n"
	    "  --tune X              inflate GPU demand to X times capacity (default 1.3;\n"
	    "                        0 replays the list as it is)\n"
	    "  --jobs N              runs in parallel threads (default 1)\n"
	    "  --constrain PCT       variant: restrict PCT %% of the GPU tasks to 1-2 GPU\n"
	    "                        models, drawn by the node list's model mix\n"
	    "  --constrain-models K  a constrained task accepts 1 to K models (default 2)\n"
	    "  --gangs PCT           variant: turn PCT %% of the one-GPU tasks into 2/4/8\n"
	    "                        whole-GPU tasks (the list's own multi-GPU mix)\n"
	    "  --ablate T[,T]        switch off terms of the gpuslice policy: strand,\n"
	    "                        model, gang, demand, reserve (docs/placement.md)\n"
	    "  --variant-seed N      seed of the variant (default 1); the variant is\n"
	    "                        the same for every replay seed\n"
	    "  --out DIR             also write DIR/results.csv and DIR/unallocated.svg\n"
	    "  --json                print JSON: {\"results\":[{\"policy\",\"arrived_pct\",\n"
	    "                        \"unallocated_pct_mean\",\"unallocated_pct_sd\",\n"
	    "                        \"frag_pct_mean\",...}]} for arrival levels 90..130\n"
	    "  --help                this text\n"
	    "\n"
	    "Exit status: 0 ok, 1 failure, 2 usage or bad input, 3 file not found.\n");
}

struct job {
	enum gs_trace_policy policy;
	uint64_t seed;
	struct gs_trace_result res;
	double seconds; /* CPU time of the run's thread: immune to other load */
	gs_err err;
	struct gs_errbuf eb;
	size_t done, total; /* progress of this run, in tasks */
};

struct bench {
	struct gs_trace_node *nodes;
	size_t n_nodes;
	struct gs_trace_pod *pods;
	size_t n_pods;
	struct gs_trace_models models;
	int policies[GS_TRACE_POLICY__COUNT];
	size_t n_policies;
	uint64_t seeds[MAX_SEEDS];
	size_t n_seeds;
	double tune;
	unsigned jobs_n;
	const char *out_dir;
	bool json;
	struct gs_trace_variant_cfg variant;
	unsigned ablate; /* GS_TRACE_ABLATE_* for the gpuslice policy */

	struct job *job;
	size_t n_job;
	size_t next_job; /* under lock */
	size_t finished; /* under lock */
	pthread_mutex_t lock;
	bool tty;
	double t0, last_line;
};

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

/* ---- Options ---------------------------------------------------------- */

static int parse_policies(struct bench *b, const char *s)
{
	char buf[256];
	char *save = NULL, *tok;

	if (strlen(s) >= sizeof(buf)) {
		gs_cli_error(CMD, "--policy list is too long");
		return GS_EXIT_USAGE;
	}
	strcpy(buf, s);
	b->n_policies = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		int p;
		if (strcmp(tok, "all") == 0) {
			b->n_policies = 0;
			for (int k = 0; k < GS_TRACE_POLICY__COUNT; k++)
				b->policies[b->n_policies++] = k;
			return 0;
		}
		p = gs_trace_policy_parse(tok);
		if (p < 0) {
			gs_cli_error(
			    CMD,
			    "unknown policy '%s' (random, dotprod, clustering, packing, bestfit, fgd, gpuslice, all)",
			    tok);
			return GS_EXIT_USAGE;
		}
		for (size_t k = 0; k < b->n_policies; k++) {
			if (b->policies[k] == p) {
				p = -1;
				break;
			}
		}
		if (p >= 0)
			b->policies[b->n_policies++] = p;
	}
	if (b->n_policies == 0) {
		gs_cli_error(CMD, "--policy names no policy");
		return GS_EXIT_USAGE;
	}
	return 0;
}

static bool parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno == 0 && *end == '\0';
}

static int parse_seeds(struct bench *b, const char *s)
{
	char buf[1024];
	char *save = NULL, *tok;

	if (strlen(s) >= sizeof(buf)) {
		gs_cli_error(CMD, "--seeds list is too long");
		return GS_EXIT_USAGE;
	}
	strcpy(buf, s);
	b->n_seeds = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		uint64_t lo, hi;
		if (dash) {
			*dash = '\0';
			if (!parse_u64(tok, &lo) || !parse_u64(dash + 1, &hi) ||
			    hi < lo)
				goto bad;
		} else {
			if (!parse_u64(tok, &lo))
				goto bad;
			hi = lo;
		}
		if (hi - lo >= MAX_SEEDS ||
		    b->n_seeds + (hi - lo + 1) > MAX_SEEDS) {
			gs_cli_error(CMD, "--seeds: at most %d seeds",
			             MAX_SEEDS);
			return GS_EXIT_USAGE;
		}
		for (uint64_t v = lo; v <= hi; v++)
			b->seeds[b->n_seeds++] = v;
	}
	if (b->n_seeds == 0)
		goto bad;
	return 0;
bad:
	gs_cli_error(
	    CMD,
	    "--seeds '%s': expected A-B or A,B,... (non-negative integers)", s);
	return GS_EXIT_USAGE;
}

/* ---- Progress --------------------------------------------------------- */

static void report_progress(struct bench *b, bool final)
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
	struct bench *b;
	struct job *j;
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
	struct bench *b = arg;

	for (;;) {
		struct gs_trace_replay_cfg cfg;
		struct progress_arg pa;
		struct job *j;
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

static int run_all(struct bench *b)
{
	pthread_t tid[MAX_JOBS];
	unsigned nt = b->jobs_n, started = 0;

	b->n_job = b->n_policies * b->n_seeds;
	b->job = calloc(b->n_job, sizeof(*b->job));
	if (b->job == NULL) {
		gs_cli_error(CMD, "out of memory");
		return GS_EXIT_FAILURE;
	}
	for (size_t p = 0; p < b->n_policies; p++) {
		for (size_t s = 0; s < b->n_seeds; s++) {
			struct job *j = &b->job[p * b->n_seeds + s];
			j->policy = b->policies[p];
			j->seed = b->seeds[s];
		}
	}
	b->tty = isatty(STDERR_FILENO);
	b->t0 = now_s();
	b->last_line = b->t0;
	if (pthread_mutex_init(&b->lock, NULL) != 0) {
		gs_cli_error(CMD, "cannot create a lock");
		return GS_EXIT_FAILURE;
	}
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
		if (b->job[k].err != GS_OK)
			return gs_cli_fail(CMD, b->job[k].err, &b->job[k].eb);
	}
	return 0;
}

/* ---- Aggregation ------------------------------------------------------ */

struct stat_pair {
	double mean, sd;
	size_t n;
};

static struct stat_pair stat_of(const struct bench *b, size_t p, size_t level,
                                bool frag)
{
	struct stat_pair st = {NAN, NAN, 0};
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

static double mean_seconds(const struct bench *b, size_t p)
{
	double sum = 0;

	for (size_t s = 0; s < b->n_seeds; s++)
		sum += b->job[p * b->n_seeds + s].seconds;
	return sum / (double)b->n_seeds;
}

/* ---- Output ----------------------------------------------------------- */

static const int table_levels[] = {90, 95, 100, 105, 110, 120, 130};
#define N_TABLE_LEVELS (sizeof(table_levels) / sizeof(table_levels[0]))

static void print_table(const struct bench *b, bool frag)
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
			struct stat_pair st =
			    stat_of(b, p, (size_t)table_levels[k], frag);
			if (st.n == 0)
				printf(" %13s", "-");
			else
				printf(" %6.2f \xc2\xb1 %4.2f", st.mean, st.sd);
		}
		if (!frag)
			printf(" %9.3f", mean_seconds(b, p));
		putchar('\n');
	}
}

static void print_text(const struct bench *b)
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

static int print_json(const struct bench *b)
{
	json_t *root = json_object(), *arr = json_array();
	char *s;

	if (root == NULL || arr == NULL)
		goto oom;
	for (size_t p = 0; p < b->n_policies; p++) {
		for (int a = LEVEL_LO; a <= GS_TRACE_MAX_LEVEL; a++) {
			struct stat_pair u = stat_of(b, p, (size_t)a, false);
			struct stat_pair f = stat_of(b, p, (size_t)a, true);
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
	return 0;
oom:
	json_decref(arr);
	json_decref(root);
	gs_cli_error(CMD, "out of memory writing JSON");
	return GS_EXIT_FAILURE;
}

static FILE *open_out(const struct bench *b, const char *name, char *path,
                      size_t cap)
{
	FILE *f;

	if ((size_t)snprintf(path, cap, "%s/%s", b->out_dir, name) >= cap) {
		gs_cli_error(CMD, "--out path is too long");
		return NULL;
	}
	f = fopen(path, "w");
	if (f == NULL)
		gs_cli_error(CMD, "%s: %s", path, strerror(errno));
	return f;
}

static int close_out(FILE *f, const char *path)
{
	int bad = ferror(f);

	if (fclose(f) != 0 || bad) {
		gs_cli_error(CMD, "%s: write failed", path);
		return GS_EXIT_FAILURE;
	}
	return 0;
}

static int write_csv(const struct bench *b)
{
	char path[4096];
	FILE *f = open_out(b, "results.csv", path, sizeof(path));

	if (f == NULL)
		return GS_EXIT_FAILURE;
	fprintf(
	    f,
	    "policy,arrived_pct,unallocated_pct_mean,unallocated_pct_sd,frag_pct_mean,frag_pct_sd,seeds\n");
	for (size_t p = 0; p < b->n_policies; p++) {
		for (int a = 0; a <= GS_TRACE_MAX_LEVEL; a++) {
			struct stat_pair u = stat_of(b, p, (size_t)a, false);
			struct stat_pair fr = stat_of(b, p, (size_t)a, true);
			if (u.n == 0)
				continue;
			fprintf(f, "%s,%d,%.3f,%.3f,%.3f,%.3f,%zu\n",
			        gs_trace_policy_name(b->policies[p]), a, u.mean,
			        u.sd, fr.mean, fr.sd, u.n);
		}
	}
	return close_out(f, path);
}

/*
 * The chart: unallocated % (y) against arrived % (x, 70..130), one line
 * per policy, with a legend. Plain SVG 1.1, no scripts or fonts.
 */
static int write_svg(const struct bench *b)
{
	static const char *colors[] = {"#7f7f7f", "#1f77b4", "#9467bd",
	                               "#8c564b", "#2ca02c", "#ff7f0e",
	                               "#d62728"};
	const double W = 760, H = 460, L = 70, R = 170, T = 50, B = 60;
	const int x0 = 70, x1 = 130;
	char path[4096];
	double ymax = 5;
	FILE *f;

	for (size_t p = 0; p < b->n_policies; p++) {
		for (int a = x0; a <= x1; a++) {
			struct stat_pair u = stat_of(b, p, (size_t)a, false);
			if (u.n && u.mean > ymax)
				ymax = u.mean;
		}
	}
	ymax = ceil(ymax / 5.0) * 5.0;
	f = open_out(b, "unallocated.svg", path, sizeof(path));
	if (f == NULL)
		return GS_EXIT_FAILURE;
#define PX(a) (L + ((double)(a)-x0) * (W - L - R) / (double)(x1 - x0))
#define PY(v) (H - B - (v) * (H - T - B) / ymax)
	fprintf(
	    f,
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
	    "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
	    W, H, W, H);
	fprintf(
	    f,
	    "<text x=\"%.0f\" y=\"28\" font-size=\"15\" text-anchor=\"middle\">Unallocated GPU vs arrived workload (mean of %zu seed%s, tune %.2f)</text>\n",
	    (L + W - R) / 2, b->n_seeds, b->n_seeds == 1 ? "" : "s", b->tune);
	for (double v = 0; v <= ymax + 1e-9; v += ymax > 20   ? 5
	                                          : ymax > 10 ? 2
	                                                      : 1) {
		fprintf(
		    f,
		    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n",
		    L, PY(v), W - R, PY(v));
		fprintf(
		    f,
		    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
		    L - 6, PY(v) + 4, v);
	}
	for (int a = x0; a <= x1; a += 10) {
		fprintf(
		    f,
		    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n",
		    PX(a), T, PX(a), H - B);
		fprintf(
		    f,
		    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>\n",
		    PX(a), H - B + 18, a);
	}
	fprintf(
	    f,
	    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"black\"/>\n",
	    L, T, W - L - R, H - T - B);
	fprintf(
	    f,
	    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">arrived GPU demand (%% of capacity)</text>\n",
	    (L + W - R) / 2, H - 18);
	fprintf(
	    f,
	    "<text transform=\"translate(20 %.1f) rotate(-90)\" text-anchor=\"middle\">unallocated GPU (%% of capacity)</text>\n",
	    (T + H - B) / 2);
	for (size_t p = 0; p < b->n_policies; p++) {
		const char *col = colors[b->policies[p] % 7];
		bool open = false;
		for (int a = x0; a <= x1; a++) {
			struct stat_pair u = stat_of(b, p, (size_t)a, false);
			if (u.n == 0)
				continue;
			fprintf(
			    f, "%s%.1f,%.1f",
			    open
			        ? " "
			        : "<polyline fill=\"none\" stroke-width=\"2\" points=\"",
			    PX(a), PY(u.mean));
			open = true;
		}
		if (open)
			fprintf(f, "\" stroke=\"%s\"/>\n", col);
		fprintf(
		    f,
		    "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>\n",
		    W - R + 14, T + 10 + 20.0 * (double)p, W - R + 38,
		    T + 10 + 20.0 * (double)p, col);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
		        W - R + 44, T + 14 + 20.0 * (double)p,
		        gs_trace_policy_display(b->policies[p]));
	}
#undef PX
#undef PY
	fprintf(f, "</svg>\n");
	return close_out(f, path);
}

/* ---- Entry ------------------------------------------------------------ */

static int load(struct bench *b, const char *nodes_path, const char *pods_path)
{
	struct gs_errbuf eb;
	char *buf = NULL;
	size_t len;
	gs_err err;

	gs_errbuf_init(&eb);
	err = gs_trace_csv_read_file(nodes_path, &buf, &len, &eb);
	if (err == GS_OK)
		err = gs_trace_csv_parse_nodes(buf, len, nodes_path, &b->models,
		                               &b->nodes, &b->n_nodes, &eb);
	free(buf);
	buf = NULL;
	if (err == GS_OK)
		err = gs_trace_csv_read_file(pods_path, &buf, &len, &eb);
	if (err == GS_OK)
		err = gs_trace_csv_parse_pods(buf, len, pods_path, &b->models,
		                              &b->pods, &b->n_pods, &eb);
	free(buf);
	if (err == GS_OK &&
	    (b->variant.constrain_pct > 0 || b->variant.gang_pct > 0))
		err = gs_trace_variant_apply(b->pods, b->n_pods, b->nodes,
		                             b->n_nodes, &b->variant, &eb);
	if (err != GS_OK)
		return gs_cli_fail(CMD, err, &eb);
	for (size_t i = 0, g = 0; i < b->n_nodes; i++) {
		g += b->nodes[i].gpus;
		if (i + 1 == b->n_nodes && g == 0) {
			gs_cli_error(CMD, "%s: no node has a GPU", nodes_path);
			return GS_EXIT_USAGE;
		}
	}
	return 0;
}

/* Parses "strand,model" into GS_TRACE_ABLATE_* bits; -1 on a bad name. */
static int parse_ablate(const char *v, unsigned *out)
{
	static const struct {
		const char *name;
		unsigned bit;
	} terms[] = {
	    {"strand", GS_TRACE_ABLATE_STRAND},
	    {"model", GS_TRACE_ABLATE_MODEL},
	    {"gang", GS_TRACE_ABLATE_GANG},
	    {"demand", GS_TRACE_ABLATE_DEMAND},
	    {"reserve", GS_TRACE_ABLATE_RESERVE},
	};
	const char *p = v;

	*out = 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		bool found = false;
		for (size_t t = 0; t < sizeof(terms) / sizeof(terms[0]); t++) {
			if (strlen(terms[t].name) == len &&
			    strncmp(terms[t].name, p, len) == 0) {
				*out |= terms[t].bit;
				found = true;
			}
		}
		if (!found) {
			gs_cli_error(CMD,
			             "--ablate '%s': unknown term '%.*s' "
			             "(strand, model, gang, demand, reserve)",
			             v, (int)len, p);
			return -1;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* The value of option `name` at argv[*i] ("--x v" or "--x=v"), or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name,
                             bool *matched)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	*matched = false;
	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=') {
		*matched = true;
		return a + n + 1;
	}
	if (a[n] != '\0')
		return NULL;
	*matched = true;
	if (*i + 1 >= argc) {
		gs_cli_error(CMD, "%s needs a value", name);
		return NULL;
	}
	return argv[++*i];
}

/* Called by cmd_bench.c, which declares it weak. */
int gs_cli_bench_trace(int argc, char **argv);

int gs_cli_bench_trace(int argc, char **argv)
{
	struct bench b;
	const char *nodes_path = NULL, *pods_path = NULL;
	int rc;

	memset(&b, 0, sizeof(b));
	b.tune = 1.3;
	b.jobs_n = 1;
	b.variant.seed = 1;
	for (int k = 0; k < GS_TRACE_POLICY__COUNT; k++)
		b.policies[b.n_policies++] = k;
	for (uint64_t s = 42; s <= 51; s++)
		b.seeds[b.n_seeds++] = s;

	for (int i = 1; i < argc; i++) {
		const char *v, *opt = argv[i];
		bool m;

		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return GS_EXIT_OK;
		}
		if (strcmp(argv[i], "--json") == 0) {
			b.json = true;
			continue;
		}
		if ((v = opt_value(argc, argv, &i, "--nodes", &m)) || m) {
			if (!v)
				return GS_EXIT_USAGE;
			nodes_path = v;
		} else if ((v = opt_value(argc, argv, &i, "--pods", &m)) || m) {
			if (!v)
				return GS_EXIT_USAGE;
			pods_path = v;
		} else if ((v = opt_value(argc, argv, &i, "--policy", &m)) ||
		           m) {
			if (!v || (rc = parse_policies(&b, v)) != 0)
				return GS_EXIT_USAGE;
		} else if ((v = opt_value(argc, argv, &i, "--seeds", &m)) ||
		           m) {
			if (!v || (rc = parse_seeds(&b, v)) != 0)
				return GS_EXIT_USAGE;
		} else if ((v = opt_value(argc, argv, &i, "--tune", &m)) || m) {
			char *end;
			if (!v)
				return GS_EXIT_USAGE;
			errno = 0;
			b.tune = strtod(v, &end);
			if (errno || *end || end == v || !(b.tune >= 0) ||
			    b.tune > 100) {
				gs_cli_error(
				    CMD,
				    "--tune '%s': expected a number from 0 to 100",
				    v);
				return GS_EXIT_USAGE;
			}
		} else if ((v = opt_value(argc, argv, &i, "--jobs", &m)) || m) {
			uint64_t n;
			if (!v)
				return GS_EXIT_USAGE;
			if (!parse_u64(v, &n) || n < 1 || n > MAX_JOBS) {
				gs_cli_error(CMD,
				             "--jobs '%s': expected 1 to %d", v,
				             MAX_JOBS);
				return GS_EXIT_USAGE;
			}
			b.jobs_n = (unsigned)n;
		} else if ((v = opt_value(argc, argv, &i, "--constrain", &m)) ||
		           m || (v = opt_value(argc, argv, &i, "--gangs", &m)) ||
		           m) {
			bool gangs = strncmp(opt, "--gangs", 7) == 0;
			char *end;
			double x;
			if (!v)
				return GS_EXIT_USAGE;
			errno = 0;
			x = strtod(v, &end);
			if (errno || *end || end == v || !(x >= 0) || x > 100) {
				gs_cli_error(CMD,
				             "%s '%s': expected a percentage "
				             "from 0 to 100",
				             gangs ? "--gangs" : "--constrain", v);
				return GS_EXIT_USAGE;
			}
			if (gangs)
				b.variant.gang_pct = x;
			else
				b.variant.constrain_pct = x;
		} else if ((v = opt_value(argc, argv, &i, "--ablate", &m)) ||
		           m) {
			if (!v || parse_ablate(v, &b.ablate) != 0)
				return GS_EXIT_USAGE;
		} else if ((v = opt_value(argc, argv, &i, "--constrain-models",
		                          &m)) ||
		           m) {
			uint64_t n;
			if (!v)
				return GS_EXIT_USAGE;
			if (!parse_u64(v, &n) || n < 1 || n > 8) {
				gs_cli_error(CMD,
				             "--constrain-models '%s': expected 1 "
				             "to 8",
				             v);
				return GS_EXIT_USAGE;
			}
			b.variant.max_models = (unsigned)n;
		} else if ((v = opt_value(argc, argv, &i, "--variant-seed",
		                          &m)) ||
		           m) {
			uint64_t n;
			if (!v)
				return GS_EXIT_USAGE;
			if (!parse_u64(v, &n)) {
				gs_cli_error(CMD,
				             "--variant-seed '%s': expected a "
				             "non-negative integer",
				             v);
				return GS_EXIT_USAGE;
			}
			b.variant.seed = n;
		} else if ((v = opt_value(argc, argv, &i, "--out", &m)) || m) {
			if (!v)
				return GS_EXIT_USAGE;
			b.out_dir = v;
		} else {
			gs_cli_error(CMD, "unknown option '%s' (see --help)",
			             argv[i]);
			return GS_EXIT_USAGE;
		}
	}
	if (nodes_path == NULL || pods_path == NULL) {
		gs_cli_error(CMD,
		             "--nodes and --pods are required (see --help)");
		return GS_EXIT_USAGE;
	}
	if (b.out_dir && mkdir(b.out_dir, 0777) != 0 && errno != EEXIST) {
		gs_cli_error(CMD, "--out %s: %s", b.out_dir, strerror(errno));
		return GS_EXIT_FAILURE;
	}
	rc = load(&b, nodes_path, pods_path);
	if (rc == 0)
		rc = run_all(&b);
	if (rc == 0)
		rc = b.json ? print_json(&b) : (print_text(&b), 0);
	if (rc == 0 && b.out_dir) {
		rc = write_csv(&b);
		if (rc == 0)
			rc = write_svg(&b);
	}
	free(b.job);
	free(b.nodes);
	free(b.pods);
	return rc;
}
