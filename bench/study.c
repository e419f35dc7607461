/*
 * study.c - runs the seed study's cells (study.h) on a node.
 *
 * A cell is one workload under one strategy. It runs as phases, each a
 * set of jobs started together (study_run.h) while the node's probe
 * measures utilisation and per-job memory (study_node.h):
 *
 *   inference-*    shared: server A + server B
 *   small-batch    alone: 1 matmul;   shared: 4 matmuls
 *   gpu-intensive  alone: 1 burn;     shared: 2 burns;
 *                  oom:   a job that takes memory until it fails, then
 *                         (after OOM_DELAY_S) a burn that needs a quarter
 *                         of the device;
 *                  fault: a burn, then (after FAULT_DELAY_S) gs-fault
 *
 * Limits are the cell's, the same in every phase: a slice is configured
 * for the n jobs of the shared phase (MPS limits and gpuslice: 1/n of
 * the memory and of the compute), so the alone phase shows what one job
 * gets from its slice. "exclusive" gives each job a GPU of its own; with
 * fewer GPUs than jobs (one real GPU) its jobs run one after another.
 *
 * The gpu-intensive completion time is derived: gs-burn runs for a fixed
 * time, so the time a fixed job would take is the reference work (the
 * kernels the exclusive job completed) divided by the job's measured
 * rate; in a shared phase the slower job's rate counts.
 */
#include "study.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gs/paths.h"

#define MATMUL_N       128
#define OOM_DELAY_S    1.0
#define FAULT_DELAY_S  0.5
#define FAULT_AFTER_MS 300
#define GREEDY_CHUNK   "1GiB"

static const char *const w_names[] = {
#define GS__W(e, name, title) name,
    GS_STUDY_WORKLOADS(GS__W)
#undef GS__W
};
static const char *const w_titles[] = {
#define GS__W(e, name, title) title,
    GS_STUDY_WORKLOADS(GS__W)
#undef GS__W
};
static const char *const s_names[] = {
#define GS__S(e, name, title) name,
    GS_STUDY_STRATEGIES(GS__S)
#undef GS__S
};
static const char *const s_titles[] = {
#define GS__S(e, name, title) title,
    GS_STUDY_STRATEGIES(GS__S)
#undef GS__S
};

const char *gs_study_workload_name(int w)
{
	return w >= 0 && w < GS_STUDY_W__COUNT ? w_names[w] : "?";
}

const char *gs_study_workload_title(int w)
{
	return w >= 0 && w < GS_STUDY_W__COUNT ? w_titles[w] : "?";
}

const char *gs_study_strategy_name(int s)
{
	return s >= 0 && s < GS_STUDY_S__COUNT ? s_names[s] : "?";
}

const char *gs_study_strategy_title(int s)
{
	return s >= 0 && s < GS_STUDY_S__COUNT ? s_titles[s] : "?";
}

static gs_err parse_list(const char *list, const char *const *names, int n,
                         const char *what, unsigned int *mask,
                         struct gs_errbuf *eb)
{
	const char *p = list;

	*mask = 0;
	if (strcmp(list, "all") == 0) {
		*mask = (1u << n) - 1;
		return GS_OK;
	}
	while (*p != '\0') {
		size_t len = strcspn(p, ",");
		int i;

		for (i = 0; i < n; i++)
			if (strlen(names[i]) == len &&
			    strncmp(names[i], p, len) == 0)
				break;
		if (i == n)
			return gs_fail(eb, GS_ERR_PARSE, "unknown %s '%.*s'",
			               what, (int)len, p);
		*mask |= 1u << i;
		p += len;
		if (*p == ',')
			p++;
	}
	if (*mask == 0)
		return gs_fail(eb, GS_ERR_PARSE, "empty %s list", what);
	return GS_OK;
}

gs_err gs_study_parse_workloads(const char *list, unsigned int *mask,
                                struct gs_errbuf *eb)
{
	return parse_list(list, w_names, GS_STUDY_W__COUNT, "workload", mask,
	                  eb);
}

gs_err gs_study_parse_strategies(const char *list, unsigned int *mask,
                                 struct gs_errbuf *eb)
{
	return parse_list(list, s_names, GS_STUDY_S__COUNT, "strategy", mask,
	                  eb);
}

/* ---- state ------------------------------------------------------------ */

struct params {
	double infer_s;
	long matmul_iters;
	double burn_s;
	double timeout_s;
};

struct study {
	struct gs_study_node *node;
	const struct gs_study_opts *o;
	struct params p;
	double burn_ref_kernels; /* exclusive alone; 0 until known */
	int done, total;
	double t0;
	bool tty;
};

struct phase {
	const char *name;
	int n;
	struct gs_study_job jobs[GS_STUDY_MAX_JOBS];
	const struct gs_study_dev *dev[GS_STUDY_MAX_JOBS];
	double wall_s;
	double util, sm;
	bool sequential;
};

struct cell {
	struct study *s;
	int w, st;
	int share_n;
	char mps_pipe[PATH_MAX];
	json_t *j;
	json_t *phases;
};

enum role {
	R_INFER_LIGHT,
	R_INFER_HEAVY,
	R_MATMUL,
	R_BURN,
	R_GREEDY,
	R_BIG,
	R_FAULT
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void progress(struct study *s, const struct cell *c, const char *what)
{
	int el = (int)(now_s() - s->t0);

	if (!s->o->progress)
		return;
	if (s->tty)
		fprintf(stderr, "\r\033[K");
	fprintf(stderr, "gpuslice bench study: [%2d/%d %d:%02d] %s / %s: %s",
	        s->done + 1, s->total, el / 60, el % 60,
	        gs_study_workload_name(c->w), gs_study_strategy_name(c->st),
	        what);
	fputs(s->tty ? "" : "\n", stderr);
	fflush(stderr);
}

/* ---- jobs -------------------------------------------------------------- */

static const struct gs_study_dev *dev_for(const struct cell *c, int slot)
{
	const struct gs_study_node *n = c->s->node;

	switch (c->st) {
	case GS_STUDY_S_EXCLUSIVE:
		return &n->excl[slot % n->n_excl];
	case GS_STUDY_S_MIG:
		return c->share_n == 4 ? &n->mig4[slot % 4]
		                       : &n->mig2[slot % 2];
	default:
		return &n->shared;
	}
}

static uint64_t mib(uint64_t bytes)
{
	return bytes >> 20;
}

/* The job's program and arguments. */
static gs_err workload_args(const struct cell *c, struct gs_study_job *j,
                            enum role r, const struct gs_study_dev *d)
{
	const struct params *p = &c->s->p;
	const char *bin = c->s->node->bin_dir;
	gs_err e = GS_OK;

	switch (r) {
	case R_INFER_LIGHT:
	case R_INFER_HEAVY:
		e = gs_study_job_arg(j, "%s/gs-infer", bin);
		if (e == GS_OK)
			e = gs_study_job_arg(j, r == R_INFER_LIGHT ? "--light"
			                                           : "--heavy");
		if (e == GS_OK)
			e = gs_study_job_arg(j, "--seconds");
		if (e == GS_OK)
			e = gs_study_job_arg(j, "%g", p->infer_s);
		return e;
	case R_MATMUL:
		e = gs_study_job_arg(j, "%s/gs-matmul", bin);
		if (e == GS_OK)
			e = gs_study_job_arg(j, "--n");
		if (e == GS_OK)
			e = gs_study_job_arg(j, "%d", MATMUL_N);
		if (e == GS_OK)
			e = gs_study_job_arg(j, "--iterations");
		if (e == GS_OK)
			e = gs_study_job_arg(j, "%ld", p->matmul_iters);
		return e;
	case R_BURN:
	case R_BIG:
		e = gs_study_job_arg(j, "%s/gs-burn", bin);
		if (e == GS_OK)
			e = gs_study_job_arg(j, "--seconds");
		if (e == GS_OK)
			e = gs_study_job_arg(j, "%g", p->burn_s);
		if (e == GS_OK && r == R_BIG) {
			/* A quarter of the device, in fewer FMAs per float
			 * so a kernel stays short. */
			e = gs_study_job_arg(j, "--memory");
			if (e == GS_OK)
				e = gs_study_job_arg(j, "%lluMiB",
				                     (unsigned long long)mib(
				                         d->memory_bytes / 4));
			if (e == GS_OK)
				e = gs_study_job_arg(j, "--iters");
			if (e == GS_OK)
				e = gs_study_job_arg(j, "16");
		}
		return e;
	case R_GREEDY:
		/* Like gpu-burn: takes most of the device's memory, then
		 * holds it while the neighbour starts. */
		e = gs_study_job_arg(j, "%s/gs-alloc", bin);
		if (e == GS_OK)
			e = gs_study_job_arg(j, "--api");
		if (e == GS_OK)
			e = gs_study_job_arg(j, "plain");
		if (e == GS_OK)
			e = gs_study_job_arg(j, "--chunk");
		if (e == GS_OK)
			e = gs_study_job_arg(j, GREEDY_CHUNK);
		if (e == GS_OK)
			e = gs_study_job_arg(j, "--limit");
		if (e == GS_OK)
			e = gs_study_job_arg(
			    j, "%lluMiB",
			    (unsigned long long)mib(d->memory_bytes / 10 * 9));
		if (e == GS_OK)
			e = gs_study_job_arg(j, "--hold");
		if (e == GS_OK)
			e = gs_study_job_arg(j, "%g",
			                     p->burn_s + OOM_DELAY_S + 1.5);
		return e;
	case R_FAULT:
		e = gs_study_job_arg(j, "%s/gs-fault", bin);
		if (e == GS_OK)
			e = gs_study_job_arg(j, "--after-ms");
		if (e == GS_OK)
			e = gs_study_job_arg(j, "%d", FAULT_AFTER_MS);
		return e;
	}
	return GS_ERR_INTERNAL;
}

/* `gpuslice run` and its slice flags, for the gpuslice strategy. */
static gs_err slice_args(const struct cell *c, struct gs_study_job *j,
                         enum role r, int slot, const struct gs_study_dev *d)
{
	gs_err e = gs_study_job_arg(j, "%s/gpuslice", c->s->node->bin_dir);

	if (e == GS_OK)
		e = gs_study_job_arg(j, "run");
	if (e == GS_OK)
		e = gs_study_job_arg(j, "--memory");
	if (e == GS_OK)
		e = gs_study_job_arg(
		    j, "%lluMiB",
		    (unsigned long long)mib(d->memory_bytes / c->share_n));
	if (r == R_INFER_LIGHT || r == R_INFER_HEAVY) {
		/* auto: trusted inference servers share a fault domain and
		 * get MPS-backed slices; A's priority makes B a below-normal
		 * client of the server. */
		if (e == GS_OK)
			e = gs_study_job_arg(j, "--mode");
		if (e == GS_OK)
			e = gs_study_job_arg(j, "auto");
		if (e == GS_OK)
			e = gs_study_job_arg(j, "--priority");
		if (e == GS_OK)
			e = gs_study_job_arg(j, slot == 0 ? "high" : "low");
	} else {
		/* auto: a batch of trusted jobs shares a fault domain and
		 * gets MPS-backed slices; the burn row's jobs (one of which
		 * faults) ask for their own and get turns. */
		if (e == GS_OK)
			e = gs_study_job_arg(j, "--mode");
		if (e == GS_OK)
			e = gs_study_job_arg(j, "auto");
		if (e == GS_OK && r != R_MATMUL)
			e = gs_study_job_arg(j, "--isolation");
		if (e == GS_OK && r != R_MATMUL)
			e = gs_study_job_arg(j, "fault");
		if (e == GS_OK)
			e = gs_study_job_arg(j, "--compute");
		if (e == GS_OK)
			e = gs_study_job_arg(j, "%d", 100 / c->share_n);
		if (e == GS_OK)
			e = gs_study_job_arg(j, "--compute-mode");
		if (e == GS_OK)
			e = gs_study_job_arg(j, "share");
	}
	if (e == GS_OK)
		e = gs_study_job_arg(j, "--report");
	if (e == GS_OK)
		e = gs_study_job_arg(j, "--");
	return e;
}

static gs_err make_job(struct cell *c, struct phase *ph, const char *name,
                       enum role r, int slot, double delay_s)
{
	struct gs_study_job *j = &ph->jobs[ph->n];
	const struct gs_study_dev *d = dev_for(c, slot);
	gs_err e = GS_OK;

	gs_study_job_init(j, name, c->s->p.timeout_s);
	j->delay_s = delay_s;
	ph->dev[ph->n] = d;
	ph->n++;
	if (c->st == GS_STUDY_S_GPUSLICE)
		e = slice_args(c, j, r, slot, d);
	if (e == GS_OK)
		e = workload_args(c, j, r, d);
	if (e != GS_OK)
		return e;
	if (c->st == GS_STUDY_S_MPS || c->st == GS_STUDY_S_MPS_LIMITS) {
		/* MPS clients reach the GPU through the daemon, which
		 * numbers its devices from 0. */
		e = gs_study_job_env(j, "CUDA_MPS_PIPE_DIRECTORY=%s",
		                     c->mps_pipe);
		if (e == GS_OK && c->st == GS_STUDY_S_MPS_LIMITS)
			e = gs_study_job_env(
			    j, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d",
			    100 / c->share_n);
		if (e == GS_OK && c->st == GS_STUDY_S_MPS_LIMITS)
			e = gs_study_job_env(
			    j, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=%lluM",
			    (unsigned long long)mib(d->memory_bytes /
			                            c->share_n));
		return e;
	}
	return gs_study_job_env(j, "CUDA_VISIBLE_DEVICES=%s", d->uuid);
}

static void phase_init(struct phase *ph, const char *name)
{
	memset(ph, 0, sizeof(*ph));
	ph->name = name;
	ph->util = ph->sm = NAN;
}

static void phase_fini(struct phase *ph)
{
	for (int i = 0; i < ph->n; i++)
		gs_study_job_fini(&ph->jobs[i]);
	ph->n = 0;
}

static json_t *num(double v)
{
	return isnan(v) || isinf(v) ? json_null() : json_real(v);
}

/* The tail of a failed job's stderr, for the reader of study.json. */
static json_t *err_tail(const struct gs_study_job *j)
{
	const char *e = j->err != NULL ? j->err : "";
	size_t len = strlen(e);

	if (gs_study_job_ok(j) || len == 0)
		return json_null();
	return json_string(len > 400 ? e + len - 400 : e);
}

static json_t *phase_json(const struct phase *ph)
{
	json_t *jobs = json_array();

	for (int i = 0; i < ph->n; i++) {
		const struct gs_study_job *j = &ph->jobs[i];

		json_array_append_new(
		    jobs,
		    json_pack(
		        "{s:s, s:s, s:f, s:f, s:i, s:b, s:I, s:O?, s:O?, s:o}",
		        "name", j->name, "device", ph->dev[i]->what, "start_s",
		        j->start_s, "end_s", j->end_s, "exit_status", j->status,
		        "timed_out", j->timed_out, "memory_bytes",
		        (json_int_t)j->memory_peak, "result", j->result,
		        "slice_report", j->report, "stderr_tail", err_tail(j)));
	}
	return json_pack("{s:s, s:o, s:o, s:o, s:b, s:o}", "name", ph->name,
	                 "wall_s", num(ph->wall_s), "gpu_util_pct",
	                 num(ph->util), "sm_util_pct", num(ph->sm),
	                 "sequential", ph->sequential, "jobs", jobs);
}

static void run_one(struct cell *c, struct phase *ph, int first, int n)
{
	const struct gs_study_dev *devs[GS_STUDY_MAX_JOBS];
	struct gs_study_probe probe;
	struct gs_errbuf eb = {0};

	for (int i = 0; i < n; i++)
		devs[i] = ph->dev[first + i];
	gs_study_probe_begin(&probe, c->s->node, devs, n);
	(void)gs_study_phase_run(&ph->jobs[first], n, c->s->node->base_env,
	                         gs_study_probe_sample, &probe, &ph->wall_s,
	                         &eb);
	gs_study_probe_end(&probe, &ph->util, &ph->sm);
}

/*
 * Runs a phase. "exclusive" with more jobs than GPUs runs them one after
 * another, each alone (so delays do not apply): the figures are those of
 * jobs with a GPU each, the wall time the longest of them.
 */
static void run_phase(struct cell *c, struct phase *ph)
{
	char what[64];

	snprintf(what, sizeof(what), "%s phase (%d job%s)", ph->name, ph->n,
	         ph->n == 1 ? "" : "s");
	progress(c->s, c, what);
	if (c->st == GS_STUDY_S_EXCLUSIVE && ph->n > c->s->node->n_excl) {
		double wall = 0, util = 0, sm = 0;
		int nu = 0, ns = 0;

		ph->sequential = true;
		for (int i = 0; i < ph->n; i++) {
			ph->jobs[i].delay_s = 0;
			run_one(c, ph, i, 1);
			wall = ph->wall_s > wall ? ph->wall_s : wall;
			if (!isnan(ph->util)) {
				util += ph->util;
				nu++;
			}
			if (!isnan(ph->sm)) {
				sm += ph->sm;
				ns++;
			}
		}
		ph->wall_s = wall;
		ph->util = nu ? util / nu : NAN;
		ph->sm = ns ? sm / ns : NAN;
	} else {
		run_one(c, ph, 0, ph->n);
	}
	json_array_append_new(c->phases, phase_json(ph));
}

/* ---- reading results ---------------------------------------------------- */

static double rnum(const struct gs_study_job *j, const char *key)
{
	json_t *v = j->result ? json_object_get(j->result, key) : NULL;

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *rstr(const struct gs_study_job *j, const char *key)
{
	json_t *v = j->result ? json_object_get(j->result, key) : NULL;

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* What went wrong with a job, in a few words. */
static void job_problem(const struct gs_study_job *j, char *out, size_t len)
{
	const char *e = rstr(j, "error");

	if (j->timed_out)
		snprintf(out, len, "%s ran past its time limit", j->name);
	else if (e != NULL)
		snprintf(out, len, "%s: %s%s%s", j->name, e,
		         rstr(j, "call") ? " in " : "",
		         rstr(j, "call") ? rstr(j, "call") : "");
	else if (!j->started || j->status == 127)
		snprintf(out, len, "%s could not be started", j->name);
	else
		snprintf(out, len, "%s exited with status %d", j->name,
		         j->status);
}

static void fail_cell(struct cell *c, const struct gs_study_job *j)
{
	char why[256];

	if (strcmp(json_string_value(json_object_get(c->j, "status")), "ok") !=
	    0)
		return; /* the first failure explains it */
	job_problem(j, why, sizeof(why));
	json_object_set_new(c->j, "status", json_string("failed"));
	json_object_set_new(c->j, "reason", json_string(why));
}

static json_t *memory_list(const struct phase *ph)
{
	json_t *a = json_array();

	for (int i = 0; i < ph->n; i++)
		json_array_append_new(
		    a, ph->jobs[i].memory_peak
		           ? json_integer((json_int_t)ph->jobs[i].memory_peak)
		           : json_null());
	return a;
}

static void set_shared_figures(struct cell *c, const struct phase *ph)
{
	json_object_set_new(c->j, "gpu_util_pct", num(ph->util));
	json_object_set_new(c->j, "sm_util_pct", num(ph->sm));
	json_object_set_new(c->j, "memory_per_job_bytes", memory_list(ph));
}

/* ---- workloads ---------------------------------------------------------- */

static void infer_cell(struct cell *c, bool light)
{
	enum role r = light ? R_INFER_LIGHT : R_INFER_HEAVY;
	struct phase ph;
	json_t *servers = json_array();
	double tput = 0;

	phase_init(&ph, "shared");
	if (make_job(c, &ph, "server A", r, 0, 0) != GS_OK ||
	    make_job(c, &ph, "server B", r, 1, 0) != GS_OK) {
		json_decref(servers);
		phase_fini(&ph);
		return;
	}
	run_phase(c, &ph);
	for (int i = 0; i < ph.n; i++) {
		const struct gs_study_job *j = &ph.jobs[i];
		bool ok = gs_study_job_ok(j) && rstr(j, "error") == NULL;
		const char *prio = NULL;

		if (c->st == GS_STUDY_S_GPUSLICE)
			prio = i == 0 ? "high" : "low";
		if (!ok)
			fail_cell(c, j);
		tput += ok ? rnum(j, "throughput_rps") : 0;
		json_array_append_new(
		    servers,
		    json_pack("{s:s, s:s?, s:o, s:o, s:o, s:o, s:b}", "name",
		              i == 0 ? "A" : "B", "priority", prio, "p50_ms",
		              num(rnum(j, "p50_ms")), "p99_ms",
		              num(rnum(j, "p99_ms")), "throughput_rps",
		              num(rnum(j, "throughput_rps")), "memory_bytes",
		              j->memory_peak
		                  ? json_integer((json_int_t)j->memory_peak)
		                  : json_null(),
		              "ok", ok));
	}
	json_object_set_new(c->j, "latency_p50_ms",
	                    num(rnum(&ph.jobs[0], "p50_ms")));
	json_object_set_new(c->j, "latency_p99_ms",
	                    num(rnum(&ph.jobs[0], "p99_ms")));
	json_object_set_new(c->j, "throughput", num(tput));
	json_object_set_new(c->j, "throughput_unit", json_string("req/s"));
	json_object_set_new(c->j, "servers", servers);
	set_shared_figures(c, &ph);
	phase_fini(&ph);
}

static void small_cell(struct cell *c)
{
	struct phase alone, shared;
	double worst = 0;
	char name[16];

	phase_init(&alone, "alone");
	phase_init(&shared, "shared");
	if (make_job(c, &alone, "job 1", R_MATMUL, 0, 0) != GS_OK)
		goto out;
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "job %d", i + 1);
		if (make_job(c, &shared, name, R_MATMUL, i, 0) != GS_OK)
			goto out;
	}
	run_phase(c, &alone);
	if (!gs_study_job_ok(&alone.jobs[0]))
		fail_cell(c, &alone.jobs[0]);
	run_phase(c, &shared);
	for (int i = 0; i < shared.n; i++) {
		double w = rnum(&shared.jobs[i], "wall_s");

		if (!gs_study_job_ok(&shared.jobs[i]) || isnan(w)) {
			fail_cell(c, &shared.jobs[i]);
			worst = NAN;
		} else if (w > worst) {
			worst = w;
		}
	}
	json_object_set_new(c->j, "completion_alone_s",
	                    num(rnum(&alone.jobs[0], "wall_s")));
	json_object_set_new(c->j, "completion_s", num(worst));
	json_object_set_new(
	    c->j, "throughput",
	    num(worst > 0 ? 4.0 * (double)c->s->p.matmul_iters / worst : NAN));
	json_object_set_new(c->j, "throughput_unit", json_string("matmul/s"));
	set_shared_figures(c, &shared);
out:
	phase_fini(&alone);
	phase_fini(&shared);
}

/* Kernels per second of a gs-burn job; NaN when it did not finish. */
static double burn_rate(const struct gs_study_job *j)
{
	double k = rnum(j, "kernels"), w = rnum(j, "wall_s");

	if (!gs_study_job_ok(j) || isnan(k) || !(w > 0) || !(k > 0))
		return NAN;
	return k / w;
}

static const char *outcome(const struct gs_study_job *j, const char *bad)
{
	const char *e = rstr(j, "error");

	if (gs_study_job_ok(j) && e == NULL)
		return "ran";
	if (e != NULL && strcmp(e, "CUDA_ERROR_OUT_OF_MEMORY") == 0)
		return "out of memory";
	return bad;
}

static void oom_figures(struct cell *c, const struct phase *ph)
{
	const struct gs_study_job *g = &ph->jobs[0], *nb = &ph->jobs[1];
	double got = rnum(g, "allocated_bytes");

	json_object_set_new(
	    c->j, "neighbour_on_oom",
	    json_pack("{s:{s:o, s:o, s:s?, s:s?}, s:{s:s, s:s?, s:o}}",
	              "offender", "allocated_bytes",
	              isnan(got) ? json_null() : json_integer((json_int_t)got),
	              "device_bytes",
	              json_integer((json_int_t)ph->dev[0]->memory_bytes),
	              "stopped", rstr(g, "stopped"), "error", rstr(g, "error"),
	              "neighbour", "outcome", outcome(nb, "failed"), "error",
	              rstr(nb, "error"), "memory_bytes",
	              nb->memory_peak
	                  ? json_integer((json_int_t)nb->memory_peak)
	                  : json_null()));
}

static void fault_figures(struct cell *c, const struct phase *ph)
{
	const struct gs_study_job *nb = &ph->jobs[0], *f = &ph->jobs[1];

	json_object_set_new(
	    c->j, "neighbour_on_fault",
	    json_pack("{s:{s:s?}, s:{s:s, s:s?}}", "faulting_job", "error",
	              rstr(f, "error"), "neighbour", "outcome",
	              outcome(nb, "killed"), "error", rstr(nb, "error")));
}

static void intensive_cell(struct cell *c)
{
	struct phase alone, shared, oom, fault;
	double ref, ra, rs = INFINITY, gflops = 0;

	phase_init(&alone, "alone");
	phase_init(&shared, "shared");
	phase_init(&oom, "oom");
	phase_init(&fault, "fault");
	if (make_job(c, &alone, "job 1", R_BURN, 0, 0) != GS_OK ||
	    make_job(c, &shared, "job 1", R_BURN, 0, 0) != GS_OK ||
	    make_job(c, &shared, "job 2", R_BURN, 1, 0) != GS_OK ||
	    make_job(c, &oom, "greedy job", R_GREEDY, 0, 0) != GS_OK ||
	    make_job(c, &oom, "neighbour", R_BIG, 1, OOM_DELAY_S) != GS_OK ||
	    make_job(c, &fault, "neighbour", R_BURN, 0, 0) != GS_OK ||
	    make_job(c, &fault, "faulting job", R_FAULT, 1, FAULT_DELAY_S) !=
	        GS_OK)
		goto out;
	run_phase(c, &alone);
	run_phase(c, &shared);
	run_phase(c, &oom);
	run_phase(c, &fault);

	ra = burn_rate(&alone.jobs[0]);
	if (isnan(ra))
		fail_cell(c, &alone.jobs[0]);
	for (int i = 0; i < shared.n; i++) {
		double r = burn_rate(&shared.jobs[i]);

		if (isnan(r))
			fail_cell(c, &shared.jobs[i]);
		rs = isnan(r) || isnan(rs) ? NAN : (r < rs ? r : rs);
		gflops += rnum(&shared.jobs[i], "gflops");
	}
	if (c->st == GS_STUDY_S_EXCLUSIVE && !isnan(ra))
		c->s->burn_ref_kernels = rnum(&alone.jobs[0], "kernels");
	ref = c->s->burn_ref_kernels > 0 ? c->s->burn_ref_kernels
	                                 : rnum(&alone.jobs[0], "kernels");
	json_object_set_new(c->j, "completion_alone_s", num(ref / ra));
	json_object_set_new(c->j, "completion_s",
	                    num(isinf(rs) ? NAN : ref / rs));
	json_object_set_new(
	    c->j, "completion_basis",
	    json_string(
	        c->s->burn_ref_kernels > 0
	            ? "work of the exclusive job in the burn time, at this job's measured rate"
	            : "work of this cell's alone job, at the measured rate"));
	json_object_set_new(c->j, "throughput", num(gflops));
	json_object_set_new(c->j, "throughput_unit", json_string("GFLOP/s"));
	set_shared_figures(c, &shared);
	oom_figures(c, &oom);
	fault_figures(c, &fault);
out:
	phase_fini(&alone);
	phase_fini(&shared);
	phase_fini(&oom);
	phase_fini(&fault);
}

/* ---- cells --------------------------------------------------------------- */

/* Why cell `c` cannot run here, or NULL. `buf` holds a composed reason. */
static const char *skip_reason(const struct cell *c, char *buf, size_t len)
{
	const struct gs_study_node *n = c->s->node;

	if (c->st != GS_STUDY_S_MIG && !n->whole_ok)
		return n->whole_why;
	switch (c->st) {
	case GS_STUDY_S_TIMESLICE:
		return n->multi_ok ? NULL : n->multi_why;
	case GS_STUDY_S_MPS:
	case GS_STUDY_S_MPS_LIMITS:
		return n->mps_ok ? NULL : n->mps_why;
	case GS_STUDY_S_MIG:
		if ((c->share_n == 4 ? n->n_mig4 : n->n_mig2) >= c->share_n)
			return NULL;
		return n->mig_why[0] ? n->mig_why : "not enough MIG instances";
	case GS_STUDY_S_GPUSLICE:
		if (!n->multi_ok)
			return n->multi_why;
		/* where `gpuslice run` will find it (gs/paths.h) */
		if (!gs_paths_shim(buf, len)) {
			snprintf(buf, len,
			         "libgpuslice.so is not built or installed (none beside %.200s, none in the library directory)",
			         n->bin_dir);
			return buf;
		}
		return NULL;
	default:
		return NULL;
	}
}

static void setup_text(const struct cell *c, char *out, size_t len)
{
	const struct gs_study_node *n = c->s->node;
	const struct gs_study_dev *d = dev_for(c, 0);
	const char *jobs[] = {
	    "2 x gs-infer --light",
	    "2 x gs-infer --heavy",
	    "gs-matmul --n 128: 1 alone, then 4 at once",
	    "gs-burn: 1 alone, then 2 at once; then a greedy job + a neighbour needing 1/4 of the memory; then gs-fault + a neighbour",
	};
	unsigned long long m = mib(d->memory_bytes / (unsigned)c->share_n);
	int k;

	k = snprintf(out, len, "%s; ", jobs[c->w]);
	if (k < 0 || (size_t)k >= len)
		return;
	out += k;
	len -= (size_t)k;
	switch (c->st) {
	case GS_STUDY_S_EXCLUSIVE:
		if (n->n_excl > 1)
			snprintf(out, len,
			         "each job on a whole GPU of its own");
		else
			snprintf(out, len,
			         "each job alone on %s, one after another",
			         n->shared.what);
		break;
	case GS_STUDY_S_TIMESLICE:
		snprintf(out, len, "all on %s, no MPS: the driver time-slices",
		         n->shared.what);
		break;
	case GS_STUDY_S_MPS:
		snprintf(out, len, "MPS control daemon on %s, no limits",
		         n->shared.what);
		break;
	case GS_STUDY_S_MPS_LIMITS:
		snprintf(out, len,
		         "MPS on %s; each client CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=%lluM",
		         n->shared.what, 100 / c->share_n, m);
		break;
	case GS_STUDY_S_MIG:
		snprintf(out, len, "one MIG instance per job (%.1f GiB each)",
		         (double)d->memory_bytes / (1 << 30));
		break;
	case GS_STUDY_S_GPUSLICE:
		if (c->w == GS_STUDY_W_INFER_LIGHT ||
		    c->w == GS_STUDY_W_INFER_HEAVY)
			snprintf(
			    out, len,
			    "all on %s under gpuslice run --mode auto (mps) --memory %lluMiB; server A --priority high, server B --priority low",
			    n->shared.what, m);
		else
			snprintf(out, len,
			         "all on %s under gpuslice run%s --memory %lluMiB --compute %d --compute-mode share",
			         n->shared.what,
			         c->w == GS_STUDY_W_SMALL_BATCH
			             ? " --mode auto (mps)"
			             : " --mode auto --isolation fault (turns)",
			         m, 100 / c->share_n);
		break;
	}
}

static json_t *cell_new(const struct cell *c)
{
	char setup[512];
	json_t *j;

	setup_text(c, setup, sizeof(setup));
	j = json_pack("{s:s, s:s, s:s, s:s, s:n, s:s, s:i}", "workload",
	              gs_study_workload_name(c->w), "strategy",
	              gs_study_strategy_name(c->st), "source",
	              c->s->node->source, "status", "ok", "reason", "setup",
	              setup, "jobs", c->share_n);
	if (j == NULL)
		return NULL;
	static const char *const keys[] = {
	    "latency_p50_ms",   "latency_p99_ms",     "throughput",
	    "throughput_unit",  "completion_s",       "completion_alone_s",
	    "gpu_util_pct",     "sm_util_pct",        "memory_per_job_bytes",
	    "neighbour_on_oom", "neighbour_on_fault", "servers",
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		json_object_set_new(j, keys[i], json_null());
	return j;
}

static json_t *run_cell(struct study *s, int w, int st)
{
	struct cell c = {.s = s, .w = w, .st = st};
	struct gs_errbuf eb = {0};
	char buf[PATH_MAX + 64];
	const char *why;
	bool mps = st == GS_STUDY_S_MPS || st == GS_STUDY_S_MPS_LIMITS;

	c.share_n = w == GS_STUDY_W_SMALL_BATCH ? 4 : 2;
	c.j = cell_new(&c);
	if (c.j == NULL)
		return NULL;
	why = skip_reason(&c, buf, sizeof(buf));
	if (why != NULL) {
		json_object_set_new(c.j, "status", json_string("skipped"));
		json_object_set_new(c.j, "reason", json_string(why));
		return c.j;
	}
	if (mps) {
		progress(s, &c, "starting the MPS control daemon");
		if (gs_study_mps_start(s->node, &s->node->shared, c.mps_pipe,
		                       sizeof(c.mps_pipe), &eb) != GS_OK) {
			json_object_set_new(c.j, "status",
			                    json_string("skipped"));
			json_object_set_new(c.j, "reason",
			                    json_string(gs_errbuf_msg(
			                        &eb, GS_ERR_UNAVAILABLE)));
			return c.j;
		}
	}
	c.phases = json_array();
	switch (w) {
	case GS_STUDY_W_INFER_LIGHT:
		infer_cell(&c, true);
		break;
	case GS_STUDY_W_INFER_HEAVY:
		infer_cell(&c, false);
		break;
	case GS_STUDY_W_SMALL_BATCH:
		small_cell(&c);
		break;
	case GS_STUDY_W_GPU_INTENSIVE:
		intensive_cell(&c);
		break;
	}
	json_object_set_new(c.j, "phases", c.phases);
	if (mps)
		gs_study_mps_stop(s->node, c.mps_pipe);
	return c.j;
}

gs_err gs_study_run(struct gs_study_node *node,
                    const struct gs_study_opts *opts, json_t **cells,
                    struct gs_errbuf *eb)
{
	struct study s = {.node = node, .o = opts};
	json_t *all = json_array();

	*cells = NULL;
	if (all == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	s.p.infer_s = opts->quick ? 2 : 10;
	s.p.matmul_iters = opts->quick ? 100000 : 1000000;
	s.p.burn_s = opts->quick ? 2 : 10;
	s.p.timeout_s = opts->quick ? 120 : 600;
	s.t0 = now_s();
	s.tty = isatty(2) != 0;
	for (int w = 0; w < GS_STUDY_W__COUNT; w++)
		for (int st = 0; st < GS_STUDY_S__COUNT; st++)
			if ((opts->workloads & (1u << w)) &&
			    (opts->strategies & (1u << st)))
				s.total++;
	for (int w = 0; w < GS_STUDY_W__COUNT; w++)
		for (int st = 0; st < GS_STUDY_S__COUNT; st++) {
			json_t *cell;

			if (!(opts->workloads & (1u << w)) ||
			    !(opts->strategies & (1u << st)))
				continue;
			if (gs_study_run_interrupted())
				goto out_interrupted;
			cell = run_cell(&s, w, st);
			if (cell == NULL) {
				json_decref(all);
				return gs_fail(eb, GS_ERR_INTERNAL,
				               "cannot build a study cell");
			}
			if (gs_study_run_interrupted()) {
				/* Its jobs were killed part way: no figures. */
				json_object_set_new(cell, "status",
				                    json_string("interrupted"));
				json_object_set_new(
				    cell, "reason",
				    json_string("the study was interrupted while this cell ran"));
				json_array_append_new(all, cell);
				goto out_interrupted;
			}
			json_array_append_new(all, cell);
			s.done++;
		}
	if (opts->progress) {
		int el = (int)(now_s() - s.t0);

		fprintf(stderr, "%sgpuslice bench study: %d cells in %d:%02d\n",
		        s.tty ? "\r\033[K" : "", s.done, el / 60, el % 60);
	}
	*cells = all;
	return GS_OK;

out_interrupted:
	if (opts->progress && s.tty)
		fputc('\n', stderr);
	*cells = all;
	return gs_fail(eb, GS_ERR_BUSY, "interrupted after %d of %d cells",
	               s.done, s.total);
}
