/*
 * reconcile.c - MPS control daemons and time-slice levels (see
 * reconcile.h).
 *
 * The MPS table is indexed like the model's placement: (gpu, gi), gi = -1
 * for a whole GPU. Only the tick thread touches it, except the API's view
 * (gs_reconciler_gpu_json), hence the small lock.
 */
#include "reconcile.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "gs/log.h"
#include "node_int.h"

extern char **environ;

#define MPS_MAX      (GS_GPUS_MAX * (GS_GPU_MIG_MAX + 1))
#define MPS_PID_FILE "nvidia-cuda-mps-control.pid"

struct mps_dev {
	int gpu, gi;
	char uuid[96];
	char dir[256];
	bool want;
	bool running;
	int32_t pid;
	int restarts;
	int64_t last_start_ns;
	bool start_failed; /* the last start did not bring one up */
};

struct gs_reconciler {
	struct gs_node *node;
	pthread_mutex_t lock;
	int n;
	struct mps_dev dev[MPS_MAX];
};

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int gs_run_cmd(char *const argv[], char *const env[], const char *input,
               char *out, size_t len, int timeout_ms)
{
	posix_spawn_file_actions_t fa;
	int in[2] = {-1, -1}, outp[2] = {-1, -1};
	char **envp = NULL;
	size_t n_env = 0, n_extra = 0, used = 0;
	int64_t deadline = mono_ms() + timeout_ms;
	pid_t pid;
	int status = -1, rc;

	for (char **e = environ; e && *e; e++)
		n_env++;
	for (char *const *e = env; e && *e; e++)
		n_extra++;
	envp = calloc(n_env + n_extra + 1, sizeof(*envp));
	if (envp == NULL)
		return -1;
	{
		size_t k = 0;

		for (char *const *e = env; e && *e; e++)
			envp[k++] = *e;
		/* Keep the rest of our environment, minus what env overrides.
		 */
		for (char **e = environ; e && *e; e++) {
			const char *eq = strchr(*e, '=');
			bool dup = false;

			for (char *const *x = env; eq && x && *x; x++)
				if (strncmp(*x, *e, (size_t)(eq - *e) + 1) == 0)
					dup = true;
			if (!dup)
				envp[k++] = *e;
		}
	}
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(outp, O_CLOEXEC) != 0)
		goto out;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	in[0] = -1;
	close(outp[1]);
	outp[1] = -1;
	if (rc != 0)
		goto out;
	if (input)
		(void)!write(in[1], input, strlen(input));
	close(in[1]);
	in[1] = -1;
	for (;;) {
		struct pollfd pfd = {.fd = outp[0], .events = POLLIN};
		int64_t left = deadline - mono_ms();
		char buf[512];
		ssize_t k;

		if (left <= 0) {
			(void)kill(pid, SIGKILL);
			(void)waitpid(pid, NULL, 0);
			status = -1;
			goto out;
		}
		rc = poll(&pfd, 1, (int)left);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			continue;
		k = read(outp[0], buf, sizeof(buf));
		if (k <= 0)
			break;
		if (out && used + 1 < len) {
			size_t c = (size_t)k < len - 1 - used ? (size_t)k
			                                      : len - 1 - used;

			memcpy(out + used, buf, c);
			used += c;
		}
	}
	if (out && len)
		out[used] = '\0';
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
out:
	if (in[0] >= 0)
		close(in[0]);
	if (in[1] >= 0)
		close(in[1]);
	if (outp[0] >= 0)
		close(outp[0]);
	if (outp[1] >= 0)
		close(outp[1]);
	free(envp);
	return status;
}

static bool mps_ensure(void *arg, const struct gs_slice *s,
                       struct gs_errbuf *eb);

gs_err gs_reconciler_create(struct gs_node *node, struct gs_reconciler **out,
                            struct gs_errbuf *eb)
{
	struct gs_reconciler *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	r->node = node;
	pthread_mutex_init(&r->lock, NULL);
	gs_node_set_mps_starter(node, mps_ensure, r);
	*out = r;
	return GS_OK;
}

void gs_reconciler_destroy(struct gs_reconciler *r)
{
	if (r == NULL)
		return;
	gs_node_set_mps_starter(r->node, NULL, NULL);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

static struct mps_dev *mps_find(struct gs_reconciler *r, int gpu, int gi)
{
	for (int i = 0; i < r->n; i++)
		if (r->dev[i].gpu == gpu && r->dev[i].gi == gi)
			return &r->dev[i];
	return NULL;
}

static struct mps_dev *mps_get(struct gs_reconciler *r, int gpu, int gi)
{
	struct mps_dev *d = mps_find(r, gpu, gi);
	const char *root = gs_node_mps_dir(r->node);

	if (d || r->n == MPS_MAX)
		return d;
	d = &r->dev[r->n++];
	memset(d, 0, sizeof(*d));
	d->gpu = gpu;
	d->gi = gi;
	if (gi >= 0)
		snprintf(d->dir, sizeof(d->dir), "%.200s/gpu%d-gi%d", root, gpu,
		         gi);
	else
		snprintf(d->dir, sizeof(d->dir), "%.200s/gpu%d", root, gpu);
	return d;
}

static void mkdirs(const char *path)
{
	char buf[300];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		(void)mkdir(buf, 0755);
		*p = '/';
	}
	(void)mkdir(buf, 0755);
}

/* The control daemon's pid from its pid file, when it is alive. */
static int32_t mps_alive(const struct mps_dev *d)
{
	char path[320], buf[32];
	int fd;
	ssize_t k;
	long pid;

	snprintf(path, sizeof(path), "%s/pipe/%s", d->dir, MPS_PID_FILE);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	k = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (k <= 0)
		return 0;
	buf[k] = '\0';
	pid = strtol(buf, NULL, 10);
	if (pid <= 1 || (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
		return 0;
	return (int32_t)pid;
}

static void mps_env(const struct mps_dev *d, char env[3][320])
{
	snprintf(env[0], 320, "CUDA_MPS_PIPE_DIRECTORY=%s/pipe", d->dir);
	snprintf(env[1], 320, "CUDA_MPS_LOG_DIRECTORY=%s/log", d->dir);
	snprintf(env[2], 320, "CUDA_VISIBLE_DEVICES=%s", d->uuid);
}

static bool mps_start(struct gs_reconciler *r, struct mps_dev *d)
{
	char envs[3][320], path[300];
	char *env[4] = {envs[0], envs[1], envs[2], NULL};
	char *argv[] = {(char *)gs_node_config(r->node)->mps_control, "-d",
	                NULL};
	int rc;

	snprintf(path, sizeof(path), "%s/pipe", d->dir);
	mkdirs(path);
	snprintf(path, sizeof(path), "%s/log", d->dir);
	mkdirs(path);
	mps_env(d, envs);
	rc = gs_run_cmd(argv, env, NULL, NULL, 0, 10000);
	d->last_start_ns = gs_now_ns();
	if (rc != 0) {
		gs_error("reconcile",
		         "gpu=%d gi=%d cannot start %s -d (status %d)", d->gpu,
		         d->gi, argv[0], rc);
		d->start_failed = true;
		return false;
	}
	/* -d returns once the daemon is up; its pid file says who it is. */
	for (int i = 0; i < 50 && (d->pid = mps_alive(d)) == 0; i++)
		usleep(20000);
	d->running = d->pid != 0;
	d->start_failed = !d->running;
	gs_info("reconcile", "gpu=%d gi=%d MPS control daemon %s pid=%d dir=%s",
	        d->gpu, d->gi, d->running ? "started" : "did not start",
	        (int)d->pid, d->dir);
	return d->running;
}

static void mps_stop(struct gs_reconciler *r, struct mps_dev *d)
{
	char envs[3][320];
	char *env[4] = {envs[0], envs[1], envs[2], NULL};
	char *argv[] = {(char *)gs_node_config(r->node)->mps_control, NULL};
	int rc;

	mps_env(d, envs);
	rc = gs_run_cmd(argv, env, "quit\n", NULL, 0, 10000);
	gs_info("reconcile", "gpu=%d gi=%d MPS control daemon quit status=%d",
	        d->gpu, d->gi, rc);
	for (int i = 0; i < 50 && mps_alive(d); i++)
		usleep(20000);
	d->running = false;
	d->pid = 0;
}

/* A failed start is not tried again for this long. */
#define MPS_BACKOFF_NS 10000000000LL

/* Lock held: the control daemon MPS slice `s` is a client of, marked
 * wanted, with the device it serves; NULL when there is no room. */
static struct mps_dev *mps_want(struct gs_reconciler *r,
                                const struct gs_slice *s)
{
	int gi = s->mode == GS_MODE_MIG_MPS ? s->gi_id : -1;
	struct mps_dev *d = mps_get(r, s->gpu_index, gi);

	if (d == NULL)
		return NULL;
	d->want = true;
	snprintf(d->uuid, sizeof(d->uuid), "%s",
	         gi >= 0 ? s->mig_uuid : s->gpu_uuid);
	return d;
}

/* Lock held: whether `d` runs, starting it unless its last start failed
 * less than MPS_BACKOFF_NS ago (then *ago, may be NULL, says how long). */
static bool mps_bring_up(struct gs_reconciler *r, struct mps_dev *d,
                         int64_t *ago)
{
	int64_t since;

	d->pid = mps_alive(d);
	d->running = d->pid != 0;
	if (d->running)
		return true;
	since = gs_now_ns() - d->last_start_ns;
	if (d->start_failed && since < MPS_BACKOFF_NS) {
		if (ago)
			*ago = since;
		return false;
	}
	return mps_start(r, d);
}

/*
 * The node's MPS starter (gs_node_set_mps_starter): a create of MPS slice
 * `s` brings up the control daemon it will be a client of, so the slice is
 * ready only once that runs. A start that failed less than 10 s ago is not
 * tried again (the tick's back-off): the create fails at once.
 */
static bool mps_ensure(void *arg, const struct gs_slice *s,
                       struct gs_errbuf *eb)
{
	struct gs_reconciler *r = arg;
	const char *mig = s->mode == GS_MODE_MIG_MPS ? " (MIG)" : "";
	struct mps_dev *d;
	bool ok;
	int64_t ago = 0;

	pthread_mutex_lock(&r->lock);
	d = mps_want(r, s);
	ok = d != NULL && mps_bring_up(r, d, &ago);
	pthread_mutex_unlock(&r->lock);
	if (d == NULL)
		gs_fail(eb, GS_ERR_UNAVAILABLE,
		        "no room for another MPS control daemon (%d)", MPS_MAX);
	else if (!ok && ago > 0)
		gs_fail(eb, GS_ERR_UNAVAILABLE,
		        "gpu %d%s: the last start failed %.1f s ago (gpusliced's "
		        "log says why); try again in %.0f s",
		        s->gpu_index, mig, (double)ago / 1e9,
		        (double)(MPS_BACKOFF_NS - ago) / 1e9 + 0.5);
	else if (!ok)
		gs_fail(eb, GS_ERR_UNAVAILABLE,
		        "gpu %d%s: %s -d did not start a daemon (gpusliced's log "
		        "says why)",
		        s->gpu_index, mig, gs_node_config(r->node)->mps_control);
	return ok;
}

void gs_reconciler_tick(struct gs_reconciler *r)
{
	struct gs_node *node = r->node;

	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < r->n; i++)
		r->dev[i].want = false;
	pthread_mutex_lock(&node->lock);
	for (int i = 0; i < node->n; i++) {
		const struct gs_slice *s = &node->v[i]->s;

		if (s->mode == GS_MODE_MPS || s->mode == GS_MODE_MIG_MPS)
			(void)mps_want(r, s);
	}
	pthread_mutex_unlock(&node->lock);

	for (int i = 0; i < r->n; i++) {
		struct mps_dev *d = &r->dev[i];

		if (d->want) {
			(void)mps_bring_up(r, d, NULL);
			continue;
		}
		d->pid = mps_alive(d);
		d->running = d->pid != 0;
		if (d->running)
			mps_stop(r, d);
	}
	pthread_mutex_unlock(&r->lock);
}

bool gs_reconciler_mps_restart(struct gs_reconciler *r, int gpu, int gi)
{
	struct mps_dev *d;
	bool ok = false;

	pthread_mutex_lock(&r->lock);
	d = mps_find(r, gpu, gi);
	if (d && (d->running || mps_alive(d))) {
		mps_stop(r, d);
		d->restarts++;
		d->last_start_ns = 0;
		ok = mps_start(r, d);
	}
	pthread_mutex_unlock(&r->lock);
	return ok;
}

void gs_reconciler_timeslice(struct gs_reconciler *r)
{
	const struct gs_config *cfg = gs_node_config(r->node);
	struct gs_gpus *g;

	if (!cfg->timeslice_set)
		return;
	g = malloc(sizeof(*g));
	if (g == NULL)
		return;
	gs_node_gpus(r->node, g);
	for (int i = 0; i < g->n; i++) {
		char idx[16], lvl[16], out[256] = "";
		char *argv[] = {"nvidia-smi", "compute-policy",  "-i",
		                idx,          "--set-timeslice", lvl,
		                NULL};
		int rc;

		if (g->gpu[i].mig_on)
			continue;
		snprintf(idx, sizeof(idx), "%d", i);
		snprintf(lvl, sizeof(lvl), "%d", cfg->timeslice_level);
		rc = gs_run_cmd(argv, NULL, NULL, out, sizeof(out), 10000);
		if (rc == 0)
			gs_info("reconcile", "gpu=%d time-slice level %d set",
			        i, cfg->timeslice_level);
		else
			gs_warn("reconcile",
			        "gpu=%d nvidia-smi compute-policy "
			        "--set-timeslice %d failed (status %d)",
			        i, cfg->timeslice_level, rc);
	}
	free(g);
}

void gs_reconciler_gpu_json(void *ctx, int gpu, void *json_obj)
{
	struct gs_reconciler *r = ctx;
	json_t *o = json_object(), *a = json_array();

	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < r->n; i++) {
		struct mps_dev *d = &r->dev[i];
		json_t *x;
		char buf[300];

		if (d->gpu != gpu || !d->running)
			continue;
		x = json_object();
		json_object_set_new(
		    x, "gi", d->gi >= 0 ? json_integer(d->gi) : json_null());
		json_object_set_new(x, "pid", json_integer(d->pid));
		snprintf(buf, sizeof(buf), "%s/pipe", d->dir);
		json_object_set_new(x, "pipe_dir", json_string(buf));
		json_object_set_new(x, "restarts", json_integer(d->restarts));
		json_array_append_new(a, x);
	}
	pthread_mutex_unlock(&r->lock);
	json_object_set_new(o, "daemons", a);
	json_object_set_new((json_t *)json_obj, "mps", o);
}

int gs_reconciler_mps_running(struct gs_reconciler *r)
{
	int n = 0;

	pthread_mutex_lock(&r->lock);
	for (int i = 0; i < r->n; i++)
		n += r->dev[i].running;
	pthread_mutex_unlock(&r->lock);
	return n;
}
