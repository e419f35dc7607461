/*
 * cu.c - fills the driver table of cu.h from libcuda.so.1, by dlsym() or
 * through cuGetProcAddress_v2.
 *
 * The symbol names come from the entry list twice over: `#name` is the
 * base name the runtime passes to cuGetProcAddress ("cuMemAlloc"), and the
 * name after cuda.h's macros have renamed it is the exported, versioned
 * symbol that dlsym() needs ("cuMemAlloc_v2"). The two cannot drift apart.
 */
#include "cu.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define GS__CU_STR(x)  #x
#define GS__CU_XSTR(x) GS__CU_STR(x)

struct gs_cu_table gs_cu;

struct gs_cu_entry {
	const char *base;      /* name for cuGetProcAddress */
	const char *versioned; /* exported symbol for dlsym */
	int version;
	bool required;
	void **slot;
};

static const struct gs_cu_entry entries[] = {
#define GS__CU_ENTRY(name, ver, req)                                           \
	{#name, GS__CU_XSTR(name), ver, req, (void **)&gs_cu.name},
    GS_CU_ENTRIES(GS__CU_ENTRY)
#undef GS__CU_ENTRY
};

static void *lib;

static int resolve_dlsym(const struct gs_cu_entry *e, void **out)
{
	*out = dlsym(lib, e->versioned);
	return *out ? 0 : -1;
}

static int resolve_gpa(__typeof__(cuGetProcAddress) *gpa,
                       const struct gs_cu_entry *e, void **out)
{
	CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
	CUresult r;

	*out = NULL;
	r = gpa(e->base, out, e->version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
	if (r != CUDA_SUCCESS || status != CU_GET_PROC_ADDRESS_SUCCESS ||
	    !*out) {
		*out = NULL;
		return -1;
	}
	return 0;
}

bool gs_cu_sim;

int gs_cu_load(enum gs_cu_resolve how, char *why, size_t whylen)
{
	__typeof__(cuGetProcAddress) *gpa = NULL;
	size_t i;

	if (lib)
		return 0;
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *err = dlerror();

		snprintf(why, whylen, "cannot load libcuda.so.1: %s",
		         err ? err : "unknown reason");
		return -1;
	}
	gs_cu_sim = dlsym(lib, "gpuslice_sim_node") != NULL;
	if (how == GS_CU_VIA_GETPROCADDRESS) {
		gpa =
		    (__typeof__(gpa))dlsym(lib, GS__CU_XSTR(cuGetProcAddress));
		if (!gpa) {
			snprintf(why, whylen, "libcuda.so.1 has no %s",
			         GS__CU_XSTR(cuGetProcAddress));
			goto out_close;
		}
	}
	for (i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		const struct gs_cu_entry *e = &entries[i];
		int rc = gpa ? resolve_gpa(gpa, e, e->slot)
		             : resolve_dlsym(e, e->slot);

		if (rc != 0 && e->required) {
			if (gpa)
				snprintf(why, whylen,
				         "cuGetProcAddress_v2 does not resolve %s (version %d)",
				         e->base, e->version);
			else
				snprintf(why, whylen, "libcuda.so.1 has no %s",
				         e->versioned);
			goto out_close;
		}
	}
	return 0;

out_close:
	memset(&gs_cu, 0, sizeof(gs_cu));
	dlclose(lib);
	lib = NULL;
	return -1;
}

const char *gs_cu_resolve_name(enum gs_cu_resolve how)
{
	return how == GS_CU_VIA_GETPROCADDRESS ? "cuGetProcAddress" : "dlsym";
}

const char *gs_cu_error_name(CUresult r, char *buf, size_t buflen)
{
	const char *name = NULL;

	if (gs_cu.cuGetErrorName &&
	    gs_cu.cuGetErrorName(r, &name) == CUDA_SUCCESS && name)
		return name;
	snprintf(buf, buflen, "CUDA_ERROR_%d", (int)r);
	return buf;
}

const char *gs_cu_error_string(CUresult r)
{
	const char *s = NULL;

	if (gs_cu.cuGetErrorString &&
	    gs_cu.cuGetErrorString(r, &s) == CUDA_SUCCESS && s)
		return s;
	return "";
}
