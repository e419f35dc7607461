/*
 * slicecmp.c - semantic comparison of a wanted and a stored ResourceSlice
 * spec (slicecmp.h). Quantities go through quantity.h, exactly: "1Mi" and
 * "1048576" are the same, "1Mi" and "1M" are not.
 */
#include "slicecmp.h"

#include <stdio.h>
#include <string.h>

#include "quantity.h"

/* Fields the API server sets itself when the writer leaves them out. */
static bool server_set(const char *key)
{
	return strcmp(key, "timeAdded") == 0;
}

static bool is_default(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_NULL:
	case JSON_FALSE:
		return true;
	case JSON_INTEGER:
		return json_integer_value(v) == 0;
	case JSON_STRING:
		return json_string_length(v) == 0;
	case JSON_ARRAY:
		return json_array_size(v) == 0;
	case JSON_OBJECT:
		return json_object_size(v) == 0;
	default:
		return false;
	}
}

/* Both quantities, and equal in value (compared in milli-units, which is
 * the finest a slice uses; a value that does not fit is compared as text). */
static bool same_quantity(const char *a, const char *b)
{
	struct gs_kquantity qa, qb;
	int64_t va, vb;

	if (gs_kquantity_parse(a, &qa, NULL) != GS_OK ||
	    gs_kquantity_parse(b, &qb, NULL) != GS_OK)
		return false;
	if (!gs_kquantity_is_whole(&qa, 1000) ||
	    !gs_kquantity_is_whole(&qb, 1000))
		return false;
	if (gs_kquantity_scaled(&qa, 1000, &va, NULL) != GS_OK ||
	    gs_kquantity_scaled(&qb, 1000, &vb, NULL) != GS_OK)
		return false;
	return va == vb;
}

static void set_where(char *where, size_t len, const char *path)
{
	if (where && len)
		snprintf(where, len, "%s", path[0] ? path : "(root)");
}

static bool same(const json_t *want, const json_t *have, char *path,
                 size_t plen, char *where, size_t wlen)
{
	size_t base = strlen(path);
	bool ok = true;

	if (json_is_object(want) && json_is_object(have)) {
		const char *k;
		json_t *v;
		json_object_foreach((json_t *)want, k, v)
		{
			snprintf(path + base, plen - base, "%s%s",
			         base ? "." : "", k);
			json_t *h = json_object_get(have, k);
			if (h == NULL) {
				ok = is_default(v);
				if (!ok)
					set_where(where, wlen, path);
			} else {
				ok = same(v, h, path, plen, where, wlen);
			}
			path[base] = '\0';
			if (!ok)
				return false;
		}
		json_object_foreach((json_t *)have, k, v)
		{
			if (json_object_get(want, k) || server_set(k) ||
			    is_default(v))
				continue;
			snprintf(path + base, plen - base, "%s%s",
			         base ? "." : "", k);
			set_where(where, wlen, path);
			path[base] = '\0';
			return false;
		}
		return true;
	}
	if (json_is_array(want) && json_is_array(have)) {
		size_t i;
		json_t *v;
		if (json_array_size(want) != json_array_size(have)) {
			set_where(where, wlen, path);
			return false;
		}
		json_array_foreach((json_t *)want, i, v)
		{
			snprintf(path + base, plen - base, "[%zu]", i);
			ok = same(v, json_array_get(have, i), path, plen, where,
			          wlen);
			path[base] = '\0';
			if (!ok)
				return false;
		}
		return true;
	}
	if (json_is_string(want) && json_is_string(have)) {
		const char *a = json_string_value(want);
		const char *b = json_string_value(have);
		ok = strcmp(a, b) == 0 || same_quantity(a, b);
	} else {
		ok = json_equal((json_t *)want, (json_t *)have);
	}
	if (!ok)
		set_where(where, wlen, path);
	return ok;
}

bool gs_kslice_same(const json_t *want, const json_t *have, char *where,
                    size_t where_len)
{
	char path[512] = "";

	if (where && where_len)
		where[0] = '\0';
	if (want == NULL || have == NULL) {
		set_where(where, where_len, "");
		return want == have;
	}
	return same(want, have, path, sizeof(path), where, where_len);
}
