/*
 * procaddr.c - how a program reaches the hooks, however it resolves the
 * driver: the table of every hooked entry point (hooks.h) with its
 * wrapper and its real function, the dlsym() interposer and the
 * cuGetProcAddress() wrappers that hand out a wrapper for the driver's
 * own pointer.
 *
 * The top of the shim: it names every module's wrappers; no module calls
 * it. Finding the real libraries (gs__rdlsym) and the state it consults
 * are shim.c's.
 */
#include "shim_int.h"

#include <dlfcn.h>
#include <string.h>

struct gs__hook {
	const char *name;
	const char *base;
	int version;
	int per_thread;
	void *wrap;
	void **real;
};

static const struct gs__hook cu_hooks[] = {
#define GS__ROW(sym, base, ver, pt)                                            \
	{#sym, #base, ver, pt, (void *)&sym, (void **)&gs__real.sym},
    GS_CU_HOOKS(GS__ROW)
#undef GS__ROW
};

static const struct gs__hook nvml_hooks[] = {
#define GS__NROW(sym) {#sym, #sym, 0, 0, (void *)&sym, (void **)&gs__rnvml.sym},
    GS_NVML_HOOKS(GS__NROW)
#undef GS__NROW
};

#define N_CU_HOOKS   (sizeof(cu_hooks) / sizeof(cu_hooks[0]))
#define N_NVML_HOOKS (sizeof(nvml_hooks) / sizeof(nvml_hooks[0]))

/* ---- dlsym ------------------------------------------------------------ */

static const struct gs__hook *hook_by_name(const struct gs__hook *t, size_t n,
                                           const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].name, name) == 0)
			return &t[i];
	return NULL;
}

/*
 * Whether `handle` is a library of the program's own link-map namespace
 * (or RTLD_DEFAULT). One dlmopen()ed into another namespace is beyond the
 * shim either way (the daemon's watchdog sees its memory through NVML).
 */
static bool base_namespace(void *handle)
{
	Lmid_t id = LM_ID_BASE;

	if (handle == RTLD_DEFAULT)
		return true;
	return dlinfo(handle, RTLD_DI_LMID, &id) != 0 || id == LM_ID_BASE;
}

static __attribute__((noinline)) void *dlsym_hooked(void *handle,
                                                    const char *name)
{
	void *p = gs__rdlsym(handle, name);
	const struct gs__hook *h;
	bool nvml = name[0] == 'n';

	if (p == NULL)
		return NULL;
	h = nvml ? hook_by_name(nvml_hooks, N_NVML_HOOKS, name)
	         : hook_by_name(cu_hooks, N_CU_HOOKS, name);
	if (h == NULL || p == h->wrap)
		return p;
	/* A refused process gets the wrappers too: they refuse. */
	if (nvml ? gs__nvml_ready() : gs__driver_loaded())
		/* The real library's own symbol: hand out the wrapper. */
		return p == *h->real ? h->wrap : p;
	/* The shim could not load that library itself. A process sent to a
	 * slice gets the wrapper anyway, which answers an error: never the
	 * real library without the slice's limits. */
	gs__init();
	return gs__g.cfg.slice[0] != '\0' && base_namespace(handle) ? h->wrap
	                                                            : p;
}

/*
 * Interposes dlsym so that dlopen("libcuda.so.1") + dlsym() reaches the
 * hooks. Names that are not hooked, and RTLD_NEXT lookups, go straight to
 * the real dlsym as a tail call, so it sees the caller's return address
 * (RTLD_NEXT is relative to the caller).
 */
void *dlsym(void *handle, const char *name)
{
	if (handle != RTLD_NEXT && gs__tls_in_init == 0 &&
	    ((name[0] == 'c' && name[1] == 'u') ||
	     (name[0] == 'n' && name[1] == 'v' && name[2] == 'm')))
		return dlsym_hooked(handle, name);
	void *(*rd)(void *, const char *) =
	    __atomic_load_n(&gs__real_dlsym_fn, __ATOMIC_ACQUIRE);
	if (GS_UNLIKELY(rd == NULL))
		rd = gs__load_real_dlsym();
	return rd(handle, name);
}

/* ---- cuGetProcAddress ------------------------------------------------- */

/*
 * Whether `p`, the driver's answer for `symbol`, is the variant hook h was
 * written for: asked again at h's version and stream flavour, the driver
 * must give the same pointer. A newer driver's new variant of a hooked
 * function (another signature, a version above h's) gives another one.
 */
static bool is_hooked_variant(const char *symbol, void *p,
                              const struct gs__hook *h, cuuint64_t flags)
{
	cuuint64_t f = flags & ~(cuuint64_t)CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	void *q = NULL;
	CUresult r;

	if (h->per_thread)
		f |= CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	if (gs__real.cuGetProcAddress_v2 != NULL &&
	    (void *)gs__real.cuGetProcAddress_v2 != (void *)&gs__missing_entry)
		r = gs__real.cuGetProcAddress_v2(symbol, &q, h->version, f,
		                                 NULL);
	else if (gs__real.cuGetProcAddress != NULL &&
	         (void *)gs__real.cuGetProcAddress != (void *)&gs__missing_entry)
		r = gs__real.cuGetProcAddress(symbol, &q, h->version, f);
	else
		return false;
	return r == CUDA_SUCCESS && q == p;
}

/*
 * The driver answered `symbol` with `p`: the variant it chose for the
 * caller's version and flags. Hand out our wrapper of that variant. When
 * the driver's pointer is not one of its exports (a driver may hand out
 * internal entry points), fall back to the hook for the same base name,
 * stream flavour and the highest version not above the caller's -- but
 * only when the driver confirms that pointer is that hook's variant
 * (is_hooked_variant): a future driver's new variant of a hooked function
 * is passed through unwrapped rather than called with the wrong
 * signature.
 */
static void *gpa_wrap(const char *symbol, void *p, int version,
                      cuuint64_t flags)
{
	int pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	const struct gs__hook *best = NULL;

	if (p == NULL || symbol == NULL)
		return p;
	for (size_t i = 0; i < N_CU_HOOKS; i++)
		if (*cu_hooks[i].real == p)
			return cu_hooks[i].wrap;
	/* Same stream flavour first; a base without per-thread variants
	 * answers per-thread callers with its legacy one. */
	for (int pass = 0; pass < 2 && best == NULL; pass++) {
		int want = pass == 0 ? pt : 0;

		if (pass == 1 && !pt)
			break;
		for (size_t i = 0; i < N_CU_HOOKS; i++) {
			const struct gs__hook *h = &cu_hooks[i];

			if (strcmp(h->base, symbol) != 0 ||
			    h->version > version || h->per_thread != want)
				continue;
			if (best == NULL || h->version > best->version)
				best = h;
		}
	}
	if (best == NULL || *best->real == (void *)&gs__missing_entry)
		return p;
	if (!is_hooked_variant(symbol, p, best, flags)) {
		gs_debug(GS_SHIM_TAG,
		         "cuGetProcAddress %s ver=%d flags=%llu: a variant newer than %s, passed through unhooked",
		         symbol, version, (unsigned long long)flags,
		         best->name);
		return p;
	}
	gs_debug(GS_SHIM_TAG,
	         "cuGetProcAddress %s ver=%d flags=%llu: unknown pointer, wrapping as %s",
	         symbol, version, (unsigned long long)flags, best->name);
	return best->wrap;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                             cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
	CUresult r;

	if (!gs__driver_loaded() || gs__real.cuGetProcAddress_v2 == NULL)
		return gs__not_ready();
	r = gs__real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags,
	                                 symbolStatus);
	if (r == CUDA_SUCCESS && pfn != NULL)
		*pfn = gpa_wrap(symbol, *pfn, cudaVersion, flags);
	return r;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                          cuuint64_t flags)
{
	CUresult r;

	if (!gs__driver_loaded() || gs__real.cuGetProcAddress == NULL)
		return gs__not_ready();
	r = gs__real.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
	if (r == CUDA_SUCCESS && pfn != NULL)
		*pfn = gpa_wrap(symbol, *pfn, cudaVersion, flags);
	return r;
}
