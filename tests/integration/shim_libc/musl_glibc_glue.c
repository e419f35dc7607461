/*
 * musl_glibc_glue.c - a test stand-in for gcompat (Adélie/Alpine's glibc
 * compatibility layer for musl, 1.1.0), which Alpine users install to load
 * glibc-built libraries such as a GPU driver's. Like gcompat it is built
 * as ld-linux-x86-64.so.2, the glibc loader a glibc-built library lists as
 * needed, and defines what musl lacks; here only the three functions the
 * sim's glibc-built libcuda.so.1 and Debian's libzstd.so.1 call:
 * __register_atfork, __fprintf_chk and pthread_mutex_clocklock. Every other
 * name resolves to musl itself (musl ignores symbol versions).
 *
 * Used by musl_program_under_the_shim_keeps_its_cap.sh only.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

int __register_atfork(void (*prepare)(void), void (*parent)(void),
                      void (*child)(void), void *dso);
int __fprintf_chk(FILE *f, int flag, const char *fmt, ...);
int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock,
                            const struct timespec *at);

int __register_atfork(void (*prepare)(void), void (*parent)(void),
                      void (*child)(void), void *dso)
{
	(void)dso;
	return pthread_atfork(prepare, parent, child);
}

int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
	va_list ap;
	int n;

	(void)flag;
	va_start(ap, fmt);
	n = vfprintf(f, fmt, ap);
	va_end(ap);
	return n;
}

/* The deadline on `clock`, moved onto CLOCK_REALTIME for timedlock. */
int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clock,
                            const struct timespec *at)
{
	struct timespec now, real, dl;
	long long left;

	if (clock == CLOCK_REALTIME)
		return pthread_mutex_timedlock(m, at);
	if (clock_gettime(clock, &now) != 0 ||
	    clock_gettime(CLOCK_REALTIME, &real) != 0)
		return EINVAL;
	left = (at->tv_sec - now.tv_sec) * 1000000000LL +
	       (at->tv_nsec - now.tv_nsec);
	if (left < 0)
		left = 0;
	left += real.tv_nsec;
	dl.tv_sec = real.tv_sec + (time_t)(left / 1000000000LL);
	dl.tv_nsec = (long)(left % 1000000000LL);
	return pthread_mutex_timedlock(m, &dl);
}
