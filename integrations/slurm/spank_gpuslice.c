/*
 * spank_gpuslice.c - the SPANK plugin (spank_gpuslice.so): enforced GPU
 * fractions for Slurm jobs.
 *
 * Adds --gpu-mem=SIZE, --gpu-compute=PCT, --gpu-priority=high|normal|low and
 * --gpuslice-swap=allow|never
 * to srun, sbatch and salloc, and on the node runs the job's tasks in a
 * gpuslice slice with those limits (jobspec.h says which limits and which
 * slice; hold.h how the slice is made and deleted). Where each callback
 * runs and what it does:
 *
 *   srun / sbatch / salloc      option callbacks: parse and check each
 *   (local, allocator)          value; a bad one fails the submission
 *   slurmstepd, per step        init_post_opt: limits from the options and
 *   (remote, root)              the gres environment; acquire the slice;
 *                               LD_PRELOAD the shim and name the slice in
 *                               the tasks' environment
 *                               task_post_fork: tell the daemon the task
 *                               task_init (in the task, just before exec):
 *                               fail it when the step has no slice; the
 *                               daemon's CUDA_VISIBLE_DEVICES
 *                               exit: release the slice (also after
 *                               scancel: slurmstepd still runs it)
 *   job epilog (job script)     delete whatever slice of the job is left
 *   slurmd                      nothing
 *
 * A guest in Slurm's daemons: it never exits or aborts, prints nothing on
 * their streams (slurm_error/slurm_info go to their logs), and a failure
 * in a step fails that step's tasks, never slurmd. That is why no callback
 * in slurmstepd returns an error before task_init: in Slurm 22.05 a batch
 * step whose plugin stack fails to initialise drains the node ("batch job
 * complete failure"), which a user's bad quota or a stopped daemon must
 * not do. Such a failure is kept (step_fail) and reported by task_init,
 * in the task, on the job's stderr, before exec: the task exits 1 and the
 * job fails like any job whose program fails.
 *
 * State is per process: one slurmstepd serves one step, so the step's hold
 * and error are statics.
 *
 * Plugstack arguments are parsed in every callback that needs them:
 * Slurm does not call init before job_prolog/job_epilog.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <slurm/spank.h>

#include "gresconf.h"
#include "gs/spec.h"
#include "hold.h"
#include "jobspec.h"

SPANK_PLUGIN(gpuslice, 1);

#define TAG           "gpuslice"
#define GRES_CONF_MAX (1u << 20)
#define ENV_MAX       4096

static struct gs_slurm_request request = {
    .mem = 0, .compute = 0, .priority = -1, .swap = -1};
static struct gs_slurm_hold hold;
static char shim_path[GS_SLURM_PATH_MAX];
static char step_error[512]; /* slurmstepd: why the step cannot run */

/*
 * Logs an error; in slurmstepd also keeps the first one for task_init.
 * Returns what the calling callback should return: 0 in slurmstepd (see
 * the top of the file), -1 elsewhere (srun, sbatch and salloc refuse).
 */
__attribute__((format(printf, 1, 2))) static int step_fail(const char *fmt, ...)
{
	char msg[sizeof(step_error)];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	slurm_error(TAG ": %s", msg);
	if (spank_context() != S_CTX_REMOTE)
		return -1;
	if (step_error[0] == '\0')
		(void)snprintf(step_error, sizeof(step_error), "%s", msg);
	return 0;
}

static int option_cb(int val, const char *optarg, int remote);

static struct spank_option options[] = {
    {"gpu-mem", "SIZE",
     "GPU memory cap per GPU for the tasks (gpuslice): 8G, 512MiB, ...", 1,
     GS_SLURM_OPT_MEM, option_cb},
    {"gpu-compute", "PCT",
     "share of the GPU's time, 1..100 (gpuslice; default with gres/shard: the shards' share)",
     1, GS_SLURM_OPT_COMPUTE, option_cb},
    {"gpu-priority", "high|normal|low",
     "priority of the tasks' GPU work next to other slices (gpuslice)", 1,
     GS_SLURM_OPT_PRIORITY, option_cb},
    {"gpuslice-swap", "allow|never",
     "whether gpusliced may swap the tasks' GPU memory out to host memory (gpuslice; default allow)",
     1, GS_SLURM_OPT_SWAP, option_cb},
};

#define N_OPTIONS (sizeof(options) / sizeof(options[0]))

static int option_cb(int val, const char *optarg, int remote)
{
	struct gs_errbuf eb = {0};
	gs_err err;

	(void)remote;
	err =
	    gs_slurm_request_set(&request, (enum gs_slurm_opt)val, optarg, &eb);
	if (err != GS_OK)
		return step_fail("%s", gs_errbuf_msg(&eb, err));
	return 0;
}

/* Reads the plugstack arguments. Returns 0, or -1 after logging. */
static int conf_load(struct gs_slurm_conf *c, int ac, char **av)
{
	struct gs_errbuf eb = {0};
	gs_err err;

	gs_slurm_conf_init(c);
	err = gs_slurm_conf_parse(c, ac, av, &eb);
	if (err != GS_OK) {
		slurm_error(TAG ": plugstack.conf: %s",
		            gs_errbuf_msg(&eb, err));
		return -1;
	}
	return 0;
}

/* The same in a callback that may fail the job (see step_fail). */
static int conf_load_or_fail(struct gs_slurm_conf *c, int ac, char **av)
{
	struct gs_errbuf eb = {0};
	gs_err err;

	gs_slurm_conf_init(c);
	err = gs_slurm_conf_parse(c, ac, av, &eb);
	if (err != GS_OK) {
		(void)step_fail("plugstack.conf: %s", gs_errbuf_msg(&eb, err));
		return -1;
	}
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();
	struct gs_slurm_conf c;

	if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR && ctx != S_CTX_REMOTE)
		return 0;
	if (conf_load_or_fail(&c, ac, av) != 0 && ctx != S_CTX_REMOTE)
		return -1;
	for (size_t i = 0; i < N_OPTIONS; i++) {
		spank_err_t rc = spank_option_register(sp, &options[i]);

		if (rc != ESPANK_SUCCESS)
			return step_fail("cannot register --%s: %s",
			                 options[i].name, spank_strerror(rc));
	}
	return 0;
}

/* ---- slurmstepd ---------------------------------------------------------- */

/* A job environment variable, or NULL when unset. */
static const char *job_env(spank_t sp, const char *name, char *buf, int len)
{
	return spank_getenv(sp, name, buf, len) == ESPANK_SUCCESS ? buf : NULL;
}

/*
 * The shim: shim= when given, else libgpuslice.so next to this plugin
 * (both are built into build/lib and installed side by side). Returns 0,
 * or -1 after logging.
 */
static int find_shim(const struct gs_slurm_conf *c)
{
	struct stat st;
	Dl_info info;
	const char *slash;

	if (c->shim[0] != '\0') {
		(void)snprintf(shim_path, sizeof(shim_path), "%s", c->shim);
	} else {
		if (dladdr((void *)&find_shim, &info) == 0 ||
		    info.dli_fname == NULL ||
		    (slash = strrchr(info.dli_fname, '/')) == NULL) {
			(void)step_fail("cannot tell where the plugin lives; give shim= in plugstack.conf");
			return -1;
		}
		(void)snprintf(shim_path, sizeof(shim_path),
		               "%.*s/libgpuslice.so",
		               (int)(slash - info.dli_fname), info.dli_fname);
	}
	if (stat(shim_path, &st) != 0 || !S_ISREG(st.st_mode)) {
		(void)step_fail(
		    "the shim %s is missing (shim= in plugstack.conf)",
		    shim_path);
		return -1;
	}
	return 0;
}

/*
 * Shards per GPU: shards_per_gpu= when given, else gres.conf (gres_conf=,
 * else next to slurm.conf). OUT: *per_gpu (0 when not known). Returns 0,
 * or -1 after logging.
 */
static int shards_per_gpu(const struct gs_slurm_conf *c, int *per_gpu)
{
	char path[GS_SLURM_PATH_MAX], node[256] = "";
	const char *conf, *slash, *n;
	struct gs_errbuf eb = {0};
	char *text;
	size_t len;
	FILE *f;
	gs_err err;

	*per_gpu = c->shards_per_gpu;
	if (*per_gpu > 0)
		return 0;
	if (c->gres_conf[0] != '\0') {
		(void)snprintf(path, sizeof(path), "%s", c->gres_conf);
	} else {
		conf = getenv("SLURM_CONF");
		if (conf == NULL || conf[0] == '\0')
			conf = "/etc/slurm/slurm.conf";
		slash = strrchr(conf, '/');
		(void)snprintf(path, sizeof(path), "%.*s/gres.conf",
		               slash ? (int)(slash - conf) : 1,
		               slash ? conf : ".");
	}
	f = fopen(path, "re");
	if (f == NULL) {
		int e = errno;

		(void)step_fail("cannot read %s for the shards per GPU: %s",
		                path, strerror(e));
		return -1;
	}
	text = malloc(GRES_CONF_MAX + 1);
	if (text == NULL) {
		(void)fclose(f);
		(void)step_fail("out of memory");
		return -1;
	}
	len = fread(text, 1, GRES_CONF_MAX, f);
	(void)fclose(f);
	text[len] = '\0';
	n = getenv("SLURMD_NODENAME");
	if (n != NULL)
		(void)snprintf(node, sizeof(node), "%s", n);
	else if (gethostname(node, sizeof(node)) != 0)
		node[0] = '\0';
	err = gs_gresconf_shards_per_gpu(text, node[0] ? node : NULL, per_gpu,
	                                 &eb);
	free(text);
	if (err != GS_OK) {
		(void)step_fail("%s: %s", path, gs_errbuf_msg(&eb, err));
		return -1;
	}
	return 0;
}

/* Sets LD_PRELOAD (the shim first), GPUSLICE_SLICE and GPUSLICE_RUN_DIR. */
static int set_task_env(spank_t sp)
{
	char cur[ENV_MAX], val[ENV_MAX + GS_SLURM_PATH_MAX + 2];
	const char *pre = job_env(sp, "LD_PRELOAD", cur, sizeof(cur));

	if (pre == NULL || pre[0] == '\0')
		(void)snprintf(val, sizeof(val), "%s", shim_path);
	else if (strstr(pre, shim_path) != NULL)
		(void)snprintf(val, sizeof(val), "%s", pre);
	else
		(void)snprintf(val, sizeof(val), "%s:%s", shim_path, pre);
	if (spank_setenv(sp, "LD_PRELOAD", val, 1) != ESPANK_SUCCESS ||
	    spank_setenv(sp, "GPUSLICE_SLICE", hold.name, 1) !=
	        ESPANK_SUCCESS ||
	    spank_setenv(sp, "GPUSLICE_RUN_DIR", hold.run_dir, 1) !=
	        ESPANK_SUCCESS) {
		(void)step_fail("cannot set the tasks' environment");
		return -1;
	}
	return 0;
}

/* Who the step is. Returns 0, or -1 after logging. */
static int step_who(spank_t sp, const struct gs_slurm_gres *g,
                    struct gs_slurm_who *w)
{
	char acct[GS_SLURM_ACCOUNT_MAX];
	uid_t uid = 0;

	memset(w, 0, sizeof(*w));
	if (spank_get_item(sp, S_JOB_ID, &w->job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &w->step_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS) {
		(void)step_fail("cannot read the job's id, step or user");
		return -1;
	}
	w->uid = (uint32_t)uid;
	if (job_env(sp, "SLURM_JOB_ACCOUNT", acct, sizeof(acct)) != NULL)
		(void)snprintf(w->account, sizeof(w->account), "%s", acct);
	w->gpu_index = g->first_gpu;
	w->n_gpus = g->n_gpus;
	w->swap = request.swap;
	return 0;
}

/*
 * The step's slice: limits, hold, environment. 0, or -1 after step_fail.
 */
static int step_begin(spank_t sp, int ac, char **av)
{
	char vis[ENV_MAX], shards[32], step[16], mem[32], qos[64];
	struct gs_slurm_conf c;
	struct gs_slurm_gres g;
	struct gs_slurm_who w;
	struct gs_slice_limits lim;
	struct gs_errbuf eb = {0};
	bool wanted = false;
	gs_err err;

	if (conf_load_or_fail(&c, ac, av) != 0)
		return -1;
	err = gs_slurm_gres_from_env(
	    &g, job_env(sp, "CUDA_VISIBLE_DEVICES", vis, sizeof(vis)),
	    job_env(sp, "SLURM_SHARDS_ON_NODE", shards, sizeof(shards)), &eb);
	if (err != GS_OK) {
		(void)step_fail("%s", gs_errbuf_msg(&eb, err));
		return -1;
	}
	if (step_who(sp, &g, &w) != 0)
		return -1;
	if (w.step_id == 0xfffffffcu) /* the extern step runs no tasks */
		return 0;
	if (g.shards_held > 0 && request.compute == 0 &&
	    shards_per_gpu(&c, &g.shards_per_gpu) != 0)
		return -1;
	err = gs_slurm_limits_qos(&c, &request, &g,
	                          job_env(sp, "SLURM_JOB_QOS", qos, sizeof(qos)),
	                          &lim, &wanted, &eb);
	if (err != GS_OK) {
		(void)step_fail("job %u: %s", w.job_id,
		                gs_errbuf_msg(&eb, err));
		return -1;
	}
	if (!wanted)
		return 0;
	lim.owner_uid = w.uid; /* the job's tasks, and nobody else's */
	if (find_shim(&c) != 0)
		return -1;
	err = gs_slurm_hold_acquire(&hold, &c, &w, &lim, &eb);
	if (err != GS_OK) {
		(void)step_fail(
		    "job %u step %s: no slice: %s", w.job_id,
		    gs_slurm_step_name(w.step_id, step, sizeof(step)),
		    gs_errbuf_msg(&eb, err));
		return -1;
	}
	if (set_task_env(sp) != 0) {
		gs_slurm_hold_release(&hold, NULL);
		return -1;
	}
	if (lim.mem_limit > 0)
		(void)gs_format_memory(lim.mem_limit, mem, sizeof(mem));
	else
		(void)snprintf(mem, sizeof(mem), "-");
	slurm_info(TAG ": job %u step %s: slice %s (memory %s, compute %u%%, priority %u, %s)",
	           w.job_id, gs_slurm_step_name(w.step_id, step, sizeof(step)),
	           hold.name, mem, lim.compute_pct, lim.priority,
	           hold.via_daemon ? "through gpusliced" : "standalone");
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	if (spank_context() != S_CTX_REMOTE || step_error[0] != '\0')
		return 0;
	(void)step_begin(sp, ac, av); /* a failure is task_init's to report */
	return 0;
}

int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	struct gs_errbuf eb = {0};
	pid_t pid = 0;
	gs_err err;

	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_REMOTE || !hold.held || !hold.via_daemon)
		return 0;
	/*
	 * Only logged: the task runs already, under the shim, which attaches
	 * it to the slice in the daemon's region, where the daemon sees it
	 * too; this registration adds processes that bypass the shim.
	 * Failing here would fail the step in slurmstepd (see the top).
	 */
	if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS) {
		slurm_error(TAG ": slice %s: cannot read a task's pid",
		            hold.name);
		return 0;
	}
	err = gs_slurm_hold_add_task(&hold, (int32_t)pid, &eb);
	if (err != GS_OK)
		slurm_error(TAG
		            ": slice %s: gpusliced did not take task %d: %s",
		            hold.name, (int)pid, gs_errbuf_msg(&eb, err));
	return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_REMOTE)
		return 0;
	if (step_error[0] != '\0') {
		/* In the task, before exec: its stderr is the job's. */
		fprintf(stderr, "gpuslice: %s\n", step_error);
		fflush(stderr);
		return -1;
	}
	if (!hold.held || hold.visible[0] == '\0')
		return 0;
	/* Here, after Slurm's gres plugin bound the task to its GPUs. */
	if (spank_setenv(sp, "CUDA_VISIBLE_DEVICES", hold.visible, 1) !=
	    ESPANK_SUCCESS) {
		slurm_error(TAG ": cannot set CUDA_VISIBLE_DEVICES");
		return -1;
	}
	return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	struct gs_errbuf eb = {0};

	(void)sp;
	(void)ac;
	(void)av;
	if (spank_context() != S_CTX_REMOTE || !hold.held)
		return 0;
	gs_slurm_hold_release(&hold, &eb);
	if (eb.set)
		slurm_error(TAG ": %s", eb.msg);
	return 0;
}

/* ---- epilog -------------------------------------------------------------- */

/*
 * The backstop: deletes every slice of the job that is left (a
 * slurmstepd killed before its exit callback). Failures are logged and
 * not returned: a failed epilog drains the node, too much for a cleanup
 * that the daemon's own on_exit=delete backs up.
 */
int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	struct gs_slurm_conf c;
	struct gs_errbuf eb = {0};
	uint32_t job = 0;
	int deleted = 0;
	gs_err err;

	if (conf_load(&c, ac, av) != 0)
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS) {
		const char *e = getenv("SLURM_JOB_ID");
		char *end;

		errno = 0;
		job = e ? (uint32_t)strtoul(e, &end, 10) : 0;
		if (e == NULL || *end != '\0' || errno != 0 || job == 0) {
			slurm_error(TAG ": epilog: no job id");
			return 0;
		}
	}
	err = gs_slurm_sweep(&c, job, &deleted, &eb);
	if (err != GS_OK)
		slurm_error(TAG ": epilog of job %u: %s", job,
		            gs_errbuf_msg(&eb, err));
	else if (deleted > 0)
		slurm_info(
		    TAG ": epilog of job %u: deleted %d slice(s) left behind",
		    job, deleted);
	return 0;
}
