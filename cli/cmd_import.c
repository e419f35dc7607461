/*
 * cmd_import.c - `gpuslice import`: what an NVIDIA k8s device-plugin
 * config or a DRA GpuConfig/ResourceClaim would be in gpuslice.
 *
 *   gpuslice import device-plugin FILE [--gpu MODEL] [--gpus N] [--json|--k8s]
 *   gpuslice import dra FILE [--json|--k8s]
 *
 * Reading is here (the file, then YAML through gs/yamldoc.h, libyaml);
 * the translation is core's (import.h). Nothing talks to the daemon: the
 * output is the slices gpuslice would create, to be created with
 * `gpuslice create` or written into a config. Errors name FILE:LINE.
 * Device-plugin configs are also read out of the ConfigMaps and Helm
 * values that carry them (dp_embedding), each parsed with its block
 * scalar's line as line 0 so messages name the file's own lines.
 */
#include "cli.h"

#include "gs/catalog.h"
#include "gs/import.h"
#include "gs/k8s_claim.h"
#include "gs/spec.h"
#include "gs/spec_json.h"
#include "gs/yamldoc.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "import"

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: gpuslice import device-plugin FILE [--gpu MODEL] [--gpus N] [--json|--k8s]\n"
	        "       gpuslice import dra FILE [--json|--k8s]\n"
	        "\n"
	        "Translates an NVIDIA Kubernetes sharing config into the slices gpuslice\n"
	        "would create, and says what gpuslice does that the config cannot.\n"
	        "\n"
	        "device-plugin  the k8s-device-plugin config file (version v1; every YAML\n"
	        "               document in FILE is one config), or configs embedded in a\n"
	        "               ConfigMap (data.<name>), the plugin chart's values\n"
	        "               (config.map.<name>) or the GPU operator's values\n"
	        "               (devicePlugin.config.data.<name>): sharing.timeSlicing and\n"
	        "               sharing.mps resources, with the plugin's replica arithmetic\n"
	        "               (MPS: 100/replicas %% of the threads, memory/replicas pinned)\n"
	        "dra            DRA driver GpuConfigs / MigDeviceConfigs, alone or inside\n"
	        "               ResourceClaims / ResourceClaimTemplates (requests, configs,\n"
	        "               CEL selectors, matchAttribute: gpu.nvidia.com/parentUUID);\n"
	        "               the file's Pods say how many clients share a claim\n"
	        "\n"
	        "options:\n"
	        "  --gpu MODEL    the node's GPU model, for memory sizes (H100, A100-40GB, ...)\n"
	        "  --gpus N       GPUs per node, for slice counts\n"
	        "  --json         machine-readable output\n"
	        "  --k8s          print the gpuslice.io DRA objects instead (a v1 List, JSON,\n"
	        "                 for kubectl apply -f -) meaning what the input meant:\n"
	        "                 device-plugin: a ResourceClaimTemplate per shared resource\n"
	        "                 asking for 1/replicas of a GPU as capacity (needs --gpu);\n"
	        "                 dra: every claim and template of FILE with its name and\n"
	        "                 namespace (a ResourceClaim stays shared). What a\n"
	        "                 gpuslice.io claim cannot carry fails with FILE:LINE: FIELD\n"
	        "  -h, --help     this text\n"
	        "\n"
	        "exit status: 0 translated, 2 bad arguments or a config the tool would refuse\n"
	        "(unknown field, bad value; the message names FILE:LINE), 3 nothing to import,\n"
	        "1 the file cannot be read.\n");
}

static gs_err read_file(const char *path, char **buf, size_t *len,
                        struct gs_errbuf *eb)
{
	FILE *f = fopen(path, "rb");
	size_t n = 0, cap = GS_YAMLDOC_MAX_BYTES + 1;
	char *b;
	int saved;

	if (f == NULL) {
		saved = errno;
		return gs_fail(eb,
		               saved == ENOENT ? GS_ERR_NOT_FOUND : GS_ERR_IO,
		               "%s: %s", path, strerror(saved));
	}
	b = malloc(cap);
	if (b == NULL) {
		fclose(f);
		return gs_fail(eb, GS_ERR_NOMEM, "%s: out of memory", path);
	}
	n = fread(b, 1, cap, f);
	saved = errno;
	if (ferror(f)) {
		fclose(f);
		free(b);
		return gs_fail(eb, GS_ERR_IO, "%s: %s", path, strerror(saved));
	}
	fclose(f);
	if (n >= cap) {
		free(b);
		return gs_fail(eb, GS_ERR_RANGE, "%s: larger than %d bytes",
		               path, GS_YAMLDOC_MAX_BYTES);
	}
	*buf = b;
	*len = n;
	return GS_OK;
}

static gs_err load(const char *path, struct gs_doc **doc, struct gs_errbuf *eb)
{
	char *buf = NULL;
	size_t len = 0;
	gs_err err = read_file(path, &buf, &len, eb);

	if (err != GS_OK)
		return err;
	err = gs_yamldoc_parse(buf, len, path, doc, eb);
	free(buf);
	return err;
}

static json_t *notes_json(const struct gs_import_notes *n)
{
	json_t *a = json_array();

	for (int i = 0; a != NULL && i < n->n; i++)
		json_array_append_new(a, json_string(n->text[i]));
	return a;
}

static int print_json(json_t *root)
{
	char *s;

	if (root == NULL) {
		gs_cli_error(CMD, "out of memory");
		return GS_EXIT_FAILURE;
	}
	s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (s == NULL) {
		gs_cli_error(CMD, "out of memory");
		return GS_EXIT_FAILURE;
	}
	printf("%s\n", s);
	free(s);
	return GS_EXIT_OK;
}

/* ---- device plugin ----------------------------------------------------------
 */

static json_t *dp_json(const char *file, const struct gs_dp_import *im)
{
	json_t *root = json_object(), *cfgs = json_array();

	json_object_set_new(root, "file", json_string(file));
	for (int i = 0; i < im->n_configs; i++) {
		const struct gs_dp_config *c = &im->config[i];
		json_t *o = json_object(), *res = json_array();

		json_object_set_new(o, "line", json_integer(c->line));
		if (c->source[0])
			json_object_set_new(o, "name", json_string(c->source));
		json_object_set_new(
		    o, "strategy",
		    json_string(gs_dp_strategy_name(c->strategy)));
		json_object_set_new(o, "migStrategy",
		                    json_string(c->mig_strategy));
		json_object_set_new(o, "renameByDefault",
		                    json_boolean(c->rename_by_default));
		json_object_set_new(
		    o, "failRequestsGreaterThanOne",
		    json_boolean(c->fail_requests_greater_than_one));
		for (int r = 0; r < c->n_resources; r++) {
			const struct gs_dp_resource *x = &c->res[r];
			json_t *e = json_object();
			char spec[GS_SPEC_FORMAT_MAX];

			gs_spec_format(&x->slice, spec, sizeof(spec));
			json_object_set_new(e, "name", json_string(x->name));
			json_object_set_new(e, "configured",
			                    json_string(x->configured));
			json_object_set_new(e, "line", json_integer(x->line));
			json_object_set_new(e, "replicas",
			                    json_integer(x->replicas));
			json_object_set_new(e, "mig", json_boolean(x->mig));
			json_object_set_new(e, "spec", json_string(spec));
			json_object_set_new(e, "slice",
			                    gs_spec_to_json(&x->slice));
			json_object_set_new(e, "total", json_integer(x->total));
			json_array_append_new(res, e);
		}
		json_object_set_new(o, "resources", res);
		json_object_set_new(o, "notes", notes_json(&c->notes));
		json_array_append_new(cfgs, o);
	}
	json_object_set_new(root, "configs", cfgs);
	return root;
}

static void dp_print(const struct gs_dp_import *im,
                     const struct gs_import_opts *opts)
{
	for (int i = 0; i < im->n_configs; i++) {
		const struct gs_dp_config *c = &im->config[i];

		printf("config %d%s%s%s (line %d): %s, migStrategy %s", i + 1,
		       c->source[0] ? " '" : "", c->source,
		       c->source[0] ? "'" : "", c->line,
		       c->strategy == GS_DP_NONE
		           ? "no sharing"
		           : gs_dp_strategy_name(c->strategy),
		       c->mig_strategy);
		if (c->strategy != GS_DP_NONE)
			printf(", requests for more than one replica %s",
			       c->fail_requests_greater_than_one ? "fail"
			                                         : "allowed");
		printf("\n");
		for (int r = 0; r < c->n_resources; r++) {
			const struct gs_dp_resource *x = &c->res[r];
			char spec[GS_SPEC_FORMAT_MAX];

			gs_spec_format(&x->slice, spec, sizeof(spec));
			printf("  %s", x->name);
			if (strcmp(x->name, x->configured) != 0)
				printf(" (from %s)", x->configured);
			printf(": %d replicas per %s\n", x->replicas,
			       x->mig ? "MIG device" : "GPU");
			if (c->strategy == GS_DP_MPS) {
				printf("    the plugin: %d%% of the threads (100/%d), ",
				       x->slice.compute_pct, x->replicas);
				if (x->slice.memory_bytes)
					printf(
					    "%llu MiB pinned (%llu/%d)\n",
					    (unsigned long long)(x->slice
					                             .memory_bytes >>
					                         20),
					    (unsigned long long)
					        opts->gpu->memory_mib,
					    x->replicas);
				else
					printf("total memory / %d pinned (give --gpu for the figure)\n",
					       x->replicas);
			} else {
				printf("    the plugin: the same device %d times, no memory or compute limit\n",
				       x->replicas);
			}
			printf("    gpuslice: gpuslice create %s", spec);
			if (x->total)
				printf("   (x%d: %d per GPU on %d GPUs)",
				       x->total, x->replicas, opts->gpus);
			else
				printf("   (x%d per %s)", x->replicas,
				       x->mig ? "MIG device" : "GPU");
			printf("\n");
		}
		for (int n = 0; n < c->notes.n; n++)
			printf("  note: %s\n", c->notes.text[n]);
	}
}

/*
 * --k8s: per resource a ResourceClaimTemplate whose request asks for the
 * replica's share of a GPU as consumable capacity (compute 100/replicas,
 * memory total/replicas), so `replicas` pods fit on each GPU as they did
 * with the plugin. Time-slicing replicas had no compute limit: their
 * share is computeMode share (idle compute is used). A MIG device of
 * gpuslice's DRA driver belongs to one claim, and a DeviceClass mapping
 * an extended resource gives whole devices: neither can carry replicas,
 * so a shared MIG resource fails with FILE:LINE and the field, and
 * shared GPU resources get no extended-resource mapping (stderr says
 * which template the pods must name instead).
 */
/*
 * The template of resource x of config i: the resource's DNS label,
 * prefixed with the config's name (a ConfigMap or values key) or, when the
 * file holds several configs, "config<N>", so no two templates collide.
 * name holds 64 bytes.
 */
static void template_name(const struct gs_dp_import *im, int i,
                          const struct gs_dp_resource *x, char *name)
{
	const struct gs_dp_config *c = &im->config[i];
	char res[64], prefix[64];

	gs_k8s_dns_label(x->name, res, sizeof(res));
	if (c->source[0])
		gs_k8s_dns_label(c->source, prefix, sizeof(prefix));
	else if (im->n_configs > 1)
		snprintf(prefix, sizeof(prefix), "config%d", i + 1);
	else
		prefix[0] = '\0';
	if (prefix[0])
		snprintf(name, 64, "%.30s-%.32s", prefix, res);
	else
		snprintf(name, 64, "%s", res);
}

static int dp_k8s(const char *file, const struct gs_dp_import *im,
                  const struct gs_import_opts *opts)
{
	json_t *items = json_array();

	for (int i = 0; i < im->n_configs; i++) {
		const struct gs_dp_config *c = &im->config[i];
		const char *where = c->strategy == GS_DP_MPS
		                        ? "sharing.mps.resources"
		                        : "sharing.timeSlicing.resources";

		for (int r = 0; r < c->n_resources; r++) {
			const struct gs_dp_resource *x = &c->res[r];
			struct gs_slice_spec s = x->slice;
			char name[64];

			if (x->mig) {
				gs_cli_error(
				    CMD,
				    "%s:%d: %s[%d].replicas: %d replicas of MIG device %s cannot be expressed: a gpuslice MIG device belongs to one claim (use a whole-GPU resource, or mig+timeslice slices through gpusliced)",
				    file, x->line, where, r, x->replicas,
				    x->configured);
				json_decref(items);
				return GS_EXIT_USAGE;
			}
			if (opts->gpu == NULL || opts->gpu->memory_mib == 0) {
				gs_cli_error(
				    CMD,
				    "%s:%d: %s[%d].replicas: --k8s needs --gpu MODEL to turn %d replicas into a memory request per pod",
				    file, x->line, where, r, x->replicas);
				json_decref(items);
				return GS_EXIT_USAGE;
			}
			if (x->replicas > 100) {
				gs_cli_error(
				    CMD,
				    "%s:%d: %s[%d].replicas: %d replicas per GPU cannot be expressed: a gpuslice.io claim asks for compute in whole percent (at most 100 per GPU)",
				    file, x->line, where, r, x->replicas);
				json_decref(items);
				return GS_EXIT_USAGE;
			}
			s.memory_bytes = opts->gpu->memory_mib /
			                 (uint64_t)x->replicas * (1ULL << 20);
			s.compute_pct = 100 / x->replicas;
			if (c->strategy == GS_DP_TIME_SLICING)
				s.compute_mode = GS_COMPUTE_SHARE;
			template_name(im, i, x, name);
			json_array_append_new(
			    items, gs_k8s_claim_template(name, NULL, &s, 1));
			fprintf(
			    stderr,
			    "gpuslice %s: note: pods asking for %s must name the ResourceClaimTemplate %s (an extended resource maps to whole devices, not to %d replicas)\n",
			    CMD, x->name, name, x->replicas);
		}
	}
	for (int i = 0; i < im->n_configs; i++)
		for (int n = 0; n < im->config[i].notes.n; n++)
			fprintf(stderr, "gpuslice %s: note: %s: %s\n", CMD, file,
			        im->config[i].notes.text[n]);
	return print_json(gs_k8s_list(items));
}

/*
 * Where device-plugin configs sit in what people deploy, each a YAML
 * string under a name:
 *   a ConfigMap (kind: ConfigMap)       data.<name>  (the plugin's chart
 *                                       and the GPU operator create these)
 *   the plugin chart's values.yaml      config.map.<name>
 *   the GPU operator chart's values     devicePlugin.config.data.<name>
 * Returns the mapping of names to configs of root `r`, NULL for a plain
 * config file. OUT: *what, for messages.
 */
static const struct gs_doc_node *dp_embedding(const struct gs_doc_node *r,
                                              const char **what)
{
	const struct gs_doc_node *k, *m;

	if (r == NULL || r->kind != GS_DOC_MAP)
		return NULL;
	k = gs_doc_get(r, "kind");
	if (k != NULL && k->kind == GS_DOC_SCALAR &&
	    strcmp(k->value, "ConfigMap") == 0) {
		*what = "data";
		m = gs_doc_get(r, "data");
		return m != NULL && m->kind == GS_DOC_MAP ? m : r;
	}
	m = gs_doc_get(r, "config");
	if (m != NULL && m->kind == GS_DOC_MAP && gs_doc_get(m, "map")) {
		*what = "config.map";
		return gs_doc_get(m, "map");
	}
	m = gs_doc_get(r, "devicePlugin");
	m = m != NULL && m->kind == GS_DOC_MAP ? gs_doc_get(m, "config") : NULL;
	if (m != NULL && m->kind == GS_DOC_MAP && gs_doc_get(m, "data")) {
		*what = "devicePlugin.config.data";
		return gs_doc_get(m, "data");
	}
	return NULL;
}

/*
 * Imports every config embedded in `doc` (see dp_embedding) into *im, the
 * configs tagged with their names. Errors name the file's own lines: an
 * embedded text is read with its block scalar's line as line 0.
 * OUT: *found, whether doc held an embedding at all.
 */
static gs_err dp_import_embedded(const char *file, const struct gs_doc *doc,
                                 const struct gs_import_opts *opts,
                                 struct gs_dp_import *im, bool *found,
                                 struct gs_errbuf *eb)
{
	struct gs_dp_import *one = malloc(sizeof(*one));
	gs_err err = GS_OK;

	*found = false;
	memset(im, 0, sizeof(*im));
	if (one == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "%s: out of memory", file);
	for (int d = 0; d < gs_doc_count(doc) && err == GS_OK; d++) {
		const char *what = NULL;
		const struct gs_doc_node *m =
		    dp_embedding(gs_doc_root(doc, d), &what);

		if (m == NULL)
			continue;
		*found = true;
		if (m->kind != GS_DOC_MAP || m == gs_doc_root(doc, d)) {
			err = gs_fail(
			    eb, GS_ERR_PARSE,
			    "%s:%d: %s must be a mapping of names to configs",
			    file, m->line, what);
			break;
		}
		for (int i = 0; i < m->n && err == GS_OK; i++) {
			const struct gs_doc_node *v = gs_doc_value(m, i);
			const char *key = gs_doc_key(m, i)->value;
			struct gs_doc *inner = NULL;

			if (v->kind != GS_DOC_SCALAR) {
				err = gs_fail(
				    eb, GS_ERR_PARSE,
				    "%s:%d: %s.%s must be the config as a string (key: |)",
				    file, v->line, what, key);
				break;
			}
			err = gs_yamldoc_read_at(v->value, strlen(v->value),
			                         file, v->line, 0, &inner, eb);
			if (err == GS_OK && gs_doc_count(inner) == 0) {
				gs_doc_destroy(inner);
				continue; /* an empty config: the defaults */
			}
			if (err == GS_OK)
				err = gs_import_device_plugin(inner, opts, one,
				                              eb);
			gs_doc_destroy(inner);
			if (err == GS_OK && im->n_configs + one->n_configs >
			                        GS_IMPORT_MAX_CONFIGS)
				err = gs_fail(
				    eb, GS_ERR_RANGE,
				    "%s:%d: more than %d configs in one file",
				    file, v->line, GS_IMPORT_MAX_CONFIGS);
			for (int c = 0; err == GS_OK && c < one->n_configs;
			     c++) {
				struct gs_dp_config *to =
				    &im->config[im->n_configs++];

				*to = one->config[c];
				snprintf(to->source, sizeof(to->source), "%.*s",
				         GS_IMPORT_SOURCE_MAX - 1, key);
			}
		}
	}
	free(one);
	if (err == GS_OK && *found && im->n_configs == 0)
		err =
		    gs_fail(eb, GS_ERR_NOT_FOUND,
		            "%s: the ConfigMap or values hold no config", file);
	return err;
}

static int import_device_plugin(int argc, char **argv)
{
	struct gs_import_opts opts = {0};
	const char *file = NULL;
	struct gs_dp_import *im;
	struct gs_errbuf eb = {0};
	struct gs_doc *doc = NULL;
	bool json = false, k8s = false;
	gs_err err;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--k8s") == 0) {
			k8s = true;
		} else if (strcmp(argv[i], "--gpu") == 0 && i + 1 < argc) {
			opts.gpu = gs_catalog_find(argv[++i]);
			if (opts.gpu == NULL) {
				gs_cli_error(CMD, "unknown GPU model '%s'",
				             argv[i]);
				return GS_EXIT_USAGE;
			}
		} else if (strcmp(argv[i], "--gpus") == 0 && i + 1 < argc) {
			char *end;
			long n = strtol(argv[++i], &end, 10);

			if (*end != '\0' || n < 1 || n > 1024) {
				gs_cli_error(CMD,
				             "--gpus must be 1..1024, got '%s'",
				             argv[i]);
				return GS_EXIT_USAGE;
			}
			opts.gpus = (int)n;
		} else if (argv[i][0] == '-' || file != NULL) {
			gs_cli_error(CMD,
			             "unexpected argument '%s' (see --help)",
			             argv[i]);
			return GS_EXIT_USAGE;
		} else {
			file = argv[i];
		}
	}
	if (file == NULL) {
		gs_cli_error(CMD, "device-plugin needs a FILE (see --help)");
		return GS_EXIT_USAGE;
	}
	if (json && k8s) {
		gs_cli_error(CMD, "--json and --k8s exclude each other");
		return GS_EXIT_USAGE;
	}
	err = load(file, &doc, &eb);
	if (err != GS_OK)
		return gs_cli_fail(CMD, err, &eb);
	im = malloc(sizeof(*im));
	if (im == NULL) {
		gs_doc_destroy(doc);
		gs_cli_error(CMD, "out of memory");
		return GS_EXIT_FAILURE;
	}
	{
		bool embedded = false;

		err = dp_import_embedded(file, doc, &opts, im, &embedded, &eb);
		if (err == GS_OK && !embedded)
			err = gs_import_device_plugin(doc, &opts, im, &eb);
	}
	if (err != GS_OK) {
		rc = gs_cli_fail(CMD, err, &eb);
	} else if (k8s) {
		rc = dp_k8s(file, im, &opts);
	} else if (json) {
		rc = print_json(dp_json(file, im));
	} else {
		dp_print(im, &opts);
		rc = GS_EXIT_OK;
	}
	free(im);
	gs_doc_destroy(doc);
	return rc;
}

/* ---- DRA
 * ------------------------------------------------------------------------ */

static const char *place_kind(const struct gs_place_item *it)
{
	return it->kind == GS_PLACE_WHOLE ? "whole GPU" : it->mig_profile;
}

static json_t *dra_json(const char *file, const struct gs_dra_import *im)
{
	json_t *root = json_object(), *cfgs = json_array(),
	       *reqs = json_array();

	json_object_set_new(root, "file", json_string(file));
	json_object_set_new(root, "kind", json_string(im->kind));
	for (int i = 0; i < im->n_requests; i++) {
		const struct gs_dra_request *r = &im->request[i];
		json_t *o = json_object();

		json_object_set_new(o, "name", json_string(r->name));
		json_object_set_new(o, "line", json_integer(r->line));
		json_object_set_new(
		    o, "class",
		    json_string(r->mig ? "mig.nvidia.com" : "gpu.nvidia.com"));
		json_object_set_new(o, "profile",
		                    r->profile[0] ? json_string(r->profile)
		                                  : json_null());
		json_object_set_new(o, "count",
		                    r->all ? json_string("All")
		                           : json_integer(r->count));
		json_array_append_new(reqs, o);
	}
	json_object_set_new(root, "requests", reqs);
	json_object_set_new(root, "sameParent", json_boolean(im->same_parent));
	for (int i = 0; i < im->n_configs; i++) {
		const struct gs_dra_config *c = &im->config[i];
		json_t *o = json_object(), *lim = json_object(),
		       *ap = json_array();
		char spec[GS_SPEC_FORMAT_MAX];

		gs_spec_format(&c->slice, spec, sizeof(spec));
		json_object_set_new(o, "line", json_integer(c->line));
		json_object_set_new(
		    o, "kind",
		    json_string(c->mig ? "MigDeviceConfig" : "GpuConfig"));
		json_object_set_new(
		    o, "strategy",
		    json_string(gs_dra_strategy_name(c->strategy)));
		if (c->strategy == GS_DRA_TIME_SLICING && !c->mig)
			json_object_set_new(o, "timeSliceLevel",
			                    json_integer(c->interval));
		if (c->thread_pct >= 0)
			json_object_set_new(o, "activeThreadPercentage",
			                    json_integer(c->thread_pct));
		if (c->pinned_mib > 0)
			json_object_set_new(o, "pinnedMemoryMiB",
			                    json_integer(c->pinned_mib));
		for (int l = 0; l < c->n_limits; l++)
			json_object_set_new(lim, c->limit[l].device,
			                    json_integer(c->limit[l].mib));
		json_object_set_new(o, "perDevicePinnedMemoryMiB", lim);
		for (int a = 0; a < c->n_applies; a++)
			json_array_append_new(ap, json_string(c->applies[a]));
		json_object_set_new(o, "requests", ap);
		json_object_set_new(o, "spec", json_string(spec));
		json_object_set_new(o, "slice", gs_spec_to_json(&c->slice));
		json_array_append_new(cfgs, o);
	}
	json_object_set_new(root, "configs", cfgs);
	if (im->has_place) {
		json_t *pl = json_object(), *items = json_array();

		json_object_set_new(
		    pl, "gang",
		    json_string(gs_place_gang_name(im->place.gang)));
		for (int k = 0; k < im->place.n; k++)
			json_array_append_new(
			    items, json_string(place_kind(&im->place.item[k])));
		json_object_set_new(pl, "devices", items);
		json_object_set_new(root, "placement", pl);
	}
	json_object_set_new(root, "notes", notes_json(&im->notes));
	return root;
}

static void dra_print(const struct gs_dra_import *im)
{
	printf("%s\n", im->kind);
	for (int i = 0; i < im->n_requests; i++) {
		const struct gs_dra_request *r = &im->request[i];

		printf("  request %s (line %d): ", r->name, r->line);
		if (r->all)
			printf("all ");
		else
			printf("%d ", r->count);
		if (r->mig)
			printf("MIG device%s%s%s\n",
			       r->count > 1 || r->all ? "s" : "",
			       r->profile[0] ? " of profile "
			                     : " (any profile)",
			       r->profile);
		else
			printf("full GPU%s\n",
			       r->count > 1 || r->all ? "s" : "");
	}
	if (im->same_parent)
		printf("  constraint: %s on the same parent GPU (matchAttribute parentUUID)\n",
		       im->n_same_parent ? "named requests" : "all devices");
	for (int i = 0; i < im->n_configs; i++) {
		const struct gs_dra_config *c = &im->config[i];
		char spec[GS_SPEC_FORMAT_MAX];

		gs_spec_format(&c->slice, spec, sizeof(spec));
		printf("  %s (line %d): %s",
		       c->mig ? "MigDeviceConfig" : "GpuConfig", c->line,
		       gs_dra_strategy_name(c->strategy));
		if (!c->sharing_given)
			printf(" (the driver's default)");
		if (c->n_applies > 0) {
			printf(" for");
			for (int a = 0; a < c->n_applies; a++)
				printf(" %s", c->applies[a]);
		}
		printf("\n");
		if (c->strategy == GS_DRA_TIME_SLICING && !c->mig)
			printf("    the driver: time-slice interval %s (nvidia-smi compute-policy --set-timeslice %d on the GPU)\n",
			       gs_dra_interval_name(c->interval), c->interval);
		else if (c->strategy == GS_DRA_TIME_SLICING)
			printf("    the driver: default time-slicing inside the MIG device\n");
		if (c->strategy == GS_DRA_MPS) {
			printf("    the driver: one MPS daemon for the claim");
			if (c->thread_pct >= 0)
				printf(", %d%% of the threads", c->thread_pct);
			if (c->pinned_mib > 0)
				printf(", %dM pinned per device",
				       c->pinned_mib);
			for (int l = 0; l < c->n_limits; l++)
				printf(", %dM on %s", c->limit[l].mib,
				       c->limit[l].device);
			printf("\n");
		}
		printf("    gpuslice: each workload sharing the device: gpuslice create %s\n",
		       spec);
	}
	if (im->has_place) {
		printf("  placement: %s gang of",
		       gs_place_gang_name(im->place.gang));
		for (int k = 0; k < im->place.n; k++)
			printf("%s %s", k ? "," : "",
			       place_kind(&im->place.item[k]));
		printf("\n");
	}
	for (int n = 0; n < im->notes.n; n++)
		printf("  note: %s\n", im->notes.text[n]);
	printf("  gpuslice also gives each workload its own memory cap and compute share\n"
	       "  (unequal if wanted) and priorities, which one claim-wide default cannot.\n");
}

/*
 * --k8s: each GpuConfig, MigDeviceConfig, ResourceClaim and
 * ResourceClaimTemplate of the file as its gpuslice.io object: a
 * ResourceClaim stays a ResourceClaim (shared by the Pods that name it)
 * and a template a template, both with their names and namespaces, so
 * the file's Pods keep working; a lone GpuConfig becomes a template named
 * after the file. The request keeps its name, takes the slice of the
 * first config that applies to it; a MIG request stays MIG (its profile
 * as a selector, or any MIG device). What the object cannot carry (see
 * struct gs_import_block) fails with FILE:LINE and the field, and the
 * notes go to stderr: nothing is dropped silently.
 */
static json_t *dra_k8s_object(const char *file, const struct gs_dra_import *im)
{
	json_t *reqs = json_array(), *cfgs = json_array(), *t, *meta;
	char name[64];
	const char *base = strrchr(file, '/');
	bool tmpl = strcmp(im->kind, "ResourceClaim") != 0;

	gs_k8s_dns_label(im->name[0] ? im->name
	                 : base      ? base + 1
	                             : file,
	                 name, sizeof(name));
	if (im->name[0] && strlen(im->name) < sizeof(name))
		snprintf(name, sizeof(name), "%.*s", (int)sizeof(name) - 1,
		         im->name);
	for (int r = 0; r < im->n_requests || (r == 0 && im->n_requests == 0);
	     r++) {
		const struct gs_dra_request *q =
		    im->n_requests ? &im->request[r] : NULL;
		const char *rname = q ? q->name : "gpu";
		struct gs_slice_spec s;
		bool found = false;

		gs_spec_init(&s);
		for (int c = 0; c < im->n_configs && !found; c++) {
			const struct gs_dra_config *k = &im->config[c];

			for (int a = 0; a < k->n_applies && !found; a++)
				found = k->applies[a][0] == '\0' ||
				        strcmp(k->applies[a], rname) == 0;
			if (k->n_applies == 0)
				found = true;
			if (found)
				s = k->slice;
		}
		if (q != NULL && q->mig) {
			if (s.mode != GS_MODE_MIG_MPS)
				s.mode = GS_MODE_MIG;
			snprintf(s.mig_profile, sizeof(s.mig_profile), "%s",
			         q->profile);
		}
		{
			json_t *rq = gs_k8s_device_request(rname, &s, 1);
			json_t *ex = json_object_get(rq, "exactly");

			for (int k = 0; q != NULL && ex != NULL && k < q->n_cel;
			     k++) {
				json_t *sel = json_object_get(ex, "selectors");

				if (sel == NULL) {
					sel = json_array();
					json_object_set_new(ex, "selectors",
					                    sel);
				}
				json_array_append_new(
				    sel, json_pack("{s:{s:s}}", "cel",
				                   "expression", q->cel[k]));
			}
			json_array_append_new(reqs, rq);
		}
		json_array_append_new(
		    cfgs, json_pack("{s:[s], s:{s:s, s:o}}", "requests", rname,
		                    "opaque", "driver", GS_K8S_DRIVER,
		                    "parameters", gs_k8s_slice_config(&s)));
	}
	meta = json_pack("{s:s}", "name", name);
	if (meta != NULL && im->ns[0])
		json_object_set_new(meta, "namespace", json_string(im->ns));
	if (tmpl)
		t = json_pack("{s:s, s:s, s:o, s:{s:{s:{s:o, s:o}}}}",
		              "apiVersion", "resource.k8s.io/v1", "kind",
		              "ResourceClaimTemplate", "metadata", meta, "spec",
		              "spec", "devices", "requests", reqs, "config",
		              cfgs);
	else
		t = json_pack("{s:s, s:s, s:o, s:{s:{s:o, s:o}}}", "apiVersion",
		              "resource.k8s.io/v1", "kind", "ResourceClaim",
		              "metadata", meta, "spec", "devices", "requests",
		              reqs, "config", cfgs);
	/* matchAttribute gpu.nvidia.com/parentUUID: gpuslice devices (whole
	 * GPUs and MIG placements) carry their GPU's uuid. */
	if (t != NULL && im->same_parent) {
		json_t *on = json_array(), *c, *spec;

		for (int r = 0; r < im->n_same_parent; r++)
			json_array_append_new(
			    on, json_string(im->same_parent_of[r]));
		c = json_pack("{s:s}", "matchAttribute", GS_K8S_DRIVER "/uuid");
		if (json_array_size(on) > 0)
			json_object_set_new(c, "requests", on);
		else
			json_decref(on);
		spec = json_object_get(t, "spec");
		if (tmpl)
			spec = json_object_get(spec, "spec");
		json_object_set_new(json_object_get(spec, "devices"),
		                    "constraints", json_pack("[o]", c));
	}
	return t;
}

static int dra_k8s(const char *file, const struct gs_doc *doc,
                   struct gs_dra_import *im)
{
	json_t *items = json_array();
	struct gs_errbuf eb = {0};
	int cursor = 0;
	gs_err err;

	while ((err = gs_import_dra_next(doc, &cursor, im, &eb)) == GS_OK) {
		if (im->k8s.line != 0) {
			json_decref(items);
			gs_cli_error(CMD, "%s", im->k8s.msg);
			return GS_EXIT_USAGE;
		}
		for (int n = 0; n < im->notes.n; n++)
			fprintf(stderr, "gpuslice %s: note: %s: %s\n", CMD,
			        file, im->notes.text[n]);
		json_array_append_new(items, dra_k8s_object(file, im));
	}
	if (err != GS_ERR_NOT_FOUND) {
		json_decref(items);
		return gs_cli_fail(CMD, err, &eb);
	}
	return print_json(gs_k8s_list(items));
}

static int import_dra(int argc, char **argv)
{
	const char *file = NULL;
	struct gs_dra_import *im;
	struct gs_errbuf eb = {0};
	struct gs_doc *doc = NULL;
	bool json = false, k8s = false;
	gs_err err;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = true;
		} else if (strcmp(argv[i], "--k8s") == 0) {
			k8s = true;
		} else if (argv[i][0] == '-' || file != NULL) {
			gs_cli_error(CMD,
			             "unexpected argument '%s' (see --help)",
			             argv[i]);
			return GS_EXIT_USAGE;
		} else {
			file = argv[i];
		}
	}
	if (file == NULL) {
		gs_cli_error(CMD, "dra needs a FILE (see --help)");
		return GS_EXIT_USAGE;
	}
	if (json && k8s) {
		gs_cli_error(CMD, "--json and --k8s exclude each other");
		return GS_EXIT_USAGE;
	}
	err = load(file, &doc, &eb);
	if (err != GS_OK)
		return gs_cli_fail(CMD, err, &eb);
	im = malloc(sizeof(*im));
	if (im == NULL) {
		gs_doc_destroy(doc);
		gs_cli_error(CMD, "out of memory");
		return GS_EXIT_FAILURE;
	}
	err = gs_import_dra(doc, im, &eb);
	if (err != GS_OK) {
		rc = gs_cli_fail(CMD, err, &eb);
	} else if (k8s) {
		rc = dra_k8s(file, doc, im);
	} else if (json) {
		rc = print_json(dra_json(file, im));
	} else {
		dra_print(im);
		rc = GS_EXIT_OK;
	}
	free(im);
	gs_doc_destroy(doc);
	return rc;
}

int gs_cli_import(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return GS_EXIT_USAGE;
	}
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 ||
		    strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return GS_EXIT_OK;
		}
	if (strcmp(argv[1], "device-plugin") == 0)
		return import_device_plugin(argc - 1, argv + 1);
	if (strcmp(argv[1], "dra") == 0)
		return import_dra(argc - 1, argv + 1);
	gs_cli_error(CMD, "unknown format '%s' (device-plugin or dra)",
	             argv[1]);
	return GS_EXIT_USAGE;
}
