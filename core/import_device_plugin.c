/*
 * import_device_plugin.c - the k8s device plugin's config file (v1) in
 * gpuslice terms (see import.h; the field list and the plugin's rules are
 * in shared/reference/device-plugin-config.md).
 *
 * Each YAML document is one config. The walk checks every field the
 * plugin knows (unknown ones are errors, with the list of known ones),
 * applies the plugin's start-up checks, and turns each shared resource
 * into a slice template using the plugin's own integer arithmetic.
 */
#include "gs/import.h"

#include "import_int.h"

#include <stdio.h>
#include <string.h>

#define MIB (1024ULL * 1024)
/* MPS clients the plugin allows per GPU: 48 from compute capability 7.5
 * on (its helper is named "isAtLeastVolta" but compares with 7.5), else
 * 16. */
#define MPS_CLIENTS_NEW 48
#define MPS_CLIENTS_OLD 16

const char *gs_dp_strategy_name(enum gs_dp_strategy s)
{
	switch (s) {
	case GS_DP_TIME_SLICING:
		return "time-slicing";
	case GS_DP_MPS:
		return "mps";
	default:
		return "none";
	}
}

static const char *const mig_strategies[] = {"none", "single", "mixed", NULL};

/* ---- flags -------------------------------------------------------------- */

static gs_err read_plugin_flags(const struct gs__ictx *c,
                                const struct gs_doc_node *m, const char *path)
{
	static const char *const keys[] = {"passDeviceSpecs",
	                                   "deviceListStrategy",
	                                   "deviceIDStrategy",
	                                   "cdiAnnotationPrefix",
	                                   "nvidiaCTKPath",
	                                   "containerDriverRoot",
	                                   "sharedDevicesAllocationPolicy",
	                                   NULL};
	static const char *const list_strategies[] = {
	    "envvar", "volume-mounts", "cdi-annotations", "cdi-cri", NULL};
	static const char *const id_strategies[] = {"uuid", "index", NULL};
	static const char *const policies[] = {"distributed", "packed", NULL};
	char p[GS__PATH_MAX];
	gs_err err;

	err = gs__imp_expect(c, m, GS_DOC_MAP, path);
	if (err == GS_OK)
		err = gs__imp_keys(c, m, path, keys);
	for (int i = 0; err == GS_OK && i < m->n; i++) {
		const char *k = gs_doc_key(m, i)->value;
		const struct gs_doc_node *v = gs_doc_value(m, i);
		const char *s;
		bool b;
		int x;

		gs__imp_path(p, path, k, 0);
		if (strcmp(k, "passDeviceSpecs") == 0) {
			err = gs__imp_bool(c, v, p, &b);
		} else if (strcmp(k, "deviceListStrategy") == 0) {
			if (v->kind == GS_DOC_SEQ) {
				for (int j = 0; err == GS_OK && j < v->n; j++) {
					char q[GS__PATH_MAX];

					gs__imp_path(q, p, NULL, j);
					err =
					    gs__imp_choice(c, v->kids[j], q,
					                   list_strategies, &x);
				}
			} else {
				err = gs__imp_choice(c, v, p, list_strategies,
				                     &x);
			}
		} else if (strcmp(k, "deviceIDStrategy") == 0) {
			err = gs__imp_choice(c, v, p, id_strategies, &x);
		} else if (strcmp(k, "sharedDevicesAllocationPolicy") == 0) {
			err = gs__imp_choice(c, v, p, policies, &x);
		} else {
			err = gs__imp_str(c, v, p, &s);
		}
	}
	return err;
}

static gs_err read_gfd_flags(const struct gs__ictx *c,
                             const struct gs_doc_node *m, const char *path)
{
	static const char *const keys[] = {"oneshot",         "noTimestamp",
	                                   "sleepInterval",   "outputFile",
	                                   "machineTypeFile", NULL};
	char p[GS__PATH_MAX];
	gs_err err;

	err = gs__imp_expect(c, m, GS_DOC_MAP, path);
	if (err == GS_OK)
		err = gs__imp_keys(c, m, path, keys);
	for (int i = 0; err == GS_OK && i < m->n; i++) {
		const char *k = gs_doc_key(m, i)->value;
		const char *s;
		bool b;

		gs__imp_path(p, path, k, 0);
		if (strcmp(k, "oneshot") == 0 || strcmp(k, "noTimestamp") == 0)
			err = gs__imp_bool(c, gs_doc_value(m, i), p, &b);
		else
			err = gs__imp_str(c, gs_doc_value(m, i), p, &s);
	}
	return err;
}

static gs_err read_flags(const struct gs__ictx *c, const struct gs_doc_node *m,
                         struct gs_dp_config *cfg, bool *has_mps_root)
{
	static const char *const keys[] = {"migStrategy",
	                                   "failOnInitError",
	                                   "mpsRoot",
	                                   "nvidiaDriverRoot",
	                                   "nvidiaDevRoot",
	                                   "gdrcopyEnabled",
	                                   "gdsEnabled",
	                                   "mofedEnabled",
	                                   "useNodeFeatureAPI",
	                                   "deviceDiscoveryStrategy",
	                                   "plugin",
	                                   "gfd",
	                                   NULL};
	static const char *const discovery[] = {"auto", "nvml", "tegra", NULL};
	char p[GS__PATH_MAX];
	gs_err err;

	err = gs__imp_expect(c, m, GS_DOC_MAP, "flags");
	if (err == GS_OK)
		err = gs__imp_keys(c, m, "flags", keys);
	for (int i = 0; err == GS_OK && i < m->n; i++) {
		const char *k = gs_doc_key(m, i)->value;
		const struct gs_doc_node *v = gs_doc_value(m, i);
		const char *s;
		bool b;
		int x;

		gs__imp_path(p, "flags", k, 0);
		if (strcmp(k, "migStrategy") == 0) {
			err = gs__imp_choice(c, v, p, mig_strategies, &x);
			if (err == GS_OK)
				snprintf(cfg->mig_strategy,
				         sizeof(cfg->mig_strategy), "%s",
				         mig_strategies[x]);
		} else if (strcmp(k, "deviceDiscoveryStrategy") == 0) {
			err = gs__imp_choice(c, v, p, discovery, &x);
		} else if (strcmp(k, "plugin") == 0) {
			err = read_plugin_flags(c, v, p);
		} else if (strcmp(k, "gfd") == 0) {
			err = read_gfd_flags(c, v, p);
		} else if (strcmp(k, "mpsRoot") == 0 ||
		           strcmp(k, "nvidiaDriverRoot") == 0 ||
		           strcmp(k, "nvidiaDevRoot") == 0) {
			err = gs__imp_str(c, v, p, &s);
			if (err == GS_OK && strcmp(k, "mpsRoot") == 0)
				*has_mps_root = s[0] != '\0';
		} else {
			err = gs__imp_bool(c, v, p, &b);
		}
	}
	return err;
}

/* ---- top-level resources and imex (checked, then ignored) -------------- */

static gs_err read_patterns(const struct gs__ictx *c,
                            const struct gs_doc_node *seq, const char *path)
{
	static const char *const keys[] = {"pattern", "name", NULL};
	char p[GS__PATH_MAX], q[GS__PATH_MAX];
	gs_err err = gs__imp_expect(c, seq, GS_DOC_SEQ, path);

	for (int i = 0; err == GS_OK && i < seq->n; i++) {
		const struct gs_doc_node *e = seq->kids[i];
		const char *s;

		gs__imp_path(p, path, NULL, i);
		err = gs__imp_expect(c, e, GS_DOC_MAP, p);
		if (err == GS_OK)
			err = gs__imp_keys(c, e, p, keys);
		for (int j = 0; err == GS_OK && j < e->n; j++) {
			gs__imp_path(q, p, gs_doc_key(e, j)->value, 0);
			err = gs__imp_str(c, gs_doc_value(e, j), q, &s);
		}
	}
	return err;
}

static gs_err read_top_resources(const struct gs__ictx *c,
                                 const struct gs_doc_node *m,
                                 struct gs_dp_config *cfg)
{
	static const char *const keys[] = {"gpus", "mig", NULL};
	gs_err err = gs__imp_expect(c, m, GS_DOC_MAP, "resources");

	if (err == GS_OK)
		err = gs__imp_keys(c, m, "resources", keys);
	for (int i = 0; err == GS_OK && i < m->n; i++) {
		char p[GS__PATH_MAX];

		gs__imp_path(p, "resources", gs_doc_key(m, i)->value, 0);
		err = read_patterns(c, gs_doc_value(m, i), p);
	}
	if (err == GS_OK)
		gs__imp_note(&cfg->notes,
		             "line %d: top-level 'resources' is ignored by the plugin (\"not yet supported\"): resource names stay the defaults",
		             m->line);
	return err;
}

static gs_err read_imex(const struct gs__ictx *c, const struct gs_doc_node *m)
{
	static const char *const keys[] = {"channelIDs", "required", NULL};
	gs_err err = gs__imp_expect(c, m, GS_DOC_MAP, "imex");

	if (err == GS_OK)
		err = gs__imp_keys(c, m, "imex", keys);
	for (int i = 0; err == GS_OK && i < m->n; i++) {
		const char *k = gs_doc_key(m, i)->value;
		const struct gs_doc_node *v = gs_doc_value(m, i);
		char p[GS__PATH_MAX];
		bool b;

		gs__imp_path(p, "imex", k, 0);
		if (strcmp(k, "required") == 0) {
			err = gs__imp_bool(c, v, p, &b);
			continue;
		}
		err = gs__imp_expect(c, v, GS_DOC_SEQ, p);
		for (int j = 0; err == GS_OK && j < v->n; j++) {
			char q[GS__PATH_MAX];
			long id;

			gs__imp_path(q, p, NULL, j);
			err =
			    gs__imp_int(c, v->kids[j], q, 0, 2147483647L, &id);
		}
	}
	return err;
}

/* ---- sharing ------------------------------------------------------------ */

static bool dns_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '.';
}

/*
 * Checks a resource name the way the plugin does (prefix added, at most
 * 63 characters, a DNS subdomain after the '/'), and which resource it
 * is: nvidia.com/gpu or a mixed-strategy MIG resource. OUT: full name,
 * MIG profile ("" for the full GPU).
 */
static gs_err resource_name(const struct gs__ictx *c,
                            const struct gs_doc_node *n, const char *path,
                            char *full, char *profile)
{
	const char *s = n->value, *local;
	int len;

	if (strchr(s, '/') == NULL)
		len = snprintf(full, GS_IMPORT_NAME_MAX, "nvidia.com/%s", s);
	else
		len = snprintf(full, GS_IMPORT_NAME_MAX, "%s", s);
	if (len > 63)
		return gs__imp_fail(c, n, GS_ERR_INVALID,
		                    "%s: '%.70s' is longer than 63 characters",
		                    path, full);
	if (strncmp(full, "nvidia.com/", 11) != 0)
		return gs__imp_fail(c, n, GS_ERR_INVALID,
		                    "%s: '%.70s' is not an nvidia.com resource",
		                    path, full);
	local = full + 11;
	for (const char *p = local; *p; p++)
		if (!dns_char(*p))
			return gs__imp_fail(
			    c, n, GS_ERR_INVALID,
			    "%s: '%.70s' is not a valid resource name (lowercase letters, digits, '-' and '.')",
			    path, full);
	profile[0] = '\0';
	if (strcmp(local, "gpu") == 0)
		return GS_OK;
	if (strncmp(local, "mig-", 4) == 0 && local[4] != '\0') {
		/* the plugin writes '+' as '.': mig-1g.10gb.me is 1g.10gb+me */
		size_t l = strlen(local + 4);

		snprintf(profile, GS_SPEC_PROFILE_MAX, "%s", local + 4);
		if (l > 3 && strcmp(profile + l - 3, ".me") == 0)
			profile[l - 3] = '+';
		return GS_OK;
	}
	return gs__imp_fail(c, n, GS_ERR_INVALID,
	                    "%s: unknown resource '%.70s' (expected nvidia.com/gpu or nvidia.com/mig-<profile>)",
	                    path, full);
}

static gs_err read_devices(const struct gs__ictx *c,
                           const struct gs_doc_node *v, const char *path,
                           bool *all)
{
	char q[GS__PATH_MAX];
	gs_err err = GS_OK;
	long x;

	*all = false;
	if (v->kind == GS_DOC_SCALAR && strcmp(v->value, "all") == 0) {
		*all = true;
		return GS_OK;
	}
	if (v->kind == GS_DOC_SCALAR) {
		struct gs_errbuf quiet = {0};
		struct gs__ictx qc = {c->doc, &quiet};

		err = gs__imp_int(&qc, v, path, 1, 2147483647L, &x);
		if (err != GS_OK)
			return gs__imp_fail(
			    c, v, GS_ERR_INVALID,
			    "%s must be 'all', a positive count or a list of devices, got '%.40s'",
			    path, v->value);
		return GS_OK;
	}
	err = gs__imp_expect(c, v, GS_DOC_SEQ, path);
	for (int j = 0; err == GS_OK && j < v->n; j++) {
		const char *s;

		gs__imp_path(q, path, NULL, j);
		err = gs__imp_str(c, v->kids[j], q, &s);
		if (err == GS_OK && s[0] == '\0')
			err = gs__imp_fail(c, v->kids[j], GS_ERR_INVALID,
			                   "%s is empty", q);
	}
	return err;
}

/* One sharing.<strategy>.resources[i] entry. */
static gs_err read_resource(const struct gs__ictx *c,
                            const struct gs_doc_node *m, const char *path,
                            struct gs_dp_config *cfg, struct gs_dp_resource *r,
                            char *profile)
{
	static const char *const keys[] = {"name", "replicas", "rename",
	                                   "devices", NULL};
	const struct gs_doc_node *name = gs_doc_get(m, "name");
	const struct gs_doc_node *reps = gs_doc_get(m, "replicas");
	char p[GS__PATH_MAX];
	long replicas;
	gs_err err;

	err = gs__imp_expect(c, m, GS_DOC_MAP, path);
	if (err == GS_OK)
		err = gs__imp_keys(c, m, path, keys);
	if (err != GS_OK)
		return err;
	memset(r, 0, sizeof(*r));
	r->line = m->line;
	gs__imp_path(p, path, "name", 0);
	if (name == NULL || gs__imp_is_null(name))
		return gs__imp_fail(c, name ? name : m, GS_ERR_INVALID,
		                    "%s is required", p);
	err = gs__imp_expect(c, name, GS_DOC_SCALAR, p);
	if (err == GS_OK)
		err = resource_name(c, name, p, r->configured, profile);
	if (err != GS_OK)
		return err;
	gs__imp_path(p, path, "replicas", 0);
	if (reps == NULL)
		return gs__imp_fail(c, m, GS_ERR_INVALID, "%s is required", p);
	err = gs__imp_int(c, reps, p, -2147483647L, 2147483647L, &replicas);
	if (err != GS_OK)
		return err;
	if (replicas < 2)
		return gs__imp_fail(c, reps, GS_ERR_RANGE,
		                    "%s must be at least 2, got %ld (the plugin refuses fewer)",
		                    p, replicas);
	r->replicas = (int)replicas;
	for (int i = 0; i < m->n; i++) {
		const char *k = gs_doc_key(m, i)->value;
		const struct gs_doc_node *v = gs_doc_value(m, i);
		const char *s;
		bool all;

		gs__imp_path(p, path, k, 0);
		if (strcmp(k, "rename") == 0) {
			err = gs__imp_str(c, v, p, &s);
			if (err == GS_OK && s[0] != '\0')
				gs__imp_note(
				    &cfg->notes,
				    "line %d: %s '%s' is ignored by the plugin; only renameByDefault renames",
				    v->line, p, s);
		} else if (strcmp(k, "devices") == 0) {
			err = read_devices(c, v, p, &all);
			if (err == GS_OK && !all)
				gs__imp_note(&cfg->notes,
				             "line %d: %s is reset to 'all' by the plugin: sharing applies to every device of the resource",
				             v->line, p);
		}
		if (err != GS_OK)
			return err;
	}
	return GS_OK;
}

static gs_err read_replicated(const struct gs__ictx *c,
                              const struct gs_doc_node *m, const char *path,
                              struct gs_dp_config *cfg, bool *rename,
                              int *fail_gt_one, struct gs_dp_resource *res,
                              char (*profiles)[GS_SPEC_PROFILE_MAX], int *n_res)
{
	static const char *const keys[] = {
	    "renameByDefault", "failRequestsGreaterThanOne", "resources", NULL};
	const struct gs_doc_node *list = gs_doc_get(m, "resources");
	char p[GS__PATH_MAX];
	gs_err err;

	err = gs__imp_expect(c, m, GS_DOC_MAP, path);
	if (err == GS_OK)
		err = gs__imp_keys(c, m, path, keys);
	for (int i = 0; err == GS_OK && i < m->n; i++) {
		const char *k = gs_doc_key(m, i)->value;
		bool b;

		if (strcmp(k, "resources") == 0)
			continue;
		gs__imp_path(p, path, k, 0);
		err = gs__imp_bool(c, gs_doc_value(m, i), p, &b);
		if (err == GS_OK && strcmp(k, "renameByDefault") == 0)
			*rename = b;
		else if (err == GS_OK)
			*fail_gt_one = b;
	}
	if (err != GS_OK)
		return err;
	gs__imp_path(p, path, "resources", 0);
	if (list == NULL || gs__imp_is_null(list))
		return gs__imp_fail(c, list ? list : m, GS_ERR_INVALID,
		                    "%s is required and must not be empty", p);
	err = gs__imp_expect(c, list, GS_DOC_SEQ, p);
	if (err == GS_OK && list->n == 0)
		err = gs__imp_fail(c, list, GS_ERR_INVALID,
		                   "%s must not be empty", p);
	if (err == GS_OK && list->n > GS_IMPORT_MAX_RESOURCES)
		err = gs__imp_fail(c, list, GS_ERR_RANGE,
		                   "%s holds more than %d resources", p,
		                   GS_IMPORT_MAX_RESOURCES);
	for (int i = 0; err == GS_OK && i < list->n; i++) {
		char q[GS__PATH_MAX];

		gs__imp_path(q, p, NULL, i);
		err = read_resource(c, list->kids[i], q, cfg, &res[i],
		                    profiles[i]);
		for (int j = 0; err == GS_OK && j < i; j++)
			if (strcmp(res[j].configured, res[i].configured) == 0)
				err = gs__imp_fail(c, list->kids[i],
				                   GS_ERR_INVALID,
				                   "%s: %s is listed twice", q,
				                   res[i].configured);
	}
	if (err == GS_OK)
		*n_res = list->n;
	return err;
}

/* The template of one replica, with the plugin's arithmetic. */
static gs_err make_template(const struct gs__ictx *c,
                            const struct gs_doc_node *at,
                            const struct gs_import_opts *opts,
                            struct gs_dp_config *cfg, struct gs_dp_resource *r,
                            const char *profile)
{
	struct gs_slice_spec *s = &r->slice;
	const struct gs_gpu_model *m = opts ? opts->gpu : NULL;

	gs_spec_init(s);
	r->mig = profile[0] != '\0';
	snprintf(r->name, sizeof(r->name), "%s%s", r->configured,
	         cfg->rename_by_default ? ".shared" : "");
	if (m != NULL) {
		s->gpu.kind = GS_GPU_MODEL;
		snprintf(s->gpu.model, sizeof(s->gpu.model), "%s", m->name);
	}
	if (r->mig) {
		snprintf(s->mig_profile, sizeof(s->mig_profile), "%.*s",
		         (int)sizeof(s->mig_profile) - 1, profile);
		if (m != NULL && gs_catalog_profile(m, profile) == NULL)
			return gs__imp_fail(
			    c, at, GS_ERR_INVALID,
			    "%s has no MIG profile %s (resource %s)",
			    m->name, profile, r->configured);
	}
	if (cfg->strategy == GS_DP_TIME_SLICING) {
		s->mode = r->mig ? GS_MODE_MIG_TIMESLICE : GS_MODE_TIMESLICE;
	} else {
		int limit = m != NULL && (m->cc_major * 10 + m->cc_minor) < 75
		                ? MPS_CLIENTS_OLD
		                : MPS_CLIENTS_NEW;

		if (r->mig)
			return gs__imp_fail(
			    c, at, GS_ERR_INVALID,
			    "sharing using MPS is not supported for MIG devices (%s); gpuslice can do it with mode mig+mps",
			    r->configured);
		if (r->replicas > limit)
			return gs__imp_fail(c, at, GS_ERR_RANGE,
			                    "%s: %d MPS replicas per GPU, more than the plugin allows (%d%s)",
			                    r->configured, r->replicas, limit,
			                    m ? ""
			                      : "; 16 before compute capability 7.5");
		s->mode = GS_MODE_MPS;
		s->compute_pct = 100 / r->replicas;
		if (m != NULL && m->memory_mib > 0)
			s->memory_bytes =
			    m->memory_mib / (uint64_t)r->replicas * MIB;
	}
	if (opts != NULL && opts->gpus > 0 && !r->mig)
		r->total = r->replicas * opts->gpus;
	return GS_OK;
}

static void add_better(struct gs_dp_config *cfg)
{
	if (cfg->strategy == GS_DP_TIME_SLICING)
		gs__imp_note(&cfg->notes,
		             "gpuslice: time-slicing replicas get no memory limit here (any pod can fill the GPU); gpuslice enforces a memory cap per slice, and shares need not be equal (weight=N, priority=high)");
	else if (cfg->strategy == GS_DP_MPS)
		gs__imp_note(&cfg->notes,
		             "gpuslice: MPS replicas here are all equal; gpuslice sets compute and memory per slice, also enforces the memory cap in its shim (so memory queries show it), adds priorities, and shares MIG devices with MPS too (mig+mps)");
}

static gs_err read_sharing(const struct gs__ictx *c,
                           const struct gs_doc_node *m,
                           const struct gs_import_opts *opts,
                           struct gs_dp_config *cfg, bool has_mps_root)
{
	static const char *const keys[] = {"timeSlicing", "mps", NULL};
	const struct gs_doc_node *ts = gs_doc_get(m, "timeSlicing");
	const struct gs_doc_node *mps = gs_doc_get(m, "mps");
	const struct gs_doc_node *use;
	char profiles[GS_IMPORT_MAX_RESOURCES][GS_SPEC_PROFILE_MAX];
	struct gs_dp_resource ts_res[GS_IMPORT_MAX_RESOURCES];
	char ts_prof[GS_IMPORT_MAX_RESOURCES][GS_SPEC_PROFILE_MAX];
	bool rename = false, ts_rename = false;
	int fail_gt = -1, ts_fail_gt = -1, n_ts = 0;
	gs_err err;

	err = gs__imp_expect(c, m, GS_DOC_MAP, "sharing");
	if (err == GS_OK)
		err = gs__imp_keys(c, m, "sharing", keys);
	if (err == GS_OK && ts != NULL && !gs__imp_is_null(ts))
		err = read_replicated(c, ts, "sharing.timeSlicing", cfg,
		                      &ts_rename, &ts_fail_gt, ts_res, ts_prof,
		                      &n_ts);
	if (err == GS_OK && mps != NULL && !gs__imp_is_null(mps))
		err = read_replicated(c, mps, "sharing.mps", cfg, &rename,
		                      &fail_gt, cfg->res, profiles,
		                      &cfg->n_resources);
	if (err != GS_OK)
		return err;
	if (cfg->n_resources > 0) {
		use = mps;
		cfg->strategy = GS_DP_MPS;
		if (n_ts > 0)
			gs__imp_note(&cfg->notes,
			             "line %d: sharing.timeSlicing is ignored: MPS and time-slicing are exclusive and MPS wins",
			             ts->line);
		/* The plugin takes the root from --mps-root / MPS_ROOT too,
		 * which its Helm chart (and the GPU operator's) always sets. */
		if (!has_mps_root)
			gs__imp_note(
			    &cfg->notes,
			    "line %d: flags.mpsRoot is not set: the plugin then takes --mps-root / MPS_ROOT, which its Helm chart and the GPU operator set to %s",
			    mps->line, GS_DP_MPS_ROOT_DEFAULT);
		if (strcmp(cfg->mig_strategy, "mixed") == 0)
			return gs__imp_fail(c, mps, GS_ERR_INVALID,
			                    "MPS sharing cannot be combined with migStrategy mixed");
		/* unset means true for MPS */
		cfg->fail_requests_greater_than_one = fail_gt != 0;
	} else if (n_ts > 0) {
		use = ts;
		cfg->strategy = GS_DP_TIME_SLICING;
		cfg->n_resources = n_ts;
		memcpy(cfg->res, ts_res, sizeof(ts_res));
		memcpy(profiles, ts_prof, sizeof(ts_prof));
		rename = ts_rename;
		cfg->fail_requests_greater_than_one = ts_fail_gt == 1;
	} else {
		return GS_OK;
	}
	cfg->rename_by_default = rename;
	for (int i = 0; i < cfg->n_resources; i++) {
		const struct gs_doc_node *entry =
		    gs_doc_get(use, "resources")->kids[i];

		err = make_template(c, entry, opts, cfg, &cfg->res[i],
		                    profiles[i]);
		if (err != GS_OK)
			return err;
		if (cfg->res[i].mig && strcmp(cfg->mig_strategy, "mixed") != 0)
			gs__imp_note(&cfg->notes,
			             "line %d: %s is only advertised with migStrategy mixed (this config has %s)",
			             entry->line, cfg->res[i].configured,
			             cfg->mig_strategy);
	}
	add_better(cfg);
	return GS_OK;
}

static gs_err read_config(const struct gs__ictx *c,
                          const struct gs_doc_node *root,
                          const struct gs_import_opts *opts,
                          struct gs_dp_config *cfg)
{
	static const char *const keys[] = {"version", "flags", "resources",
	                                   "sharing", "imex",  NULL};
	const struct gs_doc_node *v;
	bool has_mps_root = false;
	gs_err err;

	memset(cfg, 0, sizeof(*cfg));
	cfg->line = root->line;
	snprintf(cfg->mig_strategy, sizeof(cfg->mig_strategy), "none");
	err = gs__imp_expect(c, root, GS_DOC_MAP, "");
	if (err == GS_OK)
		err = gs__imp_keys(c, root, "the config", keys);
	if (err != GS_OK)
		return err;
	v = gs_doc_get(root, "version");
	if (v != NULL && !gs__imp_is_null(v)) {
		const char *s;

		err = gs__imp_str(c, v, "version", &s);
		if (err == GS_OK && strcmp(s, "v1") != 0)
			err = gs__imp_fail(c, v, GS_ERR_INVALID,
			                   "unsupported version '%.40s' (the plugin reads v1)",
			                   s);
	}
	v = gs_doc_get(root, "flags");
	if (err == GS_OK && v != NULL && !gs__imp_is_null(v))
		err = read_flags(c, v, cfg, &has_mps_root);
	v = gs_doc_get(root, "resources");
	if (err == GS_OK && v != NULL && !gs__imp_is_null(v))
		err = read_top_resources(c, v, cfg);
	v = gs_doc_get(root, "imex");
	if (err == GS_OK && v != NULL && !gs__imp_is_null(v))
		err = read_imex(c, v);
	v = gs_doc_get(root, "sharing");
	if (err == GS_OK && v != NULL && !gs__imp_is_null(v))
		err = read_sharing(c, v, opts, cfg, has_mps_root);
	return err;
}

gs_err gs_import_device_plugin(const struct gs_doc *doc,
                               const struct gs_import_opts *opts,
                               struct gs_dp_import *out, struct gs_errbuf *eb)
{
	struct gs__ictx c = {doc, eb};

	memset(out, 0, sizeof(*out));
	if (gs_doc_count(doc) == 0)
		return gs__imp_fail(&c, NULL, GS_ERR_PARSE,
		                    "no config in the file");
	if (gs_doc_count(doc) > GS_IMPORT_MAX_CONFIGS)
		return gs__imp_fail(
		    &c, gs_doc_root(doc, GS_IMPORT_MAX_CONFIGS), GS_ERR_RANGE,
		    "more than %d configs in one file", GS_IMPORT_MAX_CONFIGS);
	for (int i = 0; i < gs_doc_count(doc); i++) {
		gs_err err =
		    read_config(&c, gs_doc_root(doc, i), opts, &out->config[i]);

		if (err != GS_OK)
			return err;
		out->n_configs++;
	}
	return GS_OK;
}
