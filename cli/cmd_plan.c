/*
 * cmd_plan.c - `gpuslice plan`: the MIG layout planner and the mig-parted
 * config checker, from the command line.
 *
 *   gpuslice plan --gpu MODEL [--in-use P@S,..] [--existing P@S,..]
 *                 [--demand P=N,..] [--json]
 *   gpuslice plan --mig-parted FILE --config NAME --gpu MODEL [--json]
 *
 * Everything is computed locally from the catalog (no daemon). Bad input
 * is one line on stderr and exit 2; a mig-parted config that cannot be
 * placed exits 5, a config name or model entry that is not there 3.
 */
#include "cli.h"

#include "gs/catalog.h"
#include "gs/migparted.h"
#include "gs/migplan.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "plan"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: gpuslice plan --gpu MODEL [--in-use P@S,...] [--existing P@S,...]\n"
	        "                     [--demand P=N,...] [--json]\n"
	        "       gpuslice plan --mig-parted FILE --config NAME --gpu MODEL [--json]\n"
	        "\n"
	        "Plans a MIG layout for one GPU: keeps every in-use instance, serves the\n"
	        "most pending demand (weighted by memory slices) with valid placements,\n"
	        "and among those changes the fewest instances. Prints the layout, the\n"
	        "destroy/create steps (destroys first) and the demand left unmet.\n"
	        "With --mig-parted, checks one config of an nvidia-mig-parted file against\n"
	        "the model and prints its layout, or what is wrong with it.\n"
	        "\n"
	        "options:\n"
	        "  --gpu MODEL          H100-SXM5-80GB, H100, A100-40GB, A30, ... (required)\n"
	        "  --in-use LIST        instances in use, kept as they are: 3g.40gb@0,1g.10gb@6\n"
	        "  --existing LIST      idle instances (may be destroyed or reused)\n"
	        "  --demand LIST        instances wanted: 1g.10gb=4,2g.20gb=1\n"
	        "  --mig-parted FILE    an nvidia-mig-parted config file (YAML or JSON)\n"
	        "  --config NAME        the config in FILE to check\n"
	        "  --json               machine-readable output\n"
	        "  -h, --help           this text\n"
	        "\n"
	        "START is a memory-slice index (0-7; 0-3 on A30).\n"
	        "exit status: 0 planned/valid, 2 bad input, 3 config or model entry not\n"
	        "found, 5 the config's instances do not fit\n");
}

struct plan_args {
	const char *gpu;
	const char *mig_parted;
	const char *config;
	const char *in_use[8], *existing[8], *demand[8];
	int n_in_use, n_existing, n_demand;
	bool json;
};

static int parse_args(int argc, char **argv, struct plan_args *a)
{
	static const char *const opts[] = {"--gpu",        "--in-use",
	                                   "--existing",   "--demand",
	                                   "--mig-parted", "--config"};

	memset(a, 0, sizeof(*a));
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *val = NULL;
		size_t n = strcspn(arg, "=");
		int o = -1;

		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			usage(stdout);
			return -1;
		}
		if (strcmp(arg, "--json") == 0) {
			a->json = true;
			continue;
		}
		for (int k = 0; k < 6; k++)
			if (strlen(opts[k]) == n &&
			    strncmp(arg, opts[k], n) == 0)
				o = k;
		if (o < 0) {
			gs_cli_error(CMD,
			             "unknown option '%s' (see `gpuslice plan --help`)",
			             arg);
			return GS_EXIT_USAGE;
		}
		if (arg[n] == '=')
			val = arg + n + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		if (val == NULL) {
			gs_cli_error(CMD, "%s needs a value", opts[o]);
			return GS_EXIT_USAGE;
		}
		switch (o) {
		case 0:
			a->gpu = val;
			break;
		case 4:
			a->mig_parted = val;
			break;
		case 5:
			a->config = val;
			break;
		default: {
			const char **list = o == 1   ? a->in_use
			                    : o == 2 ? a->existing
			                             : a->demand;
			int *cnt = o == 1   ? &a->n_in_use
			           : o == 2 ? &a->n_existing
			                    : &a->n_demand;

			if (*cnt >= 8) {
				gs_cli_error(CMD, "%s given more than 8 times",
				             opts[o]);
				return GS_EXIT_USAGE;
			}
			list[(*cnt)++] = val;
		}
		}
	}
	return GS_EXIT_OK;
}

static bool created(const struct gs_mig_plan *p,
                    const struct gs_mig_instance *inst)
{
	for (int s = 0; s < p->n_steps; s++)
		if (p->steps[s].op == GS_MIG_CREATE &&
		    p->steps[s].profile == inst->profile &&
		    p->steps[s].start == inst->start)
			return true;
	return false;
}

static json_t *layout_json(const struct gs_mig_plan *p, bool with_state)
{
	json_t *arr = json_array();

	for (int i = 0; arr && i < p->n_layout; i++) {
		const struct gs_mig_instance *in = &p->layout[i];
		json_t *o = json_pack("{s:s, s:i, s:i}", "profile",
		                      in->profile->name, "start", in->start,
		                      "size", in->profile->memory_slices);

		if (o && with_state) {
			(void)json_object_set_new(o, "in_use",
			                          json_boolean(in->in_use));
			(void)json_object_set_new(o, "new",
			                          json_boolean(created(p, in)));
		}
		if (o == NULL || json_array_append_new(arr, o) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static int print_json(json_t *o)
{
	char *s;

	if (o == NULL)
		return gs_cli_fail(CMD, GS_ERR_NOMEM, NULL);
	s = json_dumps(o, JSON_INDENT(2));
	json_decref(o);
	if (s == NULL)
		return gs_cli_fail(CMD, GS_ERR_NOMEM, NULL);
	printf("%s\n", s);
	free(s);
	return GS_EXIT_OK;
}

static int plan_json(const struct gs_gpu_model *m, const struct gs_mig_plan *p)
{
	json_t *steps = json_array(), *unmet = json_object();
	json_t *layout = layout_json(p, true);

	for (int s = 0; steps && s < p->n_steps; s++)
		(void)json_array_append_new(
		    steps,
		    json_pack("{s:s, s:s, s:i}", "op",
		              p->steps[s].op == GS_MIG_CREATE ? "create"
		                                              : "destroy",
		              "profile", p->steps[s].profile->name, "start",
		              p->steps[s].start));
	for (int u = 0; unmet && u < p->n_unmet; u++)
		(void)json_object_set_new(unmet, p->unmet[u].profile->name,
		                          json_integer(p->unmet[u].count));
	if (!steps || !unmet || !layout) {
		json_decref(steps);
		json_decref(unmet);
		json_decref(layout);
		return gs_cli_fail(CMD, GS_ERR_NOMEM, NULL);
	}
	return print_json(json_pack(
	    "{s:s, s:o, s:o, s:o, s:i, s:i}", "gpu", m->name, "layout", layout,
	    "steps", steps, "unmet", unmet, "served_weight", p->served_weight,
	    "demand_weight", p->demand_weight));
}

static void plan_text(const struct gs_gpu_model *m, const struct gs_mig_plan *p)
{
	printf("layout on %s (memory slices 0-%d):\n", m->name,
	       m->memory_slices - 1);
	if (p->n_layout == 0)
		printf("  (no instances)\n");
	else
		printf("  %-14s %5s %5s  %s\n", "PROFILE", "START", "SIZE",
		       "STATE");
	for (int i = 0; i < p->n_layout; i++) {
		const struct gs_mig_instance *in = &p->layout[i];

		printf("  %-14s %5d %5d  %s\n", in->profile->name, in->start,
		       in->profile->memory_slices,
		       in->in_use       ? "in use"
		       : created(p, in) ? "new"
		                        : "idle, kept");
	}
	printf("steps:%s\n", p->n_steps ? "" : " none");
	for (int s = 0; s < p->n_steps; s++)
		printf("  %d. %s %s at slice %d\n", s + 1,
		       p->steps[s].op == GS_MIG_CREATE ? "create" : "destroy",
		       p->steps[s].profile->name, p->steps[s].start);
	printf("unmet demand:%s", p->n_unmet ? "" : " none");
	for (int u = 0; u < p->n_unmet; u++)
		printf("%s %s x%d", u ? "," : "", p->unmet[u].profile->name,
		       p->unmet[u].count);
	printf("\nserved: %d of %d memory slices of demand\n", p->served_weight,
	       p->demand_weight);
}

static int run_planner(const struct plan_args *a, const struct gs_gpu_model *m)
{
	struct gs_mig_instance cur[GS_MIGPLAN_MAX_INSTANCES + 1];
	struct gs_mig_demand d[GS_CATALOG_MAX_PROFILES * 2];
	struct gs_mig_plan plan;
	struct gs_errbuf eb = {0};
	int ncur = 0, nd = 0;
	gs_err err = GS_OK;

	for (int i = 0; err == GS_OK && i < a->n_in_use; i++)
		err = gs_migplan_parse_instances(m, a->in_use[i], true, cur,
		                                 GS_MIGPLAN_MAX_INSTANCES + 1,
		                                 &ncur, &eb);
	for (int i = 0; err == GS_OK && i < a->n_existing; i++)
		err = gs_migplan_parse_instances(m, a->existing[i], false, cur,
		                                 GS_MIGPLAN_MAX_INSTANCES + 1,
		                                 &ncur, &eb);
	for (int i = 0; err == GS_OK && i < a->n_demand; i++)
		err = gs_migplan_parse_demand(
		    m, a->demand[i], d, GS_CATALOG_MAX_PROFILES * 2, &nd, &eb);
	if (err == GS_OK)
		err = gs_migplan_solve(m, cur, ncur, d, nd, &plan, &eb);
	if (err != GS_OK)
		return gs_cli_fail(CMD, err, &eb);
	if (a->json)
		return plan_json(m, &plan);
	plan_text(m, &plan);
	return GS_EXIT_OK;
}

/* Reads a whole file of at most `cap` bytes. OUT: *buf (caller frees). */
static gs_err read_file(const char *path, size_t cap, char **buf, size_t *len,
                        struct gs_errbuf *eb)
{
	FILE *f = fopen(path, "rb");
	char *b;
	size_t n;
	int e;

	if (f == NULL) {
		e = errno;
		return gs_fail(eb, e == ENOENT ? GS_ERR_NOT_FOUND : GS_ERR_IO,
		               "cannot open %s: %s", path, strerror(e));
	}
	b = malloc(cap + 1);
	if (b == NULL) {
		fclose(f);
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	n = fread(b, 1, cap + 1, f);
	if (ferror(f)) {
		e = errno;
		fclose(f);
		free(b);
		return gs_fail(eb, GS_ERR_IO, "cannot read %s: %s", path,
		               strerror(e));
	}
	fclose(f);
	if (n > cap) {
		free(b);
		return gs_fail(eb, GS_ERR_RANGE, "%s is larger than %zu bytes",
		               path, cap);
	}
	*buf = b;
	*len = n;
	return GS_OK;
}

static json_t *devices_json(const struct gs_migparted_entry *e)
{
	json_t *arr;

	if (e->devices_all)
		return json_string("all");
	arr = json_array();
	for (int i = 0; arr && i < e->n_devices; i++)
		(void)json_array_append_new(arr, json_integer(e->devices[i]));
	return arr;
}

static void print_devices(const struct gs_migparted_entry *e)
{
	if (e->devices_all) {
		printf("devices all");
		return;
	}
	printf("devices [");
	for (int i = 0; i < e->n_devices; i++)
		printf("%s%d", i ? "," : "", e->devices[i]);
	printf("]");
}

static int run_migparted(const struct plan_args *a,
                         const struct gs_gpu_model *m)
{
	struct gs_migparted_resolved *res = NULL;
	struct gs_migparted *cfg = NULL;
	const struct gs_migparted_config *c;
	struct gs_errbuf eb = {0};
	char *text = NULL;
	size_t len = 0;
	int n = 0, rc;
	gs_err err;

	err =
	    read_file(a->mig_parted, GS_MIGPARTED_MAX_BYTES, &text, &len, &eb);
	if (err == GS_OK)
		err = gs_migparted_parse(text, len, &cfg, &eb);
	free(text);
	if (err != GS_OK) {
		gs_cli_error(CMD, "%s: %s", a->mig_parted,
		             gs_errbuf_msg(&eb, err));
		return gs_err_exit_code(err);
	}
	if (a->config == NULL) {
		char names[200];
		int k = 0;

		names[0] = '\0';
		for (int i = 0; i < cfg->n_configs && k < (int)sizeof(names);
		     i++)
			k += snprintf(names + k, sizeof(names) - (size_t)k,
			              "%s%s", i ? ", " : "",
			              cfg->configs[i].name);
		gs_cli_error(CMD,
		             "--mig-parted needs --config NAME (%s has: %s)",
		             a->mig_parted, names);
		gs_migparted_destroy(cfg);
		return GS_EXIT_USAGE;
	}
	c = gs_migparted_find(cfg, a->config);
	if (c == NULL) {
		gs_cli_error(CMD, "%s has no config '%s'", a->mig_parted,
		             a->config);
		gs_migparted_destroy(cfg);
		return GS_EXIT_NOT_FOUND;
	}
	res = calloc(GS_MIGPARTED_MAX_RESOLVED, sizeof(*res));
	if (res == NULL) {
		gs_migparted_destroy(cfg);
		return gs_cli_fail(CMD, GS_ERR_NOMEM, NULL);
	}
	err = gs_migparted_resolve(c, m, res, &n, &eb);
	if (err != GS_OK) {
		rc = gs_cli_fail(CMD, err, &eb);
		goto out;
	}
	if (a->json) {
		json_t *entries = json_array();

		for (int i = 0; entries && i < n; i++)
			(void)json_array_append_new(
			    entries,
			    json_pack("{s:i, s:i, s:o, s:b, s:o}", "entry",
			              res[i].index, "line", res[i].entry->line,
			              "devices", devices_json(res[i].entry),
			              "mig_enabled", res[i].mig_enabled,
			              "layout",
			              res[i].mig_enabled
			                  ? layout_json(&res[i].plan, false)
			                  : json_array()));
		rc = print_json(json_pack("{s:s, s:s, s:b, s:o}", "config",
		                          c->name, "gpu", m->name, "valid", 1,
		                          "entries", entries));
		goto out;
	}
	printf("config '%s' on %s: valid\n", c->name, m->name);
	for (int i = 0; i < n; i++) {
		const struct gs_mig_plan *p = &res[i].plan;

		printf("  entry %d (line %d, ", res[i].index,
		       res[i].entry->line);
		print_devices(res[i].entry);
		if (!res[i].mig_enabled) {
			printf("): MIG disabled\n");
			continue;
		}
		printf("): MIG enabled,");
		if (p->n_layout == 0)
			printf(" no instances");
		for (int k = 0; k < p->n_layout; k++)
			printf(" %s@%d", p->layout[k].profile->name,
			       p->layout[k].start);
		printf("\n");
	}
	rc = GS_EXIT_OK;
out:
	free(res);
	gs_migparted_destroy(cfg);
	return rc;
}

int gs_cli_plan(int argc, char **argv)
{
	struct plan_args a;
	const struct gs_gpu_model *m;
	int rc = parse_args(argc, argv, &a);

	if (rc < 0)
		return GS_EXIT_OK;
	if (rc != GS_EXIT_OK)
		return rc;
	if (a.gpu == NULL) {
		gs_cli_error(CMD, "needs --gpu MODEL (see `gpuslice plan --help`)");
		return GS_EXIT_USAGE;
	}
	m = gs_catalog_find(a.gpu);
	if (m == NULL) {
		char names[256];
		int k = 0;

		names[0] = '\0';
		for (int i = 0;
		     i < gs_catalog_count() && k < (int)sizeof(names); i++)
			k += snprintf(names + k, sizeof(names) - (size_t)k,
			              "%s%s", i ? ", " : "",
			              gs_catalog_get(i)->name);
		gs_cli_error(CMD,
		             "unknown GPU model '%s' (MIG-capable models: %s)",
		             a.gpu, names);
		return GS_EXIT_USAGE;
	}
	if (a.mig_parted) {
		if (a.n_in_use || a.n_existing || a.n_demand) {
			gs_cli_error(CMD,
			             "--mig-parted does not take --in-use, --existing or --demand");
			return GS_EXIT_USAGE;
		}
		return run_migparted(&a, m);
	}
	if (a.config) {
		gs_cli_error(CMD, "--config needs --mig-parted FILE");
		return GS_EXIT_USAGE;
	}
	return run_planner(&a, m);
}
