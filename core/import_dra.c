/*
 * import_dra.c - the NVIDIA DRA driver's GpuConfig / MigDeviceConfig, and
 * the ResourceClaims that carry them, in gpuslice terms (see import.h;
 * the schema and the driver's rules are in shared/reference/
 * dra-gpuconfig.md).
 *
 * The driver decodes its parameters strictly, so unknown fields are
 * errors here too. Of a claim we read what decides placement: device
 * requests (class, count, a CEL selector on the MIG profile), the
 * `matchAttribute: gpu.nvidia.com/parentUUID` constraint, and the configs
 * and which requests they apply to. CEL is not evaluated: a selector of
 * the form `device.attributes['gpu.nvidia.com'].profile == '1g.5gb'` is
 * recognised, anything else becomes a note.
 */
#include "gs/import.h"

#include "import_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB         (1024ULL * 1024)
#define PARENT_UUID "gpu.nvidia.com/parentUUID"

static const char *const intervals[] = {"Default", "Short", "Medium", "Long",
                                        NULL};

const char *gs_dra_strategy_name(enum gs_dra_strategy s)
{
	return s == GS_DRA_MPS ? "MPS" : "TimeSlicing";
}

const char *gs_dra_interval_name(int level)
{
	return level >= 0 && level <= 3 ? intervals[level] : "?";
}

/* ---- quantities -----------------------------------------------------------
 */

gs_err gs_parse_k8s_quantity(const char *text, uint64_t *bytes,
                             struct gs_errbuf *eb)
{
	static const struct {
		const char *suffix;
		double mult;
	} units[] = {
	    {"Ki", 1024.0},
	    {"Mi", 1048576.0},
	    {"Gi", 1073741824.0},
	    {"Ti", 1099511627776.0},
	    {"Pi", 1125899906842624.0},
	    {"Ei", 1152921504606846976.0},
	    {"k", 1e3},
	    {"M", 1e6},
	    {"G", 1e9},
	    {"T", 1e12},
	    {"P", 1e15},
	    {"E", 1e18},
	    {"m", 1e-3},
	    {"", 1.0},
	};
	const char *p = text;
	char num[64];
	size_t n = 0;
	double v;
	char *end;

	if (text == NULL || *text == '\0')
		return gs_fail(eb, GS_ERR_PARSE, "an empty quantity");
	if (*p == '+' || *p == '-')
		num[n++] = *p++;
	while ((*p >= '0' && *p <= '9') || *p == '.') {
		if (n + 1 >= sizeof(num))
			return gs_fail(eb, GS_ERR_PARSE,
			               "quantity '%.40s' is too long", text);
		num[n++] = *p++;
	}
	/* a decimal exponent (1e9), but not the "E" (exa) suffix alone */
	if ((*p == 'e' || *p == 'E') &&
	    ((p[1] >= '0' && p[1] <= '9') ||
	     ((p[1] == '+' || p[1] == '-') && p[2] >= '0' && p[2] <= '9'))) {
		num[n++] = *p++;
		if (*p == '+' || *p == '-')
			num[n++] = *p++;
		while (*p >= '0' && *p <= '9' && n + 1 < sizeof(num))
			num[n++] = *p++;
	}
	num[n] = '\0';
	v = strtod(num, &end);
	if (n == 0 || *end != '\0' || end == num || !isfinite(v))
		return gs_fail(eb, GS_ERR_PARSE,
		               "'%.40s' is not a Kubernetes quantity (e.g. 10Gi, 512Mi, 1G)",
		               text);
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(p, units[i].suffix) != 0)
			continue;
		v *= units[i].mult;
		if (v < 0)
			return gs_fail(eb, GS_ERR_RANGE,
			               "quantity '%.40s' is negative", text);
		if (v > 9007199254740992.0)
			return gs_fail(eb, GS_ERR_RANGE,
			               "quantity '%.40s' is too large", text);
		*bytes = (uint64_t)v;
		return GS_OK;
	}
	return gs_fail(
	    eb, GS_ERR_PARSE,
	    "'%.40s' has an unknown suffix '%.8s' (Ki Mi Gi Ti Pi Ei, k M G T P E)",
	    text, p);
}

/* ---- GpuConfig / MigDeviceConfig ------------------------------------------
 */

static gs_err read_quantity(const struct gs__ictx *c,
                            const struct gs_doc_node *v, const char *path,
                            uint64_t *bytes, int *mib)
{
	struct gs_errbuf qeb = {0};
	const char *s;
	gs_err err;

	if (v->kind != GS_DOC_SCALAR)
		return gs__imp_expect(c, v, GS_DOC_SCALAR, path);
	s = v->value;
	err = gs_parse_k8s_quantity(s, bytes, &qeb);
	if (err != GS_OK)
		return gs__imp_fail(c, v, err, "%s: %s", path, qeb.msg);
	if (*bytes / MIB == 0)
		return gs__imp_fail(c, v, GS_ERR_RANGE,
		                    "%s: %.40s is below 1 MiB (the driver refuses it: \"value set too low\")",
		                    path, s);
	if (*bytes / MIB > 2147483647ULL)
		return gs__imp_fail(c, v, GS_ERR_RANGE,
		                    "%s: %.40s is too large", path, s);
	*mib = (int)(*bytes / MIB);
	return GS_OK;
}

/* A key of defaultPerDevicePinnedMemoryLimit: an index or a UUID. */
static bool device_key(const char *k)
{
	bool digits = k[0] != '\0';

	for (const char *p = k; *p; p++)
		digits &= *p >= '0' && *p <= '9';
	return digits || strncmp(k, "GPU-", 4) == 0 ||
	       strncmp(k, "MIG-", 4) == 0;
}

static gs_err read_mps(const struct gs__ictx *c, const struct gs_doc_node *m,
                       const char *path, struct gs_dra_config *cfg)
{
	static const char *const keys[] = {
	    "defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit",
	    "defaultPerDevicePinnedMemoryLimit", NULL};
	char p[GS__PATH_MAX];
	gs_err err;

	err = gs__imp_expect(c, m, GS_DOC_MAP, path);
	if (err == GS_OK)
		err = gs__imp_keys(c, m, path, keys);
	for (int i = 0; err == GS_OK && i < m->n; i++) {
		const char *k = gs_doc_key(m, i)->value;
		const struct gs_doc_node *v = gs_doc_value(m, i);
		long pct;

		gs__imp_path(p, path, k, 0);
		if (gs__imp_is_null(v))
			continue;
		if (strcmp(k, "defaultActiveThreadPercentage") == 0) {
			err = gs__imp_int(c, v, p, 0, 100, &pct);
			cfg->thread_pct = (int)pct;
		} else if (strcmp(k, "defaultPinnedDeviceMemoryLimit") == 0) {
			err = read_quantity(c, v, p, &cfg->pinned_bytes,
			                    &cfg->pinned_mib);
		} else {
			err = gs__imp_expect(c, v, GS_DOC_MAP, p);
			if (err == GS_OK && v->n > GS_IMPORT_MAX_DEVICE_LIMITS)
				err = gs__imp_fail(
				    c, v, GS_ERR_RANGE,
				    "%s has more than %d devices", p,
				    GS_IMPORT_MAX_DEVICE_LIMITS);
			for (int j = 0; err == GS_OK && j < v->n; j++) {
				struct gs_dra_device_limit *l =
				    &cfg->limit[cfg->n_limits];
				char q[GS__PATH_MAX];

				snprintf(l->device, sizeof(l->device), "%s",
				         gs_doc_key(v, j)->value);
				gs__imp_path(q, p, l->device, 0);
				if (!device_key(l->device))
					return gs__imp_fail(
					    c, gs_doc_key(v, j), GS_ERR_INVALID,
					    "%s: invalid device '%.40s' (a GPU-/MIG- UUID or an index into the claim's devices)",
					    p, l->device);
				err = read_quantity(c, gs_doc_value(v, j), q,
				                    &l->bytes, &l->mib);
				if (err == GS_OK)
					cfg->n_limits++;
			}
		}
	}
	return err;
}

static gs_err read_sharing(const struct gs__ictx *c,
                           const struct gs_doc_node *m, const char *path,
                           struct gs_dra_config *cfg)
{
	static const char *const gpu_keys[] = {"strategy", "timeSlicingConfig",
	                                       "mpsConfig", NULL};
	static const char *const mig_keys[] = {"strategy", "mpsConfig", NULL};
	static const char *const strategies[] = {"TimeSlicing", "MPS", NULL};
	const struct gs_doc_node *st = gs_doc_get(m, "strategy");
	const struct gs_doc_node *ts = gs_doc_get(m, "timeSlicingConfig");
	const struct gs_doc_node *mps = gs_doc_get(m, "mpsConfig");
	char p[GS__PATH_MAX];
	int x;
	gs_err err;

	err = gs__imp_expect(c, m, GS_DOC_MAP, path);
	if (err == GS_OK && cfg->mig && ts != NULL)
		return gs__imp_fail(c, gs_doc_key(m, 0), GS_ERR_PARSE,
		                    "%s: MigDeviceConfig has no timeSlicingConfig (the time-slice interval cannot be set on a MIG device)",
		                    path);
	if (err == GS_OK)
		err = gs__imp_keys(c, m, path, cfg->mig ? mig_keys : gpu_keys);
	if (err != GS_OK)
		return err;
	gs__imp_path(p, path, "strategy", 0);
	if (st == NULL || gs__imp_is_null(st))
		return gs__imp_fail(c, st ? st : m, GS_ERR_INVALID,
		                    "%s is required (TimeSlicing or MPS)", p);
	err = gs__imp_choice(c, st, p, strategies, &x);
	if (err != GS_OK)
		return err;
	cfg->strategy = x == 1 ? GS_DRA_MPS : GS_DRA_TIME_SLICING;
	if (cfg->strategy == GS_DRA_MPS && ts != NULL && !gs__imp_is_null(ts))
		return gs__imp_fail(c, ts, GS_ERR_INVALID,
		                    "%s: timeSlicingConfig goes with strategy TimeSlicing, not MPS",
		                    path);
	if (cfg->strategy == GS_DRA_TIME_SLICING && mps != NULL &&
	    !gs__imp_is_null(mps))
		return gs__imp_fail(c, mps, GS_ERR_INVALID,
		                    "%s: mpsConfig goes with strategy MPS, not TimeSlicing",
		                    path);
	if (ts != NULL && !gs__imp_is_null(ts)) {
		static const char *const ts_keys[] = {"interval", NULL};
		const struct gs_doc_node *iv = gs_doc_get(ts, "interval");

		char q[GS__PATH_MAX];

		gs__imp_path(p, path, "timeSlicingConfig", 0);
		err = gs__imp_expect(c, ts, GS_DOC_MAP, p);
		if (err == GS_OK)
			err = gs__imp_keys(c, ts, p, ts_keys);
		gs__imp_path(q, p, "interval", 0);
		if (err == GS_OK && iv != NULL && !gs__imp_is_null(iv))
			err =
			    gs__imp_choice(c, iv, q, intervals, &cfg->interval);
		if (err != GS_OK)
			return err;
	}
	if (mps != NULL && !gs__imp_is_null(mps)) {
		gs__imp_path(p, path, "mpsConfig", 0);
		err = read_mps(c, mps, p, cfg);
	}
	return err;
}

/* What a workload sharing the device gets in gpuslice. */
static void config_template(struct gs_dra_config *cfg, const char *profile)
{
	struct gs_slice_spec *s = &cfg->slice;

	gs_spec_init(s);
	if (cfg->strategy == GS_DRA_MPS) {
		s->mode = cfg->mig ? GS_MODE_MIG_MPS : GS_MODE_MPS;
		if (cfg->thread_pct > 0)
			s->compute_pct = cfg->thread_pct;
		s->memory_bytes = (uint64_t)cfg->pinned_mib * MIB;
		/* the driver's per-device limit overrides the default for
		 * that device; a one-device claim's device is index 0 */
		for (int i = 0; i < cfg->n_limits; i++)
			if (strcmp(cfg->limit[i].device, "0") == 0)
				s->memory_bytes =
				    (uint64_t)cfg->limit[i].mib * MIB;
	} else {
		s->mode = cfg->mig ? GS_MODE_MIG_TIMESLICE : GS_MODE_TIMESLICE;
	}
	if (cfg->mig && profile != NULL)
		snprintf(s->mig_profile, sizeof(s->mig_profile), "%s", profile);
}

static gs_err read_config(const struct gs__ictx *c, const struct gs_doc_node *m,
                          const char *path, struct gs_dra_config *cfg,
                          struct gs_import_notes *notes)
{
	static const char *const keys[] = {"apiVersion", "kind", "sharing",
	                                   NULL};
	static const char *const apis[] = {"resource.nvidia.com/v1beta1",
	                                   "gpu.nvidia.com/v1alpha1", NULL};
	static const char *const kinds[] = {"GpuConfig", "MigDeviceConfig",
	                                    NULL};
	const struct gs_doc_node *api = gs_doc_get(m, "apiVersion");
	const struct gs_doc_node *kind = gs_doc_get(m, "kind");
	const struct gs_doc_node *sh = gs_doc_get(m, "sharing");
	char p[GS__PATH_MAX];
	int x = 0;
	gs_err err;

	memset(cfg, 0, sizeof(*cfg));
	cfg->line = m->line;
	cfg->thread_pct = -1;
	err = gs__imp_expect(c, m, GS_DOC_MAP, path);
	if (err == GS_OK)
		err = gs__imp_keys(c, m, path, keys);
	gs__imp_path(p, path, "kind", 0);
	if (err == GS_OK && kind == NULL)
		err = gs__imp_fail(c, m, GS_ERR_INVALID,
		                   "%s is required (GpuConfig or MigDeviceConfig)",
		                   p);
	if (err == GS_OK)
		err = gs__imp_choice(c, kind, p, kinds, &x);
	if (err != GS_OK)
		return err;
	cfg->mig = x == 1;
	gs__imp_path(p, path, "apiVersion", 0);
	if (api != NULL) {
		err = gs__imp_choice(c, api, p, apis, &x);
		if (err != GS_OK)
			return err;
		if (x == 1)
			gs__imp_note(notes,
			             "line %d: %s is the old API group; the current driver reads resource.nvidia.com/v1beta1",
			             api->line, apis[1]);
	}
	if (sh != NULL && !gs__imp_is_null(sh)) {
		cfg->sharing_given = true;
		gs__imp_path(p, path, "sharing", 0);
		err = read_sharing(c, sh, p, cfg);
		if (err != GS_OK)
			return err;
	}
	if (cfg->strategy == GS_DRA_MPS)
		gs__imp_note(notes,
		             "line %d: strategy MPS needs the driver's MPSSupport feature gate (alpha, off by default)",
		             cfg->line);
	else
		gs__imp_note(notes,
		             "line %d: %s needs the driver's TimeSlicingSettings feature gate (alpha, off by default)",
		             cfg->line,
		             cfg->sharing_given ? "strategy TimeSlicing"
		                                : "the default (TimeSlicing)");
	config_template(cfg, NULL);
	return GS_OK;
}

/* ---- claims
 * ------------------------------------------------------------------ */

/* `... .profile == '1g.5gb'` -> 1g.5gb; false when not of that form. */
static bool cel_profile(const char *expr, char *out, size_t size)
{
	const char *p = strstr(expr, ".profile");
	const char *q;
	char quote;
	size_t n;

	if (p == NULL)
		return false;
	p += strlen(".profile");
	while (*p == ' ')
		p++;
	if (p[0] != '=' || p[1] != '=')
		return false;
	p += 2;
	while (*p == ' ')
		p++;
	quote = *p;
	if (quote != '\'' && quote != '"')
		return false;
	q = strchr(p + 1, quote);
	if (q == NULL)
		return false;
	n = (size_t)(q - p - 1);
	if (n == 0 || n >= size)
		return false;
	memcpy(out, p + 1, n);
	out[n] = '\0';
	for (q++; *q == ' '; q++)
		;
	return *q == '\0';
}

/*
 * A selector on NVIDIA's attributes as one on gpuslice.io's: every
 * mention of the driver must be `device.attributes['gpu.nvidia.com'].A`
 * (either quote) with A one of the attributes both drivers publish with
 * the same meaning, or `device.driver == 'gpu.nvidia.com'`; capacity and
 * other attributes (uuid, index, pcieBusID, ... differ or are absent)
 * make it untranslatable. false: *out is unspecified.
 */
static bool cel_rewrite(const char *expr, char *out, size_t size)
{
	static const char *const same[] = {"type",
	                                   "profile",
	                                   "productName",
	                                   "architecture",
	                                   "cudaComputeCapability",
	                                   "driverVersion",
	                                   NULL};
	static const char *const forms[] = {
	    "device.attributes['gpu.nvidia.com']",
	    "device.attributes[\"gpu.nvidia.com\"]", NULL};
	const char *p = expr;
	size_t n = 0;

	if (strstr(expr, "device.capacity") != NULL)
		return false;
	while (*p != '\0') {
		const char *rest = NULL;
		const char *put = NULL;

		for (int f = 0; forms[f] != NULL && rest == NULL; f++) {
			size_t l = strlen(forms[f]);

			if (strncmp(p, forms[f], l) != 0 || p[l] != '.')
				continue;
			for (int a = 0; same[a] != NULL; a++) {
				size_t al = strlen(same[a]);
				char after;

				/* read past the name only once it matched:
				 * the text may end inside it */
				if (strncmp(p + l + 1, same[a], al) != 0)
					continue;
				after = p[l + 1 + al];
				if (!(after == '_' ||
				      (after >= 'a' && after <= 'z') ||
				      (after >= 'A' && after <= 'Z') ||
				      (after >= '0' && after <= '9'))) {
					rest = p + l;
					put =
					    "device.attributes[\"gpuslice.io\"]";
					break;
				}
			}
			if (rest == NULL)
				return false;
		}
		if (rest == NULL &&
		    (strncmp(p, "'gpu.nvidia.com'", 16) == 0 ||
		     strncmp(p, "\"gpu.nvidia.com\"", 16) == 0)) {
			/* only as device.driver's value */
			const char *q = p;

			while (q > expr && (q[-1] == ' ' || q[-1] == '='))
				q--;
			if (q - expr < 13 ||
			    strncmp(q - 13, "device.driver", 13))
				return false;
			rest = p + 16;
			put = "\"gpuslice.io\"";
		}
		if (rest == NULL && strncmp(p, "gpu.nvidia.com", 14) == 0)
			return false; /* any other mention */
		if (rest != NULL) {
			size_t l = strlen(put);

			if (n + l >= size)
				return false;
			memcpy(out + n, put, l);
			n += l;
			p = rest;
			continue;
		}
		if (n + 1 >= size)
			return false;
		out[n++] = *p++;
	}
	out[n] = '\0';
	return true;
}

static gs_err read_selectors(const struct gs__ictx *c,
                             const struct gs_doc_node *v, const char *path,
                             struct gs_dra_request *r,
                             struct gs_import_notes *notes,
                             struct gs_import_block *blk)
{
	gs_err err = gs__imp_expect(c, v, GS_DOC_SEQ, path);

	for (int i = 0; err == GS_OK && i < v->n; i++) {
		static const char *const keys[] = {"cel", NULL};
		static const char *const cel_keys[] = {"expression", NULL};
		const struct gs_doc_node *s = v->kids[i], *cel, *ex;
		char p[GS__PATH_MAX], q[GS__PATH_MAX], x[GS__PATH_MAX];
		const char *text;

		gs__imp_path(p, path, NULL, i);
		err = gs__imp_expect(c, s, GS_DOC_MAP, p);
		if (err == GS_OK)
			err = gs__imp_keys(c, s, p, keys);
		if (err != GS_OK)
			break;
		cel = gs_doc_get(s, "cel");
		gs__imp_path(q, p, "cel", 0);
		if (cel == NULL)
			return gs__imp_fail(c, s, GS_ERR_INVALID,
			                    "%s is required", q);
		err = gs__imp_expect(c, cel, GS_DOC_MAP, q);
		if (err == GS_OK)
			err = gs__imp_keys(c, cel, q, cel_keys);
		if (err != GS_OK)
			break;
		ex = gs_doc_get(cel, "expression");
		gs__imp_path(x, q, "expression", 0);
		if (ex == NULL)
			return gs__imp_fail(c, cel, GS_ERR_INVALID,
			                    "%s is required", x);
		err = gs__imp_str(c, ex, x, &text);
		if (err == GS_OK &&
		    cel_profile(text, r->profile, sizeof(r->profile)))
			continue;
		if (err == GS_OK && r->n_cel < GS_IMPORT_MAX_CEL &&
		    cel_rewrite(text, r->cel[r->n_cel], sizeof(r->cel[0]))) {
			r->n_cel++;
			continue;
		}
		if (err == GS_OK) {
			gs__imp_note(notes,
			             "line %d: selector not translated (only `...profile == '<profile>'` is): %.80s",
			             ex->line, text);
			gs__imp_block(
			    c, blk, ex,
			    "%s: selector not translated (a profile, or type, productName, architecture, cudaComputeCapability, driverVersion and device.driver are): %.80s",
			    x, text);
		}
	}
	return err;
}

/* The fields of a request (v1beta1 style, or v1's `exactly`). */
static gs_err read_request_body(const struct gs__ictx *c,
                                const struct gs_doc_node *m, const char *path,
                                struct gs_dra_request *r,
                                struct gs_import_notes *notes,
                                struct gs_import_block *blk)
{
	static const char *const classes[] = {"gpu.nvidia.com",
	                                      "mig.nvidia.com", NULL};
	static const char *const modes[] = {"ExactCount", "All", NULL};
	char p[GS__PATH_MAX];
	gs_err err = GS_OK;
	bool have_class = false;

	for (int i = 0; err == GS_OK && i < m->n; i++) {
		const char *k = gs_doc_key(m, i)->value;
		const struct gs_doc_node *v = gs_doc_value(m, i);
		long n;
		int x;
		bool b;

		gs__imp_path(p, path, k, 0);
		if (strcmp(k, "deviceClassName") == 0) {
			if (v->kind == GS_DOC_SCALAR &&
			    strcmp(v->value, "gpu.nvidia.com") != 0 &&
			    strcmp(v->value, "mig.nvidia.com") != 0)
				return gs__imp_fail(
				    c, v, GS_ERR_INVALID,
				    "%s: unknown device class '%.40s' (the NVIDIA DRA driver ships gpu.nvidia.com and mig.nvidia.com)",
				    p, v->value);
			err = gs__imp_choice(c, v, p, classes, &x);
			r->mig = x == 1;
			have_class = true;
		} else if (strcmp(k, "selectors") == 0) {
			err = read_selectors(c, v, p, r, notes, blk);
		} else if (strcmp(k, "allocationMode") == 0) {
			err = gs__imp_choice(c, v, p, modes, &x);
			r->all = x == 1;
		} else if (strcmp(k, "count") == 0) {
			err = gs__imp_int(c, v, p, 1, 64, &n);
			r->count = (int)n;
		} else if (strcmp(k, "adminAccess") == 0) {
			err = gs__imp_bool(c, v, p, &b);
			if (err == GS_OK && b)
				gs__imp_note(notes,
				             "line %d: adminAccess: the claim watches devices without taking them",
				             v->line);
		} else if (strcmp(k, "tolerations") == 0 ||
		           strcmp(k, "capacity") == 0) {
			gs__imp_note(notes, "line %d: %s is not translated",
			             v->line, p);
			gs__imp_block(c, blk, v,
			              "%s is not translated to gpuslice", p);
		}
	}
	if (err == GS_OK && !have_class)
		err = gs__imp_fail(c, m, GS_ERR_INVALID,
		                   "%s.deviceClassName is required", path);
	if (err == GS_OK && r->mig && r->profile[0] == '\0')
		gs__imp_note(notes,
		             "line %d: request %s takes any MIG device: name a profile (a selector on .profile) to place it",
		             m->line, r->name);
	if (err == GS_OK && !r->mig && r->profile[0] != '\0')
		err = gs__imp_fail(c, m, GS_ERR_INVALID,
		                   "%s selects MIG profile %s on class gpu.nvidia.com (use mig.nvidia.com)",
		                   path, r->profile);
	return err;
}

static gs_err read_request(const struct gs__ictx *c,
                           const struct gs_doc_node *m, const char *path,
                           struct gs_dra_request *r,
                           struct gs_import_notes *notes,
                           struct gs_import_block *blk)
{
	static const char *const keys[] = {
	    "name",    "deviceClassName", "selectors",   "allocationMode",
	    "count",   "adminAccess",     "tolerations", "capacity",
	    "exactly", "firstAvailable",  NULL};
	static const char *const body_keys[] = {
	    "deviceClassName", "selectors",   "allocationMode", "count",
	    "adminAccess",     "tolerations", "capacity",       NULL};
	static const char *const sub_keys[] = {
	    "name",  "deviceClassName", "selectors", "allocationMode",
	    "count", "tolerations",     "capacity",  NULL};
	const struct gs_doc_node *name = gs_doc_get(m, "name");
	const struct gs_doc_node *exactly = gs_doc_get(m, "exactly");
	const struct gs_doc_node *first = gs_doc_get(m, "firstAvailable");
	char p[GS__PATH_MAX];
	const char *s;
	gs_err err;

	memset(r, 0, sizeof(*r));
	r->line = m->line;
	r->count = 1;
	err = gs__imp_expect(c, m, GS_DOC_MAP, path);
	if (err == GS_OK)
		err = gs__imp_keys(c, m, path, keys);
	gs__imp_path(p, path, "name", 0);
	if (err == GS_OK && name == NULL)
		err = gs__imp_fail(c, m, GS_ERR_INVALID, "%s is required", p);
	if (err == GS_OK)
		err = gs__imp_str(c, name, p, &s);
	if (err != GS_OK)
		return err;
	snprintf(r->name, sizeof(r->name), "%s", s);
	if (exactly != NULL) {
		gs__imp_path(p, path, "exactly", 0);
		err = gs__imp_expect(c, exactly, GS_DOC_MAP, p);
		if (err == GS_OK)
			err = gs__imp_keys(c, exactly, p, body_keys);
		if (err == GS_OK)
			err = read_request_body(c, exactly, p, r, notes, blk);
		return err;
	}
	if (first != NULL) {
		char q[GS__PATH_MAX];

		gs__imp_path(p, path, "firstAvailable", 0);
		err = gs__imp_expect(c, first, GS_DOC_SEQ, p);
		if (err == GS_OK && first->n == 0)
			err = gs__imp_fail(c, first, GS_ERR_INVALID,
			                   "%s must not be empty", p);
		gs__imp_path(q, p, NULL, 0);
		if (err == GS_OK)
			err = gs__imp_expect(c, first->kids[0], GS_DOC_MAP, q);
		if (err == GS_OK)
			err = gs__imp_keys(c, first->kids[0], q, sub_keys);
		if (err == GS_OK)
			err = read_request_body(c, first->kids[0], q, r, notes,
			                        blk);
		if (err == GS_OK && first->n > 1) {
			gs__imp_note(notes,
			             "line %d: request %s: only the first of its %d alternatives (firstAvailable) is translated",
			             first->line, r->name, first->n);
			gs__imp_block(
			    c, blk, first,
			    "%s: %d alternatives; gpuslice translates one request per claim",
			    p, first->n);
		}
		return err;
	}
	return read_request_body(c, m, path, r, notes, blk);
}

static int find_request(const struct gs_dra_import *out, const char *name)
{
	for (int i = 0; i < out->n_requests; i++)
		if (strcmp(out->request[i].name, name) == 0)
			return i;
	return -1;
}

/* A `requests: [a, b]` list naming requests of the claim. OUT: names. */
static gs_err read_names(const struct gs__ictx *c, const struct gs_doc_node *v,
                         const char *path, const struct gs_dra_import *out,
                         char (*names)[GS_IMPORT_NAME_MAX], int *n)
{
	gs_err err = gs__imp_expect(c, v, GS_DOC_SEQ, path);

	*n = 0;
	if (err == GS_OK && v->n > GS_IMPORT_MAX_REQUESTS)
		return gs__imp_fail(c, v, GS_ERR_RANGE,
		                    "%s names more than %d requests", path,
		                    GS_IMPORT_MAX_REQUESTS);
	for (int i = 0; err == GS_OK && i < v->n; i++) {
		char p[GS__PATH_MAX];
		const char *s;

		gs__imp_path(p, path, NULL, i);
		err = gs__imp_str(c, v->kids[i], p, &s);
		/* "gpu/sub" names a firstAvailable alternative */
		if (err == GS_OK) {
			char base[GS_IMPORT_NAME_MAX];
			const char *slash = strchr(s, '/');

			snprintf(base, sizeof(base), "%.*s",
			         slash ? (int)(slash - s) : (int)strlen(s), s);
			if (find_request(out, base) < 0)
				return gs__imp_fail(c, v->kids[i],
				                    GS_ERR_INVALID,
				                    "%s: the claim has no request '%.60s'",
				                    p, s);
			snprintf(names[(*n)++], GS_IMPORT_NAME_MAX, "%s", base);
		}
	}
	return err;
}

static gs_err read_constraints(const struct gs__ictx *c,
                               const struct gs_doc_node *v, const char *path,
                               struct gs_dra_import *out)
{
	static const char *const keys[] = {"requests", "matchAttribute",
	                                   "distinctAttribute", NULL};
	gs_err err = gs__imp_expect(c, v, GS_DOC_SEQ, path);

	for (int i = 0; err == GS_OK && i < v->n; i++) {
		const struct gs_doc_node *m = v->kids[i], *req, *attr;
		char p[GS__PATH_MAX], q[GS__PATH_MAX];
		char names[GS_IMPORT_MAX_REQUESTS][GS_IMPORT_NAME_MAX];
		int n = 0;
		const char *s;

		gs__imp_path(p, path, NULL, i);
		err = gs__imp_expect(c, m, GS_DOC_MAP, p);
		if (err == GS_OK)
			err = gs__imp_keys(c, m, p, keys);
		if (err != GS_OK)
			break;
		req = gs_doc_get(m, "requests");
		gs__imp_path(q, p, "requests", 0);
		if (req != NULL && !gs__imp_is_null(req))
			err = read_names(c, req, q, out, names, &n);
		attr = gs_doc_get(m, "matchAttribute");
		if (err != GS_OK)
			break;
		if (attr == NULL) {
			attr = gs_doc_get(m, "distinctAttribute");
			if (attr != NULL) {
				gs__imp_note(&out->notes,
				             "line %d: distinctAttribute is not translated",
				             attr->line);
				gs__imp_block(
				    c, &out->k8s, attr,
				    "%s.distinctAttribute is not translated to gpuslice",
				    p);
			}
			continue;
		}
		gs__imp_path(q, p, "matchAttribute", 0);
		err = gs__imp_str(c, attr, q, &s);
		if (err != GS_OK)
			break;
		if (strcmp(s, PARENT_UUID) != 0) {
			gs__imp_note(&out->notes,
			             "line %d: matchAttribute %.60s is not translated (only %s is)",
			             attr->line, s, PARENT_UUID);
			gs__imp_block(
			    c, &out->k8s, attr,
			    "%s: matchAttribute %.60s is not translated (only %s is)",
			    q, s, PARENT_UUID);
			continue;
		}
		out->same_parent = true;
		out->n_same_parent = n;
		memcpy(out->same_parent_of, names, sizeof(names));
	}
	return err;
}

/* The request a config applies to, when it names exactly one profile. */
static const char *config_profile(const struct gs_dra_import *out,
                                  const struct gs_dra_config *cfg)
{
	const char *profile = NULL;

	for (int i = 0; i < out->n_requests; i++) {
		bool applies = cfg->n_applies == 0;

		for (int j = 0; j < cfg->n_applies && !applies; j++)
			applies =
			    strcmp(cfg->applies[j], out->request[i].name) == 0;
		if (!applies || !out->request[i].mig ||
		    out->request[i].profile[0] == '\0')
			continue;
		if (profile != NULL && strcmp(profile, out->request[i].profile))
			return NULL;
		profile = out->request[i].profile;
	}
	return profile;
}

/*
 * The driver's MPS limits hold per client (each process of the claim's
 * containers gets defaultActiveThreadPercentage and the pinned memory);
 * a gpuslice claim is one slice whose limits its processes share. They
 * mean the same only for one client: a claim named by several containers
 * in the file (or a ResourceClaim, shared by design, that no Pod in the
 * file names) is blocked for --k8s; so is a per-device limit on a device
 * other than the claim's one (index 0), and any limit inside a MIG
 * device (the plugin gives a MIG claim its whole instance).
 */
static void mps_per_client(const struct gs__ictx *c,
                           const struct gs_doc_node *par, const char *path,
                           const struct gs_dra_config *cfg,
                           struct gs_dra_import *out)
{
	bool limits =
	    cfg->thread_pct > 0 || cfg->pinned_mib > 0 || cfg->n_limits > 0;
	bool claim = strcmp(out->kind, "ResourceClaim") == 0;

	if (cfg->strategy != GS_DRA_MPS || !limits)
		return;
	if (cfg->mig) {
		gs__imp_block(
		    c, &out->k8s, par,
		    "%s.sharing.mpsConfig: MPS limits inside a MIG device cannot be carried: a gpuslice.io MIG device is one claim's whole instance",
		    path);
		return;
	}
	for (int i = 0; i < cfg->n_limits; i++)
		if (strcmp(cfg->limit[i].device, "0") != 0)
			gs__imp_block(
			    c, &out->k8s, par,
			    "%s.sharing.mpsConfig.defaultPerDevicePinnedMemoryLimit: device %.40s is not the claim's one device (0)",
			    path, cfg->limit[i].device);
	if (out->clients > 1)
		gs__imp_block(
		    c, &out->k8s, par,
		    "%s.sharing.mpsConfig: the driver's limits hold per MPS client and %d containers use this claim; one gpuslice claim would hold them to one limit together (give each container its own claim)",
		    path, out->clients);
	else if (claim && out->clients == 0)
		gs__imp_block(
		    c, &out->k8s, par,
		    "%s.sharing.mpsConfig: the driver's limits hold per MPS client, and no Pod in the file says how many clients share this ResourceClaim (add its Pods to the file, or use a ResourceClaimTemplate)",
		    path);
}

static gs_err read_claim_configs(const struct gs__ictx *c,
                                 const struct gs_doc_node *v, const char *path,
                                 struct gs_dra_import *out)
{
	static const char *const keys[] = {"requests", "opaque", NULL};
	static const char *const opaque_keys[] = {"driver", "parameters", NULL};
	gs_err err = gs__imp_expect(c, v, GS_DOC_SEQ, path);

	for (int i = 0; err == GS_OK && i < v->n; i++) {
		const struct gs_doc_node *m = v->kids[i], *op, *drv, *par, *req;
		struct gs_dra_config *cfg;
		char p[GS__PATH_MAX], q[GS__PATH_MAX], d[GS__PATH_MAX];
		const char *s;

		gs__imp_path(p, path, NULL, i);
		err = gs__imp_expect(c, m, GS_DOC_MAP, p);
		if (err == GS_OK)
			err = gs__imp_keys(c, m, p, keys);
		if (err != GS_OK)
			break;
		op = gs_doc_get(m, "opaque");
		gs__imp_path(q, p, "opaque", 0);
		if (op == NULL)
			return gs__imp_fail(c, m, GS_ERR_INVALID,
			                    "%s is required", q);
		err = gs__imp_expect(c, op, GS_DOC_MAP, q);
		if (err == GS_OK)
			err = gs__imp_keys(c, op, q, opaque_keys);
		if (err != GS_OK)
			break;
		drv = gs_doc_get(op, "driver");
		gs__imp_path(d, q, "driver", 0);
		if (drv == NULL)
			return gs__imp_fail(c, op, GS_ERR_INVALID,
			                    "%s is required", d);
		err = gs__imp_str(c, drv, d, &s);
		if (err != GS_OK)
			break;
		if (strcmp(s, "gpu.nvidia.com") != 0) {
			gs__imp_note(&out->notes,
			             "line %d: config for driver %.40s skipped",
			             drv->line, s);
			continue;
		}
		if (out->n_configs >= GS_IMPORT_MAX_CONFIGS)
			return gs__imp_fail(c, m, GS_ERR_RANGE,
			                    "more than %d configs",
			                    GS_IMPORT_MAX_CONFIGS);
		par = gs_doc_get(op, "parameters");
		gs__imp_path(q, p, "opaque.parameters", 0);
		if (par == NULL)
			return gs__imp_fail(c, op, GS_ERR_INVALID,
			                    "%s is required", q);
		cfg = &out->config[out->n_configs];
		err = read_config(c, par, q, cfg, &out->notes);
		if (err != GS_OK)
			break;
		req = gs_doc_get(m, "requests");
		gs__imp_path(d, p, "requests", 0);
		if (req != NULL && !gs__imp_is_null(req))
			err = read_names(c, req, d, out, cfg->applies,
			                 &cfg->n_applies);
		if (err != GS_OK)
			break;
		for (int r = 0; r < out->n_requests; r++) {
			bool applies = cfg->n_applies == 0;

			for (int j = 0; j < cfg->n_applies && !applies; j++)
				applies = strcmp(cfg->applies[j],
				                 out->request[r].name) == 0;
			if (applies && out->request[r].mig != cfg->mig)
				return gs__imp_fail(
				    c, par, GS_ERR_INVALID,
				    "%s: a %s applies to request %s, whose devices are %s",
				    q,
				    cfg->mig ? "MigDeviceConfig" : "GpuConfig",
				    out->request[r].name,
				    out->request[r].mig ? "MIG devices"
				                        : "full GPUs");
		}
		config_template(cfg, config_profile(out, cfg));
		mps_per_client(c, par, q, cfg, out);
		out->n_configs++;
	}
	return err;
}

/* The claim's devices as one placement request. */
static void claim_place(struct gs_dra_import *out)
{
	struct gs_place_request *pr = &out->place;
	bool covers_all =
	    out->n_same_parent == 0 || out->n_same_parent == out->n_requests;

	memset(pr, 0, sizeof(*pr));
	out->has_place = out->n_requests > 0;
	for (int i = 0; i < out->n_requests && out->has_place; i++) {
		const struct gs_dra_request *r = &out->request[i];

		if (r->all || (r->mig && r->profile[0] == '\0') ||
		    pr->n + r->count > GS_PLACE_MAX_GANG) {
			gs__imp_note(&out->notes,
			             "line %d: no placement: request %s takes %s",
			             r->line, r->name,
			             r->all ? "all matching devices of a node"
			             : r->mig && r->profile[0] == '\0'
			                 ? "a MIG device of any profile"
			                 : "more devices than one gang holds");
			out->has_place = false;
			break;
		}
		for (int k = 0; k < r->count; k++) {
			struct gs_place_item *it = &pr->item[pr->n++];

			if (r->mig) {
				it->kind = GS_PLACE_MIG;
				it->mode = GS_MODE_MIG;
				snprintf(it->mig_profile,
				         sizeof(it->mig_profile), "%s",
				         r->profile);
			} else {
				it->kind = GS_PLACE_WHOLE;
			}
		}
	}
	if (!out->has_place)
		return;
	pr->gang = GS_GANG_SAME_NODE;
	if (out->same_parent && covers_all) {
		bool all_mig = true;

		for (int k = 0; k < pr->n; k++)
			all_mig &= pr->item[k].kind == GS_PLACE_MIG;
		if (all_mig)
			pr->gang = GS_GANG_SAME_PARENT;
	}
}

static gs_err read_claim(const struct gs__ictx *c,
                         const struct gs_doc_node *spec, const char *path,
                         struct gs_dra_import *out)
{
	static const char *const spec_keys[] = {"devices", NULL};
	static const char *const dev_keys[] = {"requests", "constraints",
	                                       "config", NULL};
	const struct gs_doc_node *dev, *reqs, *v;
	char p[GS__PATH_MAX], q[GS__PATH_MAX];
	gs_err err;

	err = gs__imp_expect(c, spec, GS_DOC_MAP, path);
	if (err == GS_OK)
		err = gs__imp_keys(c, spec, path, spec_keys);
	if (err != GS_OK)
		return err;
	dev = gs_doc_get(spec, "devices");
	gs__imp_path(p, path, "devices", 0);
	if (dev == NULL)
		return gs__imp_fail(c, spec, GS_ERR_INVALID, "%s is required",
		                    p);
	err = gs__imp_expect(c, dev, GS_DOC_MAP, p);
	if (err == GS_OK)
		err = gs__imp_keys(c, dev, p, dev_keys);
	if (err != GS_OK)
		return err;
	reqs = gs_doc_get(dev, "requests");
	gs__imp_path(q, p, "requests", 0);
	if (reqs != NULL && !gs__imp_is_null(reqs)) {
		err = gs__imp_expect(c, reqs, GS_DOC_SEQ, q);
		if (err == GS_OK && reqs->n > GS_IMPORT_MAX_REQUESTS)
			err = gs__imp_fail(c, reqs, GS_ERR_RANGE,
			                   "%s holds more than %d requests", q,
			                   GS_IMPORT_MAX_REQUESTS);
		for (int i = 0; err == GS_OK && i < reqs->n; i++) {
			char r[GS__PATH_MAX];

			gs__imp_path(r, q, NULL, i);
			err =
			    read_request(c, reqs->kids[i], r, &out->request[i],
			                 &out->notes, &out->k8s);
			if (err == GS_OK && i == 1)
				gs__imp_block(
				    c, &out->k8s, reqs->kids[i],
				    "%s: a gpuslice.io claim allocates one device and this claim has %d requests (give each its own claim)",
				    r, reqs->n);
			if (err == GS_OK && out->request[i].all)
				gs__imp_block(
				    c, &out->k8s, reqs->kids[i],
				    "%s.allocationMode: All devices of a node in one claim; a gpuslice.io claim allocates one device",
				    r);
			if (err == GS_OK && out->request[i].count > 1)
				gs__imp_block(
				    c, &out->k8s, reqs->kids[i],
				    "%s.count: %d devices in one claim; a gpuslice.io claim allocates one device (give each its own claim)",
				    r, out->request[i].count);
			if (err == GS_OK &&
			    find_request(out, out->request[i].name) >= 0)
				err = gs__imp_fail(c, reqs->kids[i],
				                   GS_ERR_INVALID,
				                   "%s: request name %s is used twice",
				                   r, out->request[i].name);
			if (err == GS_OK)
				out->n_requests++;
		}
	}
	v = gs_doc_get(dev, "constraints");
	gs__imp_path(q, p, "constraints", 0);
	if (err == GS_OK && v != NULL && !gs__imp_is_null(v))
		err = read_constraints(c, v, q, out);
	v = gs_doc_get(dev, "config");
	gs__imp_path(q, p, "config", 0);
	if (err == GS_OK && v != NULL && !gs__imp_is_null(v))
		err = read_claim_configs(c, v, q, out);
	if (err == GS_OK)
		claim_place(out);
	return err;
}

static gs_err read_claim_doc(const struct gs__ictx *c,
                             const struct gs_doc_node *root, bool tmpl,
                             struct gs_dra_import *out)
{
	static const char *const keys[] = {"apiVersion", "kind",   "metadata",
	                                   "spec",       "status", NULL};
	static const char *const tmpl_keys[] = {"metadata", "spec", NULL};
	const struct gs_doc_node *spec = gs_doc_get(root, "spec");
	gs_err err = gs__imp_keys(c, root, "the document", keys);

	if (err != GS_OK)
		return err;
	if (spec == NULL)
		return gs__imp_fail(c, root, GS_ERR_INVALID,
		                    "spec is required");
	if (!tmpl)
		return read_claim(c, spec, "spec", out);
	err = gs__imp_expect(c, spec, GS_DOC_MAP, "spec");
	if (err == GS_OK)
		err = gs__imp_keys(c, spec, "spec", tmpl_keys);
	if (err != GS_OK)
		return err;
	if (gs_doc_get(spec, "spec") == NULL)
		return gs__imp_fail(c, spec, GS_ERR_INVALID,
		                    "spec.spec is required");
	return read_claim(c, gs_doc_get(spec, "spec"), "spec.spec", out);
}

static bool importable(const char *k)
{
	return strcmp(k, "GpuConfig") == 0 ||
	       strcmp(k, "MigDeviceConfig") == 0 ||
	       strcmp(k, "ResourceClaim") == 0 ||
	       strcmp(k, "ResourceClaimTemplate") == 0;
}

static const char *kind_of(const struct gs_doc_node *root)
{
	const struct gs_doc_node *kind = gs_doc_get(root, "kind");

	if (root->kind != GS_DOC_MAP || kind == NULL ||
	    kind->kind != GS_DOC_SCALAR)
		return NULL;
	return kind->value;
}

/* A scalar field of a mapping, or "" (never NULL). */
static const char *str_at(const struct gs_doc_node *m, const char *key)
{
	const struct gs_doc_node *v =
	    m != NULL && m->kind == GS_DOC_MAP ? gs_doc_get(m, key) : NULL;

	return v != NULL && v->kind == GS_DOC_SCALAR ? v->value : "";
}

static const struct gs_doc_node *map_at(const struct gs_doc_node *m,
                                        const char *key)
{
	const struct gs_doc_node *v =
	    m != NULL && m->kind == GS_DOC_MAP ? gs_doc_get(m, key) : NULL;

	return v != NULL && v->kind == GS_DOC_MAP ? v : NULL;
}

/* Containers (init ones too) of a pod spec naming pod-level claim `ref`. */
static int containers_using(const struct gs_doc_node *spec, const char *ref)
{
	static const char *const lists[] = {"containers", "initContainers"};
	int n = 0;

	for (int l = 0; l < 2; l++) {
		const struct gs_doc_node *cs = gs_doc_get(spec, lists[l]);

		for (int i = 0;
		     cs != NULL && cs->kind == GS_DOC_SEQ && i < cs->n; i++) {
			const struct gs_doc_node *res =
			    map_at(cs->kids[i], "resources");
			const struct gs_doc_node *cl =
			    res != NULL ? gs_doc_get(res, "claims") : NULL;
			bool uses = false;

			if (cl != NULL && cl->kind != GS_DOC_SEQ)
				cl = NULL;
			for (int j = 0; cl != NULL && j < cl->n && !uses; j++)
				uses = strcmp(str_at(cl->kids[j], "name"),
				              ref) == 0;
			n += uses;
		}
	}
	return n;
}

/*
 * How many containers of the file's Pods and workloads use the claim
 * (kind ResourceClaim: all of them together, times replicas; a template:
 * the most in one pod, as each pod gets its own claim).
 */
static int count_clients(const struct gs_doc *doc, const char *name,
                         const char *ns, bool tmpl)
{
	int total = 0;

	for (int d = 0; d < gs_doc_count(doc); d++) {
		const struct gs_doc_node *r = gs_doc_root(doc, d), *spec, *rc;
		const char *k = str_at(r, "kind"), *pns;
		long replicas = 1;
		int here = 0;

		spec = map_at(r, "spec");
		pns = str_at(map_at(r, "metadata"), "namespace");
		if (strcmp(k, "Pod") != 0) {
			const struct gs_doc_node *w = spec;
			const char *reps = str_at(spec, "replicas");

			if (strcmp(k, "CronJob") == 0)
				w = map_at(map_at(w, "jobTemplate"), "spec");
			if (reps[0] != '\0')
				replicas = strtol(reps, NULL, 10);
			else if (strcmp(k, "DaemonSet") == 0)
				replicas = 2; /* a pod per node: several */
			else if (str_at(w, "parallelism")[0] != '\0')
				replicas =
				    strtol(str_at(w, "parallelism"), NULL, 10);
			spec = map_at(map_at(w, "template"), "spec");
		}
		if (spec == NULL || strcmp(pns, ns) != 0)
			continue;
		rc = gs_doc_get(spec, "resourceClaims");
		for (int i = 0;
		     rc != NULL && rc->kind == GS_DOC_SEQ && i < rc->n; i++) {
			const char *want = str_at(
			    rc->kids[i], tmpl ? "resourceClaimTemplateName"
			                      : "resourceClaimName");

			if (strcmp(want, name) == 0)
				here += containers_using(
				    spec, str_at(rc->kids[i], "name"));
		}
		if (tmpl && here > total)
			total = here;
		else if (!tmpl)
			total += here * (int)(replicas > 0 ? replicas : 1);
	}
	return total;
}

static gs_err import_one(const struct gs__ictx *c, int i,
                         struct gs_dra_import *out)
{
	const struct gs_doc_node *root = gs_doc_root(c->doc, i);
	const struct gs_doc_node *meta = map_at(root, "metadata");
	const char *k = kind_of(root);
	gs_err err;

	memset(out, 0, sizeof(*out));
	out->line = root->line;
	snprintf(out->kind, sizeof(out->kind), "%.31s", k);
	if (strcmp(k, "GpuConfig") == 0 || strcmp(k, "MigDeviceConfig") == 0) {
		err = read_config(c, root, "", &out->config[0], &out->notes);
		if (err == GS_OK)
			out->n_configs = 1;
		return err;
	}
	snprintf(out->name, sizeof(out->name), "%s", str_at(meta, "name"));
	snprintf(out->ns, sizeof(out->ns), "%.63s", str_at(meta, "namespace"));
	out->clients = count_clients(c->doc, out->name, out->ns,
	                             strcmp(k, "ResourceClaimTemplate") == 0);
	return read_claim_doc(c, root, strcmp(k, "ResourceClaim") != 0, out);
}

gs_err gs_import_dra_next(const struct gs_doc *doc, int *cursor,
                          struct gs_dra_import *out, struct gs_errbuf *eb)
{
	struct gs__ictx c = {doc, eb};

	for (int i = *cursor; i < gs_doc_count(doc); i++) {
		const char *k = kind_of(gs_doc_root(doc, i));

		if (k == NULL || !importable(k))
			continue;
		*cursor = i + 1;
		return import_one(&c, i, out);
	}
	*cursor = gs_doc_count(doc);
	return GS_ERR_NOT_FOUND;
}

gs_err gs_import_dra(const struct gs_doc *doc, struct gs_dra_import *out,
                     struct gs_errbuf *eb)
{
	struct gs__ictx c = {doc, eb};
	struct gs_import_notes skipped = {0};
	int done = -1;
	gs_err err = GS_OK;

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < gs_doc_count(doc) && err == GS_OK; i++) {
		const struct gs_doc_node *root = gs_doc_root(doc, i);
		const char *k = kind_of(root);

		if (k == NULL) {
			gs__imp_note(
			    &skipped,
			    "line %d: document %d has no kind; skipped",
			    root->line, i + 1);
			continue;
		}
		if (!importable(k)) {
			gs__imp_note(&skipped, "line %d: kind %.40s skipped",
			             root->line, k);
			continue;
		}
		if (done >= 0) {
			gs__imp_note(
			    &skipped,
			    "line %d: only the first %s is translated here (--k8s translates them all); import this %.40s on its own",
			    root->line, out->kind, k);
			continue;
		}
		done = i;
		err = import_one(&c, i, out);
	}
	if (err == GS_OK && done < 0)
		return gs__imp_fail(&c, NULL, GS_ERR_NOT_FOUND,
		                    "no GpuConfig, MigDeviceConfig, ResourceClaim or ResourceClaimTemplate in the file");
	for (int i = 0; err == GS_OK && i < skipped.n; i++)
		gs__imp_note(&out->notes, "%s", skipped.text[i]);
	return err;
}
