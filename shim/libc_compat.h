/*
 * libc_compat.h - what the shim's sources need from a C library that is
 * not the build machine's glibc: musl (libgpuslice-musl.so).
 *
 * The musl build force-includes this header (-include) into every source
 * it compiles, so no .c file needs an #ifdef: musl's headers do not pull
 * <fcntl.h> in transitively as glibc's do, and musl has no link-map
 * namespaces (Lmid_t, RTLD_DI_LMID: dlinfo() answers -1 for the request,
 * which the shim reads as "the base namespace") and no dlvsym()
 * (libc_compat.c provides one for the one use the shim has: finding the C
 * library's own dlsym).
 *
 * Under glibc this header adds nothing; the glibc floor (symbol versions no
 * newer than GLIBC_2.17) is libc_compat.c's alone, by link-time binding.
 */
#ifndef GS_SHIM_LIBC_COMPAT_H
#define GS_SHIM_LIBC_COMPAT_H

#include <dlfcn.h>
#include <fcntl.h>

#ifndef __GLIBC__
#ifndef RTLD_DI_LMID
typedef long Lmid_t;
#define LM_ID_BASE   0
#define RTLD_DI_LMID 1
#endif

/*
 * The C library's exported symbol `name`, whatever `handle` and `version`
 * say: musl has one namespace and no symbol versions, and the shim asks
 * only for the dlsym that comes after itself (RTLD_NEXT), which is the C
 * library's. NULL when the C library cannot be read.
 */
void *dlvsym(void *handle, const char *name, const char *version);
#endif

#endif
