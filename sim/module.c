/*
 * module.c - modules, libraries and functions of the sim driver: loading
 * PTX text (the sim reads each `.entry name(...)` and its `.param` list;
 * it never compiles or runs the code), function and kernel handles and
 * their attributes, occupancy.
 *
 * A CUlibrary is a module with no context; its CUkernel handles are the
 * same objects as CUfunction handles (launches take either), so
 * cuKernelGetFunction returns the kernel itself.
 *
 * Images that are not PTX text (cubin ELF, fatbinaries) are refused with
 * CUDA_ERROR_NOT_SUPPORTED: the sim has no machine code to read.
 */
#include "cuda_int.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- PTX ------------------------------------------------------------- */

static const char *skip_ws(const char *p)
{
	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (p[0] == '/' && p[1] == '/') {
			while (*p && *p != '\n')
				p++;
		} else if (p[0] == '/' && p[1] == '*') {
			const char *e = strstr(p + 2, "*/");
			p = e ? e + 2 : p + strlen(p);
		} else {
			return p;
		}
	}
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.';
}

static int type_size(const char *t, size_t n)
{
	/* .u64 .s32 .f32 .b8 .pred ... : the digits are the width in bits */
	if (n == 5 && strncmp(t, ".pred", 5) == 0)
		return 1;
	if (n < 3 || t[0] != '.' || strchr("usbf", t[1]) == NULL)
		return 0;
	int bits = atoi(t + 2);
	return bits >= 8 && bits % 8 == 0 ? bits / 8 : 0;
}

/*
 * Parses one parameter list "( .param .u64 a, .param .align 8 .b8 b[16] )"
 * starting after '('. Returns the position after ')' or NULL.
 */
static const char *parse_params(const char *p, struct gs__entry *e)
{
	uint32_t off = 0;

	e->n_params = 0;
	p = skip_ws(p);
	if (*p == ')')
		goto done;
	for (;;) {
		int size = 0, align = 0;
		uint64_t count = 1;

		p = skip_ws(p);
		if (strncmp(p, ".param", 6) != 0)
			return NULL;
		p += 6;
		for (;;) {
			const char *s;
			p = skip_ws(p);
			if (*p != '.')
				break;
			s = p;
			while (ident_char(*p) && (p == s || *p != '.'))
				p++;
			if (strncmp(s, ".align", 6) == 0 && p - s == 6) {
				p = skip_ws(p);
				align = atoi(p);
				while (isdigit((unsigned char)*p))
					p++;
			} else if (strncmp(s, ".ptr", 4) == 0 ||
			           strncmp(s, ".global", 7) == 0 ||
			           strncmp(s, ".const", 6) == 0 ||
			           strncmp(s, ".shared", 7) == 0 ||
			           strncmp(s, ".local", 6) == 0) {
				/* state-space qualifiers of .ptr */
			} else {
				int sz = type_size(s, (size_t)(p - s));
				if (sz != 0)
					size = sz;
			}
		}
		/* the parameter's name */
		while (ident_char(*p) && *p != '.')
			p++;
		while (ident_char(*p))
			p++;
		p = skip_ws(p);
		if (*p == '[') {
			count = strtoull(p + 1, NULL, 10);
			p = strchr(p, ']');
			if (p == NULL)
				return NULL;
			p++;
		}
		if (size == 0 || count == 0 || e->n_params >= GS__MAX_PARAMS)
			return NULL;
		if (align == 0)
			align = size;
		off = (off + (uint32_t)align - 1) / (uint32_t)align *
		      (uint32_t)align;
		e->param_off[e->n_params] = off;
		e->param_size[e->n_params] = (uint32_t)(size * count);
		off += (uint32_t)(size * count);
		if (off > GS__MAX_PARAM_BYTES)
			return NULL;
		e->n_params++;
		p = skip_ws(p);
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p == ')')
			break;
		return NULL;
	}
done:
	e->args_size = off;
	return p + 1;
}

/*
 * Reads every .entry of a PTX text. OUT: *entries (malloc'ed, caller
 * frees), *n. CUDA_ERROR_INVALID_PTX when the text is not PTX or an entry
 * cannot be read.
 */
static CUresult ptx_parse(const char *text, struct gs__entry **entries, int *n)
{
	const char *p = text;
	const char *ver = strstr(text, ".version");
	struct gs__entry *list = NULL;
	int count = 0, cap = 0, ptx_version = 0;

	if (ver == NULL)
		return CUDA_ERROR_INVALID_PTX;
	{
		int maj = 0, min = 0;
		if (sscanf(ver + 8, " %d.%d", &maj, &min) == 2)
			ptx_version = maj * 10 + min;
	}
	while ((p = strstr(p, ".entry")) != NULL) {
		struct gs__entry *e;
		const char *name;
		size_t len;

		if (p > text && ident_char(p[-1])) {
			p += 6;
			continue;
		}
		p = skip_ws(p + 6);
		name = p;
		while (ident_char(*p))
			p++;
		len = (size_t)(p - name);
		if (len == 0 || len >= sizeof(list[0].name))
			goto out_bad;
		if (count == cap) {
			int ncap = cap ? cap * 2 : 8;
			struct gs__entry *nl =
			    realloc(list, sizeof(*nl) * (size_t)ncap);
			if (nl == NULL) {
				free(list);
				return CUDA_ERROR_OUT_OF_MEMORY;
			}
			list = nl;
			cap = ncap;
		}
		e = &list[count];
		memset(e, 0, sizeof(*e));
		memcpy(e->name, name, len);
		e->ptx_version = ptx_version;
		p = skip_ws(p);
		if (*p == '(') {
			p = parse_params(p + 1, e);
			if (p == NULL)
				goto out_bad;
		}
		count++;
	}
	*entries = list;
	*n = count;
	return CUDA_SUCCESS;

out_bad:
	free(list);
	return CUDA_ERROR_INVALID_PTX;
}

/* ---- modules ---------------------------------------------------------- */

static CUresult module_load(const void *image, struct gs__ctx *ctx,
                            bool library, struct gs__module **out)
{
	const unsigned char *b = image;
	struct gs__module *m;
	CUresult r;

	if (image == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F') ||
	    (b[0] == 0x50 && b[1] == 0xed && b[2] == 0x55 && b[3] == 0xba) ||
	    (b[0] == 0xb1 && b[1] == 0x43 && b[2] == 0x62 && b[3] == 0x46))
		return CUDA_ERROR_NOT_SUPPORTED; /* cubin / fatbin */
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->image = strdup(image);
	if (m->image == NULL) {
		free(m);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r = ptx_parse(m->image, &m->entries, &m->n_entries);
	if (r != CUDA_SUCCESS)
		goto out_free;
	m->funcs = calloc((size_t)(m->n_entries ? m->n_entries : 1),
	                  sizeof(*m->funcs));
	if (m->funcs == NULL) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_free;
	}
	m->ctx = ctx;
	m->library = library;
	for (int i = 0; i < m->n_entries; i++) {
		m->funcs[i].mod = m;
		m->funcs[i].entry = &m->entries[i];
		m->funcs[i].max_dyn_smem = 49152;
		m->funcs[i].carveout = -1;
		if (!gs__h_add(&m->funcs[i], GS__H_FUNC))
			r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (r == CUDA_SUCCESS &&
	    !gs__h_add(m, library ? GS__H_LIBRARY : GS__H_MODULE))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r != CUDA_SUCCESS) {
		for (int i = 0; i < m->n_entries; i++)
			gs__h_del(&m->funcs[i]);
		goto out_free;
	}
	*out = m;
	return CUDA_SUCCESS;

out_free:
	free(m->funcs);
	free(m->entries);
	free(m->image);
	free(m);
	return r;
}

static void module_free(struct gs__module *m)
{
	for (int i = 0; i < m->n_entries; i++)
		gs__h_del(&m->funcs[i]);
	gs__h_del(m);
	free(m->funcs);
	free(m->entries);
	free(m->image);
	free(m);
}

static void module_gone(void *p, void *arg)
{
	struct gs__module *m = p;

	if (m->ctx == arg)
		module_free(m);
}

void gs__module_ctx_gone(struct gs__ctx *ctx)
{
	gs__h_each(GS__H_MODULE, module_gone, ctx);
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
	struct gs__ctx *ctx;
	struct gs__module *m;
	CUresult r;

	if (module == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_get(&ctx);
	if (r == CUDA_SUCCESS)
		r = module_load(image, ctx, false, &m);
	if (r == CUDA_SUCCESS)
		*module = (CUmodule)m;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image,
                                    unsigned int numOptions,
                                    CUjit_option *options, void **optionValues)
{
	if (numOptions > 0 && (options == NULL || optionValues == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	return cuModuleLoadData(module, image);
}

/* Reads a whole file (NUL-terminated). NULL when it cannot. */
static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rbe");
	char *buf = NULL;
	long len;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
	    len < (64L << 20) && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)len + 1);
		if (buf != NULL &&
		    fread(buf, 1, (size_t)len, f) != (size_t)len) {
			free(buf);
			buf = NULL;
		} else if (buf != NULL) {
			buf[len] = '\0';
		}
	}
	fclose(f);
	return buf;
}

CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
	char *text;
	CUresult r;

	if (module == NULL || fname == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	text = read_file(fname);
	if (text == NULL)
		return CUDA_ERROR_FILE_NOT_FOUND;
	r = cuModuleLoadData(module, text);
	free(text);
	return r;
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(hmod, GS__H_MODULE))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		module_free((struct gs__module *)hmod);
	gs__unlock();
	return r;
}

static struct gs__func *find_func(struct gs__module *m, const char *name)
{
	for (int i = 0; i < m->n_entries; i++)
		if (strcmp(m->entries[i].name, name) == 0)
			return &m->funcs[i];
	return NULL;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod,
                                     const char *name)
{
	struct gs__func *f;
	CUresult r;

	if (hfunc == NULL || name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(hmod, GS__H_MODULE))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if ((f = find_func((struct gs__module *)hmod, name)) == NULL)
		r = CUDA_ERROR_NOT_FOUND;
	else
		*hfunc = (CUfunction)f;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int *count, CUmodule mod)
{
	CUresult r;

	if (count == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(mod, GS__H_MODULE))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		*count = (unsigned)((struct gs__module *)mod)->n_entries;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes,
                                      CUmodule hmod, const char *name)
{
	CUresult r;

	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	/* the sim keeps no module globals */
	r = gs__h_is(hmod, GS__H_MODULE) ? CUDA_ERROR_NOT_FOUND
	                                 : CUDA_ERROR_INVALID_HANDLE;
	gs__unlock();
	(void)dptr;
	(void)bytes;
	return r;
}

/* ---- libraries -------------------------------------------------------- */

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code,
                                   CUjit_option *jitOptions,
                                   void **jitOptionsValues,
                                   unsigned int numJitOptions,
                                   CUlibraryOption *libraryOptions,
                                   void **libraryOptionValues,
                                   unsigned int numLibraryOptions)
{
	struct gs__module *m;
	CUresult r;

	if (library == NULL ||
	    (numJitOptions > 0 &&
	     (jitOptions == NULL || jitOptionsValues == NULL)) ||
	    (numLibraryOptions > 0 &&
	     (libraryOptions == NULL || libraryOptionValues == NULL)))
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = module_load(code, NULL, true, &m);
	if (r == CUDA_SUCCESS)
		*library = (CUlibrary)m;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                       CUjit_option *jitOptions,
                                       void **jitOptionsValues,
                                       unsigned int numJitOptions,
                                       CUlibraryOption *libraryOptions,
                                       void **libraryOptionValues,
                                       unsigned int numLibraryOptions)
{
	char *text;
	CUresult r;

	if (fileName == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	text = read_file(fileName);
	if (text == NULL)
		return CUDA_ERROR_FILE_NOT_FOUND;
	r = cuLibraryLoadData(library, text, jitOptions, jitOptionsValues,
	                      numJitOptions, libraryOptions,
	                      libraryOptionValues, numLibraryOptions);
	free(text);
	return r;
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(library, GS__H_LIBRARY))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		module_free((struct gs__module *)library);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library,
                                    const char *name)
{
	struct gs__func *f;
	CUresult r;

	if (pKernel == NULL || name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(library, GS__H_LIBRARY))
		r = CUDA_ERROR_INVALID_HANDLE;
	else if ((f = find_func((struct gs__module *)library, name)) == NULL)
		r = CUDA_ERROR_NOT_FOUND;
	else
		*pKernel = (CUkernel)f;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
	CUresult r;

	if (count == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(lib, GS__H_LIBRARY))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		*count = (unsigned)((struct gs__module *)lib)->n_entries;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel *kernels,
                                           unsigned int numKernels,
                                           CUlibrary lib)
{
	struct gs__module *m = (struct gs__module *)lib;
	CUresult r;

	if (kernels == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(m, GS__H_LIBRARY))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		for (int i = 0; i < m->n_entries && (unsigned)i < numKernels;
		     i++)
			kernels[i] = (CUkernel)&m->funcs[i];
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	CUresult r;

	if (pMod == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	/* a library's per-context module would need a second copy; the sim
	 * has one context-free image */
	r = gs__h_is(library, GS__H_LIBRARY) ? CUDA_ERROR_NOT_SUPPORTED
	                                     : CUDA_ERROR_INVALID_HANDLE;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	struct gs__ctx *ctx;
	CUresult r;

	if (pFunc == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__ctx_get(&ctx);
	if (r == CUDA_SUCCESS && !gs__h_is(kernel, GS__H_FUNC))
		r = CUDA_ERROR_INVALID_HANDLE;
	if (r == CUDA_SUCCESS)
		*pFunc = (CUfunction)kernel;
	gs__unlock();
	return r;
}

/* ---- functions -------------------------------------------------------- */

CUresult gs__func_get(CUfunction f, struct gs__func **out)
{
	if (!gs__h_is(f, GS__H_FUNC))
		return CUDA_ERROR_INVALID_HANDLE;
	*out = (struct gs__func *)f;
	return CUDA_SUCCESS;
}

static CUresult func_attr(struct gs__func *f, CUfunction_attribute a, int *v)
{
	const struct gs__dev *d = gs__drv.n_dev ? &gs__drv.dev[0] : NULL;
	int cc = d ? (int)(d->cc_major * 10 + d->cc_minor) : 90;

	switch (a) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		*v = 1024;
		break;
	case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
	case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
	case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
	case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
	case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		*v = 0;
		break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS:
		*v = 32;
		break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION:
		*v = f->entry->ptx_version;
		break;
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
		*v = cc;
		break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		*v = f->max_dyn_smem;
		break;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		*v = f->carveout;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib,
                                    CUfunction hfunc)
{
	struct gs__func *f;
	CUresult r;

	if (pi == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	if (r == CUDA_SUCCESS)
		r = func_attr(f, attrib, pi);
	gs__unlock();
	return r;
}

static CUresult func_set_attr(struct gs__func *f, CUfunction_attribute a, int v)
{
	switch (a) {
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		if (v < 0 || v > 232448)
			return CUDA_ERROR_INVALID_VALUE;
		f->max_dyn_smem = v;
		return CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		if (v < -1 || v > 100)
			return CUDA_ERROR_INVALID_VALUE;
		f->carveout = v;
		return CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc,
                                    CUfunction_attribute attrib, int value)
{
	struct gs__func *f;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	if (r == CUDA_SUCCESS)
		r = func_set_attr(f, attrib, value);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
	struct gs__func *f;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	if (r == CUDA_SUCCESS)
		f->cache_config = config;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc)
{
	struct gs__func *f;
	CUresult r;

	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	if (r == CUDA_SUCCESS)
		*name = f->entry->name;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuFuncGetParamInfo(CUfunction func, size_t paramIndex,
                                    size_t *paramOffset, size_t *paramSize)
{
	struct gs__func *f;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	if (r == CUDA_SUCCESS && paramIndex >= (size_t)f->entry->n_params)
		r = CUDA_ERROR_INVALID_VALUE;
	if (r == CUDA_SUCCESS) {
		if (paramOffset != NULL)
			*paramOffset = f->entry->param_off[paramIndex];
		if (paramSize != NULL)
			*paramSize = f->entry->param_size[paramIndex];
	}
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuFuncGetModule(CUmodule *hmod, CUfunction hfunc)
{
	struct gs__func *f;
	CUresult r;

	if (hmod == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(hfunc, &f);
	if (r == CUDA_SUCCESS)
		*hmod = f->mod->library ? NULL : (CUmodule)f->mod;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuKernelGetAttribute(int *pi, CUfunction_attribute attrib,
                                      CUkernel kernel, CUdevice dev)
{
	if (pi == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	return cuFuncGetAttribute(pi, attrib, (CUfunction)kernel);
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val,
                                      CUkernel kernel, CUdevice dev)
{
	return cuFuncSetAttribute((CUfunction)kernel, attrib, val);
}

CUresult CUDAAPI cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config,
                                        CUdevice dev)
{
	return cuFuncSetCacheConfig((CUfunction)kernel, config);
}

CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel hfunc)
{
	return cuFuncGetName(name, (CUfunction)hfunc);
}

CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex,
                                      size_t *paramOffset, size_t *paramSize)
{
	return cuFuncGetParamInfo((CUfunction)kernel, paramIndex, paramOffset,
	                          paramSize);
}

/* ---- occupancy --------------------------------------------------------- */

static int occupancy(int block, size_t smem)
{
	int warps = (block + 31) / 32;
	int by_warps, by_regs, n = 32;

	if (block <= 0 || block > 1024)
		return 0;
	by_warps = 64 / warps;
	by_regs = 65536 / (32 * warps * 32);
	if (by_warps < n)
		n = by_warps;
	if (by_regs < n)
		n = by_regs;
	if (smem > 0) {
		int by_smem = (int)(233472 / (smem + 1024));
		if (by_smem < n)
			n = by_smem;
	}
	return n;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(
    int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize)
{
	struct gs__func *f;
	CUresult r;

	if (numBlocks == NULL || blockSize <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	if (r == CUDA_SUCCESS)
		*numBlocks = occupancy(blockSize, dynamicSMemSize);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize,
    unsigned int flags)
{
	return cuOccupancyMaxActiveBlocksPerMultiprocessor(
	    numBlocks, func, blockSize, dynamicSMemSize);
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(
    int *minGridSize, int *blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
    int blockSizeLimit)
{
	struct gs__func *f;
	int best = 0, best_block = 32, sms;
	CUresult r;

	if (minGridSize == NULL || blockSize == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	sms = gs__drv.n_dev ? (int)gs__drv.dev[0].sm_count : 1;
	{
		struct gs__ctx *c = gs__ctx_current();
		if (c != NULL)
			sms = (int)gs__drv.dev[c->dev].sm_count;
	}
	gs__unlock();
	if (r != CUDA_SUCCESS)
		return r;
	if (blockSizeLimit <= 0 || blockSizeLimit > 1024)
		blockSizeLimit = 1024;
	for (int b = 32; b <= blockSizeLimit; b += 32) {
		size_t smem = blockSizeToDynamicSMemSize
		                  ? blockSizeToDynamicSMemSize(b)
		                  : dynamicSMemSize;
		int warps = occupancy(b, smem) * ((b + 31) / 32);

		if (warps >= best) {
			best = warps;
			best_block = b;
		}
	}
	*blockSize = best_block;
	*minGridSize = occupancy(best_block, dynamicSMemSize) * sms;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(
    int *minGridSize, int *blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
    int blockSizeLimit, unsigned int flags)
{
	return cuOccupancyMaxPotentialBlockSize(
	    minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
	    dynamicSMemSize, blockSizeLimit);
}

CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(
    size_t *dynamicSmemSize, CUfunction func, int numBlocks, int blockSize)
{
	struct gs__func *f;
	CUresult r;

	if (dynamicSmemSize == NULL || numBlocks <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get(func, &f);
	gs__unlock();
	if (r == CUDA_SUCCESS)
		*dynamicSmemSize = 233472 / (size_t)numBlocks - 1024;
	return r;
}
