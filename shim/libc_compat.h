/*
 * libc_compat.h - what the shim's sources need from a C library that is
 * not the build machine's glibc: musl (libgpuslice-musl.so).
 *
 * The musl build force-includes this header (-include) into every source
 * it compiles, so no .c file needs an #ifdef: musl's headers do not pull
 * <fcntl.h> in transitively as glibc's do, and musl has no link-map
 * namespaces (Lmid_t, RTLD_DI_LMID: answered here, LM_ID_BASE, without
 * asking musl's dlinfo(), which would set dlerror()) and no dlvsym()
 * (libc_compat.c provides one for the one use the shim has: finding the C
 * library's own dlsym); and its pthread_mutex_t, the same size as glibc's,
 * has another layout, so every pthread_mutex call is renamed to
 * musl_mutex.c's glibc-compatible one.
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
 * musl's dlinfo() knows only RTLD_DI_LINKMAP and sets the thread's
 * dlerror() for anything else, which the program would then read as its
 * own error. musl has one namespace: RTLD_DI_LMID is answered here.
 */
static inline int gs__musl_dlinfo(void *handle, int request, void *arg)
{
	if (request == RTLD_DI_LMID) {
		*(Lmid_t *)arg = LM_ID_BASE;
		return 0;
	}
	return dlinfo(handle, request, arg);
}
#define dlinfo gs__musl_dlinfo

/*
 * The C library's exported symbol `name`, whatever `handle` and `version`
 * say: musl has one namespace and no symbol versions, and the shim asks
 * only for the dlsym that comes after itself (RTLD_NEXT), which is the C
 * library's. NULL when the C library cannot be read.
 */
void *dlvsym(void *handle, const char *name, const char *version);

/*
 * Every mutex of the musl build is a glibc mutex (musl_mutex.c): the
 * region's robust shared locks are made and taken by glibc processes too.
 */
#include <pthread.h>
int gs__gm_lock(pthread_mutex_t *m);
int gs__gm_trylock(pthread_mutex_t *m);
int gs__gm_timedlock(pthread_mutex_t *restrict m,
                     const struct timespec *restrict at);
int gs__gm_unlock(pthread_mutex_t *m);
int gs__gm_consistent(pthread_mutex_t *m);
int gs__gm_init(pthread_mutex_t *restrict m,
                const pthread_mutexattr_t *restrict a);
int gs__gm_destroy(pthread_mutex_t *m);
int gs__gm_attr_init(pthread_mutexattr_t *a);
int gs__gm_attr_destroy(pthread_mutexattr_t *a);
int gs__gm_attr_setpshared(pthread_mutexattr_t *a, int shared);
int gs__gm_attr_setrobust(pthread_mutexattr_t *a, int robust);
#define pthread_mutex_lock             gs__gm_lock
#define pthread_mutex_trylock          gs__gm_trylock
#define pthread_mutex_timedlock        gs__gm_timedlock
#define pthread_mutex_unlock           gs__gm_unlock
#define pthread_mutex_consistent       gs__gm_consistent
#define pthread_mutex_init             gs__gm_init
#define pthread_mutex_destroy          gs__gm_destroy
#define pthread_mutexattr_init         gs__gm_attr_init
#define pthread_mutexattr_destroy      gs__gm_attr_destroy
#define pthread_mutexattr_setpshared   gs__gm_attr_setpshared
#define pthread_mutexattr_setrobust    gs__gm_attr_setrobust
#endif

#endif
