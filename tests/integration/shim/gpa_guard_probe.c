/*
 * gpa_guard_probe.c - gs-gpa-guard-probe: asks cuGetProcAddress_v2 (the
 * shim's, when it is preloaded) for a few (name, version) pairs and
 * prints, as one JSON object, which library each answer lies in, e.g.
 * {"cuMemAlloc@13000":"libgs-fake-newer-cuda.so", ...}. Also calls the
 * answer for cuMemAlloc@13000 with the new variant's signature and
 * prints its result ("v3_call").
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#undef cuGetProcAddress

typedef CUresult (*gpa_v2_fn)(const char *, void **, int, cuuint64_t,
                              CUdriverProcAddressQueryResult *);

static const char *where(void *p)
{
	Dl_info info;
	const char *s;

	if (p == NULL || dladdr(p, &info) == 0 || info.dli_fname == NULL)
		return "none";
	s = strrchr(info.dli_fname, '/');
	return s != NULL ? s + 1 : info.dli_fname;
}

int main(void)
{
	static const struct {
		const char *name;
		int version;
	} q[] = {{"cuMemAlloc", 13000}, {"cuMemAlloc", 12000},
	         {"cuMemFree", 13000},  {"cuMemGetInfo", 13000}};
	gpa_v2_fn gpa = (gpa_v2_fn)dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2");
	void *v3 = NULL;

	if (gpa == NULL) {
		fprintf(stderr, "no cuGetProcAddress_v2 in this process\n");
		return 1;
	}
	printf("{");
	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		void *fn = NULL;
		CUresult r = gpa(q[i].name, &fn, q[i].version, 0, NULL);

		printf("\"%s@%d\":\"%s\",", q[i].name, q[i].version,
		       r == CUDA_SUCCESS ? where(fn) : "error");
		if (i == 0 && r == CUDA_SUCCESS)
			v3 = fn;
	}
	if (v3 != NULL) {
		CUresult (*f)(CUdeviceptr *, size_t, unsigned long long) =
		    (CUresult(*)(CUdeviceptr *, size_t, unsigned long long))v3;
		CUdeviceptr p;

		printf("\"v3_call\":%d}\n", (int)f(&p, 0, 0x600d));
	} else {
		printf("\"v3_call\":null}\n");
	}
	return 0;
}
