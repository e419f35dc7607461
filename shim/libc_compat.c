/*
 * libc_compat.c - lets libgpuslice.so load under every C library its
 * users' programs run on: glibc from 2.17 (CentOS 7, UBI 8, Ubuntu 20.04,
 * Amazon Linux 2, Debian bullseye) and musl (Alpine).
 *
 * glibc. A shared object needs each symbol at the version it was bound to
 * when it was linked, and the linker binds to the build machine's newest:
 * on glibc >= 2.34 the dl* and pthread_* functions moved into libc.so.6
 * under a new GLIBC_2.34 version, and stat/fstat/lstat became functions
 * of GLIBC_2.33 (before, <sys/stat.h> turned them into __xstat calls).
 * An older ld.so refuses such an object, and an LD_PRELOAD it refuses is
 * "ignored": the workload runs with no limits at all. So each such
 * function the shim calls is defined here, hidden (never exported, see
 * exports.map.c), as a tail call to the oldest version glibc has kept of
 * it, named with .symver; the other sources' calls bind to these at link
 * time. The libraries those old versions lived in before 2.34
 * (libpthread.so.0, libdl.so.2) are on the shim's DT_NEEDED list
 * (shim/CMakeLists.txt), so an older ld.so loads them first. This file
 * is compiled without LTO: a .symver directive binds only the references
 * of its own assembly output, which LTO partitions would move.
 * tests/integration/shim_libc/ checks the result (no symbol newer than
 * GLIBC_2.17) and runs the workload kit under Debian bullseye's glibc.
 * A function the shim starts calling whose default version is newer
 * fails that test by name: add it to GS_GLIBC_FLOOR below.
 *
 * musl. musl has no dlvsym; the shim uses it to find the C library's own
 * dlsym (its own exported dlsym hides it). Here that is read from the C
 * library's dynamic symbol table, found with dl_iterate_phdr.
 */
#include "libc_compat.h"

#include <stddef.h>

#if defined(__GLIBC__) && defined(__x86_64__)

#include <pthread.h>
#include <sys/stat.h>
#include <time.h>

/* X(return type, name, oldest version, (parameters), (arguments)) */
#define GS_GLIBC_FLOOR(X)                                                      \
	X(void *, dlopen, "GLIBC_2.2.5", (const char *f, int m), (f, m))       \
	X(int, dlclose, "GLIBC_2.2.5", (void *h), (h))                         \
	X(char *, dlerror, "GLIBC_2.2.5", (void), ())                          \
	X(void *, dlvsym, "GLIBC_2.2.5",                                       \
	  (void *h, const char *n, const char *v), (h, n, v))                  \
	X(int, dladdr, "GLIBC_2.2.5", (const void *a, Dl_info *i), (a, i))     \
	X(int, dlinfo, "GLIBC_2.3.3", (void *h, int r, void *a), (h, r, a))    \
	X(int, pthread_once, "GLIBC_2.2.5",                                    \
	  (pthread_once_t *o, void (*f)(void)), (o, f))                        \
	X(int, pthread_key_create, "GLIBC_2.2.5",                              \
	  (pthread_key_t *k, void (*d)(void *)), (k, d))                       \
	X(int, pthread_setspecific, "GLIBC_2.2.5",                             \
	  (pthread_key_t k, const void *v), (k, v))                            \
	X(int, pthread_mutex_trylock, "GLIBC_2.2.5", (pthread_mutex_t *m),     \
	  (m))                                                                 \
	X(int, pthread_mutex_timedlock, "GLIBC_2.2.5",                         \
	  (pthread_mutex_t *m, const struct timespec *t), (m, t))              \
	X(int, pthread_mutex_consistent, "GLIBC_2.12", (pthread_mutex_t *m),   \
	  (m))                                                                 \
	X(int, pthread_rwlock_init, "GLIBC_2.2.5",                             \
	  (pthread_rwlock_t *l, const pthread_rwlockattr_t *a), (l, a))        \
	X(int, pthread_rwlock_destroy, "GLIBC_2.2.5", (pthread_rwlock_t *l),   \
	  (l))                                                                 \
	X(int, pthread_rwlock_rdlock, "GLIBC_2.2.5", (pthread_rwlock_t *l),    \
	  (l))                                                                 \
	X(int, pthread_rwlock_wrlock, "GLIBC_2.2.5", (pthread_rwlock_t *l),    \
	  (l))                                                                 \
	X(int, pthread_rwlock_unlock, "GLIBC_2.2.5", (pthread_rwlock_t *l),    \
	  (l))                                                                 \
	X(int, pthread_create, "GLIBC_2.2.5",                                  \
	  (pthread_t *t, const pthread_attr_t *a, void *(*f)(void *),          \
	   void *arg),                                                         \
	  (t, a, f, arg))                                                      \
	X(int, pthread_detach, "GLIBC_2.2.5", (pthread_t t), (t))

/*
 * gs__old_NAME: a reference to NAME@VERSION, of NAME's own type (and
 * attributes); NAME: the hidden forwarder.
 */
#define GS__FLOOR_FWD(ret, name, ver, params, args)                            \
	extern __typeof__(name) gs__old_##name;                                \
	__asm__(".symver gs__old_" #name "," #name "@" ver);                   \
	__attribute__((visibility("hidden"))) ret name params                  \
	{                                                                      \
		return gs__old_##name args;                                    \
	}
GS_GLIBC_FLOOR(GS__FLOOR_FWD)
#undef GS__FLOOR_FWD

/*
 * stat, fstat and lstat have no version before GLIBC_2.33: before it they
 * were the __xstat family with the layout's version as first argument
 * (1 on x86_64, _STAT_VER_LINUX).
 */
#define GS__STAT_VER 1
extern int gs__old_xstat(int ver, const char *path, struct stat *st);
extern int gs__old_lxstat(int ver, const char *path, struct stat *st);
extern int gs__old_fxstat(int ver, int fd, struct stat *st);
__asm__(".symver gs__old_xstat,__xstat@GLIBC_2.2.5");
__asm__(".symver gs__old_lxstat,__lxstat@GLIBC_2.2.5");
__asm__(".symver gs__old_fxstat,__fxstat@GLIBC_2.2.5");

__attribute__((visibility("hidden"))) int stat(const char *path,
                                               struct stat *st)
{
	return gs__old_xstat(GS__STAT_VER, path, st);
}

__attribute__((visibility("hidden"))) int lstat(const char *path,
                                                struct stat *st)
{
	return gs__old_lxstat(GS__STAT_VER, path, st);
}

__attribute__((visibility("hidden"))) int fstat(int fd, struct stat *st)
{
	return gs__old_fxstat(GS__STAT_VER, fd, st);
}

#elif !defined(__GLIBC__)

#include <elf.h>
#include <link.h>
#include <string.h>

struct libc_find {
	const void *inside; /* an address in the C library's text */
	const char *name;
	void *found;
};

/* The number of symbols a DT_GNU_HASH table covers: the last chain's end. */
static size_t gnu_hash_count(const uint32_t *h)
{
	uint32_t nbuckets = h[0], symoffset = h[1], bloom = h[2];
	const uint32_t *buckets =
	    (const uint32_t *)((const ElfW(Addr) *)(h + 4) + bloom);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t last = 0;

	for (uint32_t i = 0; i < nbuckets; i++)
		if (buckets[i] > last)
			last = buckets[i];
	if (last < symoffset)
		return symoffset;
	while ((chain[last - symoffset] & 1) == 0)
		last++;
	return (size_t)last + 1;
}

/*
 * Looks `name` up in one loaded object's dynamic symbol table. musl leaves
 * a loaded object's .dynamic as the file has it: addresses are offsets
 * from the load base.
 */
static void *lookup(const struct dl_phdr_info *info, const char *name)
{
	const ElfW(Dyn) *dyn = NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const uint32_t *hash = NULL, *gnu = NULL;
	size_t n;

	for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr +
			                          info->dlpi_phdr[i].p_vaddr);
	if (dyn == NULL)
		return NULL;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		const void *p = (const void *)(info->dlpi_addr + dyn->d_un.d_ptr);

		if (dyn->d_tag == DT_SYMTAB)
			symtab = p;
		else if (dyn->d_tag == DT_STRTAB)
			strtab = p;
		else if (dyn->d_tag == DT_HASH)
			hash = p;
		else if (dyn->d_tag == DT_GNU_HASH)
			gnu = p;
	}
	if (symtab == NULL || strtab == NULL || (hash == NULL && gnu == NULL))
		return NULL;
	n = hash != NULL ? hash[1] : gnu_hash_count(gnu);
	for (size_t i = 1; i < n; i++)
		if (symtab[i].st_shndx != SHN_UNDEF &&
		    ELF64_ST_TYPE(symtab[i].st_info) == STT_FUNC &&
		    strcmp(strtab + symtab[i].st_name, name) == 0)
			return (void *)(info->dlpi_addr + symtab[i].st_value);
	return NULL;
}

static int find_in_libc(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct libc_find *f = arg;
	uintptr_t at = (uintptr_t)f->inside;

	(void)size;
	for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && at >= lo && at - lo < ph->p_memsz) {
			f->found = lookup(info, f->name);
			return 1;
		}
	}
	return 0;
}

void *dlvsym(void *handle, const char *name, const char *version)
{
	struct libc_find f = {(const void *)&dl_iterate_phdr, name, NULL};

	(void)handle;
	(void)version;
	(void)dl_iterate_phdr(find_in_libc, &f);
	return f.found;
}

#endif
