/*
 * migparted.h - reading nvidia-mig-parted config files (format v1) and
 * checking one named config against a GPU model.
 *
 * The file shape and rules are mig-parted's (shared/reference/
 * mig-parted-config.md): `version: v1`, `mig-configs` mapping names to
 * lists of entries, each with `devices` (all | [indices]), `mig-enabled`,
 * `mig-devices` (profile -> count; required when enabled, empty or absent
 * when not) and an optional `device-filter` (0xDDDDVVVV[:0xSSSSssss], one
 * string or a list). Unknown keys anywhere are errors, as in mig-parted.
 *
 * The file may also be the GPU operator's wrapping of one: a ConfigMap
 * whose data."config.yaml" (or only key) holds the config as a string,
 * or the operator chart's values with migManager.config.data; messages
 * then name the wrapping file's lines.
 *
 * Parsing works on a buffer (the caller reads the file), through the one
 * YAML reader (gs/yamldoc.h); built as gs_core_yaml outside the pure core. Inputs are capped (size,
 * configs, entries, devices, filters, profiles) and every message names
 * the line.
 *
 * Ownership: gs_migparted_parse returns a struct the caller frees with
 * gs_migparted_destroy (NULL is fine). Nothing else allocates.
 */
#ifndef GS_MIGPARTED_H
#define GS_MIGPARTED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/catalog.h"
#include "gs/err.h"
#include "gs/migplan.h"

#define GS_MIGPARTED_MAX_BYTES   (1024 * 1024)
#define GS_MIGPARTED_MAX_CONFIGS 256
#define GS_MIGPARTED_MAX_ENTRIES 64
#define GS_MIGPARTED_MAX_DEVICES 64
#define GS_MIGPARTED_MAX_FILTERS 32
#define GS_MIGPARTED_MAX_MIGDEV  32
#define GS_MIGPARTED_NAME_MAX    128
#define GS_MIGPARTED_PROFILE_MAX 40

struct gs_migparted_filter {
	uint32_t id;        /* 0xDDDDVVVV */
	uint32_t subsystem; /* 0xSSSSssss, or 0 when not given */
	bool has_subsystem;
};

struct gs_migparted_migdev {
	char profile[GS_MIGPARTED_PROFILE_MAX]; /* as written, lowercased */
	int count;
	int line;
};

struct gs_migparted_entry {
	int line;
	bool devices_all;
	int n_devices;
	int devices[GS_MIGPARTED_MAX_DEVICES];
	bool mig_enabled;
	int n_filters;
	struct gs_migparted_filter filters[GS_MIGPARTED_MAX_FILTERS];
	int n_migdev;
	struct gs_migparted_migdev migdev[GS_MIGPARTED_MAX_MIGDEV];
};

struct gs_migparted_config {
	char name[GS_MIGPARTED_NAME_MAX];
	int line;
	int n_entries;
	struct gs_migparted_entry *entries; /* owned */
};

struct gs_migparted {
	int n_configs;
	struct gs_migparted_config *configs; /* owned */
};

/*
 * Parses `len` bytes of YAML (or JSON). OUT: *out, a new struct on
 * success, NULL on error. Errors: GS_ERR_PARSE (not YAML, wrong shape or
 * type, unknown key, bad value), GS_ERR_RANGE (over a cap), GS_ERR_NOMEM.
 */
gs_err gs_migparted_parse(const char *text, size_t len,
                          struct gs_migparted **out, struct gs_errbuf *eb);
void gs_migparted_destroy(struct gs_migparted *cfg);

const struct gs_migparted_config *
gs_migparted_find(const struct gs_migparted *cfg, const char *name);

/* Whether an entry's device-filter lets a GPU of model m through (an
 * entry without a filter applies to every model; a subsystem part cannot
 * be checked against the catalog and is treated as matching). */
bool gs_migparted_entry_applies(const struct gs_migparted_entry *e,
                                const struct gs_gpu_model *m);

/* One applicable entry, resolved on a model. */
struct gs_migparted_resolved {
	const struct gs_migparted_entry *entry;
	int index; /* 1-based position in the config */
	bool mig_enabled;
	struct gs_mig_plan plan; /* the layout, when enabled */
};

#define GS_MIGPARTED_MAX_RESOLVED GS_MIGPARTED_MAX_ENTRIES

/*
 * Checks config `c` against model m: every entry whose device-filter lets
 * m through must name only m's profiles (split compute instances
 * "1c.3g.20gb" count towards their GPU instance "3g.20gb"), within the
 * per-profile and per-GPU instance limits, and must have a valid
 * placement for all its instances together. OUT: out[0..*n) for the
 * applicable entries. Errors: GS_ERR_NOT_FOUND when no entry applies to
 * m, GS_ERR_UNKNOWN_PROFILE, GS_ERR_NO_FIT (too many instances or no
 * valid placement), each with the entry's line.
 */
gs_err gs_migparted_resolve(const struct gs_migparted_config *c,
                            const struct gs_gpu_model *m,
                            struct gs_migparted_resolved *out, int *n,
                            struct gs_errbuf *eb);

#endif
