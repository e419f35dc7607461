/*
 * elflibc.c - reads an ELF file's C library needs (see elflibc.h): the
 * program headers for PT_INTERP and PT_DYNAMIC, the section headers for
 * the GNU version-need and version-definition tables and their string
 * tables. Every offset read from the file is checked against its size
 * before use, and every structure is copied out (memcpy) rather than
 * read in place: the file may be anything a user points doctor at,
 * misaligned offsets included.
 */
#include "gs/elflibc.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct img {
	const unsigned char *p;
	size_t n;
};

/* Whether [off, off+len) lies inside the file. */
static bool inside(const struct img *m, uint64_t off, uint64_t len)
{
	return off <= m->n && len <= m->n - off;
}

/* A NUL-terminated string at off inside the file, or NULL. */
static const char *str_at(const struct img *m, uint64_t off)
{
	if (off >= m->n || memchr(m->p + off, '\0', m->n - off) == NULL)
		return NULL;
	return (const char *)m->p + off;
}

/* "GLIBC_2.34" -> 2, 34; false for other names. */
static bool glibc_version(const char *name, int *maj, int *min)
{
	int a = 0, b = 0, used = 0;

	if (name == NULL || strncmp(name, "GLIBC_", 6) != 0 ||
	    sscanf(name + 6, "%d.%d%n", &a, &b, &used) != 2)
		return false;
	*maj = a;
	*min = b;
	return true;
}

static void keep_newest(int maj, int min, int *bmaj, int *bmin)
{
	if (maj > *bmaj || (maj == *bmaj && min > *bmin)) {
		*bmaj = maj;
		*bmin = min;
	}
}

/* The string table section `link` names, as an offset and size. */
static bool strtab(const struct img *m, const Elf64_Ehdr *eh, uint32_t link,
                   uint64_t *off, uint64_t *size)
{
	Elf64_Shdr sh;

	if (link >= eh->e_shnum)
		return false;
	memcpy(&sh, m->p + eh->e_shoff + (uint64_t)link * sizeof(sh),
	       sizeof(sh));
	*off = sh.sh_offset;
	*size = sh.sh_size;
	return inside(m, *off, *size);
}

static void read_verneed(const struct img *m, const Elf64_Ehdr *eh,
                         const Elf64_Shdr *sh, struct gs_elf_libc *out)
{
	uint64_t soff, ssize, off = sh->sh_offset;

	if (!strtab(m, eh, sh->sh_link, &soff, &ssize))
		return;
	for (unsigned i = 0; i < sh->sh_info && i < 4096; i++) {
		Elf64_Verneed vn;
		uint64_t aoff;

		if (!inside(m, off, sizeof(vn)))
			return;
		memcpy(&vn, m->p + off, sizeof(vn));
		aoff = off + vn.vn_aux;
		for (unsigned k = 0; k < vn.vn_cnt && k < 4096; k++) {
			Elf64_Vernaux va;
			int a, b;

			if (!inside(m, aoff, sizeof(va)))
				return;
			memcpy(&va, m->p + aoff, sizeof(va));
			if (va.vna_name < ssize &&
			    glibc_version(str_at(m, soff + va.vna_name), &a,
			                  &b))
				keep_newest(a, b, &out->need_major,
				            &out->need_minor);
			if (va.vna_next == 0)
				break;
			aoff += va.vna_next;
		}
		if (vn.vn_next == 0)
			return;
		off += vn.vn_next;
	}
}

static void read_verdef(const struct img *m, const Elf64_Ehdr *eh,
                        const Elf64_Shdr *sh, struct gs_elf_libc *out)
{
	uint64_t soff, ssize, off = sh->sh_offset;

	if (!strtab(m, eh, sh->sh_link, &soff, &ssize))
		return;
	for (unsigned i = 0; i < sh->sh_info && i < 4096; i++) {
		Elf64_Verdef vd;
		Elf64_Verdaux va;
		int a, b;

		if (!inside(m, off, sizeof(vd)))
			return;
		memcpy(&vd, m->p + off, sizeof(vd));
		if (vd.vd_cnt > 0 && inside(m, off + vd.vd_aux, sizeof(va))) {
			memcpy(&va, m->p + off + vd.vd_aux, sizeof(va));
			if (va.vda_name < ssize &&
			    glibc_version(str_at(m, soff + va.vda_name), &a,
			                  &b))
				keep_newest(a, b, &out->def_major,
				            &out->def_minor);
		}
		if (vd.vd_next == 0)
			return;
		off += vd.vd_next;
	}
}

static gs_err parse(const struct img *m, const char *path,
                    struct gs_elf_libc *out, struct gs_errbuf *eb)
{
	Elf64_Ehdr ehdr;
	const Elf64_Ehdr *eh = &ehdr;

	if (m->n < sizeof(ehdr))
		return gs_fail(eb, GS_ERR_INVALID, "%s is not an ELF file",
		               path);
	memcpy(&ehdr, m->p, sizeof(ehdr));
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
		return gs_fail(eb, GS_ERR_INVALID, "%s is not an ELF file",
		               path);
	if (eh->e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return gs_fail(eb, GS_ERR_INVALID,
		               "%s is not a 64-bit little-endian ELF file (doctor reads only those)",
		               path);
	if (eh->e_phentsize == sizeof(Elf64_Phdr) &&
	    inside(m, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr))) {
		for (unsigned i = 0; i < eh->e_phnum; i++) {
			Elf64_Phdr ph;

			memcpy(&ph, m->p + eh->e_phoff + (uint64_t)i * sizeof(ph),
			       sizeof(ph));
			if (ph.p_type == PT_DYNAMIC)
				out->dynamic = true;
			if (ph.p_type == PT_INTERP &&
			    inside(m, ph.p_offset, ph.p_filesz)) {
				size_t len = ph.p_filesz;

				if (len >= sizeof(out->interp))
					len = sizeof(out->interp) - 1;
				memcpy(out->interp, m->p + ph.p_offset, len);
				out->interp[len] = '\0';
				out->interp[strcspn(out->interp, "\n")] = '\0';
			}
		}
	}
	out->musl = strstr(out->interp, "ld-musl") != NULL;
	if (eh->e_shentsize == sizeof(Elf64_Shdr) &&
	    inside(m, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr))) {
		for (unsigned i = 0; i < eh->e_shnum; i++) {
			Elf64_Shdr sh;

			memcpy(&sh, m->p + eh->e_shoff + (uint64_t)i * sizeof(sh),
			       sizeof(sh));
			if (!inside(m, sh.sh_offset, sh.sh_size))
				continue;
			if (sh.sh_type == SHT_GNU_verneed)
				read_verneed(m, eh, &sh, out);
			else if (sh.sh_type == SHT_GNU_verdef)
				read_verdef(m, eh, &sh, out);
		}
	}
	return GS_OK;
}

gs_err gs_elf_libc_read(const char *path, struct gs_elf_libc *out,
                        struct gs_errbuf *eb)
{
	struct img m;
	struct stat st;
	void *map;
	gs_err err;
	int fd, e;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "cannot open %s: %s", path,
		               strerror(e));
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		(void)close(fd);
		return gs_fail(eb, GS_ERR_INVALID,
		               "%s is not a regular, non-empty file", path);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	e = errno;
	(void)close(fd);
	if (map == MAP_FAILED)
		return gs_fail(eb, GS_ERR_IO, "cannot map %s: %s", path,
		               strerror(e));
	m.p = map;
	m.n = (size_t)st.st_size;
	err = parse(&m, path, out, eb);
	(void)munmap(map, (size_t)st.st_size);
	return err;
}
