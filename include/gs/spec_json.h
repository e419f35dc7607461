/*
 * spec_json.h - slice specs to and from JSON (jansson).
 *
 * Kept out of core/spec.c so the pure core needs no library; built as
 * gs_core_json. The JSON object uses the same keys and values as the
 * key=value form (spec.h), with two conveniences: "memory" may also be an
 * integer number of bytes, "compute" and "weight" may be integers, "gpu"
 * may be an integer index. "mig_profile" is accepted for "mig-profile".
 * Unknown keys and wrong JSON types are errors (GS_ERR_INVALID /
 * GS_ERR_PARSE) naming the key.
 */
#ifndef GS_SPEC_JSON_H
#define GS_SPEC_JSON_H

#include <jansson.h>

#include "gs/spec.h"

/*
 * Reads `obj` (a JSON object) over the spec's current values: keys present
 * overwrite, keys absent keep what the caller set (call gs_spec_init first
 * for defaults). On error the spec is unchanged. Does not validate the
 * whole; call gs_spec_validate.
 */
gs_err gs_spec_from_json(struct gs_slice_spec *spec, const json_t *obj,
                         struct gs_errbuf *eb);

/* Parses JSON text (at most 64 KiB) and applies it as above. */
gs_err gs_spec_from_json_text(struct gs_slice_spec *spec, const char *text,
                              size_t len, struct gs_errbuf *eb);

/*
 * A new JSON object for the spec in canonical form: every field, unset ones
 * as null (memory/compute/name/mig-profile) or "any" (gpu); "memory" as the
 * canonical string plus "memory_bytes" as an integer. The caller owns the
 * result (json_decref). NULL when out of memory.
 */
json_t *gs_spec_to_json(const struct gs_slice_spec *spec);

#endif
