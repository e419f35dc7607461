/*
 * stubs.c - a weak definition of every symbol in cuda_syms.def that
 * answers CUDA_ERROR_NOT_SUPPORTED. The sim's real implementations are
 * strong definitions in the other files and win at link time; whatever is
 * left (graphics interop, textures, IPC, ...) is still exported, so a
 * program or a cuGetProcAddress lookup never gets NULL or crashes for a
 * name the real driver has. Arguments are ignored (the C calling
 * convention lets a function ignore any it is given).
 */
#include "cuda_int.h"

CUresult gs__cu_not_supported(void);
CUresult gs__cu_not_supported(void)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* `sym` is pasted and quoted right here, before cuda.h's renaming macros
 * (cuMemAlloc -> cuMemAlloc_v2) could apply to it. */
#define GS__STUB_0(id, name)
#define GS__STUB_1(id, name)                                                   \
	extern CUresult id(void) __asm__(name)                                 \
	    __attribute__((weak, alias("gs__cu_not_supported")));
#define X(base, ver, sym, pt, own) GS__STUB_##own(gs__stub_##sym, #sym)
#include "cuda_syms.def"
#undef X
