/*
 * slice.c - names for the slice record's enums and the name rule shared by
 * slices and teams, slice labels' rules and JSON form, and a slice's MPS
 * active thread percentage and SM share (see slice.h).
 */
#include "slice.h"

#include <stdlib.h>
#include <string.h>

const char *gs_slice_state_name(int state)
{
	switch (state) {
	case GS_SLICE_READY:
		return "ready";
	case GS_SLICE_FLAGGED:
		return "flagged";
	case GS_SLICE_FAULTED:
		return "faulted";
	case GS_SLICE_PENDING:
		return "pending";
	case GS_SLICE_FAILED:
		return "failed";
	case GS_SLICE_PARKED:
		return "parked";
	}
	return "unknown";
}

int gs_slice_mps_atp(const struct gs_slice *s)
{
	if (s->mode != GS_MODE_MPS && s->mode != GS_MODE_MIG_MPS)
		return 0;
	return s->spec.compute_pct > 0 ? s->spec.compute_pct : 0;
}

double gs_slice_sm_share(const struct gs_slice *s)
{
	int atp = gs_slice_mps_atp(s);

	return atp > 0 ? (double)atp / 100.0 : 1.0;
}

static bool name_char(char c, bool first)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return !first && (c == '.' || c == '_' || c == '-');
}

bool gs_name_is_valid(const char *s)
{
	size_t n = 0;

	if (s == NULL)
		return false;
	for (; s[n]; n++)
		if (n >= GS_NAME_MAX - 1 || !name_char(s[n], n == 0))
			return false;
	return n > 0;
}

/* Keys that gpuslice_slice_info already carries. */
static const char *const reserved_keys[] = {"gpu", "slice", "team", "mode",
                                            "priority", "state"};

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct gs_slice_label *)a)->key,
	              ((const struct gs_slice_label *)b)->key);
}

gs_err gs_slice_labels_from_json(const json_t *obj, struct gs_slice_label *out,
                                 int *n_out, struct gs_errbuf *eb)
{
	const char *key;
	json_t *v;
	int n = 0;

	*n_out = 0;
	if (obj == NULL || json_is_null(obj))
		return GS_OK;
	if (!json_is_object(obj))
		return gs_fail(eb, GS_ERR_INVALID,
		               "labels must be an object of strings");
	if (json_object_size(obj) > GS_SLICE_MAX_LABELS)
		return gs_fail(eb, GS_ERR_INVALID,
		               "labels: at most %d, got %zu",
		               GS_SLICE_MAX_LABELS, json_object_size(obj));
	json_object_foreach((json_t *)obj, key, v)
	{
		size_t klen = strlen(key), vlen;

		if (klen == 0 || klen >= GS_SLICE_LABEL_KEY_MAX ||
		    key[0] < 'a' || key[0] > 'z' ||
		    strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789_") != klen)
			return gs_fail(eb, GS_ERR_INVALID,
			               "labels: key '%.40s' must match [a-z][a-z0-9_]{0,31}",
			               key);
		for (size_t r = 0;
		     r < sizeof(reserved_keys) / sizeof(reserved_keys[0]); r++)
			if (strcmp(key, reserved_keys[r]) == 0)
				return gs_fail(eb, GS_ERR_INVALID,
				               "labels: key '%s' is reserved (gpuslice_slice_info has it)",
				               key);
		if (!json_is_string(v))
			return gs_fail(eb, GS_ERR_INVALID,
			               "labels.%s must be a string", key);
		vlen = strlen(json_string_value(v));
		if (vlen >= GS_SLICE_LABEL_VALUE_MAX ||
		    vlen != json_string_length(v))
			return gs_fail(eb, GS_ERR_INVALID,
			               "labels.%s must be at most %d bytes without NUL, got %zu",
			               key, GS_SLICE_LABEL_VALUE_MAX - 1,
			               json_string_length(v));
		memcpy(out[n].key, key, klen + 1);
		memcpy(out[n].value, json_string_value(v), vlen + 1);
		n++;
	}
	qsort(out, (size_t)n, sizeof(out[0]), label_cmp);
	*n_out = n;
	return GS_OK;
}

json_t *gs_slice_labels_to_json(const struct gs_slice_label *labels, int n)
{
	json_t *o = json_object();

	for (int i = 0; o && i < n; i++)
		if (json_object_set_new(o, labels[i].key,
		                        json_string(labels[i].value)) != 0) {
			json_decref(o);
			return NULL;
		}
	return o;
}
