/*
 * reconcile.c - MPS control daemons and time-slice levels (see
 * reconcile.h).
 *
 * The MPS table is indexed like the model's placement: (gpu, gi), gi = -1
 * for a whole GPU. Only the tick thread touches it, except the API's view
 * (gs_reconciler_gpu_json), hence the small lock.
 *
 * MPS control daemons outlive gpusliced (they serve running programs), so
 * the table also holds the ones found at start: gs_reconciler_create reads
 * <run>/mps/gpu<N>[-gi<M>]/pipe for live pid files and enters each; the
 * first tick adopts those a slice still wants and stops the others. On the
 * way out (gs_reconciler_destroy) every daemon no slice wants is stopped,
 * so a gpusliced whose MPS slices are gone leaves no daemon behind.
 */
#include "reconcile.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "gs/cmd.h"
#include "gs/log.h"
#include "gs/mps.h"
#include "node_int.h"
#include "swapper.h"

#define MPS_MAX      (GS_GPUS_MAX * (GS_GPU_MIG_MAX + 1))

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
	bool starting;     /* ... but -d succeeded: it may still come up */
};

struct gs_reconciler {
	struct gs_node *node;
	struct gs_swapper *swapper; /* NULL unless swap oversubscribes */
	pthread_mutex_t lock;
	int n;
	struct mps_dev dev[MPS_MAX];
};

int gs_run_cmd(char *const argv[], char *const env[], const char *input,
               char *out, size_t len, int timeout_ms)
{
	return gs_cmd_run(argv, (const char *const *)env, input, out, len,
	                  timeout_ms, 0);
}

static gs_err mps_ensure(void *arg, const struct gs_slice *s,
                         struct gs_errbuf *eb);
static void mps_adopt_all(struct gs_reconciler *r);
static void mps_stop_unwanted(struct gs_reconciler *r);

gs_err gs_reconciler_create(struct gs_node *node, struct gs_reconciler **out,
                            struct gs_errbuf *eb)
{
	struct gs_reconciler *r = calloc(1, sizeof(*r));
	gs_err err;

	if (r == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	r->node = node;
	err = gs_swapper_create(node, &r->swapper, eb);
	if (err != GS_OK) {
		free(r);
		return err;
	}
	pthread_mutex_init(&r->lock, NULL);
	gs_node_set_mps_starter(node, mps_ensure, r);
	mps_adopt_all(r);
	*out = r;
	return GS_OK;
}

void gs_reconciler_destroy(struct gs_reconciler *r)
{
	if (r == NULL)
		return;
	gs_swapper_destroy(r->swapper);
	gs_node_set_mps_starter(r->node, NULL, NULL);
	mps_stop_unwanted(r);
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
	char pipe[300];

	snprintf(pipe, sizeof(pipe), "%s/pipe", d->dir);
	return gs_mps_pid(pipe);
}

/* How to reach d's control daemon; dirs[0] pipe, dirs[1] log. */
static struct gs_mps_ctl mps_ctl(struct gs_reconciler *r,
                                 const struct mps_dev *d, char dirs[2][300])
{
	struct gs_mps_ctl c = {
	    .prog = gs_node_config(r->node)->mps_control,
	    .pipe_dir = dirs[0],
	    .log_dir = dirs[1],
	    .visible = d->uuid,
	    .timeout_ms = 10000,
	};

	snprintf(dirs[0], 300, "%s/pipe", d->dir);
	snprintf(dirs[1], 300, "%s/log", d->dir);
	return c;
}

static bool mps_start(struct gs_reconciler *r, struct mps_dev *d)
{
	char dirs[2][300];
	struct gs_mps_ctl c = mps_ctl(r, d, dirs);
	int rc;

	mkdirs(dirs[0]);
	mkdirs(dirs[1]);
	rc = gs_mps_start(&c, NULL, 0);
	d->last_start_ns = gs_now_ns();
	if (rc != 0) {
		gs_error("reconcile",
		         "gpu=%d gi=%d cannot start %s -d (status %d)", d->gpu,
		         d->gi, c.prog, rc);
		d->start_failed = true;
		d->starting = false;
		return false;
	}
	/* -d returns once the daemon is up; its pid file says who it is. */
	d->pid = gs_mps_wait_up(dirs[0], 1000, 20);
	d->running = d->pid != 0;
	d->start_failed = !d->running;
	d->starting = !d->running;
	gs_info("reconcile", "gpu=%d gi=%d MPS control daemon %s pid=%d dir=%s",
	        d->gpu, d->gi, d->running ? "started" : "did not start",
	        (int)d->pid, d->dir);
	return d->running;
}

static void mps_stop(struct gs_reconciler *r, struct mps_dev *d)
{
	char dirs[2][300];
	struct gs_mps_ctl c = mps_ctl(r, d, dirs);
	int rc;

	rc = gs_mps_quit(&c);
	gs_info("reconcile", "gpu=%d gi=%d MPS control daemon quit status=%d",
	        d->gpu, d->gi, rc);
	(void)gs_mps_wait_gone(dirs[0], 1000, 20);
	d->running = false;
	d->pid = 0;
}

/* A failed start is not tried again for this long. */
#define MPS_BACKOFF_NS 10000000000LL
/* A daemon whose `-d` succeeded but whose pid file is not there yet may
 * come up for this long: a create waits for it (GS_ERR_BUSY, the actor
 * tries again); after that it counts as a failed start. */
#define MPS_COMING_NS 5000000000LL

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

/* How a start of a control daemon stands (mps_bring_up). */
enum mps_up { MPS_UP, MPS_COMING, MPS_NOT_UP, MPS_BACKING_OFF, MPS_DOWN };

/*
 * Lock held: whether `d` runs, starting it unless its last start failed
 * less than MPS_BACKOFF_NS ago (then *ago, may be NULL, says how long)
 * or a daemon it started may still come up (MPS_COMING; MPS_NOT_UP once
 * MPS_COMING_NS passed without it).
 */
static enum mps_up mps_bring_up(struct gs_reconciler *r, struct mps_dev *d,
                                int64_t *ago)
{
	int64_t since;

	d->pid = mps_alive(d);
	d->running = d->pid != 0;
	if (d->running) {
		d->starting = false;
		return MPS_UP;
	}
	since = gs_now_ns() - d->last_start_ns;
	if (d->starting) {
		if (since < MPS_COMING_NS)
			return MPS_COMING;
		d->starting = false;
		return MPS_NOT_UP;
	}
	if (d->start_failed && since < MPS_BACKOFF_NS) {
		if (ago)
			*ago = since;
		return MPS_BACKING_OFF;
	}
	if (mps_start(r, d))
		return MPS_UP;
	return d->starting ? MPS_COMING : MPS_DOWN;
}

/*
 * The node's MPS starter (gs_node_set_mps_starter): a create of MPS slice
 * `s` brings up the control daemon it will be a client of, so the slice is
 * ready only once that runs. A start that failed less than 10 s ago is not
 * tried again (the tick's back-off): the create fails at once. A daemon
 * started but not up yet answers GS_ERR_BUSY (the actor asks again).
 */
static gs_err mps_ensure(void *arg, const struct gs_slice *s,
                         struct gs_errbuf *eb)
{
	struct gs_reconciler *r = arg;
	const char *mig = s->mode == GS_MODE_MIG_MPS ? " (MIG)" : "";
	struct mps_dev *d;
	enum mps_up up = MPS_DOWN;
	int64_t ago = 0;

	pthread_mutex_lock(&r->lock);
	d = mps_want(r, s);
	if (d != NULL)
		up = mps_bring_up(r, d, &ago);
	pthread_mutex_unlock(&r->lock);
	if (d == NULL)
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "no room for another MPS control daemon (%d)",
		               MPS_MAX);
	switch (up) {
	case MPS_UP:
		return GS_OK;
	case MPS_COMING:
		return gs_fail(eb, GS_ERR_BUSY,
		               "gpu %d%s: the MPS control daemon %s -d started is not up yet",
		               s->gpu_index, mig,
		               gs_node_config(r->node)->mps_control);
	case MPS_BACKING_OFF:
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "gpu %d%s: the last start failed %.1f s ago (gpusliced's log says why); try again in %.0f s",
		               s->gpu_index, mig, (double)ago / 1e9,
		               (double)(MPS_BACKOFF_NS - ago) / 1e9 + 0.5);
	case MPS_NOT_UP:
	case MPS_DOWN:
		break;
	}
	return gs_fail(eb, GS_ERR_UNAVAILABLE,
	               "gpu %d%s: %s -d did not start a daemon (gpusliced's log says why)",
	               s->gpu_index, mig, gs_node_config(r->node)->mps_control);
}

/* Lock held: marks wanted the control daemon of every MPS slice, and
 * only those. */
static void mps_mark_wanted(struct gs_reconciler *r)
{
	struct gs_node *node = r->node;

	for (int i = 0; i < r->n; i++)
		r->dev[i].want = false;
	pthread_mutex_lock(&node->lock);
	for (int i = 0; i < node->n; i++) {
		const struct gs_slice *s = &node->v[i]->s;

		if (s->mode == GS_MODE_MPS || s->mode == GS_MODE_MIG_MPS)
			(void)mps_want(r, s);
	}
	pthread_mutex_unlock(&node->lock);
}

/*
 * The control daemons a gpusliced before this one left in this run
 * directory: each <mps>/gpu<N>[-gi<M>] whose pipe holds a live daemon's
 * pid file is entered in the table (not wanted yet; the first tick
 * decides). A directory of another name is left alone.
 */
static void mps_adopt_all(struct gs_reconciler *r)
{
	const char *root = gs_node_mps_dir(r->node);
	DIR *dp = root ? opendir(root) : NULL;
	struct dirent *e;

	if (dp == NULL)
		return;
	pthread_mutex_lock(&r->lock);
	while ((e = readdir(dp)) != NULL) {
		int gpu = -1, gi = -1, used = 0;
		struct mps_dev *d;
		int32_t pid;

		if (sscanf(e->d_name, "gpu%d-gi%d%n", &gpu, &gi, &used) != 2 ||
		    e->d_name[used] != '\0') {
			gi = -1;
			used = 0;
			if (sscanf(e->d_name, "gpu%d%n", &gpu, &used) != 1 ||
			    e->d_name[used] != '\0')
				continue;
		}
		if (gpu < 0 || gpu >= GS_GPUS_MAX || gi < -1)
			continue;
		d = mps_get(r, gpu, gi);
		if (d == NULL)
			break;
		pid = mps_alive(d);
		if (pid == 0)
			continue;
		d->pid = pid;
		d->running = true;
		gs_info("reconcile", "gpu=%d gi=%d found the MPS control daemon pid=%d a previous gpusliced started (dir=%s): kept while a slice needs it",
		        gpu, gi, (int)pid, d->dir);
	}
	pthread_mutex_unlock(&r->lock);
	(void)closedir(dp);
}

/* Stops every running control daemon no slice wants (on the way out). */
static void mps_stop_unwanted(struct gs_reconciler *r)
{
	pthread_mutex_lock(&r->lock);
	mps_mark_wanted(r);
	for (int i = 0; i < r->n; i++) {
		struct mps_dev *d = &r->dev[i];

		if (d->want || mps_alive(d) == 0)
			continue;
		mps_stop(r, d);
	}
	pthread_mutex_unlock(&r->lock);
}

void gs_reconciler_tick(struct gs_reconciler *r)
{
	pthread_mutex_lock(&r->lock);
	mps_mark_wanted(r);

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
			        "gpu=%d nvidia-smi compute-policy --set-timeslice %d failed (status %d)",
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
