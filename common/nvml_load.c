/*
 * nvml_load.c - dlopen of NVML and its entry points (see
 * include/gs/nvml_load.h).
 */
#include "gs/nvml_load.h"

#include <dlfcn.h>
#include <stdlib.h>

gs_err gs_nvml_load(const char *library, struct gs_nvml **out,
                    struct gs_errbuf *eb)
{
	struct gs_nvml *n;

	*out = NULL;
	n = calloc(1, sizeof(*n));
	if (n == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	n->lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
	if (n->lib == NULL) {
		gs_err err = gs_fail(eb, GS_ERR_UNAVAILABLE,
		                     "cannot load %s: %s", library, dlerror());

		free(n);
		return err;
	}
#define GS__NVML_FN_LOAD(name, args) *(void **)&n->name = dlsym(n->lib, #name);
	GS_NVML_FNS(GS__NVML_FN_LOAD)
#undef GS__NVML_FN_LOAD
	*(void **)&n->nvmlErrorString = dlsym(n->lib, "nvmlErrorString");
	*out = n;
	return GS_OK;
}

void gs_nvml_unload(struct gs_nvml *n)
{
	if (n == NULL)
		return;
	(void)dlclose(n->lib);
	free(n);
}
