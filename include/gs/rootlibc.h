/*
 * gs/rootlibc.h - the C library a container image's root filesystem
 * ships, and whether the shim can be preloaded there.
 *
 * The shim (libgpuslice.so) is built against glibc and needs a glibc at
 * least as new as the newest GLIBC_x.y symbol version it uses (2.17 for
 * the release build); libgpuslice-musl.so is its musl build. A program
 * whose libc cannot load the shim runs without it: no memory cap, no
 * compute share. `gpuslice doctor --program ROOT` reports this for an
 * image, and the Kubernetes CDI hook (gpuslice-cdi-hook) refuses such a
 * container before it starts.
 *
 * Files are looked up inside the root as the container will see them:
 * symbolic links, absolute ones included, resolve within the root
 * (openat2 RESOLVE_IN_ROOT; on kernels before 5.6, a plain path join).
 */
#ifndef GS_ROOTLIBC_H
#define GS_ROOTLIBC_H

#include <stdbool.h>

#include "gs/err.h"

#define GS_ROOTLIBC_PATH_MAX 64

enum gs_root_libc_kind {
	GS_ROOT_LIBC_GLIBC = 1,
	GS_ROOT_LIBC_MUSL,
};

struct gs_root_libc {
	enum gs_root_libc_kind kind;
	/* The file that told, relative to the root. */
	char path[GS_ROOTLIBC_PATH_MAX];
	/* glibc: the newest GLIBC_x.y its libc.so.6 defines. */
	int glibc_major, glibc_minor;
};

/*
 * Looks for libc.so.6 (Debian/Ubuntu multiarch, lib64, lib) and then for
 * musl's loader under `root`. OUT: *out. GS_ERR_NOT_FOUND when there is
 * neither; GS_ERR_PARSE when a libc.so.6 is there but its version cannot
 * be read; GS_ERR_INVALID when `root` is not a directory. The errbuf
 * says which file and why.
 */
gs_err gs_root_libc_find(const char *root, struct gs_root_libc *out,
                         struct gs_errbuf *eb);

/* Whether shim file `shim_path` is the musl build (by its name). */
bool gs_shim_is_musl(const char *shim_path);

/*
 * Whether a shim (musl build or not, needing GLIBC_need_major.minor)
 * loads with libc `r`. GS_OK, or GS_ERR_UNSUPPORTED with the reason in
 * the errbuf (the container's libc and version, what the shim needs).
 */
gs_err gs_root_libc_can_load(const struct gs_root_libc *r, bool shim_musl,
                             int need_major, int need_minor,
                             struct gs_errbuf *eb);

#endif
