/*
 * ptx.h - the kit's kernels as PTX text, embedded at build time from
 * workloads/kernels.ptx (see embed-ptx.cmake and regen-ptx.sh). The string
 * is NUL-terminated, as cuModuleLoadData expects of PTX.
 */
#ifndef GS_WORKLOADS_PTX_H
#define GS_WORKLOADS_PTX_H

extern const char gs_kernels_ptx[];

#endif
