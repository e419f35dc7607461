/*
 * catalog_data.h - the generated catalog table (private to core/).
 *
 * core/gen_catalog.py writes the definitions into the build directory from
 * data/mig-profiles.json; core/catalog.c is the only reader. The table is
 * constant: nothing writes it after load.
 */
#ifndef GS_CORE_CATALOG_DATA_H
#define GS_CORE_CATALOG_DATA_H

#include "gs/catalog.h"

#include <stddef.h>

extern const struct gs_gpu_model gs__catalog_models[];
extern const int gs__catalog_n_models;

#endif
