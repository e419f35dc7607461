/*
 * procaddr.c - cuGetProcAddress (cuGetExportTable is in export.c).
 *
 * The table is cuda_syms.def, the same list that makes the version script
 * (what the library exports) and the stubs, so a name is exported exactly
 * when it can be looked up. Each row is (base name, CUDA version that
 * introduced the variant, exported symbol, per-thread). A lookup of
 * (base, cudaVersion, flags) answers with the newest variant whose version
 * is not above cudaVersion: per-thread rows when
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM is set (falling back to the
 * default rows when a base has none), default rows otherwise. An unknown
 * base is CUDA_ERROR_NOT_FOUND with CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND; a
 * base whose oldest variant is newer than cudaVersion is CUDA_ERROR_NOT_FOUND
 * with CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT; *pfn is NULL in both.
 *
 * The addresses are taken through asm labels (gs__sym_<name> names the
 * symbol <name>) so that they bind to whatever defines the name in this
 * library: an implementation, or the weak NOT_SUPPORTED stub.
 */
#include "cuda_int.h"

#include <string.h>

#undef cuGetProcAddress

#define X(base, ver, sym, pt, own)                                             \
	extern void gs__sym_##sym(void) __asm__(#sym);
#include "cuda_syms.def"
#undef X

struct sym {
	const char *base;
	int version;
	bool per_thread;
	void (*fn)(void);
};

static const struct sym table[] = {
#define X(base, ver, sym, pt, own) {#base, ver, pt, gs__sym_##sym},
#include "cuda_syms.def"
#undef X
};

#define N_SYMS ((int)(sizeof(table) / sizeof(table[0])))

/* First row of `base` (rows are sorted by base), or -1. */
static int first_row(const char *base)
{
	int lo = 0, hi = N_SYMS;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (strcmp(table[mid].base, base) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < N_SYMS && strcmp(table[lo].base, base) == 0 ? lo : -1;
}

static const struct sym *newest(int first, const char *base, int version,
                                bool per_thread)
{
	const struct sym *best = NULL;

	for (int i = first; i < N_SYMS && strcmp(table[i].base, base) == 0; i++)
		if (table[i].per_thread == per_thread &&
		    table[i].version <= version &&
		    (best == NULL || table[i].version >= best->version))
			best = &table[i];
	return best;
}

static CUresult lookup(const char *symbol, void **pfn, int cudaVersion,
                       cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
	const cuuint64_t known = CU_GET_PROC_ADDRESS_LEGACY_STREAM |
	                         CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	const struct sym *s = NULL;
	int first;

	if (status != NULL)
		*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	if (symbol == NULL || pfn == NULL || (flags & ~known) != 0)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	if (cudaVersion > GS__DRIVER_VERSION)
		return CUDA_ERROR_INVALID_VALUE;
	first = first_row(symbol);
	if (first < 0)
		return CUDA_ERROR_NOT_FOUND;
	if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
		s = newest(first, symbol, cudaVersion, true);
	if (s == NULL)
		s = newest(first, symbol, cudaVersion, false);
	if (s == NULL) {
		if (status != NULL)
			*status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
		return CUDA_ERROR_NOT_FOUND;
	}
	*pfn = (void *)s->fn;
	if (status != NULL)
		*status = CU_GET_PROC_ADDRESS_SUCCESS;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetProcAddress_v2(
    const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
    CUdriverProcAddressQueryResult *symbolStatus)
{
	return lookup(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* The CUDA 11.3 signature, without symbolStatus. */
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn,
                                  int cudaVersion, cuuint64_t flags);
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn,
                                  int cudaVersion, cuuint64_t flags)
{
	return lookup(symbol, pfn, cudaVersion, flags, NULL);
}
