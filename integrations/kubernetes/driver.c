/*
 * driver.c - the DRA driver behind gpuslice-kubelet-plugin (driver.h):
 * prepare and unprepare claims, the checkpoint, device health, and the
 * ResourceSlice publisher's lifetime.
 *
 * Prepare, in order (each step undone if a later one fails, so a failed
 * prepare leaves nothing):
 *   1. GET the ResourceClaim from the API server. When the checkpoint
 *      says "prepared", its CDI spec is there and gpusliced still has the
 *      slice (retries, a second pod on the same claim): rewrite the
 *      claim's consumers file from its reservedFor (the pod may have
 *      joined since) and return the recorded devices
 *   2. GET /v1/gpus and the namespace's team from gpusliced; plan it
 *      (prepare.c, pure)
 *   3. record the claim "preparing" (so a crash after 4 is recoverable)
 *   4. POST /v1/slices; a slice of that name that already exists with the
 *      same limits is ours from an interrupted attempt and is adopted
 *   5. write the CDI spec from the slice's env and region, and the
 *      consumers file (<run dir>/k8s-pods/<slice>, gs/podcgroup.h)
 *   6. record "prepared" with the devices and the run directory
 * Unprepare deletes the slice (named from the UID, so it needs no record),
 * the CDI spec, then the record. At start, temp files of writes a killed
 * driver left are removed; a "preparing" record is finished by the
 * kubelet's retry (adopting the slice) or cleared by its unprepare.
 *
 * Health: a thread started by gs_kdra_start polls gpusliced (see the
 * health section below).
 *
 * One mutex serialises prepare/unprepare and guards the checkpoint: claims
 * on one node are few and each call is a few milliseconds of daemon work.
 * gpusliced is called on a fresh connection per request with the
 * configured socket (no global client state), so the driver is
 * thread-safe.
 */
#include "driver.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cdi.h"
#include "checkpoint.h"
#include "driverfiles.h"
#include "gs/client.h"
#include "gs/log.h"
#include "gs/paths.h"
#include "gs/podcgroup.h"
#include "gs/proc.h"
#include "kube.h"
#include "prepare.h"
#include "rslices.h"

#define TAG             "kdra"
#define MIG_MINORS_FILE "/proc/driver/nvidia-caps/mig-minors"

struct gs_kdra {
	char *node, *driver, *state_dir, *cdi_dir, *socket, *shim;
	char *cdi_hook; /* NULL: no hook in the specs */
	int publish, interval_ms, partitions;
	char *metrics_file;
	struct gs_kdrv_files drv; /* driver files for CDI specs (may be none) */
	struct gs_kube *kube;
	struct gs_krs *krs;
	pthread_mutex_t mu; /* prepare/unprepare and ckpt */
	json_t *ckpt;
	pthread_mutex_t hmu; /* the health fields below */
	pthread_cond_t hcond;
	pthread_t hthread;
	bool hstarted, hstop, hvalid;
	struct gs_kdra_health *hlist; /* last polled list (hn entries) */
	size_t hn;
	uint64_t hversion;
	void (*listener)(void *);
	void *listener_arg;
};

static void *health_main(void *arg);
static void health_free_list(struct gs_kdra_health *list, size_t n);

static char *dup_or(const char *s, const char *dflt)
{
	return strdup(s && s[0] ? s : dflt);
}

/* The build tree's or the installed libgpuslice.so (gs_paths_shim), else
 * the configured library directory's path even when it is missing. */
static char *default_shim(void)
{
	char path[PATH_MAX];

	if (!gs_paths_shim(path, sizeof(path)))
		gs_paths_shim_installed(path, sizeof(path));
	return strdup(path);
}

/* gpuslice-cdi-hook next to this program, or NULL when it is not there. */
static char *default_cdi_hook(void)
{
	char exe[PATH_MAX], path[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash == NULL)
		return NULL;
	*slash = '\0';
	snprintf(path, sizeof(path), "%s/gpuslice-cdi-hook", exe);
	return access(path, X_OK) == 0 ? strdup(path) : NULL;
}

/*
 * Removes temp files a killed driver left in `dir` (".<name>.XXXXXX" from
 * gs_kfile_write_atomic): only names this driver writes.
 */
static void sweep_temp_files(const char *dir, const char *prefix)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	char path[4096];

	if (dp == NULL)
		return;
	while ((e = readdir(dp)) != NULL) {
		if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (unlink(path) == 0)
			gs_info(TAG, "removed %s, left by an interrupted write",
			        path);
	}
	closedir(dp);
}

gs_err gs_kdra_create(const struct gs_kdra_config *cfg, struct gs_kdra **out,
                      struct gs_errbuf *eb)
{
	struct gs_kube_config kc = {0};
	struct gs_kdra *d;
	char sdir[512];
	gs_err err;

	*out = NULL;
	if (cfg == NULL || cfg->node_name == NULL || cfg->node_name[0] == '\0')
		return gs_fail(eb, GS_ERR_INVALID, "the node name is required");
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	d->node = strdup(cfg->node_name);
	d->driver = dup_or(cfg->driver_name, GS_KDRA_DRIVER_NAME);
	snprintf(sdir, sizeof(sdir), "/var/lib/kubelet/plugins/%s", d->driver);
	d->state_dir = dup_or(cfg->state_dir, sdir);
	d->cdi_dir = dup_or(cfg->cdi_dir, "/var/run/cdi");
	d->socket = cfg->daemon_socket && cfg->daemon_socket[0]
	                ? strdup(cfg->daemon_socket)
	                : NULL;
	d->shim = cfg->shim_path && cfg->shim_path[0] ? strdup(cfg->shim_path)
	                                              : default_shim();
	if (cfg->cdi_hook == NULL || cfg->cdi_hook[0] == '\0')
		d->cdi_hook = default_cdi_hook();
	else if (strcmp(cfg->cdi_hook, "none") != 0)
		d->cdi_hook = strdup(cfg->cdi_hook);
	if (d->cdi_hook == NULL)
		gs_warn(TAG, "no gpuslice-cdi-hook (--cdi-hook): containers whose C library cannot load the shim will run with no GPU limits instead of being refused");
	else
		gs_info(TAG, "CDI specs carry the createContainer hook %s",
		        d->cdi_hook);
	d->publish = cfg->publish;
	d->interval_ms =
	    cfg->publish_interval_ms > 0 ? cfg->publish_interval_ms : 1000;
	d->partitions = cfg->partitions;
	{
		char mpath[640];
		snprintf(mpath, sizeof(mpath), "%s/metrics.prom",
		         d->state_dir ? d->state_dir : ".");
		d->metrics_file = dup_or(cfg->metrics_file, mpath);
	}
	{
		struct gs_errbuf de = {0};
		if (gs_kdrv_find(cfg->driver_dirs, cfg->driver_root, &d->drv,
		                 &de) != GS_OK)
			gs_warn(TAG,
			        "CDI specs carry no driver libraries (%s): containers need the NVIDIA container runtime or NVIDIA's CDI spec",
			        de.msg);
		else
			gs_info(TAG,
			        "CDI specs carry %zu driver libraries and %zu binaries",
			        d->drv.n_libs, d->drv.n_bins);
	}
	pthread_mutex_init(&d->mu, NULL);
	pthread_mutex_init(&d->hmu, NULL);
	pthread_cond_init(&d->hcond, NULL);
	if (!d->node || !d->driver || !d->state_dir || !d->cdi_dir ||
	    !d->shim || !d->metrics_file ||
	    (cfg->daemon_socket && cfg->daemon_socket[0] && !d->socket)) {
		err = gs_fail(eb, GS_ERR_NOMEM, "out of memory");
		goto fail;
	}
	if (d->shim[0] != '/') {
		err = gs_fail(eb, GS_ERR_INVALID,
		              "the shim path must be absolute, got '%s'",
		              d->shim);
		goto fail;
	}
	if (d->cdi_hook != NULL && d->cdi_hook[0] != '/') {
		err = gs_fail(eb, GS_ERR_INVALID,
		              "--cdi-hook must be an absolute host path or none, got '%s'",
		              d->cdi_hook);
		goto fail;
	}
	kc.kubeconfig = cfg->kubeconfig;
	kc.server = cfg->api_server;
	kc.timeout_ms = 10000;
	err = gs_kube_create(&kc, &d->kube, eb);
	if (err != GS_OK)
		goto fail;
	err = gs_kckpt_load(d->state_dir, &d->ckpt, eb);
	if (err != GS_OK)
		goto fail;
	sweep_temp_files(d->state_dir, "." GS_KCKPT_FILE ".");
	sweep_temp_files(d->cdi_dir, ".gpuslice.io-slice_");
	gs_info(TAG, "driver=%s node=%s state=%s cdi=%s claims=%zu", d->driver,
	        d->node, d->state_dir, d->cdi_dir,
	        json_object_size(json_object_get(d->ckpt, "claims")));
	*out = d;
	return GS_OK;
fail:
	gs_kdra_destroy(d);
	return err;
}

gs_err gs_kdra_start(struct gs_kdra *d, struct gs_errbuf *eb)
{
	struct gs_krs_config rc = {0};
	int rc_thread;

	if (!d->hstarted) {
		rc_thread = pthread_create(&d->hthread, NULL, health_main, d);
		if (rc_thread != 0)
			return gs_fail(eb, GS_ERR_INTERNAL,
			               "cannot start the health thread: %s",
			               strerror(rc_thread));
		d->hstarted = true;
	}
	if (!d->publish || d->krs)
		return GS_OK;
	rc.node_name = d->node;
	rc.driver_name = d->driver;
	rc.daemon_socket = d->socket;
	rc.interval_ms = d->interval_ms;
	rc.partitions = d->partitions;
	rc.metrics_file = d->metrics_file;
	return gs_krs_create(d->kube, &rc, &d->krs, eb);
}

void gs_kdra_republish(struct gs_kdra *d)
{
	if (d && d->krs)
		gs_krs_kick(d->krs);
}

void gs_kdra_destroy(struct gs_kdra *d)
{
	if (d == NULL)
		return;
	if (d->hstarted) {
		pthread_mutex_lock(&d->hmu);
		d->hstop = true;
		pthread_cond_broadcast(&d->hcond);
		pthread_mutex_unlock(&d->hmu);
		pthread_join(d->hthread, NULL);
	}
	health_free_list(d->hlist, d->hn);
	gs_krs_destroy(d->krs);
	gs_kube_destroy(d->kube);
	json_decref(d->ckpt);
	pthread_mutex_destroy(&d->mu);
	pthread_mutex_destroy(&d->hmu);
	pthread_cond_destroy(&d->hcond);
	free(d->node);
	free(d->driver);
	free(d->state_dir);
	free(d->cdi_dir);
	free(d->socket);
	free(d->shim);
	free(d->cdi_hook);
	free(d->metrics_file);
	gs_kdrv_files_fini(&d->drv);
	free(d);
}

/* ---- gpusliced, on this driver's socket ---- */

static gs_err daemon_call(struct gs_kdra *d, const char *method,
                          const char *path, const json_t *body, json_t **out,
                          struct gs_errbuf *eb)
{
	json_t *o = NULL;
	int status = 0;
	gs_err err;

	if (out)
		*out = NULL;
	err =
	    gs_client_exchange(d->socket, method, path, body, &status, &o, eb);
	if (err != GS_OK)
		return err;
	if (status < 200 || status > 299) {
		const char *msg = gs_client_answer_message(o);

		err = gs_client_answer_err(status, o);
		gs_fail(eb, err, "gpusliced %s %s: %s", method, path,
		        msg ? msg : "refused");
		json_decref(o);
		return err;
	}
	if (out)
		*out = o;
	else
		json_decref(o);
	return GS_OK;
}

/* ---- results ---- */

static char *xstrdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

void gs_kdra_prepared_fini(struct gs_kdra_prepared *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n_devices; i++) {
		struct gs_kdra_device *v = &p->devices[i];

		for (size_t k = 0; k < v->n_request_names; k++)
			free(v->request_names[k]);
		free(v->request_names);
		for (size_t k = 0; k < v->n_cdi_device_ids; k++)
			free(v->cdi_device_ids[k]);
		free(v->cdi_device_ids);
		free(v->pool_name);
		free(v->device_name);
		free(v->share_id);
	}
	free(p->devices);
	free(p->error);
	memset(p, 0, sizeof(*p));
}

static void set_error(struct gs_kdra_prepared *out, const char *fmt,
                      const char *a, const char *b, const char *msg)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), fmt, a, b, msg);
	gs_kdra_prepared_fini(out);
	out->error = strdup(buf);
}

/* The devices of a checkpoint entry into *out. */
static gs_err fill_devices(const json_t *entry, struct gs_kdra_prepared *out)
{
	const json_t *devs = json_object_get(entry, "devices");
	const char *slice = json_string_value(json_object_get(entry, "slice"));
	const char *nv =
	    json_string_value(json_object_get(entry, "nvidia_cdi"));
	size_t i, n = json_array_size(devs);
	const json_t *v;
	char id[256];

	out->devices = calloc(n ? n : 1, sizeof(*out->devices));
	if (out->devices == NULL)
		return GS_ERR_NOMEM;
	gs_kcdi_device_id(slice ? slice : "", id, sizeof(id));
	json_array_foreach(devs, i, v)
	{
		struct gs_kdra_device *o = &out->devices[out->n_devices++];
		const char *req =
		    json_string_value(json_object_get(v, "request"));

		o->request_names = calloc(1, sizeof(char *));
		o->cdi_device_ids = calloc(2, sizeof(char *));
		if (!o->request_names || !o->cdi_device_ids)
			return GS_ERR_NOMEM;
		o->request_names[0] = xstrdup(req ? req : "");
		o->n_request_names = 1;
		o->cdi_device_ids[0] = strdup(id);
		o->n_cdi_device_ids = 1;
		if (nv) {
			/* NVIDIA's own CDI device brings the driver's files. */
			o->cdi_device_ids[1] = strdup(nv);
			if (o->cdi_device_ids[1] == NULL)
				return GS_ERR_NOMEM;
			o->n_cdi_device_ids = 2;
		}
		o->pool_name =
		    xstrdup(json_string_value(json_object_get(v, "pool")));
		o->device_name =
		    xstrdup(json_string_value(json_object_get(v, "device")));
		o->share_id =
		    xstrdup(json_string_value(json_object_get(v, "shareID")));
		if (!o->request_names[0] || !o->cdi_device_ids[0] ||
		    !o->pool_name || !o->device_name)
			return GS_ERR_NOMEM;
	}
	return GS_OK;
}

/* ---- prepare ---- */

static gs_err get_claim(struct gs_kdra *d, const struct gs_kdra_claim_ref *c,
                        json_t **claim, struct gs_errbuf *eb)
{
	char path[1024];
	long status = 0;
	struct gs_errbuf e = {0};
	gs_err err;

	snprintf(path, sizeof(path),
	         "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims/%s",
	         c->ns, c->name);
	err = gs_kube_request(d->kube, "GET", path, NULL, NULL, &status, claim,
	                      &e);
	if (err != GS_OK)
		return gs_fail(eb, err, "API server: GET claim %s/%s: %s",
		               c->ns, c->name, gs_errbuf_msg(&e, err));
	if (status != 200 || *claim == NULL) {
		err = gs_kube_status_err(status);
		json_decref(*claim);
		*claim = NULL;
		if (e.set) /* kube.c's message names the request and status */
			return gs_fail(eb, err == GS_OK ? GS_ERR_PARSE : err,
			               "%s", e.msg);
		return gs_fail(
		    eb, err == GS_OK ? GS_ERR_PARSE : err,
		    "API server: GET claim %s/%s answered %ld without a claim",
		    c->ns, c->name, status);
	}
	return GS_OK;
}

static bool same_limits(const json_t *s, const struct gs_kprep_plan *p)
{
	return (uint64_t)json_integer_value(json_object_get(
	           s, "memory_bytes")) == p->spec.memory_bytes &&
	       json_integer_value(json_object_get(s, "compute")) ==
	           p->spec.compute_pct &&
	       json_integer_value(json_object_get(json_object_get(s, "gpu"),
	                                          "index")) == p->gpu_index;
}

/* Creates the slice, or adopts ours of the same name. OUT: *slice. */
static gs_err make_slice(struct gs_kdra *d, const struct gs_kprep_plan *p,
                         json_t **slice, bool *created, struct gs_errbuf *eb)
{
	char path[128];
	struct gs_errbuf e = {0};
	gs_err err;

	*created = false;
	err = daemon_call(d, "POST", "/v1/slices", p->body, slice, &e);
	if (err == GS_OK) {
		*created = true;
		return GS_OK;
	}
	if (err != GS_ERR_EXISTS)
		return gs_fail(eb, err, "%s", e.msg);
	snprintf(path, sizeof(path), "/v1/slices/%s", p->slice_name);
	err = daemon_call(d, "GET", path, NULL, slice, eb);
	if (err != GS_OK)
		return err;
	if (!same_limits(*slice, p)) {
		json_decref(*slice);
		*slice = NULL;
		return gs_fail(eb, GS_ERR_EXISTS,
		               "slice %s exists with other limits than the claim's allocation",
		               p->slice_name);
	}
	gs_info(TAG, "slice=%s adopted (made by an interrupted prepare)",
	        p->slice_name);
	return GS_OK;
}

/* The MIG access device nodes of a MIG slice (none on the sim). */
static int mig_minors(const json_t *slice, const struct gs_kprep_plan *p,
                      int minors[2])
{
	const json_t *m = json_object_get(slice, "mig");
	struct gs_errbuf e = {0};

	if (!p->mig || !json_is_object(m))
		return 0;
	if (gs_kcdi_mig_minors(
	        MIG_MINORS_FILE, p->gpu_index,
	        (int)json_integer_value(json_object_get(m, "gi")),
	        (int)json_integer_value(json_object_get(m, "ci")), minors,
	        &e) != GS_OK) {
		gs_warn(TAG, "slice=%s no MIG capability device nodes: %s",
		        p->slice_name, e.msg);
		return 0;
	}
	return 2;
}

/*
 * Checks the MIG instance the daemon gave against the scheduler's
 * placement. The slice asks for it (spec mig_start) and gpusliced creates
 * exactly that placement or refuses, so a difference here means a daemon
 * that ignores mig_start (an older one); it is logged.
 */
static void check_mig_placement(struct gs_kdra *d, const json_t *slice,
                                const struct gs_kprep_plan *p)
{
	const char *uuid = json_string_value(
	    json_object_get(json_object_get(slice, "mig"), "uuid"));
	json_t *gpus = NULL;
	size_t i, k;
	const json_t *g, *inst;

	if (!p->mig || uuid == NULL ||
	    daemon_call(d, "GET", "/v1/gpus", NULL, &gpus, NULL) != GS_OK)
		return;
	json_array_foreach(json_object_get(gpus, "gpus"), i, g)
	{
		json_array_foreach(
		    json_object_get(json_object_get(g, "mig"), "instances"), k,
		    inst)
		{
			const char *u =
			    json_string_value(json_object_get(inst, "uuid"));
			int start = (int)json_integer_value(
			    json_object_get(inst, "start"));

			if (u && strcmp(u, uuid) == 0 && start != p->mig_start)
				gs_warn(TAG,
				        "slice=%s MIG instance %s is at start %d, the scheduler chose %d (gpusliced picks the placement)",
				        p->slice_name, uuid, start,
				        p->mig_start);
		}
	}
	json_decref(gpus);
}

static json_t *entry_devices(const struct gs_kprep_plan *p)
{
	json_t *a = json_array();

	for (size_t i = 0; i < p->n_results; i++) {
		json_t *o = json_pack(
		    "{s:s, s:s, s:s}", "request", p->results[i].request, "pool",
		    p->results[i].pool, "device", p->results[i].device);

		if (p->results[i].share_id)
			json_object_set_new(
			    o, "shareID", json_string(p->results[i].share_id));
		json_array_append_new(a, o);
	}
	return a;
}

static gs_err save_ckpt(struct gs_kdra *d, struct gs_errbuf *eb)
{
	return gs_kckpt_save(d->state_dir, d->ckpt, eb);
}

/*
 * Whether a prepared claim's CDI spec is still there: /var/run is a tmpfs,
 * so after a node reboot the checkpoint and the slice remain but the spec
 * is gone, and the kubelet's new prepare must write it again.
 */
static bool cdi_present(struct gs_kdra *d, const json_t *entry)
{
	const char *slice = json_string_value(json_object_get(entry, "slice"));
	char path[4096];

	if (slice == NULL)
		return false;
	gs_kcdi_path(d->cdi_dir, slice, path, sizeof(path));
	return access(path, F_OK) == 0;
}

/*
 * Whether gpusliced has a team named like the claim's namespace: the
 * slice is then charged to it, so the ledger, quotas and the team label of
 * /metrics follow namespaces. Without one the slice goes to the daemon's
 * default team (gpusliced has no per-slice labels for namespace, pod and
 * claim; the slice name carries the claim UID).
 */
static bool namespace_team(struct gs_kdra *d, const char *ns)
{
	char path[320], enc[300] = "";
	struct gs_errbuf e = {0};
	gs_err err;

	gs_client_urlencode(ns, enc, sizeof(enc));
	snprintf(path, sizeof(path), "/v1/teams/%s", enc);
	err = daemon_call(d, "GET", path, NULL, NULL, &e);
	if (err != GS_OK && err != GS_ERR_NOT_FOUND)
		gs_warn(TAG, "ns=%s team lookup failed, default team: %s", ns,
		        e.msg);
	return err == GS_OK;
}

/*
 * Whether a prepared claim is still whole: its CDI spec is there and
 * gpusliced still has its slice (a daemon that lost its state, or an
 * admin's delete). Only a definite 404 counts as gone; a daemon that does
 * not answer leaves the record standing.
 */
static bool still_prepared(struct gs_kdra *d, const json_t *entry)
{
	const char *slice = json_string_value(json_object_get(entry, "slice"));
	const char *st = json_string_value(json_object_get(entry, "state"));
	char path[128];

	if (st == NULL || strcmp(st, "prepared") != 0 || !cdi_present(d, entry))
		return false;
	snprintf(path, sizeof(path), "/v1/slices/%s", slice);
	if (daemon_call(d, "GET", path, NULL, NULL, NULL) == GS_ERR_NOT_FOUND) {
		gs_warn(TAG,
		        "slice=%s of a prepared claim is gone from gpusliced; making it again",
		        slice);
		return false;
	}
	return true;
}

/* Removes a claim's consumers file, where its record names the run
 * directory (a file left behind names a slice that is gone: the watchdog
 * reads files of existing slices only). */
static void remove_consumers(const json_t *entry, const char *slice)
{
	const char *run =
	    json_string_value(json_object_get(entry, "run_dir"));
	char path[4096];

	if (run == NULL)
		return;
	snprintf(path, sizeof(path), "%s/%s/%s", run, GS_K8S_PODS_DIR, slice);
	if (unlink(path) != 0) {
		int e = errno;

		if (e != ENOENT)
			gs_warn(TAG,
			        "slice=%s consumers file %s not removed: %s",
			        slice, path, strerror(e));
	}
}

/*
 * Writes the claim's consumers file, <run dir>/k8s-pods/<slice>: the pods
 * its status.reservedFor names now (gs/podcgroup.h), on every prepare, so
 * that the watchdog places the processes of every pod of a shared claim
 * by their cgroup whenever the pod joined, however many they are. The
 * directory must be ours and closed to others' writes: the watchdog
 * believes nothing else.
 */
static gs_err write_consumers(const char *run_dir, const char *slice,
                              const json_t *claim, struct gs_errbuf *eb)
{
	char dir[4096];
	struct stat st;
	char *text;
	size_t len;
	gs_err err;
	int e;

	if (run_dir == NULL || run_dir[0] != '/')
		return gs_fail(eb, GS_ERR_INVALID,
		               "slice %s: gpusliced names no run directory for the claim's consumers file",
		               slice);
	err = gs_kprep_consumers(claim, &text, &len, eb);
	if (err != GS_OK)
		return err;
	snprintf(dir, sizeof(dir), "%s/%s", run_dir, GS_K8S_PODS_DIR);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		e = errno;
		free(text);
		return gs_fail(eb, GS_ERR_IO, "cannot create %s: %s", dir,
		               strerror(e));
	}
	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		free(text);
		return gs_fail(eb, GS_ERR_PERM,
		               "%s is not a directory of ours closed to others' writes: the watchdog would not believe the claim's consumers",
		               dir);
	}
	err = gs_kfile_write_atomic_nosync(dir, slice, text, len, eb);
	free(text);
	return err;
}

/* The run directory of a prepared claim's slice: recorded at its first
 * prepare, else (a record of an older plugin) asked of gpusliced and
 * recorded. NULL when gpusliced does not say. */
static const char *entry_run_dir(struct gs_kdra *d, json_t *entry)
{
	const char *slice = json_string_value(json_object_get(entry, "slice"));
	const char *dir =
	    json_string_value(json_object_get(entry, "run_dir"));
	json_t *o = NULL;
	char path[128];

	if (dir != NULL || slice == NULL)
		return dir;
	snprintf(path, sizeof(path), "/v1/slices/%s", slice);
	if (daemon_call(d, "GET", path, NULL, &o, NULL) != GS_OK)
		return NULL;
	dir = json_string_value(json_object_get(
	    json_object_get(o, "env"), "GPUSLICE_RUN_DIR"));
	if (dir == NULL)
		dir = json_string_value(
		    json_object_get(json_object_get(o, "region"), "dir"));
	if (dir != NULL)
		json_object_set_new(entry, "run_dir", json_string(dir));
	json_decref(o);
	return json_string_value(json_object_get(entry, "run_dir"));
}

/* Called with d->mu held; returns with it held (drops it while reading). */
static gs_err prepare_locked(struct gs_kdra *d,
                             const struct gs_kdra_claim_ref *c,
                             struct gs_kdra_prepared *out, struct gs_errbuf *eb)
{
	json_t *claims = json_object_get(d->ckpt, "claims");
	json_t *entry = json_object_get(claims, c->uid);
	json_t *claim = NULL, *gpus = NULL, *slice = NULL, *spec = NULL;
	struct gs_kprep_plan plan;
	struct gs_kcdi_input ci = {0};
	int minors[2];
	bool created = false, recorded = false, cdi = false, team = false;
	bool again, pods = false;
	gs_err err;

	memset(&plan, 0, sizeof(plan));
	again = still_prepared(d, entry);

	/*
	 * The reads (API server up to its deadline, gpusliced) run without
	 * the lock so one slow claim does not hold up the others; the
	 * record is looked at again afterwards (a second pod's prepare of
	 * the same claim may have finished meanwhile). A claim prepared
	 * already is read too: the pod this prepare is for may have joined
	 * it since, and its consumers file must name it.
	 */
	pthread_mutex_unlock(&d->mu);
	err = get_claim(d, c, &claim, eb);
	if (err == GS_OK && !again)
		err = daemon_call(d, "GET", "/v1/gpus", NULL, &gpus, eb);
	if (err == GS_OK && !again)
		team = namespace_team(d, c->ns);
	pthread_mutex_lock(&d->mu);
	claims = json_object_get(d->ckpt, "claims");
	entry = json_object_get(claims, c->uid);
	if (err != GS_OK && again && still_prepared(d, entry)) {
		/* The checkpoint answers for a prepared claim whatever the
		 * API server does; its consumers stay as last written. */
		gs_warn(TAG,
		        "claim=%s/%s uid=%s consumers not read (%s): a pod that joined the claim since its last prepare is held to it only through the shim until the next prepare",
		        c->ns, c->name, c->uid, gs_errbuf_msg(eb, err));
		eb->set = false;
		eb->msg[0] = '\0';
		err = fill_devices(entry, out);
		goto out;
	}
	if (err != GS_OK)
		goto out;
	if (still_prepared(d, entry)) {
		err = write_consumers(
		    entry_run_dir(d, entry),
		    json_string_value(json_object_get(entry, "slice")), claim,
		    eb);
		if (err == GS_OK)
			err = fill_devices(entry, out);
		goto out;
	}
	if (again) {
		/* Unprepared meanwhile: what a first prepare reads. */
		err = daemon_call(d, "GET", "/v1/gpus", NULL, &gpus, eb);
		if (err != GS_OK)
			goto out;
		team = namespace_team(d, c->ns);
	}
	err = gs_kprep_plan(claim, gpus, c->uid, d->node, d->driver, &plan, eb);
	if (err != GS_OK)
		goto out;
	if (team)
		json_object_set_new(plan.body, "team", json_string(c->ns));

	if (entry == NULL) {
		entry = json_pack("{s:s, s:s, s:s, s:s}", "namespace", c->ns,
		                  "name", c->name, "slice", plan.slice_name,
		                  "state", "preparing");
		json_object_set_new(claims, c->uid, entry);
		/* Not fsynced: a record lost with the machine costs nothing,
		 * the slice is named from the claim UID, so the kubelet's
		 * retry adopts it and its unprepare deletes it without one
		 * (NodePrepareResources p99, bench.sh). */
		err = gs_kckpt_save_nosync(d->state_dir, d->ckpt, eb);
		if (err != GS_OK) {
			json_object_del(claims, c->uid);
			goto out;
		}
	}
	recorded = true; /* ours to take back if this attempt fails */

	err = make_slice(d, &plan, &slice, &created, eb);
	if (err != GS_OK)
		goto undo;
	check_mig_placement(d, slice, &plan);
	ci.slice = plan.slice_name;
	ci.env = json_object_get(slice, "env");
	ci.run_dir =
	    json_string_value(json_object_get(ci.env, "GPUSLICE_RUN_DIR"));
	if (ci.run_dir == NULL)
		ci.run_dir = json_string_value(
		    json_object_get(json_object_get(slice, "region"), "dir"));
	ci.owner_uid = (unsigned)json_integer_value(
	    json_object_get(slice, "owner_uid"));
	/* The slice's books (a uid-0 slice's private file); a daemon that
	 * does not say has them in usage.<owner_uid>. */
	ci.books_path = json_string_value(
	    json_object_get(json_object_get(slice, "region"), "books"));
	ci.shim_path = d->shim;
	ci.hook_path = d->cdi_hook;
	ci.gpu_index = plan.gpu_index;
	ci.cap_minors = minors;
	ci.n_cap_minors = mig_minors(slice, &plan, minors);
	{
		/* NVIDIA's CDI device for a whole GPU when its spec is there
		 * (never for MIG: it would bring the whole GPU's node). */
		char nv[256], dirs[4200];
		const char *uuid = json_string_value(json_object_get(
		    json_object_get(slice, "gpu"), "uuid"));
		snprintf(dirs, sizeof(dirs), "%s:/etc/cdi:/var/run/cdi",
		         d->cdi_dir);
		if (!plan.mig && gs_kdrv_nvidia_cdi(dirs, uuid, nv, sizeof(nv))) {
			json_object_set_new(entry, "nvidia_cdi", json_string(nv));
		} else {
			json_object_del(entry, "nvidia_cdi");
			ci.driver_libs = d->drv.libs;
			ci.n_driver_libs = d->drv.n_libs;
			ci.driver_bins = d->drv.bins;
			ci.n_driver_bins = d->drv.n_bins;
		}
	}
	err = gs_kcdi_build(&ci, &spec, eb);
	if (err != GS_OK)
		goto undo;
	err = gs_kcdi_write(d->cdi_dir, plan.slice_name, spec, eb);
	if (err != GS_OK)
		goto undo;
	cdi = true;
	err = write_consumers(ci.run_dir, plan.slice_name, claim, eb);
	if (err != GS_OK)
		goto undo;
	json_object_set_new(entry, "run_dir", json_string(ci.run_dir));
	pods = true;

	json_object_set_new(entry, "state", json_string("prepared"));
	json_object_set_new(entry, "devices", entry_devices(&plan));
	err = save_ckpt(d, eb);
	if (err != GS_OK)
		goto undo;
	gs_info(TAG, "claim=%s/%s uid=%s slice=%s device=%s prepared", c->ns,
	        c->name, c->uid, plan.slice_name, plan.results[0].device);
	err = fill_devices(entry, out);
	goto out;
undo:
	/* Nothing half-made: the slice (ours), the CDI spec, the consumers
	 * file, the record. */
	if (pods)
		remove_consumers(entry, plan.slice_name);
	if (cdi)
		(void)gs_kcdi_remove(d->cdi_dir, plan.slice_name, NULL);
	if (slice != NULL || created) {
		char path[128];

		snprintf(path, sizeof(path), "/v1/slices/%s", plan.slice_name);
		if (daemon_call(d, "DELETE", path, NULL, NULL, NULL) != GS_OK) {
			/* Keep the record ("preparing"): the kubelet's retry
			 * adopts the slice or its unprepare deletes it. */
			gs_warn(TAG,
			        "slice=%s could not be deleted after a failed prepare; the record stays for the retry or unprepare",
			        plan.slice_name);
			json_object_set_new(entry, "state",
			                    json_string("preparing"));
			(void)save_ckpt(d, NULL);
			recorded = false;
		}
	}
	if (recorded) {
		json_object_del(claims, c->uid);
		if (save_ckpt(d, NULL) != GS_OK)
			gs_warn(TAG,
			        "uid=%s checkpoint not updated after a failed prepare",
			        c->uid);
	}
out:
	json_decref(spec);
	json_decref(slice);
	json_decref(gpus);
	json_decref(claim);
	gs_kprep_plan_fini(&plan);
	return err;
}

void gs_kdra_prepare(struct gs_kdra *d, const struct gs_kdra_claim_ref *claim,
                     struct gs_kdra_prepared *out)
{
	struct gs_errbuf eb = {0};
	gs_err err;

	memset(out, 0, sizeof(*out));
	if (claim == NULL || !claim->uid || !claim->ns || !claim->name ||
	    !claim->uid[0] || !claim->ns[0] || !claim->name[0]) {
		out->error =
		    strdup("the claim needs a namespace, name and UID");
		return;
	}
	pthread_mutex_lock(&d->mu);
	err = prepare_locked(d, claim, out, &eb);
	pthread_mutex_unlock(&d->mu);
	if (err != GS_OK) {
		gs_warn(TAG, "claim=%s/%s uid=%s not prepared: %s", claim->ns,
		        claim->name, claim->uid, gs_errbuf_msg(&eb, err));
		set_error(out, "claim %s/%s: %s", claim->ns, claim->name,
		          gs_errbuf_msg(&eb, err));
	}
}

/* ---- unprepare ---- */


char *gs_kdra_unprepare(struct gs_kdra *d,
                        const struct gs_kdra_claim_ref *claim)
{
	json_t *claims;
	char name[GS_SPEC_NAME_MAX], path[128], buf[1024];
	struct gs_errbuf eb = {0};
	gs_err err;

	if (claim == NULL || claim->uid == NULL)
		return strdup("the claim needs a UID");
	err = gs_kprep_slice_name(claim->uid, name, sizeof(name), &eb);
	if (err != GS_OK)
		goto fail_nolock;
	pthread_mutex_lock(&d->mu);
	claims = json_object_get(d->ckpt, "claims");
	snprintf(path, sizeof(path), "/v1/slices/%s", name);
	err = daemon_call(d, "DELETE", path, NULL, NULL, &eb);
	if (err == GS_ERR_NOT_FOUND) {
		err = GS_OK;
		eb.set = false;
		eb.msg[0] = '\0';
	}
	if (err == GS_OK)
		err = gs_kcdi_remove(d->cdi_dir, name, &eb);
	if (err == GS_OK)
		remove_consumers(
		    json_object_get(claims, claim->uid), name);
	if (err == GS_OK && json_object_get(claims, claim->uid)) {
		json_t *old = json_incref(json_object_get(claims, claim->uid));

		json_object_del(claims, claim->uid);
		err = save_ckpt(d, &eb);
		if (err != GS_OK)
			json_object_set(claims, claim->uid, old);
		json_decref(old);
	}
	pthread_mutex_unlock(&d->mu);
	if (err == GS_OK) {
		gs_info(TAG, "uid=%s slice=%s unprepared", claim->uid, name);
		return NULL;
	}
fail_nolock:
	snprintf(buf, sizeof(buf), "claim %s/%s: %s",
	         claim->ns ? claim->ns : "", claim->name ? claim->name : "",
	         gs_errbuf_msg(&eb, err));
	return strdup(buf);
}

/* ---- health ---- */

/*
 * Health is polled from gpusliced (GET /v1/gpus every interval_ms) by a
 * thread started in gs_kdra_start: each whole GPU is a device, healthy
 * unless the GPU object carries "health": {"healthy": false, "reason"};
 * while the daemon does not answer, the last known devices are UNKNOWN.
 * The version is a hash of the list, so it changes exactly when the list
 * does, and the listener is called (without locks held) on each change.
 */

static uint64_t fnv(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static void health_free_list(struct gs_kdra_health *list, size_t n)
{
	for (size_t i = 0; list && i < n; i++) {
		free(list[i].pool_name);
		free(list[i].device_name);
		free(list[i].message);
	}
	free(list);
}

/* A fresh list from the daemon (or UNKNOWN for `prev` when it is down). */
static gs_err health_fetch(struct gs_kdra *d, const struct gs_kdra_health *prev,
                           size_t n_prev, struct gs_kdra_health **list,
                           size_t *n, uint64_t *version, struct gs_errbuf *eb)
{
	json_t *gpus = NULL, *arr;
	size_t i;
	const json_t *g;
	uint64_t h = 14695981039346656037ULL;
	int64_t now = (int64_t)time(NULL);
	gs_err err;

	*list = NULL;
	*n = 0;
	err = daemon_call(d, "GET", "/v1/gpus", NULL, &gpus, eb);
	arr = err == GS_OK ? json_object_get(gpus, "gpus") : NULL;
	*list =
	    calloc((arr ? json_array_size(arr) : n_prev) + 1, sizeof(**list));
	if (*list == NULL) {
		json_decref(gpus);
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	if (err != GS_OK) {
		for (i = 0; i < n_prev; i++) {
			struct gs_kdra_health *o = &(*list)[(*n)++];

			o->pool_name = strdup(prev[i].pool_name);
			o->device_name = strdup(prev[i].device_name);
			o->status = GS_KDRA_HEALTH_UNKNOWN;
			o->updated_unix = now;
			o->message = strdup("gpusliced does not answer");
			h = fnv(fnv(h, prev[i].device_name), "unknown");
		}
		*version = h;
		return err;
	}
	json_array_foreach(arr, i, g)
	{
		struct gs_kdra_health *o = &(*list)[(*n)++];
		const json_t *own = json_object_get(g, "health");
		const char *why =
		    json_string_value(json_object_get(own, "reason"));
		bool bad = json_is_false(json_object_get(own, "healthy"));
		char name[32];

		snprintf(
		    name, sizeof(name), "gpu-%lld",
		    (long long)json_integer_value(json_object_get(g, "index")));
		o->pool_name = strdup(d->node);
		o->device_name = strdup(name);
		o->status =
		    bad ? GS_KDRA_HEALTH_UNHEALTHY : GS_KDRA_HEALTH_HEALTHY;
		o->updated_unix = now;
		if (bad && why != NULL)
			o->message = strndup(why, 1024);
		else if (bad)
			o->message = strdup("unhealthy");
		h = fnv(fnv(fnv(h, name), bad ? "unhealthy" : "healthy"),
		        bad && why ? why : "");
	}
	json_decref(gpus);
	*version = h;
	return GS_OK;
}

static void *health_main(void *arg)
{
	struct gs_kdra *d = arg;

	pthread_mutex_lock(&d->hmu);
	while (!d->hstop) {
		struct gs_kdra_health *list, *old_list = d->hlist;
		size_t n, old_n = d->hn;
		uint64_t ver = 0;
		void (*fn)(void *) = NULL;
		void *fn_arg = NULL;
		struct timespec ts;

		/* The fetch reads only d's constant fields and the previous
		 * list, which only this thread replaces. */
		pthread_mutex_unlock(&d->hmu);
		(void)health_fetch(d, old_list, old_n, &list, &n, &ver, NULL);
		pthread_mutex_lock(&d->hmu);
		if (list != NULL && (!d->hvalid || ver != d->hversion)) {
			d->hlist = list;
			d->hn = n;
			d->hversion = ver;
			d->hvalid = true;
			fn = d->listener;
			fn_arg = d->listener_arg;
			list = old_list;
			n = old_n;
		}
		pthread_mutex_unlock(&d->hmu);
		health_free_list(list, n);
		if (fn)
			fn(fn_arg);
		pthread_mutex_lock(&d->hmu);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += d->interval_ms / 1000;
		ts.tv_nsec += (long)(d->interval_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		while (!d->hstop &&
		       pthread_cond_timedwait(&d->hcond, &d->hmu, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&d->hmu);
	return NULL;
}

static struct gs_kdra_health *health_copy(const struct gs_kdra_health *l,
                                          size_t n)
{
	struct gs_kdra_health *c = calloc(n + 1, sizeof(*c));

	for (size_t i = 0; c && i < n; i++) {
		c[i] = l[i];
		c[i].pool_name = strdup(l[i].pool_name);
		c[i].device_name = strdup(l[i].device_name);
		c[i].message = l[i].message ? strdup(l[i].message) : NULL;
	}
	return c;
}

gs_err gs_kdra_health_snapshot(struct gs_kdra *d, struct gs_kdra_health **list,
                               size_t *n, uint64_t *version,
                               struct gs_errbuf *eb)
{
	*list = NULL;
	*n = 0;
	*version = 0;
	pthread_mutex_lock(&d->hmu);
	if (d->hvalid) {
		*list = health_copy(d->hlist, d->hn);
		*n = *list ? d->hn : 0;
		*version = d->hversion;
		pthread_mutex_unlock(&d->hmu);
		return *list ? GS_OK
		             : gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	pthread_mutex_unlock(&d->hmu);
	/* No poller (not started) or no round yet: ask the daemon now. */
	return health_fetch(d, NULL, 0, list, n, version, eb);
}

void gs_kdra_health_free(struct gs_kdra_health *list, size_t n)
{
	health_free_list(list, n);
}

void gs_kdra_set_health_listener(struct gs_kdra *d, void (*fn)(void *arg),
                                 void *arg)
{
	pthread_mutex_lock(&d->hmu);
	d->listener = fn;
	d->listener_arg = arg;
	pthread_mutex_unlock(&d->hmu);
}
