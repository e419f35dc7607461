/*
 * driverfiles.h - the NVIDIA driver's user-space files a container needs,
 * found on the host the way `nvidia-ctk cdi generate` finds them, so that a
 * claim's CDI device carries them and a container runs without the NVIDIA
 * container runtime:
 *   libraries  from the ldconfig cache (`ldconfig -p`: the 64-bit entries
 *              whose soname starts with one of GS_KDRV_LIBS), or, with
 *              `dirs`, every <name>.so.* in those directories (the sim's
 *              libraries play the driver's part that way)
 *   binaries   GS_KDRV_BINS found in `dirs`, else in /usr/bin,
 *              /usr/local/bin, /usr/local/nvidia/bin, /bin
 * Also whether NVIDIA's own CDI spec (kind nvidia.com/gpu, written by
 * nvidia-ctk) names a GPU: then the claim references that device instead.
 *
 * Ownership: a struct gs_kdrv_files owns its strings; gs_kdrv_files_fini.
 */
#ifndef GS_KUBE_DRIVERFILES_H
#define GS_KUBE_DRIVERFILES_H

#include <stdbool.h>
#include <stddef.h>

#include "gs/err.h"

#define GS_KDRV_MAX 64

struct gs_kdrv_files {
	char *libs[GS_KDRV_MAX]; /* absolute host paths */
	size_t n_libs;
	char *bins[GS_KDRV_MAX];
	size_t n_bins;
};

/* Pure: the libraries named in `ldconfig -p` output. OUT: *out (add to). */
gs_err gs_kdrv_from_ldcache(const char *text, struct gs_kdrv_files *out,
                            struct gs_errbuf *eb);

/*
 * Finds the files: `dirs` (a ':' list) when not NULL/empty, else the
 * ldconfig cache (runs `ldconfig -p`) and the standard binary dirs.
 * `root` (NULL or "/": this filesystem) is where the host's filesystem is
 * mounted when the plugin runs in a container ("/host"): the cache is
 * <root>/etc/ld.so.cache, files are looked for under <root>, and the paths
 * returned are the host's (without <root>), as the runtime sees them.
 * GS_ERR_NOT_FOUND when no libcuda is found (no driver). OUT: *out.
 */
gs_err gs_kdrv_find(const char *dirs, const char *root,
                    struct gs_kdrv_files *out, struct gs_errbuf *eb);
void gs_kdrv_files_fini(struct gs_kdrv_files *f);

/*
 * The CDI device ID "nvidia.com/gpu=<uuid>" when a spec file of NVIDIA's
 * (name starting "nvidia", in one of the ':' list `cdi_dirs`) is for kind
 * nvidia.com/gpu and names `uuid`. OUT: buf. false when none does.
 */
bool gs_kdrv_nvidia_cdi(const char *cdi_dirs, const char *uuid, char *buf,
                        size_t len);

#endif
