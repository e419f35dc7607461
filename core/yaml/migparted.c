/*
 * migparted.c - nvidia-mig-parted config files: parse and check against a
 * GPU model (see migparted.h).
 *
 * The YAML is read into core's document tree by the one YAML reader
 * (gs/yamldoc.h, with aliases: the reader resolves them to shared nodes,
 * it never copies them) and walked once with the shape
 * mig-parted's JSON decoder expects. Scalars are typed as YAML 1.1 does it
 * (mig-parted reads YAML through a 1.1 parser): a plain `true`/`yes`/`on`
 * is a bool, a plain run of digits an integer, a quoted one a string.
 * Caps on every list keep the walk bounded even when aliases make the
 * same node reachable many times.
 */
#include "gs/migparted.h"

#include "gs/spec.h"
#include "gs/yamldoc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct walk {
	struct gs_errbuf *eb;
};

static int line_of(const struct gs_doc_node *n)
{
	return n->line;
}

static const char *scalar(const struct gs_doc_node *n)
{
	return n->value;
}

static bool is_plain(const struct gs_doc_node *n)
{
	return n->kind == GS_DOC_SCALAR && !n->quoted;
}

static const char *type_name(const struct gs_doc_node *n)
{
	switch (n->kind) {
	case GS_DOC_SCALAR:
		return "a scalar";
	case GS_DOC_SEQ:
		return "a list";
	case GS_DOC_MAP:
		return "a mapping";
	}
	return "nothing";
}

/* A key node must be a scalar; returns its text or NULL after failing. */
static const char *key_text(struct walk *w, const struct gs_doc_node *k)
{
	if (k == NULL || k->kind != GS_DOC_SCALAR) {
		(void)gs_fail(w->eb, GS_ERR_PARSE,
		              "line %d: keys must be scalars",
		              k ? line_of(k) : 0);
		return NULL;
	}
	return scalar(k);
}

static bool parse_bool(const struct gs_doc_node *n, bool *out)
{
	static const char *const yes[] = {"true", "yes", "on", "y"};
	static const char *const no[] = {"false", "no", "off", "n"};

	if (!is_plain(n))
		return false;
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(scalar(n), yes[i]) == 0) {
			*out = true;
			return true;
		}
		if (strcasecmp(scalar(n), no[i]) == 0) {
			*out = false;
			return true;
		}
	}
	return false;
}

/* A plain non-negative decimal integer up to `max`; -1 when not one, -2
 * when larger than max. */
static long parse_uint(const struct gs_doc_node *n, long max)
{
	const char *s;
	long v = 0;

	if (!is_plain(n))
		return -1;
	s = scalar(n);
	if (*s == '+')
		s++;
	if (*s == '\0')
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
		if (v > max)
			return -2;
	}
	return v;
}

static gs_err parse_filter_text(struct walk *w, const struct gs_doc_node *n,
                                struct gs_migparted_filter *f)
{
	char buf[64];
	char *colon, *end;
	unsigned long long v;

	if (n->kind != GS_DOC_SCALAR || strlen(scalar(n)) >= sizeof(buf))
		goto bad;
	memcpy(buf, scalar(n), strlen(scalar(n)) + 1);
	memset(f, 0, sizeof(*f));
	colon = strchr(buf, ':');
	if (colon)
		*colon = '\0';
	errno = 0;
	v = strtoull(buf, &end, 0);
	if (buf[0] == '\0' || buf[0] == '-' || *end != '\0' || errno != 0 ||
	    v > UINT32_MAX)
		goto bad;
	f->id = (uint32_t)v;
	if (colon) {
		errno = 0;
		v = strtoull(colon + 1, &end, 0);
		if (colon[1] == '\0' || colon[1] == '-' || *end != '\0' ||
		    errno != 0 || v > UINT32_MAX)
			goto bad;
		f->subsystem = (uint32_t)v;
		f->has_subsystem = true;
	}
	return GS_OK;
bad:
	return gs_fail(w->eb, GS_ERR_PARSE,
	               "line %d: device-filter '%s' is not a PCI id (expected 0xDDDDVVVV or 0xDDDDVVVV:0xSSSSssss)",
	               line_of(n),
	               n->kind == GS_DOC_SCALAR ? scalar(n) : type_name(n));
}

static gs_err parse_filters(struct walk *w, const struct gs_doc_node *v,
                            struct gs_migparted_entry *e)
{
	if (v->kind == GS_DOC_SCALAR) {
		if (scalar(v)[0] == '\0')
			return GS_OK; /* empty = no restriction */
		e->n_filters = 1;
		return parse_filter_text(w, v, &e->filters[0]);
	}
	if (v->kind != GS_DOC_SEQ)
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "line %d: device-filter must be a string or a list of strings, got %s",
		               line_of(v), type_name(v));
	for (int ii = 0; ii < v->n; ii++) {
		const struct gs_doc_node *f = v->kids[ii];
		gs_err err;

		if (f == NULL || f->kind != GS_DOC_SCALAR)
			return gs_fail(w->eb, GS_ERR_PARSE,
			               "line %d: device-filter list items must be strings",
			               line_of(v));
		if (e->n_filters >= GS_MIGPARTED_MAX_FILTERS)
			return gs_fail(w->eb, GS_ERR_RANGE,
			               "line %d: more than %d device filters",
			               line_of(v), GS_MIGPARTED_MAX_FILTERS);
		err = parse_filter_text(w, f, &e->filters[e->n_filters]);
		if (err != GS_OK)
			return err;
		e->n_filters++;
	}
	return GS_OK;
}

static gs_err parse_devices(struct walk *w, const struct gs_doc_node *v,
                            struct gs_migparted_entry *e)
{
	if (v->kind == GS_DOC_SCALAR) {
		if (strcmp(scalar(v), "all") == 0) {
			e->devices_all = true;
			return GS_OK;
		}
		goto bad;
	}
	if (v->kind != GS_DOC_SEQ)
		goto bad;
	for (int ii = 0; ii < v->n; ii++) {
		const struct gs_doc_node *d = v->kids[ii];
		long idx = d ? parse_uint(d, 1023) : -1;

		if (idx < 0)
			return gs_fail(
			    w->eb, GS_ERR_PARSE,
			    "line %d: devices list items must be GPU indices 0..1023, got '%s'",
			    d ? line_of(d) : line_of(v),
			    d && d->kind == GS_DOC_SCALAR ? scalar(d)
			                                  : "a non-scalar");
		if (e->n_devices >= GS_MIGPARTED_MAX_DEVICES)
			return gs_fail(w->eb, GS_ERR_RANGE,
			               "line %d: more than %d devices",
			               line_of(v), GS_MIGPARTED_MAX_DEVICES);
		e->devices[e->n_devices++] = (int)idx;
	}
	return GS_OK;
bad:
	return gs_fail(w->eb, GS_ERR_PARSE,
	               "line %d: devices must be 'all' or a list of GPU indices",
	               line_of(v));
}

static gs_err parse_migdevices(struct walk *w, const struct gs_doc_node *v,
                               struct gs_migparted_entry *e)
{
	bool any = false;

	if (v->kind == GS_DOC_SCALAR && is_plain(v) &&
	    (scalar(v)[0] == '\0' || strcmp(scalar(v), "null") == 0 ||
	     strcmp(scalar(v), "~") == 0))
		return GS_OK; /* `mig-devices:` with nothing = empty */
	if (v->kind != GS_DOC_MAP)
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "line %d: mig-devices must be a mapping of profile to count, got %s",
		               line_of(v), type_name(v));
	for (int pi = 0; pi < v->n; pi++) {
		const struct gs_doc_node *k = gs_doc_key(v, pi),
		                         *c = gs_doc_value(v, pi);
		const char *name = key_text(w, k);
		struct gs_slice_spec tmp;
		struct gs_errbuf eb2 = {0};
		struct gs_migparted_migdev *md;
		long count;

		if (name == NULL)
			return GS_ERR_PARSE;
		gs_spec_init(&tmp);
		/* The spec's profile grammar is mig-parted's. */
		if (strlen(name) >= GS_MIGPARTED_PROFILE_MAX ||
		    gs_spec_set(&tmp, "mig-profile", name, &eb2) != GS_OK)
			return gs_fail(w->eb, GS_ERR_PARSE,
			               "line %d: '%s' is not a MIG profile (expected e.g. 1g.10gb, 1c.3g.20gb, 1g.5gb+me)",
			               line_of(k), name);
		count = c ? parse_uint(c, 1000000) : -1;
		if (count == -2)
			return gs_fail(w->eb, GS_ERR_RANGE,
			               "line %d: count for %s is too large",
			               line_of(c), name);
		if (count < 0)
			return gs_fail(w->eb, GS_ERR_PARSE,
			               "line %d: count for %s must be a whole number >= 0, got '%s'",
			               c ? line_of(c) : line_of(k), name,
			               c && c->kind == GS_DOC_SCALAR
			                   ? scalar(c)
			                   : "a non-scalar");
		for (int i = 0; i < e->n_migdev; i++)
			if (strcmp(e->migdev[i].profile, tmp.mig_profile) == 0)
				return gs_fail(w->eb, GS_ERR_PARSE,
				               "line %d: profile %s listed twice",
				               line_of(k), name);
		if (e->n_migdev >= GS_MIGPARTED_MAX_MIGDEV)
			return gs_fail(w->eb, GS_ERR_RANGE,
			               "line %d: more than %d profiles",
			               line_of(k), GS_MIGPARTED_MAX_MIGDEV);
		md = &e->migdev[e->n_migdev++];
		(void)snprintf(md->profile, sizeof(md->profile), "%s",
		               tmp.mig_profile);
		md->count = (int)count;
		md->line = line_of(k);
		any |= count > 0;
	}
	if (e->n_migdev > 0 && !any)
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "line %d: mig-devices needs at least one count above 0 (or write {})",
		               line_of(v));
	return GS_OK;
}

static gs_err parse_entry(struct walk *w, const struct gs_doc_node *n,
                          struct gs_migparted_entry *e)
{
	const struct gs_doc_node *devices = NULL, *enabled = NULL,
	                         *migdev = NULL, *filter = NULL;
	gs_err err;

	memset(e, 0, sizeof(*e));
	e->line = line_of(n);
	if (n->kind != GS_DOC_MAP)
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "line %d: a config entry must be a mapping, got %s",
		               line_of(n), type_name(n));
	for (int pi = 0; pi < n->n; pi++) {
		const struct gs_doc_node *k = gs_doc_key(n, pi),
		                         *v = gs_doc_value(n, pi);
		const char *key = key_text(w, k);
		const struct gs_doc_node **slot;

		if (key == NULL)
			return GS_ERR_PARSE;
		if (strcmp(key, "devices") == 0)
			slot = &devices;
		else if (strcmp(key, "mig-enabled") == 0)
			slot = &enabled;
		else if (strcmp(key, "mig-devices") == 0)
			slot = &migdev;
		else if (strcmp(key, "device-filter") == 0)
			slot = &filter;
		else
			return gs_fail(w->eb, GS_ERR_PARSE,
			               "line %d: unexpected field '%s' in a config entry (expected devices, mig-enabled, mig-devices, device-filter)",
			               line_of(k), key);
		if (*slot != NULL)
			return gs_fail(w->eb, GS_ERR_PARSE,
			               "line %d: '%s' given twice", line_of(k),
			               key);
		if (v == NULL)
			return gs_fail(w->eb, GS_ERR_PARSE,
			               "line %d: '%s' has no value", line_of(k),
			               key);
		*slot = v;
	}
	if (devices == NULL)
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "line %d: config entry lacks 'devices'",
		               e->line);
	if (enabled == NULL)
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "line %d: config entry lacks 'mig-enabled'",
		               e->line);
	if (!parse_bool(enabled, &e->mig_enabled))
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "line %d: mig-enabled must be true or false",
		               line_of(enabled));
	err = parse_devices(w, devices, e);
	if (err == GS_OK && filter)
		err = parse_filters(w, filter, e);
	if (err == GS_OK && migdev)
		err = parse_migdevices(w, migdev, e);
	if (err != GS_OK)
		return err;
	if (e->mig_enabled && migdev == NULL)
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "line %d: mig-enabled is true but mig-devices is missing (write {} for no instances)",
		               e->line);
	if (!e->mig_enabled && e->n_migdev > 0)
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "line %d: mig-enabled is false but mig-devices lists instances",
		               line_of(migdev));
	return GS_OK;
}

static gs_err parse_config(struct walk *w, const struct gs_doc_node *k,
                           const struct gs_doc_node *v,
                           struct gs_migparted_config *c)
{
	const char *name = key_text(w, k);
	int n;

	if (name == NULL)
		return GS_ERR_PARSE;
	if (name[0] == '\0' || strlen(name) >= sizeof(c->name))
		return gs_fail(
		    w->eb, GS_ERR_PARSE,
		    "line %d: config names must be 1..%zu characters",
		    line_of(k), sizeof(c->name) - 1);
	(void)snprintf(c->name, sizeof(c->name), "%s", name);
	c->line = line_of(k);
	if (v == NULL || v->kind != GS_DOC_SEQ)
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "line %d: config '%s' must be a list of entries",
		               line_of(k), name);
	n = v->n;
	if (n == 0)
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "line %d: config '%s' has no entries",
		               line_of(k), name);
	if (n > GS_MIGPARTED_MAX_ENTRIES)
		return gs_fail(w->eb, GS_ERR_RANGE,
		               "line %d: config '%s' has more than %d entries",
		               line_of(k), name, GS_MIGPARTED_MAX_ENTRIES);
	c->entries = calloc((size_t)n, sizeof(*c->entries));
	if (c->entries == NULL)
		return gs_fail(w->eb, GS_ERR_NOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		const struct gs_doc_node *en = v->kids[i];
		gs_err err;

		if (en == NULL)
			return gs_fail(w->eb, GS_ERR_PARSE,
			               "line %d: empty entry", line_of(v));
		err = parse_entry(w, en, &c->entries[i]);
		if (err != GS_OK)
			return err;
		c->n_entries++;
	}
	return GS_OK;
}

static gs_err parse_root(struct walk *w, const struct gs_doc_node *root,
                         struct gs_migparted *cfg)
{
	const struct gs_doc_node *version = NULL, *configs = NULL;
	int n;

	if (root == NULL)
		return gs_fail(w->eb, GS_ERR_PARSE, "the file is empty");
	if (root->kind != GS_DOC_MAP)
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "line %d: the file must be a mapping with version and mig-configs",
		               line_of(root));
	for (int pi = 0; pi < root->n; pi++) {
		const struct gs_doc_node *k = gs_doc_key(root, pi),
		                         *v = gs_doc_value(root, pi);
		const char *key = key_text(w, k);

		if (key == NULL)
			return GS_ERR_PARSE;
		if (strcmp(key, "version") == 0 && version == NULL)
			version = v;
		else if (strcmp(key, "mig-configs") == 0 && configs == NULL)
			configs = v;
		else
			return gs_fail(w->eb, GS_ERR_PARSE,
			               "line %d: unexpected field '%s' at the top (expected version, mig-configs)",
			               line_of(k), key);
	}
	if (version == NULL)
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "missing 'version' (must be v1)");
	if (version->kind != GS_DOC_SCALAR ||
	    strcmp(scalar(version), "v1") != 0)
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "line %d: unknown version '%s' (must be v1)",
		               line_of(version),
		               version->kind == GS_DOC_SCALAR
		                   ? scalar(version)
		                   : type_name(version));
	if (configs == NULL)
		return gs_fail(w->eb, GS_ERR_PARSE, "missing 'mig-configs'");
	if (configs->kind != GS_DOC_MAP)
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "line %d: mig-configs must be a mapping of config names to entries",
		               line_of(configs));
	n = configs->n;
	if (n == 0)
		return gs_fail(w->eb, GS_ERR_PARSE,
		               "line %d: mig-configs holds no config",
		               line_of(configs));
	if (n > GS_MIGPARTED_MAX_CONFIGS)
		return gs_fail(w->eb, GS_ERR_RANGE, "more than %d configs",
		               GS_MIGPARTED_MAX_CONFIGS);
	cfg->configs = calloc((size_t)n, sizeof(*cfg->configs));
	if (cfg->configs == NULL)
		return gs_fail(w->eb, GS_ERR_NOMEM, "out of memory");
	for (int i = 0; i < n; i++) {
		struct gs_migparted_config *c = &cfg->configs[i];
		gs_err err;

		/* Counted first so destroy frees a half-built config. */
		cfg->n_configs++;
		err = parse_config(w, gs_doc_key(configs, i),
		                   gs_doc_value(configs, i), c);
		if (err != GS_OK)
			return err;
		for (int k = 0; k < i; k++)
			if (strcmp(cfg->configs[k].name, c->name) == 0)
				return gs_fail(w->eb, GS_ERR_PARSE,
				               "line %d: config '%s' defined twice",
				               c->line, c->name);
	}
	return GS_OK;
}

/*
 * Where the GPU operator keeps mig-parted configs: a ConfigMap
 * (default-mig-parted-config and custom ones: data."config.yaml", the key
 * mig-manager reads) or its chart's values (migManager.config.data).
 * Returns that string's node, NULL for a plain mig-parted file.
 */
static const struct gs_doc_node *embedded(const struct gs_doc_node *r)
{
	const struct gs_doc_node *k, *m = NULL;

	if (r == NULL || r->kind != GS_DOC_MAP)
		return NULL;
	k = gs_doc_get(r, "kind");
	if (k != NULL && k->kind == GS_DOC_SCALAR &&
	    strcmp(k->value, "ConfigMap") == 0)
		m = gs_doc_get(r, "data");
	else if ((k = gs_doc_get(r, "migManager")) != NULL &&
	         k->kind == GS_DOC_MAP &&
	         (k = gs_doc_get(k, "config")) != NULL && k->kind == GS_DOC_MAP)
		m = gs_doc_get(k, "data");
	if (m == NULL || m->kind != GS_DOC_MAP)
		return NULL;
	if (gs_doc_get(m, "config.yaml") != NULL)
		return gs_doc_get(m, "config.yaml");
	return m->n == 1 ? gs_doc_value(m, 0) : NULL;
}

gs_err gs_migparted_parse(const char *text, size_t len,
                          struct gs_migparted **out, struct gs_errbuf *eb)
{
	struct gs_doc *doc = NULL;
	struct gs_migparted *cfg;
	struct walk w = {.eb = eb};
	gs_err err;

	*out = NULL;
	if (len > GS_MIGPARTED_MAX_BYTES)
		return gs_fail(eb, GS_ERR_RANGE,
		               "mig-parted config is larger than %d bytes",
		               GS_MIGPARTED_MAX_BYTES);
	err = gs_yamldoc_read(text, len, NULL, GS_YAMLDOC_ALIASES, &doc, eb);
	if (err != GS_OK)
		return err;
	if (gs_doc_count(doc) == 1 && embedded(gs_doc_root(doc, 0)) != NULL) {
		const struct gs_doc_node *v = embedded(gs_doc_root(doc, 0));
		struct gs_doc *inner = NULL;

		if (v->kind != GS_DOC_SCALAR) {
			err = gs_fail(
			    eb, GS_ERR_PARSE,
			    "line %d: the ConfigMap's config.yaml must be the mig-parted config as a string (config.yaml: |)",
			    v->line);
			gs_doc_destroy(doc);
			return err;
		}
		err =
		    gs_yamldoc_read_at(v->value, strlen(v->value), NULL,
		                       v->line, GS_YAMLDOC_ALIASES, &inner, eb);
		gs_doc_destroy(doc);
		if (err != GS_OK)
			return err;
		doc = inner;
	}
	cfg = calloc(1, sizeof(*cfg));
	if (cfg == NULL) {
		gs_doc_destroy(doc);
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	err =
	    parse_root(&w, gs_doc_count(doc) ? gs_doc_root(doc, 0) : NULL, cfg);
	gs_doc_destroy(doc);
	if (err != GS_OK) {
		gs_migparted_destroy(cfg);
		return err;
	}
	*out = cfg;
	return GS_OK;
}

void gs_migparted_destroy(struct gs_migparted *cfg)
{
	if (cfg == NULL)
		return;
	for (int i = 0; i < cfg->n_configs; i++)
		free(cfg->configs[i].entries);
	free(cfg->configs);
	free(cfg);
}

const struct gs_migparted_config *
gs_migparted_find(const struct gs_migparted *cfg, const char *name)
{
	for (int i = 0; cfg && name && i < cfg->n_configs; i++)
		if (strcmp(cfg->configs[i].name, name) == 0)
			return &cfg->configs[i];
	return NULL;
}

bool gs_migparted_entry_applies(const struct gs_migparted_entry *e,
                                const struct gs_gpu_model *m)
{
	if (e->n_filters == 0)
		return true;
	for (int f = 0; f < e->n_filters; f++)
		for (int k = 0; k < m->n_pci_device_ids; k++)
			if (e->filters[f].id == m->pci_device_ids[k])
				return true;
	return false;
}

/*
 * "1c.3g.20gb" -> GPU instance profile "3g.20gb" and how many compute
 * instances of 1c fit in it (3 // 1); plain names give themselves and 1.
 */
static bool split_ci(const char *name, char *gi, size_t size, int *per_gi)
{
	const char *dot = strchr(name, '.');
	int c, g;

	*per_gi = 1;
	if (dot && dot[-1] == 'c') {
		c = atoi(name);
		g = atoi(dot + 1);
		if (c <= 0 || g <= 0 || c > g)
			return false;
		*per_gi = g / c;
		(void)snprintf(gi, size, "%s", dot + 1);
		return true;
	}
	(void)snprintf(gi, size, "%s", name);
	return true;
}

static gs_err resolve_entry(const struct gs_migparted_config *c, int idx,
                            const struct gs_gpu_model *m,
                            struct gs_migparted_resolved *r,
                            struct gs_errbuf *eb)
{
	const struct gs_migparted_entry *e = &c->entries[idx];
	struct gs_mig_demand d[GS_MIGPARTED_MAX_MIGDEV];
	char want[160];
	int nd = 0, total = 0, nw = 0;
	gs_err err;

	memset(r, 0, sizeof(*r));
	r->entry = e;
	r->index = idx + 1;
	r->mig_enabled = e->mig_enabled;
	if (!e->mig_enabled)
		return GS_OK;
	want[0] = '\0';
	for (int i = 0; i < e->n_migdev; i++) {
		const struct gs_migparted_migdev *md = &e->migdev[i];
		const struct gs_mig_profile *p;
		char gi[GS_MIGPARTED_PROFILE_MAX];
		int per_gi, count, k;

		if (md->count == 0)
			continue;
		if (!split_ci(md->profile, gi, sizeof(gi), &per_gi))
			return gs_fail(eb, GS_ERR_UNKNOWN_PROFILE,
			               "config '%s' entry %d (line %d): %s: the compute instance is larger than its GPU instance",
			               c->name, idx + 1, md->line, md->profile);
		p = gs_catalog_profile(m, gi);
		if (p == NULL)
			return gs_fail(eb, GS_ERR_UNKNOWN_PROFILE,
			               "config '%s' entry %d (line %d): profile '%s' is not on %s",
			               c->name, idx + 1, md->line, md->profile,
			               m->name);
		count = (md->count + per_gi - 1) / per_gi;
		for (k = 0; k < nd && d[k].profile != p; k++)
			;
		if (k == nd) {
			d[nd].profile = p;
			d[nd].count = 0;
			nd++;
		}
		d[k].count += count;
	}
	for (int k = 0; k < nd; k++) {
		if (nw < (int)sizeof(want))
			nw += snprintf(want + nw, sizeof(want) - (size_t)nw,
			               "%s%s x%d", k ? " + " : "",
			               d[k].profile->name, d[k].count);
		total += d[k].count;
		if (d[k].count > d[k].profile->max_instances)
			return gs_fail(eb, GS_ERR_NO_FIT,
			               "config '%s' entry %d (line %d): too many instances: %s x%d, %s holds at most %d",
			               c->name, idx + 1, e->line,
			               d[k].profile->name, d[k].count, m->name,
			               d[k].profile->max_instances);
	}
	if (total > m->max_gpu_instances)
		return gs_fail(eb, GS_ERR_NO_FIT,
		               "config '%s' entry %d (line %d): too many instances: %d in all, %s holds at most %d",
		               c->name, idx + 1, e->line, total, m->name,
		               m->max_gpu_instances);
	err = gs_migplan_solve(m, NULL, 0, d, nd, &r->plan, eb);
	if (err != GS_OK)
		return err;
	if (r->plan.n_unmet > 0)
		return gs_fail(eb, GS_ERR_NO_FIT,
		               "config '%s' entry %d (line %d): no valid placement for %s on %s",
		               c->name, idx + 1, e->line, want, m->name);
	return GS_OK;
}

gs_err gs_migparted_resolve(const struct gs_migparted_config *c,
                            const struct gs_gpu_model *m,
                            struct gs_migparted_resolved *out, int *n,
                            struct gs_errbuf *eb)
{
	*n = 0;
	if (c == NULL || m == NULL)
		return gs_fail(eb, GS_ERR_INVALID, "no config or model");
	for (int i = 0; i < c->n_entries; i++) {
		gs_err err;

		if (!gs_migparted_entry_applies(&c->entries[i], m))
			continue;
		err = resolve_entry(c, i, m, &out[*n], eb);
		if (err != GS_OK)
			return err;
		(*n)++;
	}
	if (*n == 0)
		return gs_fail(eb, GS_ERR_NOT_FOUND,
		               "config '%s' has no entry for %s (every entry's device-filter leaves it out)",
		               c->name, m->name);
	return GS_OK;
}
