/*
 * config.c - the YAML configuration file (see config.h, docs/config.md).
 *
 * The one YAML reader (gs/yamldoc.h) gives core's document tree, whose
 * nodes carry their line, so every error can name FILE:LINE. Each section is a table of keys with a
 * handler; a key that is not in the table is an error, never ignored.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gs/catalog.h"
#include "gs/log.h"
#include "gs/region_swap.h"
#include "gs/swap.h"
#include "gs/yamldoc.h"
#include "store.h"

#define CONFIG_MAX_BYTES (1u << 20)

struct cfg_ctx {
	const char *file;
	struct gs_config *cfg;
	struct gs_errbuf *eb;
};

static int line_of(const struct gs_doc_node *n)
{
	return n->line;
}

static gs_err bad(struct cfg_ctx *c, const struct gs_doc_node *n, gs_err code,
                  const char *fmt, const char *a, const char *b)
{
	char msg[200];

	snprintf(msg, sizeof(msg), fmt, a, b);
	return gs_fail(c->eb, code, "%s:%d: %s", c->file, line_of(n), msg);
}

static gs_err scalar(struct cfg_ctx *c, const struct gs_doc_node *n,
                     const char *key, const char **out)
{
	*out = "";
	if (n->kind != GS_DOC_SCALAR)
		return bad(c, n, GS_ERR_PARSE, "%s must be a single value%s",
		           key, "");
	*out = n->value;
	return GS_OK;
}

static gs_err get_str(struct cfg_ctx *c, const struct gs_doc_node *n,
                      const char *key, char *buf, size_t len)
{
	const char *v;
	gs_err err = scalar(c, n, key, &v);

	if (err)
		return err;
	if (strlen(v) >= len)
		return bad(c, n, GS_ERR_RANGE, "%s is too long%s", key, "");
	snprintf(buf, len, "%s", v);
	return GS_OK;
}

static gs_err get_int(struct cfg_ctx *c, const struct gs_doc_node *n,
                      const char *key, long lo, long hi, long *out)
{
	const char *v;
	char *end;
	long x;
	char range[64];
	gs_err err = scalar(c, n, key, &v);

	if (err)
		return err;
	errno = 0;
	x = strtol(v, &end, 10);
	if (end == v || *end != '\0' || errno)
		return bad(c, n, GS_ERR_PARSE, "%s: '%s' is not a whole number",
		           key, v);
	if (x < lo || x > hi) {
		snprintf(range, sizeof(range), "%ld..%ld", lo, hi);
		return bad(c, n, GS_ERR_RANGE, "%s must be %s", key, range);
	}
	*out = x;
	return GS_OK;
}

static gs_err get_bool(struct cfg_ctx *c, const struct gs_doc_node *n,
                       const char *key, bool *out)
{
	const char *v;
	gs_err err = scalar(c, n, key, &v);

	if (err)
		return err;
	if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on"))
		*out = true;
	else if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off"))
		*out = false;
	else
		return bad(c, n, GS_ERR_PARSE, "%s: '%s' is not true or false",
		           key, v);
	return GS_OK;
}

/* One of `names` (NULL-terminated); OUT: its index. */
static gs_err get_enum(struct cfg_ctx *c, const struct gs_doc_node *n,
                       const char *key, const char *const *names, int *out)
{
	const char *v;
	char list[160] = "";
	gs_err err = scalar(c, n, key, &v);

	if (err)
		return err;
	for (int i = 0; names[i]; i++) {
		if (strcmp(v, names[i]) == 0) {
			*out = i;
			return GS_OK;
		}
		snprintf(list + strlen(list), sizeof(list) - strlen(list),
		         "%s%s", i ? "|" : "", names[i]);
	}
	return gs_fail(c->eb, GS_ERR_INVALID, "%s:%d: %s must be %s, got '%s'",
	               c->file, line_of(n), key, list, v);
}

static gs_err get_memory(struct cfg_ctx *c, const struct gs_doc_node *n,
                         const char *key, uint64_t *out)
{
	const char *v;
	struct gs_errbuf peb = {0};
	gs_err err = scalar(c, n, key, &v);

	if (err)
		return err;
	if (strcmp(v, "0") == 0) {
		*out = 0;
		return GS_OK;
	}
	err = gs_parse_memory(v, out, &peb);
	if (err)
		return bad(c, n, err, "%s: %s", key, gs_errbuf_msg(&peb, err));
	return GS_OK;
}

typedef gs_err (*key_fn)(struct cfg_ctx *c, const char *key,
                         const struct gs_doc_node *val, void *arg);

struct key_def {
	const char *name;
	key_fn fn;
};

/* Calls the handler of each key in `map`; unknown keys are errors. */
static gs_err walk(struct cfg_ctx *c, const struct gs_doc_node *map,
                   const char *section, const struct key_def *keys, void *arg)
{
	if (map->kind != GS_DOC_MAP)
		return bad(c, map, GS_ERR_PARSE, "%s must be a mapping%s",
		           section, "");
	for (int i = 0; i < map->n; i++) {
		const struct gs_doc_node *k = gs_doc_key(map, i);
		const struct gs_doc_node *v = gs_doc_value(map, i);
		const struct key_def *d;
		gs_err err;

		if (k == NULL || v == NULL || k->kind != GS_DOC_SCALAR)
			return bad(c, map, GS_ERR_PARSE,
			           "%s: keys must be plain words%s", section,
			           "");
		for (d = keys; d->name; d++)
			if (strcmp(d->name, k->value) == 0)
				break;
		if (d->name == NULL)
			return bad(c, k, GS_ERR_INVALID,
			           "unknown key '%s' in %s", k->value, section);
		err = d->fn(c, d->name, v, arg);
		if (err)
			return err;
	}
	return GS_OK;
}

/* ---- node ---- */

static gs_err k_default_mode(struct cfg_ctx *c, const char *key,
                             const struct gs_doc_node *v, void *arg)
{
	const char *s;
	struct gs_errbuf peb = {0};
	gs_err err = scalar(c, v, key, &s);

	(void)arg;
	if (err)
		return err;
	err = gs_parse_mode(s, &c->cfg->default_mode, &peb);
	if (err)
		return bad(c, v, err, "%s: %s", key, gs_errbuf_msg(&peb, err));
	return GS_OK;
}

static gs_err k_timeslice(struct cfg_ctx *c, const char *key,
                          const struct gs_doc_node *v, void *arg)
{
	static const char *const names[] = {"default", "short", "medium",
	                                    "long",    "unset", NULL};
	int i;
	gs_err err = get_enum(c, v, key, names, &i);

	(void)arg;
	if (err)
		return err;
	c->cfg->timeslice_set = i != 4;
	c->cfg->timeslice_level = i == 4 ? 0 : i;
	return GS_OK;
}

static gs_err k_placement(struct cfg_ctx *c, const char *key,
                          const struct gs_doc_node *v, void *arg)
{
	const char *s;
	struct gs_errbuf peb = {0};
	gs_err err = scalar(c, v, key, &s);

	(void)arg;
	if (err)
		return err;
	err = gs_place_parse_policy(s, &c->cfg->placement, &peb);
	if (err)
		return bad(c, v, err, "%s: %s", key, gs_errbuf_msg(&peb, err));
	return GS_OK;
}

static gs_err k_gpus(struct cfg_ctx *c, const char *key,
                     const struct gs_doc_node *v, void *arg)
{
	static const char *const names[] = {"auto", "real", "sim", NULL};
	int i;
	gs_err err = get_enum(c, v, key, names, &i);

	(void)arg;
	c->cfg->gpus = (enum gs_gpu_source)i;
	return err;
}

static gs_err k_sim_model(struct cfg_ctx *c, const char *key,
                          const struct gs_doc_node *v, void *arg)
{
	const struct gs_gpu_model *m;
	gs_err err =
	    get_str(c, v, key, c->cfg->sim_model, sizeof(c->cfg->sim_model));

	(void)arg;
	if (err)
		return err;
	m = gs_catalog_find(c->cfg->sim_model);
	if (m == NULL)
		return bad(c, v, GS_ERR_UNKNOWN_MODEL,
		           "%s: unknown GPU model '%s'", key,
		           c->cfg->sim_model);
	snprintf(c->cfg->sim_model, sizeof(c->cfg->sim_model), "%s", m->name);
	return GS_OK;
}

static gs_err k_sim_count(struct cfg_ctx *c, const char *key,
                          const struct gs_doc_node *v, void *arg)
{
	long x;
	gs_err err = get_int(c, v, key, 1, 16, &x);

	(void)arg;
	c->cfg->sim_count = (int)x;
	return err;
}

static gs_err k_sim_dir(struct cfg_ctx *c, const char *key,
                        const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	return get_str(c, v, key, c->cfg->sim_dir, sizeof(c->cfg->sim_dir));
}

static gs_err k_mig_real(struct cfg_ctx *c, const char *key,
                         const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	return get_bool(c, v, key, &c->cfg->mig_on_real_gpu);
}

static gs_err k_nvml(struct cfg_ctx *c, const char *key,
                     const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	return get_str(c, v, key, c->cfg->nvml_library,
	               sizeof(c->cfg->nvml_library));
}

static gs_err k_default_team(struct cfg_ctx *c, const char *key,
                             const struct gs_doc_node *v, void *arg)
{
	gs_err err = get_str(c, v, key, c->cfg->default_team,
	                     sizeof(c->cfg->default_team));

	(void)arg;
	if (!err && !gs_name_is_valid(c->cfg->default_team))
		return bad(c, v, GS_ERR_INVALID, "%s: '%s' is not a valid name",
		           key, c->cfg->default_team);
	return err;
}

static gs_err k_max_slices(struct cfg_ctx *c, const char *key,
                           const struct gs_doc_node *v, void *arg)
{
	long x;
	gs_err err = get_int(c, v, key, 1, 1000000, &x);

	(void)arg;
	c->cfg->max_slices = (int)x;
	return err;
}

static gs_err k_demand_half_life(struct cfg_ctx *c, const char *key,
                                 const struct gs_doc_node *v, void *arg)
{
	long x;
	gs_err err = get_int(c, v, key, 0, 10L * 365 * 86400, &x);

	(void)arg;
	c->cfg->demand_half_life_s = x;
	return err;
}

static const struct key_def node_keys[] = {
    {"default_mode", k_default_mode}, {"timeslice", k_timeslice},
    {"placement", k_placement},       {"gpus", k_gpus},
    {"sim_model", k_sim_model},       {"sim_count", k_sim_count},
    {"sim_dir", k_sim_dir},           {"mig_on_real_gpu", k_mig_real},
    {"nvml_library", k_nvml},         {"default_team", k_default_team},
    {"max_slices", k_max_slices},     {"demand_half_life_s", k_demand_half_life},
    {NULL, NULL},
};

/* ---- api ---- */

static gs_err k_socket(struct cfg_ctx *c, const char *key,
                       const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	return get_str(c, v, key, c->cfg->socket, sizeof(c->cfg->socket));
}

static gs_err k_tcp(struct cfg_ctx *c, const char *key,
                    const struct gs_doc_node *v, void *arg)
{
	gs_err err = get_str(c, v, key, c->cfg->tcp, sizeof(c->cfg->tcp));
	const char *colon;

	(void)arg;
	if (err || c->cfg->tcp[0] == '\0')
		return err;
	colon = strrchr(c->cfg->tcp, ':');
	if (colon == NULL || atoi(colon + 1) <= 0 || atoi(colon + 1) > 65535)
		return bad(c, v, GS_ERR_INVALID, "%s: '%s' is not host:port",
		           key, c->cfg->tcp);
	return GS_OK;
}

static gs_err k_token_file(struct cfg_ctx *c, const char *key,
                           const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	return get_str(c, v, key, c->cfg->token_file,
	               sizeof(c->cfg->token_file));
}

static gs_err k_admin_group(struct cfg_ctx *c, const char *key,
                            const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	return get_str(c, v, key, c->cfg->admin_group,
	               sizeof(c->cfg->admin_group));
}

static gs_err k_max_body(struct cfg_ctx *c, const char *key,
                         const struct gs_doc_node *v, void *arg)
{
	long x;
	gs_err err = get_int(c, v, key, 1024, 16 << 20, &x);

	(void)arg;
	c->cfg->max_body_bytes = (uint32_t)x;
	return err;
}

static gs_err k_max_conn(struct cfg_ctx *c, const char *key,
                         const struct gs_doc_node *v, void *arg)
{
	long x;
	gs_err err = get_int(c, v, key, 4, 4096, &x);

	(void)arg;
	c->cfg->max_connections = (int)x;
	return err;
}

static gs_err k_max_conn_user(struct cfg_ctx *c, const char *key,
                              const struct gs_doc_node *v, void *arg)
{
	long x;
	gs_err err = get_int(c, v, key, 0, 4096, &x);

	(void)arg;
	c->cfg->max_connections_per_user = (int)x;
	return err;
}

static gs_err k_idle_timeout(struct cfg_ctx *c, const char *key,
                             const struct gs_doc_node *v, void *arg)
{
	long x;
	gs_err err = get_int(c, v, key, 1, 3600, &x);

	(void)arg;
	c->cfg->idle_timeout_s = (int)x;
	return err;
}

static const struct key_def api_keys[] = {
    {"socket", k_socket},
    {"tcp", k_tcp},
    {"token_file", k_token_file},
    {"admin_group", k_admin_group},
    {"max_body_bytes", k_max_body},
    {"max_connections", k_max_conn},
    {"max_connections_per_user", k_max_conn_user},
    {"idle_timeout_s", k_idle_timeout},
    {NULL, NULL},
};

/* ---- quota ---- */

static gs_err k_user_max_slices(struct cfg_ctx *c, const char *key,
                                const struct gs_doc_node *v, void *arg)
{
	long x;
	gs_err err = get_int(c, v, key, 1, 1000000, &x);

	(void)arg;
	c->cfg->user_max_slices = (int)x;
	return err;
}

static gs_err k_user_max_memory(struct cfg_ctx *c, const char *key,
                                const struct gs_doc_node *v, void *arg)
{
	long x;
	gs_err err = get_int(c, v, key, 1, 100, &x);

	(void)arg;
	c->cfg->user_max_memory_percent = (int)x;
	return err;
}

/* A priority limit: low, normal or high. */
static gs_err get_priority(struct cfg_ctx *c, const struct gs_doc_node *v,
                           const char *key, int *out)
{
	char text[16];
	enum gs_priority p;
	gs_err err = get_str(c, v, key, text, sizeof(text));

	if (err)
		return err;
	if (gs_parse_priority(text, &p, NULL) != GS_OK)
		return bad(c, v, GS_ERR_INVALID,
		           "%s: '%s' is not low, normal or high", key, text);
	*out = (int)p;
	return GS_OK;
}

static gs_err k_user_max_priority(struct cfg_ctx *c, const char *key,
                                  const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	return get_priority(c, v, key, &c->cfg->user_max_priority);
}

static gs_err k_user_max_weight(struct cfg_ctx *c, const char *key,
                                const struct gs_doc_node *v, void *arg)
{
	long x;
	gs_err err = get_int(c, v, key, 1, GS_SPEC_WEIGHT_MAX, &x);

	(void)arg;
	c->cfg->user_max_weight = (int)x;
	return err;
}

static const struct key_def default_user_keys[] = {
    {"max_slices", k_user_max_slices},
    {"max_memory_percent", k_user_max_memory},
    {"max_priority", k_user_max_priority},
    {"max_weight", k_user_max_weight},
    {NULL, NULL},
};

/* ---- store ---- */

static gs_err k_state_dir(struct cfg_ctx *c, const char *key,
                          const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	return get_str(c, v, key, c->cfg->state_dir, sizeof(c->cfg->state_dir));
}

static gs_err k_sync(struct cfg_ctx *c, const char *key,
                     const struct gs_doc_node *v, void *arg)
{
	static const char *const names[] = {"full", "normal", NULL};

	(void)arg;
	return get_enum(c, v, key, names, &c->cfg->synchronous);
}

static gs_err k_events_keep(struct cfg_ctx *c, const char *key,
                            const struct gs_doc_node *v, void *arg)
{
	long x;
	gs_err err = get_int(c, v, key, 100, 100000000, &x);

	(void)arg;
	c->cfg->events_keep = (int)x;
	return err;
}

static const struct key_def store_keys[] = {
    {"state_dir", k_state_dir},
    {"synchronous", k_sync},
    {"events_keep", k_events_keep},
    {NULL, NULL},
};

/* ---- watchdog, ledger, mps, log ---- */

static gs_err k_wd_interval(struct cfg_ctx *c, const char *key,
                            const struct gs_doc_node *v, void *arg)
{
	long x;
	gs_err err = get_int(c, v, key, 50, 60000, &x);

	(void)arg;
	c->cfg->watchdog_interval_ms = (int)x;
	return err;
}

static gs_err k_wd_action(struct cfg_ctx *c, const char *key,
                          const struct gs_doc_node *v, void *arg)
{
	static const char *const names[] = {"flag", "kill", "auto", NULL};
	int i;
	gs_err err = get_enum(c, v, key, names, &i);

	(void)arg;
	c->cfg->watchdog_action = (enum gs_watchdog_action)i;
	return err;
}

static gs_err k_wd_grace(struct cfg_ctx *c, const char *key,
                         const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	return get_memory(c, v, key, &c->cfg->watchdog_grace_bytes);
}

static gs_err k_wd_context(struct cfg_ctx *c, const char *key,
                           const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	return get_memory(c, v, key, &c->cfg->watchdog_context_bytes);
}

static gs_err k_wd_compute_grace(struct cfg_ctx *c, const char *key,
                                 const struct gs_doc_node *v, void *arg)
{
	long x;
	gs_err err = get_int(c, v, key, 0, 100, &x);

	(void)arg;
	c->cfg->watchdog_compute_grace_pct = (int)x;
	return err;
}

static gs_err k_wd_kernel_log(struct cfg_ctx *c, const char *key,
                              const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	return get_str(c, v, key, c->cfg->watchdog_kernel_log,
	                  sizeof(c->cfg->watchdog_kernel_log));
}

static const struct key_def watchdog_keys[] = {
    {"interval_ms", k_wd_interval},
    {"kernel_log", k_wd_kernel_log},
    {"compute_grace_pct", k_wd_compute_grace},
    {"action", k_wd_action},
    {"grace", k_wd_grace},
    {"context_allowance", k_wd_context},
    {NULL, NULL},
};

static gs_err k_ledger_interval(struct cfg_ctx *c, const char *key,
                                const struct gs_doc_node *v, void *arg)
{
	long x;
	gs_err err = get_int(c, v, key, 100, 3600000, &x);

	(void)arg;
	c->cfg->ledger_interval_ms = (int)x;
	return err;
}

/* ---- swap (docs/swap.md) ---- */

static gs_err k_swap_ratio(struct cfg_ctx *c, const char *key,
                           const struct gs_doc_node *v, void *arg)
{
	const char *t;
	struct gs_errbuf peb = {0};
	gs_err err = scalar(c, v, key, &t);

	(void)arg;
	if (!err)
		err = gs_swap_parse_ratio(t, &c->cfg->swap_oversubscribe, &peb);
	if (err && peb.set)
		return gs_fail(c->eb, err, "%s:%d: %s", c->file, line_of(v),
		               peb.msg);
	return err;
}

static gs_err k_swap_seconds(struct cfg_ctx *c, const char *key,
                             const struct gs_doc_node *v, void *arg)
{
	const char *t;
	char name[48];
	struct gs_errbuf peb = {0};
	int64_t *out = strcmp(key, "idle_after") == 0
	                   ? &c->cfg->swap_idle_after_s
	                   : &c->cfg->swap_min_residency_s;
	gs_err err = scalar(c, v, key, &t);

	(void)arg;
	snprintf(name, sizeof(name), "swap.%s", key);
	if (!err)
		err = gs_swap_parse_seconds(name, t, out, &peb);
	if (err && peb.set)
		return gs_fail(c->eb, err, "%s:%d: %s", c->file, line_of(v),
		               peb.msg);
	return err;
}

/* swap.need_wait: a duration as the others, but never 0 (an allocation
 * would not wait for the room it asked for) and at most the region's
 * bound. */
static gs_err k_swap_need_wait(struct cfg_ctx *c, const char *key,
                               const struct gs_doc_node *v, void *arg)
{
	const char *t;
	int64_t s = 0;
	struct gs_errbuf peb = {0};
	gs_err err = scalar(c, v, key, &t);

	(void)arg;
	if (!err)
		err = gs_swap_parse_seconds("swap.need_wait", t, &s, &peb);
	if (err && peb.set)
		return gs_fail(c->eb, err, "%s:%d: %s", c->file, line_of(v),
		               peb.msg);
	if (err)
		return err;
	if (s < 1 || s > GS_REGION_NEED_WAIT_MS_MAX / 1000)
		return gs_fail(c->eb, GS_ERR_RANGE,
		               "%s:%d: swap.need_wait must be 1..%u seconds, got '%s'",
		               c->file, line_of(v),
		               (unsigned)(GS_REGION_NEED_WAIT_MS_MAX / 1000), t);
	c->cfg->swap_need_wait_s = s;
	return GS_OK;
}

static gs_err k_swap_host(struct cfg_ctx *c, const char *key,
                          const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	return get_memory(c, v, key, &c->cfg->swap_host_memory);
}

static const struct key_def swap_keys[] = {
    {"oversubscribe", k_swap_ratio},   {"idle_after", k_swap_seconds},
    {"min_residency", k_swap_seconds}, {"host_memory", k_swap_host},
    {"need_wait", k_swap_need_wait},   {NULL, NULL},
};

static const struct key_def ledger_keys[] = {
    {"interval_ms", k_ledger_interval},
    {NULL, NULL},
};

static gs_err k_mps_control(struct cfg_ctx *c, const char *key,
                            const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	return get_str(c, v, key, c->cfg->mps_control,
	               sizeof(c->cfg->mps_control));
}

static const struct key_def mps_keys[] = {
    {"control", k_mps_control},
    {NULL, NULL},
};

static gs_err k_log_level(struct cfg_ctx *c, const char *key,
                          const struct gs_doc_node *v, void *arg)
{
	static const char *const names[] = {"debug", "info", "warn",
	                                    "error", "off",  NULL};

	(void)arg;
	return get_enum(c, v, key, names, &c->cfg->log_level);
}

static gs_err k_log_file(struct cfg_ctx *c, const char *key,
                         const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	return get_str(c, v, key, c->cfg->log_file, sizeof(c->cfg->log_file));
}

static const struct key_def log_keys[] = {
    {"level", k_log_level},
    {"file", k_log_file},
    {NULL, NULL},
};

/* ---- prices ----
 *
 * Each rule goes through core's price-table parser (price.h), so a price
 * reads the same here as in its text form: "0.0008", "3.20/h", "0.05/m".
 */

struct rule_ctx {
	char model[GS_PRICE_PATTERN_MAX];
	char mode[GS_PRICE_PATTERN_MAX];
	char gpu[32];
	char gib[32];
};

static gs_err k_r_model(struct cfg_ctx *c, const char *key,
                        const struct gs_doc_node *v, void *arg)
{
	struct rule_ctx *r = arg;

	return get_str(c, v, key, r->model, sizeof(r->model));
}

static gs_err k_r_mode(struct cfg_ctx *c, const char *key,
                       const struct gs_doc_node *v, void *arg)
{
	struct rule_ctx *r = arg;

	return get_str(c, v, key, r->mode, sizeof(r->mode));
}

static gs_err k_r_gpu(struct cfg_ctx *c, const char *key,
                      const struct gs_doc_node *v, void *arg)
{
	struct rule_ctx *r = arg;

	return get_str(c, v, key, r->gpu, sizeof(r->gpu));
}

static gs_err k_r_gib(struct cfg_ctx *c, const char *key,
                      const struct gs_doc_node *v, void *arg)
{
	struct rule_ctx *r = arg;

	return get_str(c, v, key, r->gib, sizeof(r->gib));
}

static const struct key_def rule_keys[] = {
    {"model", k_r_model},
    {"mode", k_r_mode},
    {"per_gpu_second", k_r_gpu},
    {"per_gib_second", k_r_gib},
    {NULL, NULL},
};

static gs_err k_currency(struct cfg_ctx *c, const char *key,
                         const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	return get_str(c, v, key, c->cfg->currency, sizeof(c->cfg->currency));
}

static gs_err k_rules(struct cfg_ctx *c, const char *key,
                      const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	if (v->kind != GS_DOC_SEQ)
		return bad(c, v, GS_ERR_PARSE, "%s must be a list of rules%s",
		           key, "");
	gs_price_table_init(&c->cfg->prices);
	for (int i = 0; i < v->n; i++) {
		const struct gs_doc_node *rn = v->kids[i];
		struct rule_ctx r = {
		    .model = "*", .mode = "*", .gpu = "0", .gib = "0"};
		struct gs_errbuf peb = {0};
		char line[256];
		gs_err err;

		err = walk(c, rn, "prices.rules", rule_keys, &r);
		if (err)
			return err;
		if (strpbrk(r.model, " \t#") || strpbrk(r.mode, " \t#") ||
		    strpbrk(r.gpu, " \t#") || strpbrk(r.gib, " \t#"))
			return bad(c, rn, GS_ERR_INVALID,
			           "%s: values may not hold spaces or '#'%s",
			           key, "");
		snprintf(line, sizeof(line), "%s %s %s %s\n", r.model, r.mode,
		         r.gpu, r.gib);
		err = gs_price_table_parse(&c->cfg->prices, line, &peb);
		if (err)
			return bad(c, rn, err, "price rule: %s%s",
			           gs_errbuf_msg(&peb, err), "");
	}
	return GS_OK;
}

static const struct key_def prices_keys[] = {
    {"currency", k_currency},
    {"rules", k_rules},
    {NULL, NULL},
};

/* ---- teams ---- */

struct team_ctx {
	struct gs_team *t;
	struct gs_qvec *vec;
};

static gs_err k_q_memory(struct cfg_ctx *c, const char *key,
                         const struct gs_doc_node *v, void *arg)
{
	struct team_ctx *tc = arg;
	const char *s;
	uint64_t b;
	gs_err err = scalar(c, v, key, &s);

	if (err)
		return err;
	if (strcmp(s, "unlimited") == 0) {
		tc->vec->v[GS_QRES_MEMORY] = GS_QUOTA_UNLIMITED;
		return GS_OK;
	}
	err = get_memory(c, v, key, &b);
	if (!err && b > (uint64_t)INT64_MAX)
		return bad(c, v, GS_ERR_RANGE, "%s is too large%s", key, "");
	tc->vec->v[GS_QRES_MEMORY] = (int64_t)b;
	return err;
}

static gs_err q_count(struct cfg_ctx *c, const char *key,
                      const struct gs_doc_node *v, int64_t *out, bool pct)
{
	const char *s;
	char buf[32];
	long x;
	gs_err err = scalar(c, v, key, &s);

	if (err)
		return err;
	if (strcmp(s, "unlimited") == 0) {
		*out = GS_QUOTA_UNLIMITED;
		return GS_OK;
	}
	snprintf(buf, sizeof(buf), "%s", s);
	if (pct && buf[0] && buf[strlen(buf) - 1] == '%')
		buf[strlen(buf) - 1] = '\0';
	{
		struct gs_doc_node tmp = *v;

		tmp.value = buf;
		err = get_int(c, &tmp, key, 0, 1000000, &x);
	}
	*out = x;
	return err;
}

static gs_err k_q_compute(struct cfg_ctx *c, const char *key,
                          const struct gs_doc_node *v, void *arg)
{
	struct team_ctx *tc = arg;

	return q_count(c, key, v, &tc->vec->v[GS_QRES_COMPUTE], true);
}

static gs_err k_q_mig(struct cfg_ctx *c, const char *key,
                      const struct gs_doc_node *v, void *arg)
{
	struct team_ctx *tc = arg;

	return q_count(c, key, v, &tc->vec->v[GS_QRES_MIG], false);
}

static const struct key_def qvec_keys[] = {
    {"memory", k_q_memory},
    {"compute", k_q_compute},
    {"mig", k_q_mig},
    {NULL, NULL},
};

static gs_err k_t_parent(struct cfg_ctx *c, const char *key,
                         const struct gs_doc_node *v, void *arg)
{
	struct team_ctx *tc = arg;

	return get_str(c, v, key, tc->t->parent, sizeof(tc->t->parent));
}

static gs_err k_t_guarantee(struct cfg_ctx *c, const char *key,
                            const struct gs_doc_node *v, void *arg)
{
	struct team_ctx *tc = arg;

	(void)key;
	tc->vec = &tc->t->guarantee;
	return walk(c, v, "teams.guarantee", qvec_keys, tc);
}

static gs_err k_t_max(struct cfg_ctx *c, const char *key,
                      const struct gs_doc_node *v, void *arg)
{
	struct team_ctx *tc = arg;

	(void)key;
	tc->vec = &tc->t->max;
	return walk(c, v, "teams.max", qvec_keys, tc);
}

static gs_err k_t_members(struct cfg_ctx *c, const char *key,
                          const struct gs_doc_node *v, void *arg)
{
	struct team_ctx *tc = arg;

	if (v->kind != GS_DOC_SEQ)
		return bad(c, v, GS_ERR_PARSE, "%s must be a list of users%s",
		           key, "");
	for (int i = 0; i < v->n; i++) {
		const struct gs_doc_node *u = v->kids[i];
		struct gs_config_member *m;
		gs_err err;

		if (c->cfg->n_members == GS_CONFIG_MAX_MEMBERS)
			return bad(c, v, GS_ERR_RANGE, "%s: too many members%s",
			           key, "");
		m = &c->cfg->members[c->cfg->n_members];
		err = get_str(c, u, "member", m->user, sizeof(m->user));
		if (err)
			return err;
		snprintf(m->team, sizeof(m->team), "%s", tc->t->name);
		c->cfg->n_members++;
	}
	return GS_OK;
}

/* teams.<name>'s priority policy, made on first use (-1: not set). */
static struct gs_config_team_policy *t_policy(struct cfg_ctx *c,
                                              const char *team)
{
	struct gs_config_team_policy *p;

	for (int i = 0; i < c->cfg->n_team_policy; i++)
		if (strcmp(c->cfg->team_policy[i].team, team) == 0)
			return &c->cfg->team_policy[i];
	if (c->cfg->n_team_policy == GS_CONFIG_MAX_TEAMS)
		return NULL;
	p = &c->cfg->team_policy[c->cfg->n_team_policy++];
	snprintf(p->team, sizeof(p->team), "%s", team);
	p->max_priority = p->max_weight = -1;
	return p;
}

static gs_err k_t_max_priority(struct cfg_ctx *c, const char *key,
                               const struct gs_doc_node *v, void *arg)
{
	struct team_ctx *tc = arg;
	struct gs_config_team_policy *p = t_policy(c, tc->t->name);

	if (p == NULL)
		return bad(c, v, GS_ERR_RANGE, "%s: too many teams%s", key, "");
	return get_priority(c, v, key, &p->max_priority);
}

static gs_err k_t_max_weight(struct cfg_ctx *c, const char *key,
                             const struct gs_doc_node *v, void *arg)
{
	struct team_ctx *tc = arg;
	struct gs_config_team_policy *p = t_policy(c, tc->t->name);
	long x;
	gs_err err;

	if (p == NULL)
		return bad(c, v, GS_ERR_RANGE, "%s: too many teams%s", key, "");
	err = get_int(c, v, key, 1, GS_SPEC_WEIGHT_MAX, &x);
	p->max_weight = (int)x;
	return err;
}

static const struct key_def team_keys[] = {
    {"parent", k_t_parent},
    {"guarantee", k_t_guarantee},
    {"max", k_t_max},
    {"members", k_t_members},
    {"max_priority", k_t_max_priority},
    {"max_weight", k_t_max_weight},
    {NULL, NULL},
};

static gs_err teams_section(struct cfg_ctx *c, const char *key,
                            const struct gs_doc_node *v, void *arg)
{
	(void)arg;
	if (v->kind != GS_DOC_MAP)
		return bad(c, v, GS_ERR_PARSE, "%s must be a mapping%s", key,
		           "");
	c->cfg->n_teams = 0;
	for (int pi = 0; pi < v->n; pi++) {
		const struct gs_doc_node *k = gs_doc_key(v, pi);
		const struct gs_doc_node *val = gs_doc_value(v, pi);
		struct team_ctx tc;
		struct gs_team *t;
		gs_err err;

		if (c->cfg->n_teams == GS_CONFIG_MAX_TEAMS)
			return bad(c, k, GS_ERR_RANGE, "too many teams%s%s", "",
			           "");
		t = &c->cfg->teams[c->cfg->n_teams];
		memset(t, 0, sizeof(*t));
		for (int r = 0; r < GS_QRES__COUNT; r++)
			t->max.v[r] = GS_QUOTA_UNLIMITED;
		t->from_config = true;
		err = get_str(c, k, "team name", t->name, sizeof(t->name));
		if (err)
			return err;
		if (!gs_name_is_valid(t->name))
			return bad(c, k, GS_ERR_INVALID,
			           "'%s' is not a valid team name%s", t->name,
			           "");
		for (int i = 0; i < c->cfg->n_teams; i++)
			if (strcmp(c->cfg->teams[i].name, t->name) == 0)
				return bad(c, k, GS_ERR_EXISTS,
				           "team '%s' is defined twice%s",
				           t->name, "");
		tc.t = t;
		tc.vec = NULL;
		if (val->kind == GS_DOC_SCALAR && val->value[0] == '\0') {
			c->cfg->n_teams++;
			continue;
		}
		err = walk(c, val, "teams", team_keys, &tc);
		if (err)
			return err;
		c->cfg->n_teams++;
	}
	return GS_OK;
}

/* ---- top level ---- */

#define SECTION(fn, keys)                                                      \
	static gs_err fn(struct cfg_ctx *c, const char *k,                     \
	                 const struct gs_doc_node *v, void *a)                 \
	{                                                                      \
		(void)a;                                                       \
		return walk(c, v, k, keys, NULL);                              \
	}
SECTION(top_node, node_keys)
SECTION(top_api, api_keys)
SECTION(top_store, store_keys)
SECTION(top_watchdog, watchdog_keys)
SECTION(top_ledger, ledger_keys)
SECTION(top_swap, swap_keys)
SECTION(top_mps, mps_keys)
SECTION(top_log, log_keys)
SECTION(top_prices, prices_keys)
SECTION(quota_default_user, default_user_keys)

static const struct key_def quota_keys[] = {
    {"default_user", quota_default_user},
    {NULL, NULL},
};
SECTION(top_quota, quota_keys)
#undef SECTION

static const struct key_def top_keys[] = {
    {"node", top_node},       {"api", top_api},
    {"store", top_store},     {"watchdog", top_watchdog},
    {"ledger", top_ledger},   {"mps", top_mps},
    {"log", top_log},         {"prices", top_prices},
    {"teams", teams_section}, {"quota", top_quota},
    {"swap", top_swap},
    {NULL, NULL},
};

static gs_err check_teams(struct cfg_ctx *c)
{
	struct gs_config *cfg = c->cfg;

	for (int i = 0; i < cfg->n_members; i++)
		for (int j = 0; j < i; j++)
			if (strcmp(cfg->members[i].user,
			           cfg->members[j].user) == 0)
				return gs_fail(c->eb, GS_ERR_INVALID,
				               "%s: user '%s' is a member of both '%s' and '%s'",
				               c->file, cfg->members[i].user,
				               cfg->members[j].team,
				               cfg->members[i].team);
	return GS_OK;
}

gs_err gs_config_load_text(struct gs_config *cfg, const char *name,
                           const char *text, size_t len, struct gs_errbuf *eb)
{
	struct cfg_ctx c = {.file = name, .cfg = cfg, .eb = eb};
	struct gs_doc *doc = NULL;
	gs_err err;

	/* Aliases as libyaml's loader took them before: shared nodes, and
	 * every list the walk reads is capped. */
	err = gs_yamldoc_read(text, len, name, GS_YAMLDOC_ALIASES, &doc, eb);
	if (err)
		return err;
	if (gs_doc_count(doc) > 0) { /* else an empty file: all defaults */
		err = walk(&c, gs_doc_root(doc, 0), "the top level", top_keys,
		           NULL);
		if (!err)
			err = check_teams(&c);
		if (!err && cfg->swap_oversubscribe > 1.0 &&
		    cfg->swap_host_memory == 0)
			err = gs_fail(eb, GS_ERR_INVALID, "%s: swap.oversubscribe %g needs swap.host_memory (the host memory swapped contents may take)", name, cfg->swap_oversubscribe);
	}
	gs_doc_destroy(doc);
	return err;
}

gs_err gs_config_load(struct gs_config *cfg, const char *path,
                      struct gs_errbuf *eb)
{
	FILE *f;
	char *buf;
	size_t n;
	gs_err err;

	f = fopen(path, "re");
	if (f == NULL) {
		int e = errno;

		return gs_fail(eb, e == ENOENT ? GS_ERR_NOT_FOUND : GS_ERR_IO,
		               "%s: %s", path, strerror(e));
	}
	buf = malloc(CONFIG_MAX_BYTES + 1);
	if (buf == NULL) {
		fclose(f);
		return gs_fail(eb, GS_ERR_NOMEM, "%s: out of memory", path);
	}
	n = fread(buf, 1, CONFIG_MAX_BYTES + 1, f);
	fclose(f);
	if (n > CONFIG_MAX_BYTES) {
		free(buf);
		return gs_fail(eb, GS_ERR_RANGE, "%s: larger than %u bytes",
		               path, CONFIG_MAX_BYTES);
	}
	buf[n] = '\0';
	err = gs_config_load_text(cfg, path, buf, n, eb);
	free(buf);
	if (!err)
		snprintf(cfg->path, sizeof(cfg->path), "%s", path);
	return err;
}

void gs_config_defaults(struct gs_config *cfg, bool root,
                        const char *runtime_dir, const char *home)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->default_mode = GS_MODE_AUTO;
	cfg->timeslice_level = 0;
	cfg->timeslice_set = false;
	cfg->placement = GS_PLACE_FRAG;
	cfg->demand_half_life_s = 86400;
	cfg->gpus = GS_GPUS_AUTO;
	snprintf(cfg->sim_model, sizeof(cfg->sim_model), "H100-SXM5-80GB");
	cfg->sim_count = 2;
	cfg->mig_on_real_gpu = false;
	snprintf(cfg->nvml_library, sizeof(cfg->nvml_library),
	         "libnvidia-ml.so.1");
	if (root) {
		snprintf(cfg->socket, sizeof(cfg->socket),
		         "/run/gpuslice/api.sock");
		snprintf(cfg->state_dir, sizeof(cfg->state_dir),
		         "/var/lib/gpuslice");
	} else {
		if (runtime_dir && runtime_dir[0])
			snprintf(cfg->socket, sizeof(cfg->socket),
			         "%.80s/gpuslice/api.sock", runtime_dir);
		else
			snprintf(cfg->socket, sizeof(cfg->socket),
			         "/tmp/gpuslice-%u/api.sock",
			         (unsigned)getuid());
		snprintf(cfg->state_dir, sizeof(cfg->state_dir),
		         "%.200s/.local/state/gpuslice",
		         home && home[0] ? home : "/tmp");
	}
	snprintf(cfg->admin_group, sizeof(cfg->admin_group), "gpuslice");
	cfg->max_body_bytes = 64 * 1024;
	cfg->max_connections = 256;
	cfg->max_connections_per_user = 16;
	cfg->idle_timeout_s = 10;
	cfg->user_max_slices = 64;
	cfg->user_max_memory_percent = 100;
	cfg->swap_oversubscribe = 1.0;
	cfg->swap_idle_after_s = GS_SWAP_IDLE_AFTER_S;
	cfg->swap_min_residency_s = GS_SWAP_MIN_RESIDENCY_S;
	cfg->swap_host_memory = 0;
	cfg->swap_need_wait_s = GS_REGION_NEED_WAIT_MS_DEFAULT / 1000;
	cfg->user_max_priority = GS_PRIORITY_NORMAL;
	cfg->user_max_weight = 10;
	cfg->synchronous = GS_STORE_SYNC_NORMAL;
	cfg->events_keep = 100000;
	cfg->watchdog_interval_ms = 1000;
	cfg->watchdog_action = GS_WATCHDOG_AUTO;
	cfg->watchdog_grace_bytes = 0;
	cfg->watchdog_context_bytes = 512ull << 20;
	cfg->watchdog_compute_grace_pct = 15;
	cfg->ledger_interval_ms = 10000;
	snprintf(cfg->mps_control, sizeof(cfg->mps_control),
	         "nvidia-cuda-mps-control");
	snprintf(cfg->default_team, sizeof(cfg->default_team), "default");
	cfg->max_slices = 4096;
	snprintf(cfg->currency, sizeof(cfg->currency), "USD");
	gs_price_table_init(&cfg->prices);
	/* A default so that reports show costs; set your own (config.md). */
	(void)gs_price_table_add(&cfg->prices, "*", "*", 2.50 / 3600,
	                         0.01 / 3600, NULL);
	cfg->log_level = GS_LOG_INFO;
}

gs_err gs_config_check_teams(const struct gs_config *cfg,
			     struct gs_errbuf *eb)
{
	struct gs_quota_team_def defs[GS_CONFIG_MAX_TEAMS];
	struct gs_quota_tree *tree = NULL;
	struct gs_errbuf qeb = {0};
	gs_err err;

	for (int i = 0; i < cfg->n_teams; i++) {
		defs[i].name = cfg->teams[i].name;
		defs[i].parent = cfg->teams[i].parent;
		defs[i].guarantee = cfg->teams[i].guarantee;
		defs[i].max = cfg->teams[i].max;
	}
	err = gs_quota_tree_create(defs, cfg->n_teams, &tree, &qeb);
	gs_quota_tree_destroy(tree);
	if (err)
		return gs_fail(eb, err, "%s: teams: %s",
			       cfg->path[0] ? cfg->path : "config",
			       gs_errbuf_msg(&qeb, err));
	return GS_OK;
}

void gs_config_team_limits(const struct gs_config *cfg, const char *team,
                           int *max_priority, int *max_weight,
                           const char **where_prio, const char **where_weight)
{
	*max_priority = cfg->user_max_priority;
	*max_weight = cfg->user_max_weight;
	*where_prio = "quota.default_user.max_priority";
	*where_weight = "quota.default_user.max_weight";
	for (int i = 0; team && i < cfg->n_team_policy; i++) {
		const struct gs_config_team_policy *p = &cfg->team_policy[i];

		if (strcmp(p->team, team) != 0)
			continue;
		if (p->max_priority >= 0) {
			*max_priority = p->max_priority;
			*where_prio = "teams.<team>.max_priority";
		}
		if (p->max_weight > 0) {
			*max_weight = p->max_weight;
			*where_weight = "teams.<team>.max_weight";
		}
	}
}

const char *gs_config_user_team(const struct gs_config *cfg, const char *user)
{
	for (int i = 0; i < cfg->n_members; i++)
		if (strcmp(cfg->members[i].user, user) == 0)
			return cfg->members[i].team;
	return NULL;
}
