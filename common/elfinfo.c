/*
 * elfinfo.c - reads which dynamic loader, and so which C library, a
 * program file asks for (include/gs/elfinfo.h).
 *
 * Only what the kernel itself reads to start a program: a "#!" line, the
 * ELF header and the program headers, of which PT_INTERP. Everything is
 * read with pread at the offsets the file gives, each bounded (a program
 * header table of at most PHNUM_MAX entries, an interpreter path of at
 * most GS_ELF_INTERP_MAX bytes, NUL included), so a hostile or cut-short
 * file is a GS_ERR_PARSE, never an overread. Nothing is kept open or
 * allocated.
 */
#include "gs/elfinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#define HOPS_MAX  4   /* "#!" interpreters followed, as binfmt_script */
#define PHNUM_MAX 512 /* program headers read; real programs have ~15 */
#define PT_INTERP_TYPE 3

static uint16_t rd16(const unsigned char *p, bool le)
{
	return le ? (uint16_t)(p[0] | p[1] << 8) : (uint16_t)(p[1] | p[0] << 8);
}

static uint32_t rd32(const unsigned char *p, bool le)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[le ? i : 3 - i] << (8 * i);
	return v;
}

static uint64_t rd64(const unsigned char *p, bool le)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v |= (uint64_t)p[le ? i : 7 - i] << (8 * i);
	return v;
}

/* Exactly n bytes at off, or GS_ERR_PARSE when the file ends first. */
static gs_err read_at(int fd, void *buf, size_t n, uint64_t off,
                      const char *path, struct gs_errbuf *eb)
{
	size_t got = 0;

	if (off > (uint64_t)LLONG_MAX - n)
		return gs_fail(eb, GS_ERR_PARSE, "%s: offset %llu out of range",
		               path, (unsigned long long)off);
	while (got < n) {
		ssize_t k = pread(fd, (char *)buf + got, n - got,
		                  (off_t)(off + got));

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			int e = errno;

			return gs_fail(eb, GS_ERR_IO, "%s: read: %s", path,
			               strerror(e));
		}
		if (k == 0)
			return gs_fail(eb, GS_ERR_PARSE,
			               "%s: cut short (%zu bytes wanted at offset %llu)",
			               path, n, (unsigned long long)off);
		got += (size_t)k;
	}
	return GS_OK;
}

/* The interpreter of a "#!" line in head[0..n) into out. */
static gs_err shebang(const unsigned char *head, size_t n, char *out,
                      size_t cap, const char *path, struct gs_errbuf *eb)
{
	size_t i = 2, len = 0;

	while (i < n && (head[i] == ' ' || head[i] == '\t'))
		i++;
	while (i < n && head[i] != ' ' && head[i] != '\t' && head[i] != '\n' &&
	       head[i] != '\0') {
		if (len + 1 >= cap)
			return gs_fail(eb, GS_ERR_PARSE,
			               "%s: \"#!\" interpreter path too long", path);
		out[len++] = (char)head[i++];
	}
	if (len == 0)
		return gs_fail(eb, GS_ERR_PARSE, "%s: \"#!\" names no interpreter",
		               path);
	out[len] = '\0';
	return GS_OK;
}

/* Reads the ELF file open on fd (head: its first n bytes) into info. */
static gs_err read_elf(int fd, const unsigned char *head, size_t n,
                       struct gs_elf_info *info, const char *path,
                       struct gs_errbuf *eb)
{
	bool is64, le;
	uint64_t phoff, off, size;
	uint16_t phentsize, phnum;
	unsigned char ph[56];
	gs_err err;

	if (n < 52 || memcmp(head, "\177ELF", 4) != 0 ||
	    (head[4] != 1 && head[4] != 2) || (head[5] != 1 && head[5] != 2))
		return gs_fail(eb, GS_ERR_PARSE, "%s: not an ELF file", path);
	is64 = head[4] == 2;
	le = head[5] == 1;
	if (is64 && n < 64)
		return gs_fail(eb, GS_ERR_PARSE, "%s: ELF header cut short", path);
	info->is_64 = is64;
	info->machine = rd16(head + 18, le);
	phoff = is64 ? rd64(head + 32, le) : rd32(head + 28, le);
	phentsize = rd16(head + (is64 ? 54 : 42), le);
	phnum = rd16(head + (is64 ? 56 : 44), le);
	if (phnum > PHNUM_MAX)
		return gs_fail(eb, GS_ERR_PARSE, "%s: %u program headers (at most %d read)",
		               path, (unsigned)phnum, PHNUM_MAX);
	if (phnum > 0 && phentsize < (is64 ? 56 : 32))
		return gs_fail(eb, GS_ERR_PARSE, "%s: program header size %u too small",
		               path, (unsigned)phentsize);
	for (uint16_t i = 0; i < phnum; i++) {
		err = read_at(fd, ph, is64 ? 56 : 32,
		              phoff + (uint64_t)i * phentsize, path, eb);
		if (err != GS_OK)
			return err;
		if (rd32(ph, le) != PT_INTERP_TYPE)
			continue;
		off = is64 ? rd64(ph + 8, le) : rd32(ph + 4, le);
		size = is64 ? rd64(ph + 32, le) : rd32(ph + 16, le);
		if (size == 0 || size > GS_ELF_INTERP_MAX)
			return gs_fail(eb, GS_ERR_PARSE, "%s: interpreter path of %llu bytes",
			               path, (unsigned long long)size);
		err = read_at(fd, info->interp, (size_t)size, off, path, eb);
		if (err != GS_OK)
			return err;
		if (memchr(info->interp, '\0', (size_t)size) == NULL)
			return gs_fail(eb, GS_ERR_PARSE, "%s: interpreter path not terminated",
			               path);
		break;
	}
	info->libc = gs_elf_libc_of(info->interp);
	return GS_OK;
}

gs_err gs_elf_read(const char *path, struct gs_elf_info *info,
                   struct gs_errbuf *eb)
{
	char cur[PATH_MAX], next[PATH_MAX];
	unsigned char head[GS_ELF_INTERP_MAX + 2];
	gs_err err;

	memset(info, 0, sizeof(*info));
	if (strlen(path) >= sizeof(cur))
		return gs_fail(eb, GS_ERR_INVALID, "program path too long");
	(void)strcpy(cur, path);
	for (;;) {
		int fd = open(cur, O_RDONLY | O_CLOEXEC);
		ssize_t n;

		if (fd < 0) {
			int e = errno;

			return gs_fail(eb, e == ENOENT || e == ENOTDIR ? GS_ERR_NOT_FOUND
			                   : e == EACCES ? GS_ERR_PERM : GS_ERR_IO,
			               "%s: %s", cur, strerror(e));
		}
		do
			n = pread(fd, head, sizeof(head), 0);
		while (n < 0 && errno == EINTR);
		if (n < 0) {
			int e = errno;

			(void)close(fd);
			return gs_fail(eb, GS_ERR_IO, "%s: read: %s", cur,
			               strerror(e));
		}
		if (n >= 2 && head[0] == '#' && head[1] == '!') {
			(void)close(fd);
			if (info->hops == HOPS_MAX) {
				err = gs_fail(eb, GS_ERR_PARSE, "%s: \"#!\" interpreters nested deeper than %d",
				              path, HOPS_MAX);
				break;
			}
			err = shebang(head, (size_t)n, next, sizeof(next), cur, eb);
			if (err != GS_OK)
				break;
			(void)memcpy(cur, next, sizeof(cur));
			info->hops++;
			continue;
		}
		err = read_elf(fd, head, (size_t)n, info, cur, eb);
		(void)close(fd);
		break;
	}
	if (err != GS_OK)
		memset(info, 0, sizeof(*info));
	return err;
}

enum gs_elf_libc gs_elf_libc_of(const char *interp)
{
	const char *base = strrchr(interp, '/');

	base = base != NULL ? base + 1 : interp;
	if (interp[0] == '\0')
		return GS_ELF_LIBC_NONE;
	if (strncmp(base, "ld-musl-", 8) == 0)
		return GS_ELF_LIBC_MUSL;
	if (strncmp(base, "ld-linux", 8) == 0 || strncmp(base, "ld64.so", 7) == 0 ||
	    strncmp(base, "ld.so", 5) == 0)
		return GS_ELF_LIBC_GLIBC;
	return GS_ELF_LIBC_OTHER;
}

const char *gs_elf_libc_name(enum gs_elf_libc libc)
{
	switch (libc) {
	case GS_ELF_LIBC_NONE:
		return "none";
	case GS_ELF_LIBC_GLIBC:
		return "glibc";
	case GS_ELF_LIBC_MUSL:
		return "musl";
	case GS_ELF_LIBC_OTHER:
		return "other";
	}
	return "other";
}
