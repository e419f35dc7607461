/*
 * stubs.c - a weak definition of every symbol in cuda_syms.def that
 * answers CUDA_ERROR_NOT_SUPPORTED, and the one place that says so: the
 * first refusal of each entry point (or of a case the sim cannot do,
 * gs__not_supported_note) writes one line to stderr naming it, so a
 * program never gets a wrong answer without a word. The sim's real
 * implementations are strong definitions in the other files and win at
 * link time; whatever is left (graphics interop, textures, IPC, ...) is
 * still exported, so a program or a cuGetProcAddress lookup never gets
 * NULL or crashes for a name the real driver has. Arguments are ignored
 * (the C calling convention lets a function ignore any it is given).
 */
#include "cuda_int.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Names already reported (string literals: compared by address, then by
 * text); past the cap the rest are still refused, no longer reported. */
#define NOTED_MAX 128

static pthread_mutex_t noted_mu = PTHREAD_MUTEX_INITIALIZER;
static const char *noted[NOTED_MAX];
static int n_noted;

void gs__not_supported_note(const char *what)
{
	bool first = true;

	(void)pthread_mutex_lock(&noted_mu);
	for (int i = 0; i < n_noted && first; i++)
		if (noted[i] == what || strcmp(noted[i], what) == 0)
			first = false;
	if (first && n_noted < NOTED_MAX)
		noted[n_noted++] = what;
	else
		first = false;
	(void)pthread_mutex_unlock(&noted_mu);
	if (first)
		fprintf(
		    stderr,
		    "gpuslice sim: %s: not supported by the simulated GPU (CUDA_ERROR_NOT_SUPPORTED or the capture is invalidated)\n",
		    what);
}

/* `sym` is pasted and quoted right here, before cuda.h's renaming macros
 * (cuMemAlloc -> cuMemAlloc_v2) could apply to it. */
#define GS__STUB_0(id, name)
#define GS__STUB_1(id, name)                                                   \
	extern CUresult id(void) __asm__(name) __attribute__((weak));          \
	CUresult id(void)                                                      \
	{                                                                      \
		gs__not_supported_note(name);                                  \
		return CUDA_ERROR_NOT_SUPPORTED;                               \
	}
#define X(base, ver, sym, pt, own) GS__STUB_##own(gs__stub_##sym, #sym)
#include "cuda_syms.def"
#undef X
