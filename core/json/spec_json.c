/*
 * spec_json.c - slice specs to and from JSON (see spec_json.h).
 *
 * Every value goes through the same text parsers as the key=value form
 * (gs_spec_set), so the two front doors cannot disagree; integers are
 * printed to text first. Works on a copy of the spec and writes it back
 * only when every key was accepted.
 */
#include "gs/spec_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define SPEC_JSON_MAX_TEXT (64 * 1024)

static gs_err set_from_value(struct gs_slice_spec *s, const char *key,
                             json_t *v, struct gs_errbuf *eb)
{
	char buf[64];
	const char *text;

	if (json_is_string(v)) {
		text = json_string_value(v);
	} else if (json_is_integer(v) &&
	           (strcmp(key, "memory") == 0 || strcmp(key, "compute") == 0 ||
	            strcmp(key, "weight") == 0 || strcmp(key, "gpu") == 0 ||
	            strcmp(key, "mig_start") == 0 ||
	            strcmp(key, "mig-start") == 0)) {
		json_int_t i = json_integer_value(v);

		if (i < 0)
			return gs_fail(eb, GS_ERR_RANGE,
			               "%s must not be negative, got %" JSON_INTEGER_FORMAT,
			               key, i);
		(void)snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, i);
		text = buf;
	} else {
		return gs_fail(
		    eb, GS_ERR_PARSE,
		    "key '%s' has the wrong JSON type (expected %s)", key,
		    (strcmp(key, "memory") == 0 ||
		     strcmp(key, "compute") == 0 ||
		     strcmp(key, "weight") == 0 || strcmp(key, "gpu") == 0 ||
	            strcmp(key, "mig_start") == 0 ||
	            strcmp(key, "mig-start") == 0)
		        ? "a string or an integer"
		        : "a string");
	}
	return gs_spec_set(s, key, text, eb);
}

gs_err gs_spec_from_json(struct gs_slice_spec *spec, const json_t *obj,
                         struct gs_errbuf *eb)
{
	struct gs_slice_spec s = *spec;
	const char *key;
	json_t *v;
	bool have_mem = false;
	uint64_t mem_bytes_key = 0;

	if (!json_is_object(obj))
		return gs_fail(eb, GS_ERR_PARSE,
		               "a slice spec must be a JSON object");
	json_object_foreach((json_t *)obj, key, v)
	{
		gs_err err;

		if (json_is_null(v))
			continue;
		if (strcmp(key, "memory_bytes") == 0) {
			if (!json_is_integer(v) || json_integer_value(v) <= 0)
				return gs_fail(
				    eb, GS_ERR_PARSE,
				    "memory_bytes must be a positive integer");
			mem_bytes_key = (uint64_t)json_integer_value(v);
			continue;
		}
		err = set_from_value(&s, key, v, eb);
		if (err != GS_OK)
			return err;
		if (strcmp(key, "memory") == 0)
			have_mem = true;
	}
	if (mem_bytes_key) {
		if (have_mem && s.memory_bytes != mem_bytes_key)
			return gs_fail(eb, GS_ERR_INVALID,
			               "memory and memory_bytes disagree");
		s.memory_bytes = mem_bytes_key;
	}
	*spec = s;
	return GS_OK;
}

gs_err gs_spec_from_json_text(struct gs_slice_spec *spec, const char *text,
                              size_t len, struct gs_errbuf *eb)
{
	json_error_t jerr;
	json_t *root;
	gs_err err;

	if (len > SPEC_JSON_MAX_TEXT)
		return gs_fail(eb, GS_ERR_RANGE,
		               "slice spec JSON is larger than %d bytes",
		               SPEC_JSON_MAX_TEXT);
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL)
		return gs_fail(eb, GS_ERR_PARSE,
		               "slice spec JSON: %s (line %d)", jerr.text,
		               jerr.line);
	err = gs_spec_from_json(spec, root, eb);
	json_decref(root);
	return err;
}

json_t *gs_spec_to_json(const struct gs_slice_spec *spec)
{
	char mem[32], gpu[GS_SPEC_UUID_MAX];
	json_t *o;

	(void)gs_format_memory(spec->memory_bytes, mem, sizeof(mem));
	(void)gs_format_gpu_selector(&spec->gpu, gpu, sizeof(gpu));
	o = json_pack(
	    "{s:o, s:o, s:o, s:o, s:s, s:i, s:s, s:o, s:s, s:o}", "name",
	    spec->name[0] ? json_string(spec->name) : json_null(), "memory",
	    spec->memory_bytes ? json_string(mem) : json_null(), "memory_bytes",
	    spec->memory_bytes ? json_integer((json_int_t)spec->memory_bytes)
	                       : json_null(),
	    "compute",
	    spec->compute_pct ? json_integer(spec->compute_pct) : json_null(),
	    "priority", gs_priority_name(spec->priority), "weight",
	    spec->weight, "mode", gs_mode_name(spec->mode), "mig-profile",
	    spec->mig_profile[0] ? json_string(spec->mig_profile) : json_null(),
	    "isolation", gs_isolation_name(spec->isolation), "gpu",
	    spec->gpu.kind == GS_GPU_INDEX ? json_integer(spec->gpu.index)
	                                   : json_string(gpu));
	if (o != NULL &&
	    json_object_set_new(o, "compute_mode",
	                        json_string(spec->compute_mode ==
	                                            GS_COMPUTE_SHARE
	                                        ? "share"
	                                        : "strict")) != 0) {
		json_decref(o);
		return NULL;
	}
	if (o != NULL &&
	    json_object_set_new(o, "swap",
	                        json_string(gs_swap_mode_name(spec->swap))) != 0) {
		json_decref(o);
		return NULL;
	}
	if (o != NULL && spec->has_mig_start &&
	    json_object_set_new(o, "mig_start",
	                        json_integer(spec->mig_start)) != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}
