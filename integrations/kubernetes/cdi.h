/*
 * cdi.h - the CDI spec that puts a container into its gpuslice slice, and
 * writing it where container runtimes look (/var/run/cdi).
 *
 * One spec file per slice, kind "gpuslice.io/slice", one device named
 * after the slice; the DRA CDI device ID is "gpuslice.io/slice=<slice>".
 * Its containerEdits carry what `gpuslice run --slice` gives a process:
 *   env          the slice's env from gpusliced (GPUSLICE_SLICE,
 *                GPUSLICE_RUN_DIR, CUDA_VISIBLE_DEVICES or CUDA_MPS_*),
 *                LD_PRELOAD=<shim>, NVIDIA_VISIBLE_DEVICES=void (so an
 *                NVIDIA container runtime, if there, adds nothing: no
 *                other GPU's nodes) and, with driver libraries,
 *                LD_LIBRARY_PATH=<their directories>:/usr/local/nvidia/lib:
 *                /usr/local/nvidia/lib64 (the last two: where CUDA images
 *                look)
 *   deviceNodes  /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools,
 *                /dev/nvidia<index> and, for a MIG device, its
 *                /dev/nvidia-caps/nvidia-cap<N> (GI and CI access)
 *   mounts       the shim and the region's limits files (read-only), its
 *                shared usage file, the slice's books (its private file,
 *                books/usage.0.<slot>, at <run>/usage.0 for a uid-0
 *                slice: the pod gets its own slice's books and no other
 *                pod's), and the MPS pipe directory when the slice uses
 *                MPS, each at the same path inside the container, so the
 *                env holds; never the whole run directory, which also
 *                holds gpusliced's API socket. The driver's user-space
 *                libraries (driverfiles.h) at their host paths and its
 *                binaries at /usr/bin/<name>, read-only, unless the claim
 *                references NVIDIA's own CDI device for the GPU
 *   hooks        with a hook path: one createContainer hook,
 *                gpuslice-cdi-hook check-libc --shim <shim>, which fails
 *                the container when its libc cannot load the shim (glibc
 *                too old, musl), instead of letting it run unlimited
 *                (cdi_hook.c). Hooks are in CDI since 0.3.0: the version
 *                does not rise.
 *   annotations  none: the version stays as low as the fields allow.
 * cdiVersion is the lowest version that covers the fields used
 * (gs_kcdi_min_version).
 *
 * Ownership: returned json_t are the caller's.
 */
#ifndef GS_KUBE_CDI_H
#define GS_KUBE_CDI_H

#include <jansson.h>

#include "gs/err.h"

#define GS_KCDI_KIND "gpuslice.io/slice"

struct gs_kcdi_input {
	const char *slice;   /* the slice name = CDI device name */
	const json_t *env;   /* gpusliced's slice "env" object (borrowed) */
	const char *run_dir; /* the region directory */
	unsigned owner_uid;  /* the slice's owner: its books' file */
	/* The host path of the slice's books (the daemon's region.books:
	 * <run_dir>/books/usage.0.<slot> for a uid-0 slice's private
	 * books), mounted at <run_dir>/usage.<owner_uid>, where the shim
	 * looks; NULL: <run_dir>/usage.<owner_uid> itself. */
	const char *books_path;
	const char *shim_path; /* libgpuslice.so */
	/* gpuslice-cdi-hook (a host path): added as a createContainer hook
	 * "check-libc --shim <shim_path>"; NULL: no hook. */
	const char *hook_path;
	int gpu_index;         /* /dev/nvidia<index> */
	const int *cap_minors; /* MIG access caps (may be NULL) */
	int n_cap_minors;
	/* The driver's files to mount (absolute host paths; may be none). */
	char *const *driver_libs;
	size_t n_driver_libs;
	char *const *driver_bins;
	size_t n_driver_bins;
};

/* Builds the spec. OUT: *spec. */
gs_err gs_kcdi_build(const struct gs_kcdi_input *in, json_t **spec,
                     struct gs_errbuf *eb);

/* The lowest cdiVersion that covers every field `spec` uses. */
const char *gs_kcdi_min_version(const json_t *spec);

/* Writes "gpuslice.io/slice=<slice>" into buf. */
void gs_kcdi_device_id(const char *slice, char *buf, size_t len);

/* The spec file's path: <dir>/gpuslice.io-slice_<slice>.json. */
void gs_kcdi_path(const char *dir, const char *slice, char *buf, size_t len);

/*
 * Writes `spec` to its path in `dir` atomically: a temp file in the same
 * directory, fsync, rename, fsync of the directory. Creates `dir` when
 * absent. On error nothing is left at the final path that was not there
 * before, and no temp file remains.
 */
gs_err gs_kcdi_write(const char *dir, const char *slice, const json_t *spec,
                     struct gs_errbuf *eb);

/* Removes the spec file; a missing file is success. */
gs_err gs_kcdi_remove(const char *dir, const char *slice, struct gs_errbuf *eb);

/*
 * The MIG access capability minors of GPU `gpu`, instance gi / ci, from a
 * nvidia-caps mig-minors file ("gpu0/gi1/access 12" lines). OUT: minors[0]
 * (GI access), minors[1] (CI access). GS_ERR_NOT_FOUND when the file or a
 * line is absent (no real driver: the sim).
 */
gs_err gs_kcdi_mig_minors(const char *path, int gpu, int gi, int ci,
                          int minors[2], struct gs_errbuf *eb);

#endif
