/*
 * elfinfo.h - which C library a program runs on, read from its file: the
 * ELF program interpreter (PT_INTERP) names the dynamic loader, and the
 * loader names the libc (/lib64/ld-linux-x86-64.so.2: glibc;
 * /lib/ld-musl-x86_64.so.1: musl). `gpuslice run` uses it to preload the
 * shim built for that libc (libgpuslice.so or libgpuslice-musl.so).
 *
 * Reads ELF32 and ELF64 of either byte order; a script ("#!INTERP") is
 * read through its interpreter, a few levels deep. Nothing is allocated.
 */
#ifndef GS_ELFINFO_H
#define GS_ELFINFO_H

#include <stdbool.h>
#include <stdint.h>

#include "gs/err.h"

enum gs_elf_libc {
	GS_ELF_LIBC_NONE,  /* no interpreter: static, or not a program */
	GS_ELF_LIBC_GLIBC, /* ld-linux*.so*, ld64.so*, ld.so.1 */
	GS_ELF_LIBC_MUSL,  /* ld-musl-*.so* */
	GS_ELF_LIBC_OTHER, /* an interpreter of some other loader */
};

#define GS_ELF_INTERP_MAX 256

struct gs_elf_info {
	char interp[GS_ELF_INTERP_MAX]; /* PT_INTERP, "" when there is none */
	enum gs_elf_libc libc;
	bool is_64;         /* ELFCLASS64 */
	uint16_t machine;   /* e_machine (EM_X86_64 = 62, EM_AARCH64 = 183) */
	unsigned int hops;  /* "#!" interpreters followed to reach the ELF */
};

/*
 * Reads the program file `path` (a path, not a name to look up in PATH).
 * OUT: *info. GS_ERR_NOT_FOUND (no such file), GS_ERR_PERM (not
 * readable), GS_ERR_PARSE (not an ELF file or script, cut short, or
 * scripts nested too deep), GS_ERR_IO; *info is then zeroed.
 */
gs_err gs_elf_read(const char *path, struct gs_elf_info *info,
                   struct gs_errbuf *eb);

/* The libc an interpreter path belongs to (by its file name). */
enum gs_elf_libc gs_elf_libc_of(const char *interp);

/* "none", "glibc", "musl" or "other". */
const char *gs_elf_libc_name(enum gs_elf_libc libc);

#endif
