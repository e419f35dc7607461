/*
 * elflibc.h - what an ELF file asks of, or offers as, the C library: its
 * interpreter (glibc's ld-linux or musl's ld-musl), the newest GLIBC_x.y
 * symbol version it needs (.gnu.version_r) and, for a libc.so.6, the
 * newest it defines (.gnu.version_d). `gpuslice doctor` compares a
 * program's or image's figures with the shim's (cli/cmd_doctor.c), and
 * the Kubernetes CDI hook a container's (gs/rootlibc.h). In common/ so
 * both share one reader.
 *
 * 64-bit little-endian ELF only (x86-64, aarch64); anything else is
 * GS_ERR_INVALID with the reason. The file is mapped read-only and
 * unmapped before returning; nothing is allocated for the caller.
 */
#ifndef GS_ELFLIBC_H
#define GS_ELFLIBC_H

#include <stdbool.h>

#include "gs/err.h"

struct gs_elf_libc {
	bool dynamic;      /* has a dynamic section (LD_PRELOAD can reach it) */
	bool musl;         /* its interpreter is musl's ld-musl-*.so.1 */
	char interp[128];  /* PT_INTERP, "" for none */
	int need_major;    /* newest GLIBC_x.y needed; 0.0 = none */
	int need_minor;
	int def_major;     /* newest GLIBC_x.y defined (libc.so.6); 0.0 */
	int def_minor;
};

/* Reads `path`. OUT: *out (zeroed first). GS_ERR_IO when it cannot be
 * read, GS_ERR_INVALID when it is not an ELF file this reads. */
gs_err gs_elf_libc_read(const char *path, struct gs_elf_libc *out,
                        struct gs_errbuf *eb);

#endif
