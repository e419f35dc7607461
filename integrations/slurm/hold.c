/*
 * hold.c - a job step's hold on its slice: through gpusliced or in the
 * shared region (see hold.h for the life of a hold and who deletes).
 *
 * Everything here runs inside slurmstepd (or its epilog process) as root:
 * it returns errors, never exits, and leaves no thread or descriptor
 * behind once a hold is released.
 */
#include "hold.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gs/client.h"
#include "gs/spec.h"

#define ACQUIRE_TRIES 4

void gs_slurm_hold_init(struct gs_slurm_hold *h)
{
	memset(h, 0, sizeof(*h));
	h->slice.slot = -1;
	h->proc.slot = -1;
}

static bool pid_alive(long pid)
{
	if (pid <= 0 || pid > INT32_MAX)
		return false;
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* ---- which way ---------------------------------------------------------- */

/* Whether gpusliced answers on `socket`. */
static bool daemon_answers(const char *socket)
{
	struct gs_client_conn conn;
	struct stat st;
	gs_err err;

	if (stat(socket, &st) != 0 || !S_ISSOCK(st.st_mode))
		return false;
	err = gs_client_connect(&conn, socket, NULL);
	gs_client_close(&conn);
	return err == GS_OK;
}

/* Decides between daemon and region. OUT: *daemon. */
static gs_err pick_way(const struct gs_slurm_conf *c, bool *daemon,
                       struct gs_errbuf *eb)
{
	*daemon = false;
	if (c->daemon == GS_SLURM_DAEMON_OFF)
		return GS_OK;
	*daemon = daemon_answers(c->socket);
	if (!*daemon && c->daemon == GS_SLURM_DAEMON_REQUIRED)
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "gpusliced does not answer on %s (plugstack daemon=required)",
		               c->socket);
	return GS_OK;
}

/* ---- standalone: the region --------------------------------------------- */

/*
 * Whether the region in `dir` belongs to another user (a daemon running
 * as its own user). Opening it as owner would replace its files, so the
 * plugin never does. OUT: *uid, its owner.
 */
static bool region_is_foreign(const char *dir, unsigned *uid)
{
	char path[GS_REGION_DIR_MAX + 16];
	struct stat st;

	(void)snprintf(path, sizeof(path), "%s/%s", dir, GS_REGION_LIMITS_FILE);
	if (lstat(path, &st) != 0)
		return false;
	*uid = (unsigned)st.st_uid;
	return st.st_uid != geteuid();
}

/* Whether a slurmstepd other than `self` holds `slice` (after a reap). */
static bool other_runner(struct gs_region *r, const struct gs_slice_ref *slice,
                         const struct gs_proc_ref *self)
{
	struct gs_proc_ref it = {.slot = -1};
	struct gs_proc_info info;

	(void)gs_region_reap(r);
	while (gs_region_proc_next(r, &it, &info)) {
		if (info.slice.slot != slice->slot ||
		    info.slice.generation != slice->generation)
			continue;
		if (!(info.flags & GS_PROC_RUNNER))
			continue;
		if (self != NULL && info.ref.slot == self->slot &&
		    info.ref.generation == self->generation)
			continue;
		return true;
	}
	return false;
}

/*
 * Joins slice `want->name`, taking over a leftover that no slurmstepd
 * holds. OUT: h->slice, h->proc, *same: whether its limits are `want`'s.
 */
static gs_err region_join(struct gs_slurm_hold *h,
                          const struct gs_slice_limits *want, bool *same,
                          struct gs_errbuf *eb)
{
	struct gs_slice_limits cur;
	bool created = false;
	gs_err err;

	err = gs_region_slice_join(h->region, want, GS_PROC_RUNNER, &h->slice,
	                           &h->proc, &created, eb);
	if (err != GS_OK)
		return err;
	*same = true;
	if (created)
		return GS_OK;
	err = gs_region_slice_limits(h->region, &h->slice, &cur);
	if (err != GS_OK)
		goto out_leave;
	if (gs_slurm_limits_same(&cur, want))
		return GS_OK;
	if (!other_runner(h->region, &h->slice, &h->proc)) {
		/* Left by a slurmstepd that died: ours now. */
		err = gs_region_slice_update(h->region, &h->slice, want, eb);
		if (err != GS_OK)
			goto out_leave;
		return GS_OK;
	}
	*same = false;
	return GS_OK;
out_leave:
	(void)gs_region_slice_leave(h->region, &h->slice, &h->proc, NULL);
	return gs_fail(eb, err, "slice %s: cannot read or take over its limits",
	               want->name);
}

static gs_err region_acquire(struct gs_slurm_hold *h,
                             const struct gs_slurm_conf *c,
                             const struct gs_slurm_who *w,
                             const struct gs_slice_limits *lim,
                             struct gs_errbuf *eb)
{
	struct gs_slice_limits want = *lim;
	char step[16];
	bool same = true;
	unsigned uid = 0;
	gs_err err;

	if (region_is_foreign(c->run_dir, &uid))
		return gs_fail(
		    eb, GS_ERR_PERM,
		    "the region in %s belongs to uid %u, not to this slurmstepd (is gpusliced down? its socket is %s)",
		    c->run_dir, uid, c->socket);
	/* No gpusliced: no arbiter; the jobs take turns among themselves. */
	err = gs_region_open_owner(c->run_dir, false, &h->region, eb);
	if (err != GS_OK)
		return err;
	(void)gs_region_reap(h->region);
	(void)gs_slurm_slice_name(w->job_id, NULL, want.name,
	                          sizeof(want.name));
	err = region_join(h, &want, &same, eb);
	if (err != GS_OK)
		goto out_close;
	if (!same) {
		/* A step slicing the job's GPU its own way. */
		(void)gs_region_slice_leave(h->region, &h->slice, &h->proc,
		                            NULL);
		(void)gs_slurm_slice_name(
		    w->job_id,
		    gs_slurm_step_name(w->step_id, step, sizeof(step)),
		    want.name, sizeof(want.name));
		err = region_join(h, &want, &same, eb);
		if (err != GS_OK)
			goto out_close;
		if (!same) {
			(void)gs_region_slice_leave(h->region, &h->slice,
			                            &h->proc, NULL);
			err = gs_fail(eb, GS_ERR_EXISTS,
			              "slice %s is held by another slurmstepd with other limits",
			              want.name);
			goto out_close;
		}
	}
	(void)snprintf(h->name, sizeof(h->name), "%s", want.name);
	(void)snprintf(h->run_dir, sizeof(h->run_dir), "%s", c->run_dir);
	h->via_daemon = false;
	h->held = true;
	return GS_OK;
out_close:
	gs_region_close(h->region);
	h->region = NULL;
	return err;
}

static void region_release(struct gs_slurm_hold *h, struct gs_errbuf *eb)
{
	struct gs_slice_ref slice = h->slice;
	bool deleted = false;
	gs_err err;

	err = gs_region_slice_leave(h->region, &slice, &h->proc, &deleted);
	if (err == GS_OK && !deleted &&
	    !other_runner(h->region, &slice, NULL)) {
		/* Stray processes of the step still attached: the slice
		 * goes with the step all the same. */
		err = gs_region_slice_delete(h->region, &slice, eb);
	}
	if (err != GS_OK && err != GS_ERR_NOT_FOUND)
		(void)gs_fail(eb, err, "slice %s: cannot leave or delete it",
		              h->name);
	gs_region_close(h->region);
	h->region = NULL;
}

/* Deletes job `job`'s slices in the region of `dir`, when it exists. */
static gs_err region_sweep(const char *dir, uint32_t job, int *deleted,
                           struct gs_errbuf *eb)
{
	char path[GS_REGION_DIR_MAX + 16];
	struct gs_slice_ref it = {.slot = -1};
	struct gs_region *r = NULL;
	struct stat st;
	unsigned uid = 0;
	gs_err err;

	(void)snprintf(path, sizeof(path), "%s/%s", dir, GS_REGION_LIMITS_FILE);
	if (stat(path, &st) != 0 || region_is_foreign(dir, &uid))
		return GS_OK;
	err = gs_region_open_owner(dir, false, &r, eb);
	if (err != GS_OK)
		return err;
	while (gs_region_slice_next(r, &it)) {
		struct gs_slice_limits lim;

		if (gs_region_slice_limits(r, &it, &lim) != GS_OK ||
		    !gs_slurm_slice_is_of_job(lim.name, job))
			continue;
		if (gs_region_slice_delete(r, &it, eb) == GS_OK)
			(*deleted)++;
	}
	gs_region_close(r);
	return GS_OK;
}

/* ---- through gpusliced -------------------------------------------------- */

json_t *gs_slurm_hold_spec_json(const char *name,
                                const struct gs_slice_limits *lim,
                                const struct gs_slurm_who *w, bool with_team)
{
	json_t *o = json_object();

	json_object_set_new(o, "name", json_string(name));
	json_object_set_new(o, "mode", json_string("timeslice"));
	if (lim->mem_limit > 0)
		json_object_set_new(o, "memory",
		                    json_integer((json_int_t)lim->mem_limit));
	if (lim->compute_pct > 0)
		json_object_set_new(o, "compute",
		                    json_integer((json_int_t)lim->compute_pct));
	json_object_set_new(
	    o, "priority",
	    json_string(gs_priority_name((enum gs_priority)lim->priority)));
	if (w->gpu_index >= 0)
		json_object_set_new(o, "gpu", json_integer(w->gpu_index));
	if (w->swap >= 0 && w->swap < GS_SWAP__COUNT)
		json_object_set_new(
		    o, "swap",
		    json_string(gs_swap_mode_name((enum gs_swap_mode)w->swap)));
	if (with_team)
		json_object_set_new(o, "team", json_string(w->account));
	json_object_set_new(o, "owner", json_integer((json_int_t)w->uid));
	json_object_set_new(o, "on_exit", json_string("delete"));
	return o;
}

/* Whether the daemon's slice `s` enforces `lim`. */
static bool daemon_same(const json_t *s, const struct gs_slice_limits *lim)
{
	return (uint64_t)gs_client_int(s, "memory_bytes") == lim->mem_limit &&
	       gs_client_int(s, "compute") == (long long)lim->compute_pct &&
	       strcmp(gs_client_str(s, "priority"),
	              gs_priority_name((enum gs_priority)lim->priority)) == 0;
}

/* Whether a live process other than this one is attached to `s`. */
static bool daemon_other_holder(const json_t *s)
{
	const json_t *pids = json_object_get(s, "pids");
	size_t i;
	json_t *p;

	json_array_foreach(pids, i, p)
	{
		long long pid = json_integer_value(p);

		if (pid != (long long)getpid() && pid_alive((long)pid))
			return true;
	}
	return false;
}

/* Makes team `name` (no guarantee, no max) so the ledger can bill it. */
static gs_err daemon_team_put(const char *socket, const char *name,
                              struct gs_errbuf *eb)
{
	char path[200] = "/v1/teams/";
	json_t *body = json_object();
	gs_err err;

	gs_client_urlencode(name, path, sizeof(path));
	err = gs_client_call(socket, "PUT", path, body, NULL, eb);
	json_decref(body);
	return err;
}

static void daemon_take_env(struct gs_slurm_hold *h, const json_t *s,
                            const struct gs_slurm_who *w)
{
	const json_t *env = json_object_get(s, "env");
	const char *dir = gs_client_str(env, "GPUSLICE_RUN_DIR");
	const char *vis = gs_client_str(env, "CUDA_VISIBLE_DEVICES");

	if (dir[0] == '\0')
		dir = gs_client_str(json_object_get(s, "region"), "dir");
	(void)snprintf(h->run_dir, sizeof(h->run_dir), "%s", dir);
	/* One GPU: the daemon's name for it (a UUID, or a MIG device);
	 * several: Slurm's list, which the slice's caps cover on each. */
	h->visible[0] = '\0';
	if (w->n_gpus <= 1 && strlen(vis) < sizeof(h->visible))
		(void)snprintf(h->visible, sizeof(h->visible), "%s", vis);
}

static gs_err daemon_acquire(struct gs_slurm_hold *h,
                             const struct gs_slurm_who *w,
                             const struct gs_slice_limits *lim,
                             struct gs_errbuf *eb)
{
	char name[GS_REGION_NAME_MAX], step[16];
	bool with_team = gs_slurm_team_is_valid(w->account);
	bool team_made = false;
	json_t *s = NULL;
	gs_err err = GS_ERR_INTERNAL;

	(void)gs_slurm_slice_name(w->job_id, NULL, name, sizeof(name));
	for (int i = 0; i < ACQUIRE_TRIES; i++) {
		struct gs_errbuf e = {0};
		json_t *spec =
		    gs_slurm_hold_spec_json(name, lim, w, with_team);

		err = gs_client_slice_create(h->socket, spec, &s, &e);
		json_decref(spec);
		if (err == GS_OK)
			break;
		if (err == GS_ERR_NOT_FOUND && with_team && !team_made) {
			/* The account is not a team yet. */
			team_made = true;
			err = daemon_team_put(h->socket, w->account, &e);
			if (err != GS_OK)
				return gs_fail(
				    eb, err, "gpusliced: team %s: %s",
				    w->account, gs_errbuf_msg(&e, err));
			continue;
		}
		if (err != GS_ERR_EXISTS)
			return gs_fail(eb, err, "gpusliced: slice %s: %s", name,
			               gs_errbuf_msg(&e, err));
		err = gs_client_slice_get(h->socket, name, &s, &e);
		if (err == GS_ERR_NOT_FOUND)
			continue; /* deleted in between */
		if (err != GS_OK)
			return gs_fail(eb, err, "gpusliced: slice %s: %s", name,
			               gs_errbuf_msg(&e, err));
		if (!daemon_other_holder(s)) {
			/* A leftover: make it again with our limits. */
			json_decref(s);
			s = NULL;
			(void)gs_client_slice_delete(h->socket, name, NULL);
			continue;
		}
		if (daemon_same(s, lim))
			break; /* another step of the job holds it: join */
		json_decref(s);
		s = NULL;
		(void)gs_slurm_slice_name(
		    w->job_id,
		    gs_slurm_step_name(w->step_id, step, sizeof(step)), name,
		    sizeof(name));
		err = GS_ERR_EXISTS;
	}
	if (err != GS_OK || s == NULL) {
		json_decref(s);
		return gs_fail(eb, err != GS_OK ? err : GS_ERR_BUSY,
		               "gpusliced: slice %s: gave up after %d tries",
		               name, ACQUIRE_TRIES);
	}
	json_decref(s);
	s = NULL;
	/* The slurmstepd is the holder the daemon counts. */
	{
		struct gs_errbuf e = {0};

		err = gs_client_slice_attach(h->socket, name, (int32_t)getpid(),
		                             &s, &e);
		if (err != GS_OK) {
			(void)gs_client_slice_delete(h->socket, name, NULL);
			return gs_fail(eb, err, "gpusliced: attach to %s: %s",
			               name, gs_errbuf_msg(&e, err));
		}
	}
	(void)snprintf(h->name, sizeof(h->name), "%s", name);
	daemon_take_env(h, s, w);
	json_decref(s);
	h->via_daemon = true;
	h->held = true;
	return GS_OK;
}

static void daemon_release(struct gs_slurm_hold *h, struct gs_errbuf *eb)
{
	json_t *s = NULL;
	gs_err err;

	err = gs_client_slice_get(h->socket, h->name, &s, NULL);
	if (err == GS_ERR_NOT_FOUND)
		return;
	if (err == GS_OK && daemon_other_holder(s)) {
		json_decref(s);
		return; /* the last step of the job deletes it */
	}
	json_decref(s);
	err = gs_client_slice_delete(h->socket, h->name, eb);
	if (err != GS_OK && err != GS_ERR_NOT_FOUND)
		(void)gs_fail(eb, err, "gpusliced: cannot delete slice %s",
		              h->name);
}

static gs_err daemon_sweep(const char *socket, uint32_t job, int *deleted,
                           struct gs_errbuf *eb)
{
	json_t *o = NULL, *a, *s;
	size_t i;
	gs_err err;

	err = gs_client_call(socket, "GET", "/v1/slices", NULL, &o, eb);
	if (err != GS_OK)
		return err;
	a = json_object_get(o, "slices");
	json_array_foreach(a, i, s)
	{
		const char *name = gs_client_str(s, "name");

		if (gs_slurm_slice_is_of_job(name, job) &&
		    gs_client_slice_delete(socket, name, NULL) == GS_OK)
			(*deleted)++;
	}
	json_decref(o);
	return GS_OK;
}

/* ---- the interface ------------------------------------------------------ */

gs_err gs_slurm_hold_acquire(struct gs_slurm_hold *h,
                             const struct gs_slurm_conf *c,
                             const struct gs_slurm_who *w,
                             const struct gs_slice_limits *lim,
                             struct gs_errbuf *eb)
{
	bool daemon = false;
	gs_err err;

	gs_slurm_hold_init(h);
	err = pick_way(c, &daemon, eb);
	if (err != GS_OK)
		return err;
	(void)snprintf(h->socket, sizeof(h->socket), "%s", c->socket);
	if (!daemon)
		return region_acquire(h, c, w, lim, eb);
	return daemon_acquire(h, w, lim, eb);
}

gs_err gs_slurm_hold_add_task(struct gs_slurm_hold *h, int32_t pid,
                              struct gs_errbuf *eb)
{
	if (!h->held || !h->via_daemon)
		return GS_OK;
	return gs_client_slice_attach(h->socket, h->name, pid, NULL, eb);
}

void gs_slurm_hold_release(struct gs_slurm_hold *h, struct gs_errbuf *eb)
{
	if (!h->held)
		return;
	if (h->via_daemon)
		daemon_release(h, eb);
	else
		region_release(h, eb);
	h->held = false;
}

gs_err gs_slurm_sweep(const struct gs_slurm_conf *c, uint32_t job, int *deleted,
                      struct gs_errbuf *eb)
{
	int n = 0;
	gs_err err = GS_OK;

	if (c->daemon != GS_SLURM_DAEMON_OFF && daemon_answers(c->socket))
		err = daemon_sweep(c->socket, job, &n, eb);
	if (err == GS_OK)
		err = region_sweep(c->run_dir, job, &n, eb);
	if (deleted != NULL)
		*deleted = n;
	return err;
}
