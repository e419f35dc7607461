/*
 * exports.map.c - run through the C preprocessor (-E -P) at build time to
 * produce the linker version script: the library exports exactly the
 * hooked names of hooks.h, plus dlsym, and nothing else.
 */
#include "hooks.h"
#define GS__EXPORT_CU(sym, base, ver, pt) sym;
#define GS__EXPORT_NVML(sym)              sym;
{
global:
	GS_CU_HOOKS(GS__EXPORT_CU)
	GS_NVML_HOOKS(GS__EXPORT_NVML)
	dlsym;
local:
	*;
};
