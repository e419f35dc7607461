/*
 * fuzz_migparted.c - libFuzzer target for mig-parted config files: any
 * bytes go to the parser; every config of whatever parses is resolved on
 * every catalog model, and each resolved layout must pass the planner's
 * own layout check (a failure aborts).
 */
#include "gs/migparted.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gs_migparted_resolved res[GS_MIGPARTED_MAX_RESOLVED];
	struct gs_migparted *cfg = NULL;

	if (gs_migparted_parse((const char *)data, size, &cfg, NULL) != GS_OK)
		return 0;
	for (int c = 0; c < cfg->n_configs; c++) {
		for (int m = 0; m < gs_catalog_count(); m++) {
			const struct gs_gpu_model *model = gs_catalog_get(m);
			int n = 0;

			if (gs_migparted_resolve(&cfg->configs[c], model, res,
			                         &n, NULL) != GS_OK)
				continue;
			for (int i = 0; i < n; i++)
				if (res[i].mig_enabled &&
				    gs_migplan_check_layout(
				        model, res[i].plan.layout,
				        res[i].plan.n_layout, NULL) != GS_OK)
					abort();
		}
	}
	gs_migparted_destroy(cfg);
	return 0;
}
