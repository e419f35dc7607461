/*
 * rootlibc.c - the C library an image root ships and whether the shim
 * loads with it (see gs/rootlibc.h). The file lists below are where
 * Debian, Ubuntu, RHEL-likes and Alpine put them.
 */
#include "gs/rootlibc.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gs/elflibc.h"

/* Older C libraries' headers (glibc 2.31's, where the shim's tests build
 * this file too) lack the number; openat2 is 437 on every architecture. */
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

static const char *const glibc_files[] = {
    "lib/x86_64-linux-gnu/libc.so.6",  "usr/lib/x86_64-linux-gnu/libc.so.6",
    "lib/aarch64-linux-gnu/libc.so.6", "usr/lib/aarch64-linux-gnu/libc.so.6",
    "lib64/libc.so.6",                 "usr/lib64/libc.so.6",
    "lib/libc.so.6",                   "usr/lib/libc.so.6"};

static const char *const musl_files[] = {
    "lib/ld-musl-x86_64.so.1", "lib/ld-musl-aarch64.so.1",
    "usr/lib/ld-musl-x86_64.so.1", "usr/lib/libc.musl-x86_64.so.1"};

/*
 * Opens `rel` inside the directory `dirfd` as if it were "/": links
 * resolve within it. -1 with errno when it is not there (or not a
 * regular file: ENOENT too, that is not a libc).
 */
static int open_in_root(int dirfd, const char *root, const char *rel)
{
	struct open_how how = {.flags = O_RDONLY | O_CLOEXEC,
	                       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	struct stat st;
	int fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));

	if (fd < 0 && (errno == ENOSYS || errno == EPERM)) {
		/* Before Linux 5.6 (or a seccomp filter that denies it): the
		 * plain join; an absolute link then points at the host. */
		char path[4096];

		(void)snprintf(path, sizeof(path), "%s/%s", root, rel);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		(void)close(fd);
		errno = ENOENT;
		return -1;
	}
	return fd;
}

gs_err gs_root_libc_find(const char *root, struct gs_root_libc *out,
                         struct gs_errbuf *eb)
{
	int dirfd;

	memset(out, 0, sizeof(*out));
	dirfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		int e = errno;

		return gs_fail(eb, GS_ERR_INVALID,
		               "root filesystem %s cannot be opened: %s", root,
		               strerror(e));
	}
	for (size_t i = 0; i < sizeof(glibc_files) / sizeof(glibc_files[0]);
	     i++) {
		struct gs_elf_libc e;
		char proc[64];
		gs_err err;
		int fd = open_in_root(dirfd, root, glibc_files[i]);

		if (fd < 0)
			continue;
		(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		err = gs_elf_libc_read(proc, &e, NULL);
		(void)close(fd);
		(void)close(dirfd);
		(void)snprintf(out->path, sizeof(out->path), "%s",
		               glibc_files[i]);
		if (err != GS_OK || e.def_major == 0)
			return gs_fail(eb, GS_ERR_PARSE,
			               "%s/%s: cannot tell its glibc version (%s)",
			               root, glibc_files[i],
			               err != GS_OK ? gs_strerror(err)
			                            : "it defines no GLIBC_x.y");
		out->kind = GS_ROOT_LIBC_GLIBC;
		out->glibc_major = e.def_major;
		out->glibc_minor = e.def_minor;
		return GS_OK;
	}
	for (size_t i = 0; i < sizeof(musl_files) / sizeof(musl_files[0]);
	     i++) {
		int fd = open_in_root(dirfd, root, musl_files[i]);

		if (fd < 0)
			continue;
		(void)close(fd);
		(void)close(dirfd);
		out->kind = GS_ROOT_LIBC_MUSL;
		(void)snprintf(out->path, sizeof(out->path), "%s",
		               musl_files[i]);
		return GS_OK;
	}
	(void)close(dirfd);
	return gs_fail(eb, GS_ERR_NOT_FOUND,
	               "%s holds no libc.so.6 and no musl loader in the usual places (a static or distroless-static image)",
	               root);
}

bool gs_shim_is_musl(const char *shim_path)
{
	const char *base = strrchr(shim_path, '/');

	base = base ? base + 1 : shim_path;
	return strstr(base, "musl") != NULL ||
	       strstr(shim_path, "/musl/") != NULL;
}

gs_err gs_root_libc_can_load(const struct gs_root_libc *r, bool shim_musl,
                             int need_major, int need_minor,
                             struct gs_errbuf *eb)
{
	if (r->kind == GS_ROOT_LIBC_MUSL && !shim_musl)
		return gs_fail(eb, GS_ERR_UNSUPPORTED,
		               "the container uses musl (%s) but the gpuslice shim is built for glibc: it would not load and the container would run with no GPU limits",
		               r->path);
	if (r->kind == GS_ROOT_LIBC_GLIBC && shim_musl)
		return gs_fail(eb, GS_ERR_UNSUPPORTED,
		               "the container uses glibc %d.%d (%s) but the gpuslice shim given is the musl build: it would not load and the container would run with no GPU limits",
		               r->glibc_major, r->glibc_minor, r->path);
	if (r->kind == GS_ROOT_LIBC_GLIBC &&
	    (need_major > r->glibc_major ||
	     (need_major == r->glibc_major && need_minor > r->glibc_minor)))
		return gs_fail(eb, GS_ERR_UNSUPPORTED,
		               "the container's glibc is %d.%d (%s) but the gpuslice shim needs GLIBC_%d.%d: it would not load and the container would run with no GPU limits",
		               r->glibc_major, r->glibc_minor, r->path,
		               need_major, need_minor);
	return GS_OK;
}
