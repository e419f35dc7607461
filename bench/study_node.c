/*
 * study_node.c - the node the seed study runs on (study_node.h): a private
 * simulated node or one real GPU, the MPS daemon the MPS cells need, and
 * the probe that measures each phase.
 *
 * Invariant: on a real GPU nothing here changes a setting. The calls that
 * could (MIG) exist only in gs_study_nvml_sim_mig(), which refuses any
 * library but the sim's; MPS runs as a private daemon (own pipe and log
 * directory) and is stopped with `quit`.
 */
#include "study_node.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gs/mps.h"
#include "gs/nvml.h"
#include "gs/paths.h"
#include "gs/proc.h"
#include "gs_sim/state.h"

#define SIM_GPUS      "6xH100-SXM5-80GB"
#define SIM_EXCL      4 /* GPUs 0..3 whole */
#define SIM_MIG2      4 /* GPU 4: two MIG instances */
#define SIM_MIG4      5 /* GPU 5: four MIG instances */
#define MPS_TIMEOUT_S 30.0

static bool is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* <prefix>/bin/gpuslice -> bin_dir <prefix>/bin; sim_dir where
 * gs_paths_sim_dir finds it (<prefix>/sim in a build tree,
 * <libdir>/gpuslice/sim installed), else <prefix>/sim. */
static gs_err find_dirs(struct gs_study_node *node, struct gs_errbuf *eb)
{
	char exe[PATH_MAX];
	char *slash;

	if (!gs_proc_self_exe(exe, sizeof(exe)))
		return gs_fail(eb, GS_ERR_IO,
		               "cannot find the gpuslice binary");
	slash = strrchr(exe, '/');
	if (slash == NULL)
		return gs_fail(eb, GS_ERR_IO, "odd binary path %s", exe);
	*slash = '\0';
	snprintf(node->bin_dir, sizeof(node->bin_dir), "%s", exe);
	if (gs_paths_sim_dir(node->sim_dir, sizeof(node->sim_dir)))
		return GS_OK; /* the build tree's sim/ or the installed one */
	slash = strrchr(exe, '/');
	if (slash != NULL)
		*slash = '\0';
	snprintf(node->sim_dir, sizeof(node->sim_dir), "%.*s/sim", PATH_MAX - 8,
	         exe);
	return GS_OK;
}

/*
 * The scratch directory. Kept short: MPS pipe directories under it hold
 * UNIX sockets, whose paths are limited to 107 bytes.
 */
static gs_err make_tmp(struct gs_study_node *node, struct gs_errbuf *eb)
{
	const char *base = getenv("TMPDIR");
	int saved;

	if (base == NULL || *base == '\0' || strlen(base) > 60)
		base = "/tmp";
	snprintf(node->tmp, sizeof(node->tmp), "%s/gs-study-XXXXXX", base);
	if (mkdtemp(node->tmp) == NULL) {
		saved = errno;
		node->tmp[0] = '\0';
		return gs_fail(eb, GS_ERR_IO,
		               "cannot create a scratch directory in %s: %s",
		               base, strerror(saved));
	}
	return GS_OK;
}

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	(void)remove(path);
	return 0;
}

/* Adds "K=V" (or "K" to unset) to the jobs' base environment. */
static void base_env(struct gs_study_node *node, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void base_env(struct gs_study_node *node, const char *fmt, ...)
{
	int i = 0,
	    max = (int)(sizeof(node->env_own) / sizeof(node->env_own[0]));
	va_list ap;
	int r;

	while (node->base_env[i] != NULL)
		i++;
	if (i >= max - 1)
		return;
	va_start(ap, fmt);
	r = vasprintf(&node->env_own[i], fmt, ap);
	va_end(ap);
	if (r < 0) {
		node->env_own[i] = NULL;
		return;
	}
	node->base_env[i] = node->env_own[i];
	node->base_env[i + 1] = NULL;
}

/* The environment every job starts from, sim or not. */
static void common_env(struct gs_study_node *node)
{
	char d[sizeof(node->tmp) + 16];

	/* Jobs that are not meant to be MPS clients look for a daemon in an
	 * empty directory, so one a user runs in /tmp/nvidia-mps is not
	 * joined by accident. */
	snprintf(d, sizeof(d), "%s/no-mps", node->tmp);
	(void)mkdir(d, 0700);
	base_env(node, "CUDA_MPS_PIPE_DIRECTORY=%s", d);
	base_env(node, "CUDA_MPS_LOG_DIRECTORY=%s", d);
	snprintf(d, sizeof(d), "%s/run", node->tmp);
	(void)mkdir(d, 0700);
	base_env(node, "GPUSLICE_RUN_DIR=%s", d);
	base_env(node, "CUDA_VISIBLE_DEVICES");
	base_env(node, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	base_env(node, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
}

static void dev_from_gpu(struct gs_study_dev *d, const struct gs_study_gpu *g)
{
	snprintf(d->uuid, sizeof(d->uuid), "%s", g->uuid);
	d->memory_bytes = g->memory_bytes;
	snprintf(d->what, sizeof(d->what), "GPU %u", g->index);
}

static void dev_from_mig(struct gs_study_dev *d, const struct gs_study_gpu *g,
                         int i)
{
	snprintf(d->uuid, sizeof(d->uuid), "%s", g->mig[i].uuid);
	d->memory_bytes = g->mig[i].memory_bytes;
	snprintf(d->what, sizeof(d->what), "MIG %d of GPU %u", i, g->index);
}

static void node_zero(struct gs_study_node *node)
{
	memset(node, 0, sizeof(*node));
	node->base_env[0] = NULL;
}

gs_err gs_study_node_open_sim(struct gs_study_node *node, struct gs_errbuf *eb)
{
	struct gs_sim_gpu_init gpus[GS_SIM_MAX_GPUS];
	char path[PATH_MAX + 32], dir[sizeof(node->tmp) + 8];
	struct gs_study_gpu g;
	struct gs_sim_map *map = NULL;
	int n = 0;
	gs_err err;

	node_zero(node);
	node->sim = true;
	err = find_dirs(node, eb);
	if (err != GS_OK)
		return err;
	snprintf(path, sizeof(path), "%s/libcuda.so.1", node->sim_dir);
	if (!is_file(path))
		return gs_fail(eb, GS_ERR_NOT_FOUND,
		               "the sim is not built (no %s)", path);
	err = make_tmp(node, eb);
	if (err != GS_OK)
		return err;
	snprintf(dir, sizeof(dir), "%s/sim", node->tmp);
	err = gs_sim_gpus_parse(SIM_GPUS, gpus, GS_SIM_MAX_GPUS, &n, eb);
	if (err == GS_OK)
		err = gs_sim_state_create(dir, gpus, n, false, eb);
	if (err != GS_OK)
		goto out_close;
	/* Our own NVML (the sim's) and every child find the node here. */
	if (setenv("GPUSLICE_SIM_DIR", dir, 1) != 0) {
		err = gs_fail(eb, GS_ERR_NOMEM, "setenv failed");
		goto out_close;
	}
	snprintf(path, sizeof(path), "%s/libnvidia-ml.so.1", node->sim_dir);
	err = gs_study_nvml_open(path, &node->nvml, eb);
	if (err != GS_OK)
		goto out_close;
	for (int i = 0; i < SIM_EXCL && err == GS_OK; i++) {
		err = gs_study_nvml_gpu(node->nvml, (unsigned int)i, &g, eb);
		if (err == GS_OK)
			dev_from_gpu(&node->excl[i], &g);
	}
	node->n_excl = SIM_EXCL;
	node->shared = node->excl[0];
	if (err == GS_OK)
		err = gs_study_nvml_sim_mig(node->nvml, SIM_MIG2, 2, &g, eb);
	for (int i = 0; err == GS_OK && i < 2 && i < g.n_mig; i++)
		dev_from_mig(&node->mig2[node->n_mig2++], &g, i);
	if (err == GS_OK)
		err = gs_study_nvml_sim_mig(node->nvml, SIM_MIG4, 4, &g, eb);
	for (int i = 0; err == GS_OK && i < 4 && i < g.n_mig; i++)
		dev_from_mig(&node->mig4[node->n_mig4++], &g, i);
	if (err == GS_OK)
		err = gs_sim_state_open(dir, &map, eb);
	if (err != GS_OK)
		goto out_close;
	node->sim_map = map;
	node->whole_ok = true;
	node->multi_ok = true;
	node->mps_ok = true;
	snprintf(node->mps_control, sizeof(node->mps_control),
	         "%s/nvidia-cuda-mps-control", node->sim_dir);
	if (!is_file(node->mps_control)) {
		node->mps_ok = false;
		snprintf(node->mps_why, sizeof(node->mps_why),
		         "the sim's nvidia-cuda-mps-control is not built");
	}

	common_env(node);
	base_env(node, "GPUSLICE_SIM_DIR=%s", dir);
	{
		const char *ld = getenv("LD_LIBRARY_PATH");
		const char *pa = getenv("PATH");

		base_env(node, "LD_LIBRARY_PATH=%s%s%s", node->sim_dir,
		         ld != NULL && *ld ? ":" : "", ld != NULL ? ld : "");
		base_env(node, "PATH=%s:%s:%s", node->sim_dir, node->bin_dir,
		         pa != NULL ? pa : "/usr/bin:/bin");
	}
	snprintf(node->source, sizeof(node->source), "sim");
	snprintf(node->label, sizeof(node->label),
	         "source: gpuslice sim, simulated %s (measures gpuslice's logic, not a GPU)",
	         gpus[0].name);
	return GS_OK;

out_close:
	gs_study_node_close(node);
	return err;
}

/* nvidia-cuda-mps-control on PATH, not the sim's. */
static bool find_mps_control(struct gs_study_node *node)
{
	const char *path = getenv("PATH");
	char *copy, *save = NULL;
	bool found = false;

	if (path == NULL)
		return false;
	copy = strdup(path);
	if (copy == NULL)
		return false;
	for (char *d = strtok_r(copy, ":", &save); d != NULL && !found;
	     d = strtok_r(NULL, ":", &save)) {
		char p[PATH_MAX + 40];

		if (strcmp(d, node->sim_dir) == 0 ||
		    strstr(d, "/sim") != NULL || strlen(d) >= PATH_MAX)
			continue;
		snprintf(p, sizeof(p), "%.4000s/nvidia-cuda-mps-control", d);
		if (access(p, X_OK) == 0) {
			snprintf(node->mps_control, sizeof(node->mps_control),
			         "%s", p);
			found = true;
		}
	}
	free(copy);
	return found;
}

gs_err gs_study_node_open_real(struct gs_study_node *node, unsigned int index,
                               struct gs_errbuf *eb)
{
	struct gs_study_gpu g;
	gs_err err;

	struct gs_errbuf nv = {0};

	node_zero(node);
	err = find_dirs(node, eb);
	if (err != GS_OK)
		return err;
	err = gs_study_nvml_open("libnvidia-ml.so.1", &node->nvml, &nv);
	if (err != GS_OK)
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "no NVIDIA GPU here (%s)",
		               gs_errbuf_msg(&nv, err));
	err = gs_study_nvml_gpu(node->nvml, index, &g, eb);
	if (err == GS_OK)
		err = make_tmp(node, eb);
	if (err != GS_OK)
		goto out_close;
	if (gs_study_nvml_is_sim(node->nvml)) {
		snprintf(node->source, sizeof(node->source), "sim");
		snprintf(node->label, sizeof(node->label),
		         "source: gpuslice sim found on the library path, %s (measures gpuslice's logic, not a GPU)",
		         g.name);
	} else {
		snprintf(node->source, sizeof(node->source), "%s, driver %s",
		         g.name, gs_study_nvml_driver(node->nvml));
		snprintf(node->label, sizeof(node->label),
		         "source: %s (GPU %u), driver %s", g.name, g.index,
		         gs_study_nvml_driver(node->nvml));
	}
	dev_from_gpu(&node->shared, &g);
	node->excl[0] = node->shared;
	node->n_excl = 1;
	node->whole_ok = true;
	node->multi_ok = true;

	if (g.mig_on) {
		node->whole_ok = false;
		node->multi_ok = false;
		snprintf(node->whole_why, sizeof(node->whole_why),
		         "MIG is on for GPU %u: whole-GPU strategies need it off, and gpuslice never changes MIG mode",
		         g.index);
		snprintf(node->multi_why, sizeof(node->multi_why), "%s",
		         node->whole_why);
		for (int i = 0; i < g.n_mig && i < 4; i++) {
			if (i < 2)
				dev_from_mig(&node->mig2[node->n_mig2++], &g,
				             i);
			dev_from_mig(&node->mig4[node->n_mig4++], &g, i);
		}
		if (g.n_mig < 4)
			snprintf(node->mig_why, sizeof(node->mig_why),
			         "GPU %u has %d MIG instance%s; the study uses the ones there and creates none",
			         g.index, g.n_mig, g.n_mig == 1 ? "" : "s");
	} else {
		snprintf(
		    node->mig_why, sizeof(node->mig_why),
		    "MIG is off on GPU %u and gpuslice never turns it on (enable it and create instances first to include MIG)",
		    g.index);
	}
	if (g.compute_mode == NVML_COMPUTEMODE_PROHIBITED) {
		node->whole_ok = false;
		snprintf(node->whole_why, sizeof(node->whole_why),
		         "GPU %u's compute mode is PROHIBITED; gpuslice never changes it",
		         g.index);
	}
	if (g.compute_mode == NVML_COMPUTEMODE_PROHIBITED ||
	    g.compute_mode == NVML_COMPUTEMODE_EXCLUSIVE_PROCESS) {
		node->multi_ok = false;
		snprintf(node->multi_why, sizeof(node->multi_why),
		         "GPU %u's compute mode is %s, which lets no two processes share it; gpuslice never changes it",
		         g.index,
		         g.compute_mode == NVML_COMPUTEMODE_PROHIBITED
		             ? "PROHIBITED"
		             : "EXCLUSIVE_PROCESS");
	}
	if (!find_mps_control(node))
		snprintf(node->mps_why, sizeof(node->mps_why),
		         "nvidia-cuda-mps-control is not on PATH");
	else if (g.mig_on)
		snprintf(node->mps_why, sizeof(node->mps_why),
		         "MIG is on for GPU %u (MPS per MIG device is not part of the study)",
		         g.index);
	else if (g.compute_mode == NVML_COMPUTEMODE_PROHIBITED)
		snprintf(node->mps_why, sizeof(node->mps_why),
		         "GPU %u's compute mode is PROHIBITED", g.index);
	else
		node->mps_ok = true;
	common_env(node);
	{
		const char *pa = getenv("PATH");

		base_env(node, "PATH=%s:%s", node->bin_dir,
		         pa != NULL ? pa : "/usr/bin:/bin");
	}
	return GS_OK;

out_close:
	gs_study_node_close(node);
	return err;
}

void gs_study_node_close(struct gs_study_node *node)
{
	for (size_t i = 0; i < sizeof(node->env_own) / sizeof(node->env_own[0]);
	     i++) {
		free(node->env_own[i]);
		node->env_own[i] = NULL;
	}
	node->base_env[0] = NULL;
	gs_sim_state_close(node->sim_map);
	node->sim_map = NULL;
	gs_study_nvml_close(node->nvml);
	node->nvml = NULL;
	if (node->tmp[0] != '\0')
		(void)nftw(node->tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	node->tmp[0] = '\0';
}

/* ---- MPS ------------------------------------------------------------- */

/* Runs the control program once (with `input` on stdin), in the jobs'
 * base environment; answer: what it wrote (stdout and stderr). */
static bool mps_ctl(struct gs_study_node *node, const char *pipe_dir,
                    const char *visible, const char *arg, const char *input,
                    char *answer, size_t len)
{
	struct gs_mps_ctl c = {
	    .prog = node->mps_control,
	    .pipe_dir = pipe_dir,
	    .log_dir = pipe_dir,
	    .visible = visible,
	    .env = node->base_env,
	    .timeout_ms = (int)(MPS_TIMEOUT_S * 1000),
	    .flags = GS_CMD_ERR_OUT,
	};

	return gs_mps_control(&c, arg, input, answer, len) == 0;
}

gs_err gs_study_mps_start(struct gs_study_node *node,
                          const struct gs_study_dev *dev, char *pipe_dir,
                          size_t len, struct gs_errbuf *eb)
{
	char answer[256] = "";

	if (!node->mps_ok)
		return gs_fail(eb, GS_ERR_UNSUPPORTED, "%s", node->mps_why);
	snprintf(pipe_dir, len, "%s/mps%d", node->tmp, ++node->mps_seq);
	if (mkdir(pipe_dir, 0700) != 0 && errno != EEXIST)
		return gs_fail(eb, GS_ERR_IO, "cannot create %s", pipe_dir);
	if (!mps_ctl(node, pipe_dir, dev->uuid, "-d", NULL, answer,
	             sizeof(answer)))
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "nvidia-cuda-mps-control -d failed: %.120s",
		               answer);
	/* The daemon answers once it listens. */
	for (int i = 0; i < 50; i++) {
		if (mps_ctl(node, pipe_dir, NULL, NULL,
		            "get_default_active_thread_percentage\n", answer,
		            sizeof(answer)))
			return GS_OK;
		usleep(100 * 1000);
	}
	gs_study_mps_stop(node, pipe_dir);
	return gs_fail(eb, GS_ERR_UNAVAILABLE,
	               "the MPS control daemon does not answer: %.120s",
	               answer);
}

void gs_study_mps_stop(struct gs_study_node *node, const char *pipe_dir)
{
	(void)mps_ctl(node, pipe_dir, NULL, NULL, "quit\n", NULL, 0);
	(void)gs_mps_wait_gone(pipe_dir, 5000, 50);
}

/* ---- probe ----------------------------------------------------------- */

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Finds (gpu, engine) of a device UUID in the sim's state. */
static void sim_locate(const struct gs_sim_state *st, const char *uuid,
                       int *gpu, int *engine)
{
	*gpu = *engine = -1;
	for (uint32_t g = 0; g < st->n_gpus; g++) {
		if (strcmp(st->gpus[g].uuid, uuid) == 0) {
			*gpu = (int)g;
			*engine = 0;
			return;
		}
		for (int m = 0; m < GS_SIM_MAX_MIG; m++)
			if (st->gpus[g].mig[m].in_use &&
			    strcmp(st->gpus[g].mig[m].uuid, uuid) == 0) {
				*gpu = (int)g;
				*engine = 1 + m;
				return;
			}
	}
}

void gs_study_probe_begin(struct gs_study_probe *p, struct gs_study_node *node,
                          const struct gs_study_dev *const *devs, int n)
{
	memset(p, 0, sizeof(*p));
	p->node = node;
	for (int i = 0; i < n && p->n_dev < GS_STUDY_MAX_DEVS; i++) {
		bool dup = false;

		for (int k = 0; k < p->n_dev; k++)
			dup =
			    dup || strcmp(p->dev[k]->uuid, devs[i]->uuid) == 0;
		if (!dup)
			p->dev[p->n_dev++] = devs[i];
	}
	if (node->sim_map != NULL) {
		struct gs_sim_state *st = gs_sim_state_get(node->sim_map);

		if (gs_sim_lock(st) != GS_OK)
			return;
		p->t0_ns = gs_sim_now_ns();
		gs_sim_advance_all(st, p->t0_ns);
		for (int k = 0; k < p->n_dev; k++) {
			sim_locate(st, p->dev[k]->uuid, &p->gpu[k],
			           &p->engine[k]);
			if (p->gpu[k] < 0)
				continue;
			const struct gs_sim_engine *e =
			    &st->gpus[p->gpu[k]].engine[p->engine[k]];
			p->busy0[k] = e->busy_ns;
			p->sm_busy0[k] = e->sm_busy_ns;
			p->sms[k] = e->sm_count;
		}
		gs_sim_unlock(st);
	} else {
		p->t0_ns = mono_ns();
	}
}

static void note_memory(struct gs_study_job *jobs, int n,
                        const struct gs_study_proc *procs, int np)
{
	for (int i = 0; i < np; i++) {
		int j = gs_study_job_of_pid(jobs, n, procs[i].pid);

		if (j >= 0 && procs[i].memory_bytes > jobs[j].memory_peak)
			jobs[j].memory_peak = procs[i].memory_bytes;
	}
}

void gs_study_probe_sample(void *probe, struct gs_study_job *jobs, int n,
                           double t)
{
	struct gs_study_probe *p = probe;
	struct gs_study_proc procs[GS_STUDY_MAX_PIDS];
	int np = 0;

	(void)t;
	if (p->node->sim_map != NULL) {
		struct gs_sim_state *st = gs_sim_state_get(p->node->sim_map);

		/* Copy under the lock; /proc lookups happen after it. */
		if (gs_sim_lock(st) != GS_OK)
			return;
		for (int i = 0; i < GS_SIM_MAX_PROCS && np < GS_STUDY_MAX_PIDS;
		     i++) {
			const struct gs_sim_proc *sp = &st->procs[i];

			if (sp->state != GS_SIM_PROC_LIVE ||
			    (sp->flags & GS_SIM_PROC_MPS_SERVER))
				continue;
			for (int k = 0; k < p->n_dev; k++)
				if ((int)sp->gpu == p->gpu[k] &&
				    (int)sp->engine == p->engine[k]) {
					procs[np].pid = sp->pid;
					procs[np].memory_bytes = sp->mem_used;
					np++;
					break;
				}
		}
		gs_sim_unlock(st);
		note_memory(jobs, n, procs, np);
		return;
	}
	for (int k = 0; k < p->n_dev; k++) {
		unsigned int pct;
		int c = 0;

		if (gs_study_nvml_util(p->node->nvml, p->dev[k]->uuid, &pct) ==
		    GS_OK) {
			p->util_sum += pct;
			p->util_n++;
		}
		if (gs_study_nvml_procs(p->node->nvml, p->dev[k]->uuid, procs,
		                        GS_STUDY_MAX_PIDS, &c) == GS_OK)
			note_memory(jobs, n, procs, c);
	}
}

void gs_study_probe_end(struct gs_study_probe *p, double *util_pct,
                        double *sm_pct)
{
	*util_pct = NAN;
	*sm_pct = NAN;
	if (p->node->sim_map != NULL) {
		struct gs_sim_state *st = gs_sim_state_get(p->node->sim_map);
		double busy = 0, sm_busy = 0, sm_cap = 0, dt;
		uint64_t now;
		int used = 0;

		if (gs_sim_lock(st) != GS_OK)
			return;
		now = gs_sim_now_ns();
		gs_sim_advance_all(st, now);
		dt = (double)(now - p->t0_ns);
		for (int k = 0; k < p->n_dev; k++) {
			if (p->gpu[k] < 0)
				continue;
			const struct gs_sim_engine *e =
			    &st->gpus[p->gpu[k]].engine[p->engine[k]];
			busy += (double)(e->busy_ns - p->busy0[k]);
			sm_busy += (double)(e->sm_busy_ns - p->sm_busy0[k]);
			sm_cap += (double)p->sms[k] * dt;
			used++;
		}
		gs_sim_unlock(st);
		if (used > 0 && dt > 0) {
			*util_pct = 100.0 * busy / (dt * used);
			*sm_pct = sm_cap > 0 ? 100.0 * sm_busy / sm_cap : NAN;
		}
		return;
	}
	if (p->util_n > 0)
		*util_pct = p->util_sum / p->util_n;
}
