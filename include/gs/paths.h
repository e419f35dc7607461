/*
 * paths.h - where gpuslice's programs find their own files (the shim
 * libgpuslice.so, the simulator's stand-ins) whether they run from a build
 * tree or from an installed prefix. The one place that knows both layouts:
 *
 *   build tree          installed (cmake --install, the .deb)
 *   <b>/bin/gpuslice    <p>/bin/gpuslice, <p>/sbin/gpusliced
 *   <b>/lib/libgpuslice.so   <p>/<libdir>/libgpuslice.so
 *   <b>/sim/            <p>/<libdir>/gpuslice/sim/
 *
 * Every search starts from the running executable (so a tree installed
 * with DESTDIR, or moved, finds its own files), then tries the absolute
 * directory the build was configured to install to. No path of the build
 * tree is compiled in. Programs the tools run (nvidia-cuda-mps-control,
 * nvidia-smi) are found on PATH (gs_find_program in proc.h).
 *
 * Every function writes a NUL-terminated path into out (n bytes) and
 * returns false when nothing was found; none logs.
 */
#ifndef GS_PATHS_H
#define GS_PATHS_H

#include <stdbool.h>
#include <stddef.h>

/* libgpuslice.so: $GPUSLICE_SHIM when set (it must exist), else the
 * first that exists of <exe>/../<libdir>, <exe>/../lib, <exe>/ and the
 * configured library directory. */
bool gs_paths_shim(char *out, size_t n);

/* Where the configured install puts libgpuslice.so, whether or not it is
 * there (<full libdir>/libgpuslice.so). */
void gs_paths_shim_installed(char *out, size_t n);

/* The directory holding the simulator's libcuda.so.1, libnvidia-ml.so.1,
 * nvidia-smi and nvidia-cuda-mps-control: <exe>/../sim (build tree),
 * <exe>/../<libdir>/gpuslice/sim, then <full libdir>/gpuslice/sim; the
 * first that holds libnvidia-ml.so.1. */
bool gs_paths_sim_dir(char *out, size_t n);

/* The configuration file an installed daemon reads by default:
 * <sysconfdir>/gpuslice/gpusliced.yaml (whether or not it exists). */
void gs_paths_config(char *out, size_t n);

#endif
