/*
 * sliceconfig.c - strict decoding of the gpuslice.io/v1alpha1 SliceConfig
 * (sliceconfig.h). Every field is checked for type and range before any of
 * them is applied, so a bad config leaves the caller's value untouched.
 */
#include "sliceconfig.h"

#include <string.h>

void gs_kslicecfg_init(struct gs_kslicecfg *c)
{
	c->priority = GS_PRIORITY_NORMAL;
	c->weight = 1;
	c->compute_mode = GS_KCOMPUTE_STRICT;
	c->isolation = GS_ISOLATION_NONE;
	c->mps = false;
	c->swap = GS_SWAP_ALLOW;
}

static gs_err want_string(const json_t *v, const char *where, const char *key,
                          const char **out, struct gs_errbuf *eb)
{
	if (!json_is_string(v))
		return gs_fail(eb, GS_ERR_INVALID,
		               "%s: SliceConfig field '%s' must be a string",
		               where, key);
	*out = json_string_value(v);
	return GS_OK;
}

gs_err gs_kslicecfg_apply(struct gs_kslicecfg *c, const json_t *params,
                          const char *where, struct gs_errbuf *eb)
{
	struct gs_kslicecfg n = *c;
	const char *key, *s = NULL;
	json_t *v;
	gs_err err;

	if (!json_is_object(params))
		return gs_fail(
		    eb, GS_ERR_INVALID,
		    "%s: parameters must be an object (a SliceConfig)", where);
	v = json_object_get(params, "apiVersion");
	if (v == NULL)
		return gs_fail(
		    eb, GS_ERR_INVALID,
		    "%s: SliceConfig field 'apiVersion' is missing (want %s)",
		    where, GS_KSLICECFG_API_VERSION);
	if (!json_is_string(v) ||
	    strcmp(json_string_value(v), GS_KSLICECFG_API_VERSION) != 0)
		return gs_fail(eb, GS_ERR_INVALID,
		               "%s: SliceConfig field 'apiVersion' must be %s",
		               where, GS_KSLICECFG_API_VERSION);
	v = json_object_get(params, "kind");
	if (!json_is_string(v) ||
	    strcmp(json_string_value(v), GS_KSLICECFG_KIND) != 0)
		return gs_fail(eb, GS_ERR_INVALID,
		               "%s: field 'kind' must be %s", where,
		               GS_KSLICECFG_KIND);

	json_object_foreach((json_t *)params, key, v)
	{
		if (strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0)
			continue;
		if (strcmp(key, "priority") == 0) {
			if ((err = want_string(v, where, key, &s, eb)) != GS_OK)
				return err;
			if (gs_parse_priority(s, &n.priority, NULL) != GS_OK)
				return gs_fail(
				    eb, GS_ERR_INVALID,
				    "%s: SliceConfig field 'priority' must be high, normal or low, got '%s'",
				    where, s);
		} else if (strcmp(key, "weight") == 0) {
			if (!json_is_integer(v) || json_integer_value(v) < 1 ||
			    json_integer_value(v) > GS_SPEC_WEIGHT_MAX)
				return gs_fail(eb, GS_ERR_INVALID,
				               "%s: SliceConfig field 'weight' must be an integer 1..%d",
				               where, GS_SPEC_WEIGHT_MAX);
			n.weight = (int)json_integer_value(v);
		} else if (strcmp(key, "computeMode") == 0) {
			if ((err = want_string(v, where, key, &s, eb)) != GS_OK)
				return err;
			if (strcmp(s, "strict") == 0)
				n.compute_mode = GS_KCOMPUTE_STRICT;
			else if (strcmp(s, "share") == 0)
				n.compute_mode = GS_KCOMPUTE_SHARE;
			else
				return gs_fail(
				    eb, GS_ERR_INVALID,
				    "%s: SliceConfig field 'computeMode' must be strict or share, got '%s'",
				    where, s);
		} else if (strcmp(key, "isolation") == 0) {
			if ((err = want_string(v, where, key, &s, eb)) != GS_OK)
				return err;
			if (gs_parse_isolation(s, &n.isolation, NULL) != GS_OK)
				return gs_fail(
				    eb, GS_ERR_INVALID,
				    "%s: SliceConfig field 'isolation' must be none, memory, hard or exclusive, got '%s'",
				    where, s);
		} else if (strcmp(key, "mode") == 0) {
			if ((err = want_string(v, where, key, &s, eb)) != GS_OK)
				return err;
			if (strcmp(s, "timeslice") == 0)
				n.mps = false;
			else if (strcmp(s, "mps") == 0)
				n.mps = true;
			else
				return gs_fail(
				    eb, GS_ERR_INVALID,
				    "%s: SliceConfig field 'mode' must be timeslice or mps, got '%s'",
				    where, s);
		} else if (strcmp(key, "swap") == 0) {
			if ((err = want_string(v, where, key, &s, eb)) != GS_OK)
				return err;
			if (strcmp(s, "allow") == 0)
				n.swap = GS_SWAP_ALLOW;
			else if (strcmp(s, "never") == 0)
				n.swap = GS_SWAP_NEVER;
			else
				return gs_fail(
				    eb, GS_ERR_INVALID,
				    "%s: SliceConfig field 'swap' must be allow or never, got '%s'",
				    where, s);
		} else {
			return gs_fail(
			    eb, GS_ERR_INVALID,
			    "%s: SliceConfig has an unknown field '%s' (known: priority, weight, computeMode, isolation, mode, swap)",
			    where, key);
		}
	}
	*c = n;
	return GS_OK;
}
