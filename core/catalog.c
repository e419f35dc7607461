/*
 * catalog.c - lookups over the generated GPU catalog (see catalog.h).
 *
 * The table itself is generated (core/gen_catalog.py -> catalog_data.c in
 * the build directory). Names are compared case-insensitively with ' ',
 * '_' and '-' treated as the same character, so "h100 sxm5 80gb",
 * "H100-SXM5-80GB" and "NVIDIA H100 80GB HBM3" all resolve. Every pointer
 * returned points into the constant table.
 */
#include "gs/catalog.h"

#include "catalog_data.h"

#include <ctype.h>
#include <stddef.h>
#include <string.h>

static int norm_char(unsigned char c)
{
	if (c == ' ' || c == '_')
		return '-';
	return tolower(c);
}

static bool name_eq(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (norm_char((unsigned char)*a) !=
		    norm_char((unsigned char)*b))
			return false;
	return *a == '\0' && *b == '\0';
}

int gs_catalog_count(void)
{
	return gs__catalog_n_models;
}

const struct gs_gpu_model *gs_catalog_get(int i)
{
	if (i < 0 || i >= gs__catalog_n_models)
		return NULL;
	return &gs__catalog_models[i];
}

const struct gs_gpu_model *gs_catalog_find(const char *name)
{
	if (name == NULL || *name == '\0')
		return NULL;
	/* Canonical and NVML names first, so an alias can never shadow them. */
	for (int i = 0; i < gs__catalog_n_models; i++) {
		const struct gs_gpu_model *m = &gs__catalog_models[i];

		if (name_eq(name, m->name) || name_eq(name, m->nvml_name))
			return m;
	}
	for (int i = 0; i < gs__catalog_n_models; i++) {
		const struct gs_gpu_model *m = &gs__catalog_models[i];

		for (int a = 0; a < m->n_aliases; a++)
			if (name_eq(name, m->aliases[a]))
				return m;
	}
	return NULL;
}

const struct gs_gpu_model *gs_catalog_find_pci(uint32_t pci_id)
{
	for (int i = 0; i < gs__catalog_n_models; i++) {
		const struct gs_gpu_model *m = &gs__catalog_models[i];

		for (int k = 0; k < m->n_pci_device_ids; k++)
			if (m->pci_device_ids[k] == pci_id)
				return m;
	}
	return NULL;
}

const struct gs_mig_profile *gs_catalog_profile(const struct gs_gpu_model *m,
                                                const char *name)
{
	if (m == NULL || name == NULL)
		return NULL;
	for (int i = 0; i < m->n_profiles; i++)
		if (strcasecmp(m->profiles[i].name, name) == 0)
			return &m->profiles[i];
	return NULL;
}

const struct gs_mig_profile *
gs_catalog_profile_by_id(const struct gs_gpu_model *m, int profile_id)
{
	if (m == NULL)
		return NULL;
	for (int i = 0; i < m->n_profiles; i++)
		if (m->profiles[i].profile_id == profile_id)
			return &m->profiles[i];
	return NULL;
}

bool gs_catalog_placement_valid(const struct gs_mig_profile *p, int start)
{
	if (p == NULL)
		return false;
	for (int i = 0; i < p->n_placements; i++)
		if (p->placements[i].start == start)
			return true;
	return false;
}
