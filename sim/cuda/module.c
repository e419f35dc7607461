/*
 * module.c - modules and libraries of the sim driver: loading PTX text,
 * or the PTX inside a fatbinary (fatbin.c: the best PTX entry for the
 * device, decompressed), read by ptx.c into entries and globals; placing
 * module globals in contexts; unloading, and what a context leaves
 * behind. Function and kernel handles, their attributes and occupancy
 * are func.c's. The sim never compiles or runs the code.
 *
 * A CUlibrary is a module with no context; its CUkernel handles are the
 * same objects as CUfunction handles (launches take either), so
 * cuKernelGetFunction returns the kernel itself. A global gets its memory
 * (backed, charged like cuMemAlloc; managed memory for __managed__) in a
 * context when first needed there: at cuModuleLoad*, at cuLibraryLoad*
 * for the current context, and at cuLibraryGetGlobal/GetManaged for
 * another; it is freed with its module, or with its context.
 *
 * Cubin ELF images are refused with CUDA_ERROR_NOT_SUPPORTED (no machine
 * code to read); a fatbinary without PTX for the device is
 * CUDA_ERROR_NO_BINARY_FOR_GPU.
 */
#include "cuda_int.h"
#include "exec.h"
#include "halloc.h"

#include "costmodel.h"
#include "fatbin.h"
#include "gs/kernels.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- module globals: where they live --------------------------------- */

/*
 * Where global g lives in ctx, allocating and initializing it there if it
 * does not yet. OUT: *dptr. Lock held.
 */
static CUresult global_in(struct gs__global *g, struct gs__ctx *ctx,
                          uint64_t *dptr)
{
	struct gs__ginst *in;
	CUresult r;

	for (int i = 0; i < g->n_inst; i++) {
		struct gs__alloc *a;

		in = &g->inst[i];
		/* A managed variable placed before any context existed keeps
		 * that one address in every context (the runtime caches it). */
		if (in->ctx == NULL && g->managed) {
			*dptr = in->dptr;
			return CUDA_SUCCESS;
		}
		if (ctx == NULL || in->ctx != ctx || ctx->id != in->ctx_id)
			continue;
		a = gs__alloc_find(in->dptr, g->size);
		if (a != NULL && a->base == in->dptr && a->owner == g) {
			*dptr = in->dptr;
			return CUDA_SUCCESS;
		}
		/* freed with its context (reset): make it again */
		g->inst[i] = g->inst[--g->n_inst];
		break;
	}
	in = gs__realloc(g->inst, sizeof(*in) * (size_t)(g->n_inst + 1));
	if (in == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	g->inst = in;
	in = &g->inst[g->n_inst];
	r = gs__mem_alloc(ctx, g->size, g->managed, g, &in->dptr);
	if (r != CUDA_SUCCESS)
		return r;
	if (g->init != NULL)
		gs__dwrite(in->dptr, g->init, g->size);
	else
		(void)gs__memset(in->dptr, g->size, 0, 1, g->size, 1);
	in->ctx = ctx;
	in->ctx_id = ctx != NULL ? ctx->id : 0;
	g->n_inst++;
	*dptr = in->dptr;
	return CUDA_SUCCESS;
}

static struct gs__global *find_global(struct gs__module *m, const char *name)
{
	for (int i = 0; i < m->n_globals; i++)
		if (strcmp(m->globals[i].name, name) == 0)
			return &m->globals[i];
	return NULL;
}

/* Gives every global of m its memory in ctx. */
static CUresult globals_place(struct gs__module *m, struct gs__ctx *ctx)
{
	uint64_t dptr;

	for (int i = 0; i < m->n_globals; i++) {
		CUresult r = global_in(&m->globals[i], ctx, &dptr);
		if (r != CUDA_SUCCESS)
			return r;
	}
	return CUDA_SUCCESS;
}

/* ---- modules ---------------------------------------------------------- */

/* Compute capability (e.g. 90) of the device an image is loaded for. */
static int image_sm(struct gs__ctx *ctx)
{
	const struct gs__dev *d = NULL;

	if (ctx == NULL)
		ctx = gs__ctx_current();
	if (ctx != NULL)
		d = &gs__drv.dev[ctx->dev];
	else if (gs__drv.n_dev > 0)
		d = &gs__drv.dev[0];
	return d ? (int)(d->cc_major * 10 + d->cc_minor) : 90;
}

static void module_free(struct gs__module *m);

/*
 * Loads a PTX text or fatbinary (`len` bytes when known, else 0) for ctx
 * (a module) or for no context (a library: globals are placed in the
 * current context if there is one). Lock held.
 */
static CUresult module_load(const void *image, size_t len,
                            struct gs__ctx *ctx, bool library,
                            struct gs__module **out)
{
	const unsigned char *b = image;
	struct gs__module *m;
	CUresult r;

	if (image == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if (b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F')
		return CUDA_ERROR_NOT_SUPPORTED; /* a cubin: machine code */
	m = gs__calloc(1, sizeof(*m));
	if (m == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (gs__fatbin_is(image)) {
		r = gs__fatbin_ptx(image, len, image_sm(ctx), &m->image, NULL);
		if (r != CUDA_SUCCESS) {
			free(m);
			return r;
		}
	} else {
		m->image = gs__strdup(image);
		if (m->image == NULL) {
			free(m);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	r = gs__ptx_parse(m->image, &m->entries, &m->n_entries);
	if (r != CUDA_SUCCESS)
		goto out_free;
	r = gs__globals_parse(m->image, &m->globals, &m->n_globals);
	if (r != CUDA_SUCCESS)
		goto out_free;
	/* Fault site: the image is refused after it was read and parsed. */
	if (gs_fault_hit("sim.module_load")) {
		r = CUDA_ERROR_INVALID_IMAGE;
		goto out_free;
	}
	m->funcs = gs__calloc((size_t)(m->n_entries ? m->n_entries : 1),
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
	}
	for (int i = 0; i < m->n_entries && r == CUDA_SUCCESS; i++)
		if (!gs__h_add(&m->funcs[i], GS__H_FUNC))
			r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r == CUDA_SUCCESS &&
	    !gs__h_add(m, library ? GS__H_LIBRARY : GS__H_MODULE))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	if (r != CUDA_SUCCESS) {
		for (int i = 0; i < m->n_entries; i++)
			gs__h_del(&m->funcs[i]);
		goto out_free;
	}
	{
		struct gs__ctx *place = library ? gs__ctx_current() : ctx;

		if (place != NULL && gs__ctx_error(place) == CUDA_SUCCESS)
			r = globals_place(m, place);
	}
	if (r != CUDA_SUCCESS) {
		module_free(m);
		return r;
	}
	*out = m;
	return CUDA_SUCCESS;

out_free:
	gs__globals_free(m->globals, m->n_globals);
	free(m->funcs);
	gs__entries_free(m->entries, m->n_entries);
	free(m->image);
	free(m);
	return r;
}

static void forget_ctx_mod(void *p, void *arg)
{
	struct gs__module *lib = p;

	if (lib->ctx_mod == arg)
		lib->ctx_mod = NULL;
}

static void module_free(struct gs__module *m)
{
	if (m->library && m->ctx_mod != NULL)
		module_free(m->ctx_mod);
	else if (!m->library)
		gs__h_each(GS__H_LIBRARY, forget_ctx_mod, m);
	for (int i = 0; i < m->n_entries; i++)
		gs__h_del(&m->funcs[i]);
	gs__h_del(m);
	gs__globals_free(m->globals, m->n_globals);
	free(m->funcs);
	gs__entries_free(m->entries, m->n_entries);
	gs__xmod_free(m->exec);
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

/* cuModuleLoadData & co: `len` bytes of image when known, else 0. */
static CUresult module_load_call(CUmodule *module, const void *image,
                                 size_t len)
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
		r = module_load(image, len, ctx, false, &m);
	if (r == CUDA_SUCCESS)
		*module = (CUmodule)m;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
	return module_load_call(module, image, 0);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image,
                                    unsigned int numOptions,
                                    CUjit_option *options, void **optionValues)
{
	if (numOptions > 0 && (options == NULL || optionValues == NULL))
		return CUDA_ERROR_INVALID_VALUE;
	return module_load_call(module, image, 0);
}

CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	if (fatCubin != NULL && !gs__fatbin_is(fatCubin))
		return CUDA_ERROR_INVALID_IMAGE;
	return module_load_call(module, fatCubin, 0);
}

/* Reads a whole file (NUL-terminated). OUT: *len. NULL when it cannot. */
static char *read_file(const char *path, size_t *len_out)
{
	FILE *f;
	char *buf = NULL;
	long len;

	if (gs_fault_hit("sim.file_read"))
		return NULL;
	f = fopen(path, "rbe");
	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
	    len < (64L << 20) && fseek(f, 0, SEEK_SET) == 0) {
		buf = gs__malloc((size_t)len + 1);
		if (buf != NULL &&
		    fread(buf, 1, (size_t)len, f) != (size_t)len) {
			free(buf);
			buf = NULL;
		} else if (buf != NULL) {
			buf[len] = '\0';
			*len_out = (size_t)len;
		}
	}
	fclose(f);
	return buf;
}

CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname)
{
	char *text;
	size_t len = 0;
	CUresult r;

	if (module == NULL || fname == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	text = read_file(fname, &len);
	if (text == NULL)
		return CUDA_ERROR_FILE_NOT_FOUND;
	r = module_load_call(module, text, len);
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

/*
 * The entry count of a module or library handle (`kind` says which), and
 * its functions (CUfunction and CUkernel are both &funcs[i] here): the
 * bodies of cuModuleGetFunctionCount/EnumerateFunctions and
 * cuLibraryGetKernelCount/EnumerateKernels.
 */
static CUresult entry_count(const void *h, enum gs__htype kind,
                            unsigned int *count)
{
	CUresult r;

	if (count == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(h, kind))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		*count = (unsigned)((const struct gs__module *)h)->n_entries;
	gs__unlock();
	return r;
}

static CUresult entry_list(void *h, enum gs__htype kind, void *out,
                           unsigned int n)
{
	struct gs__module *m = h;
	CUresult r;

	if (out == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(m, kind))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		for (int i = 0; i < m->n_entries && (unsigned)i < n; i++)
			if (kind == GS__H_MODULE)
				((CUfunction *)out)[i] =
				    (CUfunction)&m->funcs[i];
			else
				((CUkernel *)out)[i] = (CUkernel)&m->funcs[i];
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int *count, CUmodule mod)
{
	return entry_count(mod, GS__H_MODULE, count);
}

CUresult CUDAAPI cuModuleEnumerateFunctions(CUfunction *functions,
                                            unsigned int numFunctions,
                                            CUmodule mod)
{
	return entry_list(mod, GS__H_MODULE, functions, numFunctions);
}

/*
 * A global's address in the current context (module: its own context).
 * Either out pointer may be NULL. Lock held.
 */
static CUresult global_get(struct gs__module *m, const char *name,
                           bool want_managed, CUdeviceptr *dptr,
                           size_t *bytes)
{
	/* a library's module shares the library's globals */
	struct gs__global *g = find_global(m->lib ? m->lib : m, name);
	struct gs__ctx *ctx;
	uint64_t p;
	CUresult r;

	if (g == NULL || (want_managed && !g->managed))
		return CUDA_ERROR_NOT_FOUND;
	if (m->ctx != NULL) {
		ctx = m->ctx;
		r = gs__ctx_error(ctx);
	} else {
		r = gs__ctx_get(&ctx);
		/* A library's __managed__ variable needs no context: the
		 * runtime asks for it before it makes one. */
		if (r == CUDA_ERROR_INVALID_CONTEXT && want_managed) {
			ctx = NULL;
			r = CUDA_SUCCESS;
		}
	}
	if (r != CUDA_SUCCESS)
		return r;
	r = global_in(g, ctx, &p);
	if (r != CUDA_SUCCESS)
		return r;
	if (dptr != NULL)
		*dptr = (CUdeviceptr)p;
	if (bytes != NULL)
		*bytes = (size_t)g->size;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes,
                                      CUmodule hmod, const char *name)
{
	CUresult r;

	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(hmod, GS__H_MODULE))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		r = global_get((struct gs__module *)hmod, name, false, dptr,
		               bytes);
	gs__unlock();
	return r;
}

/* ---- libraries -------------------------------------------------------- */

static CUresult library_load(CUlibrary *library, const void *code, size_t len,
                             CUjit_option *jitOptions, void **jitOptionsValues,
                             unsigned int numJitOptions,
                             CUlibraryOption *libraryOptions,
                             void **libraryOptionValues,
                             unsigned int numLibraryOptions)
{
	struct gs__module *m;
	CUresult r;

	if (library == NULL || code == NULL ||
	    (numJitOptions > 0 &&
	     (jitOptions == NULL || jitOptionsValues == NULL)) ||
	    (numLibraryOptions > 0 &&
	     (libraryOptions == NULL || libraryOptionValues == NULL)))
		return CUDA_ERROR_INVALID_VALUE;
	/* CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE and
	 * CU_LIBRARY_BINARY_IS_PRESERVED change nothing here: the sim keeps
	 * its own copy of the PTX */
	for (unsigned i = 0; i < numLibraryOptions; i++)
		if ((unsigned)libraryOptions[i] >= CU_LIBRARY_NUM_OPTIONS)
			return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = module_load(code, len, NULL, true, &m);
	if (r == CUDA_SUCCESS)
		*library = (CUlibrary)m;
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code,
                                   CUjit_option *jitOptions,
                                   void **jitOptionsValues,
                                   unsigned int numJitOptions,
                                   CUlibraryOption *libraryOptions,
                                   void **libraryOptionValues,
                                   unsigned int numLibraryOptions)
{
	return library_load(library, code, 0, jitOptions, jitOptionsValues,
	                    numJitOptions, libraryOptions, libraryOptionValues,
	                    numLibraryOptions);
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
	size_t len = 0;
	CUresult r;

	if (fileName == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	text = read_file(fileName, &len);
	if (text == NULL)
		return CUDA_ERROR_FILE_NOT_FOUND;
	r = library_load(library, text, len, jitOptions, jitOptionsValues,
	                 numJitOptions, libraryOptions, libraryOptionValues,
	                 numLibraryOptions);
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
	return entry_count(lib, GS__H_LIBRARY, count);
}

CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel *kernels,
                                           unsigned int numKernels,
                                           CUlibrary lib)
{
	return entry_list(lib, GS__H_LIBRARY, kernels, numKernels);
}

CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes,
                                    CUlibrary library, const char *name)
{
	CUresult r;

	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(library, GS__H_LIBRARY))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		r = global_get((struct gs__module *)library, name, false, dptr,
		               bytes);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes,
                                     CUlibrary library, const char *name)
{
	CUresult r;

	if (name == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(library, GS__H_LIBRARY))
		r = CUDA_ERROR_INVALID_HANDLE;
	else
		r = global_get((struct gs__module *)library, name, true, dptr,
		               bytes);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuLibraryGetUnifiedFunction(void **fptr, CUlibrary library,
                                             const char *symbol)
{
	CUresult r;

	if (fptr == NULL || symbol == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	/* PTX images carry no unified (host-callable) functions */
	r = gs__h_is(library, GS__H_LIBRARY) ? CUDA_ERROR_NOT_FOUND
	                                     : CUDA_ERROR_INVALID_HANDLE;
	gs__unlock();
	return r;
}

/*
 * The library's module in the current context: a second load of its PTX
 * for that context, made once and unloaded with the library (or with the
 * context, in which case the next call makes a new one). Its globals are
 * the library's (cuModuleGetGlobal and cuLibraryGetGlobal agree).
 */
CUresult CUDAAPI cuLibraryGetModule(CUmodule *pMod, CUlibrary library)
{
	struct gs__module *lib = (struct gs__module *)library, *m;
	struct gs__ctx *ctx;
	CUresult r;

	if (pMod == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(lib, GS__H_LIBRARY)) {
		r = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	r = gs__ctx_get(&ctx);
	if (r != CUDA_SUCCESS)
		goto out;
	if (lib->ctx_mod != NULL && lib->ctx_mod->ctx == ctx) {
		*pMod = (CUmodule)lib->ctx_mod;
		goto out;
	}
	r = module_load(lib->image, 0, ctx, false, &m);
	if (r != CUDA_SUCCESS)
		goto out;
	/* its globals are the library's in this context, not copies */
	gs__globals_free(m->globals, m->n_globals);
	m->globals = NULL;
	m->n_globals = 0;
	m->lib = lib;
	if (lib->ctx_mod != NULL)
		module_free(lib->ctx_mod);
	lib->ctx_mod = m;
	*pMod = (CUmodule)m;
out:
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

CUresult CUDAAPI cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel)
{
	struct gs__func *f;
	CUresult r;

	if (pLib == NULL)
		return CUDA_ERROR_INVALID_VALUE;
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__func_get((CUfunction)kernel, &f);
	if (r == CUDA_SUCCESS && !f->mod->library)
		r = CUDA_ERROR_INVALID_HANDLE;
	if (r == CUDA_SUCCESS)
		*pLib = (CUlibrary)f->mod;
	gs__unlock();
	return r;
}

CUresult gs__module_global_addr(struct gs__module *m, struct gs__ctx *ctx,
                                const char *name, uint64_t *dptr)
{
	struct gs__global *g = find_global(m->lib ? m->lib : m, name);

	return g != NULL ? global_in(g, ctx, dptr) : CUDA_ERROR_NOT_FOUND;
}
