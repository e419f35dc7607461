/*
 * test_elfinfo.c - the ELF reader (common/elfinfo.c): which loader, so
 * which libc, a program file asks for. Programs are made here byte by
 * byte (ELF32/ELF64, either byte order, with and without PT_INTERP, cut
 * short, hostile offsets), written to a scratch folder and read back; a
 * table of interpreter paths checks the libc each one names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gs/elfinfo.h"

static char dir[] = "/tmp/gs-test-elfinfo.XXXXXX";

static void put(unsigned char *p, uint64_t v, int n, bool le)
{
	for (int i = 0; i < n; i++)
		p[le ? i : n - 1 - i] = (unsigned char)(v >> (8 * i));
}

/*
 * An ELF file: header, then `phnum` program headers (a PT_LOAD, then a
 * PT_INTERP holding `interp` when it is not NULL), then the path. Returns
 * its size in buf.
 */
static size_t make_elf(unsigned char *buf, bool is64, bool le,
                       const char *interp)
{
	size_t eh = is64 ? 64 : 52, ph = is64 ? 56 : 32;
	int phnum = interp ? 2 : 1;
	size_t at = eh + ph * (size_t)phnum;
	size_t ilen = interp ? strlen(interp) + 1 : 0;

	memset(buf, 0, at + ilen);
	memcpy(buf, "\177ELF", 4);
	buf[4] = is64 ? 2 : 1;
	buf[5] = le ? 1 : 2;
	buf[6] = 1;
	put(buf + 16, 2, 2, le);              /* ET_EXEC */
	put(buf + 18, is64 ? 62 : 3, 2, le); /* EM_X86_64 / EM_386 */
	put(buf + (is64 ? 32 : 28), eh, is64 ? 8 : 4, le);
	put(buf + (is64 ? 54 : 42), ph, 2, le);
	put(buf + (is64 ? 56 : 44), (uint64_t)phnum, 2, le);
	put(buf + eh, 1, 4, le); /* PT_LOAD */
	if (interp) {
		unsigned char *p = buf + eh + ph;

		put(p, 3, 4, le); /* PT_INTERP */
		put(p + (is64 ? 8 : 4), at, is64 ? 8 : 4, le);
		put(p + (is64 ? 32 : 16), ilen, is64 ? 8 : 4, le);
		memcpy(buf + at, interp, ilen);
	}
	return at + ilen;
}

static const char *write_file(const char *name, const void *data, size_t n)
{
	static char path[256];
	FILE *f;

	(void)snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	return path;
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	(void)snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void elf_read_finds_the_interpreter_in_every_class_and_byte_order(
    void **state)
{
	static const struct {
		bool is64, le;
		const char *interp;
		enum gs_elf_libc libc;
	} rows[] = {
	    {true, true, "/lib64/ld-linux-x86-64.so.2", GS_ELF_LIBC_GLIBC},
	    {true, true, "/lib/ld-musl-x86_64.so.1", GS_ELF_LIBC_MUSL},
	    {false, true, "/lib/ld-linux.so.2", GS_ELF_LIBC_GLIBC},
	    {false, true, "/lib/ld-musl-i386.so.1", GS_ELF_LIBC_MUSL},
	    {true, false, "/lib64/ld64.so.1", GS_ELF_LIBC_GLIBC},
	    {false, false, "/lib/ld-musl-mips.so.1", GS_ELF_LIBC_MUSL},
	    {true, true, "/system/bin/linker64", GS_ELF_LIBC_OTHER},
	    {true, true, NULL, GS_ELF_LIBC_NONE},
	    {false, false, NULL, GS_ELF_LIBC_NONE},
	};
	unsigned char buf[512];

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct gs_elf_info info;
		struct gs_errbuf eb = {0};
		size_t n = make_elf(buf, rows[i].is64, rows[i].le,
		                    rows[i].interp);
		const char *p = write_file("prog", buf, n);

		assert_int_equal(gs_elf_read(p, &info, &eb), GS_OK);
		assert_string_equal(info.interp,
		                    rows[i].interp ? rows[i].interp : "");
		assert_int_equal(info.libc, rows[i].libc);
		assert_int_equal(info.is_64, rows[i].is64);
		assert_int_equal(info.machine, rows[i].is64 ? 62 : 3);
		assert_int_equal(info.hops, 0);
	}
}

static void elf_read_follows_a_script_to_its_interpreter(void **state)
{
	unsigned char buf[512];
	char script[600], script2[600], elf[300];
	struct gs_elf_info info;
	struct gs_errbuf eb = {0};
	size_t n = make_elf(buf, true, true, "/lib/ld-musl-x86_64.so.1");

	(void)state;
	(void)snprintf(elf, sizeof(elf), "%s", write_file("sh", buf, n));
	n = (size_t)snprintf(script, sizeof(script), "#! %s -e\necho hi\n", elf);
	(void)write_file("run.sh", script, n);
	n = (size_t)snprintf(script2, sizeof(script2), "#!%s/run.sh\n", dir);
	assert_int_equal(gs_elf_read(write_file("outer", script2, n), &info, &eb),
	                 GS_OK);
	assert_int_equal(info.libc, GS_ELF_LIBC_MUSL);
	assert_int_equal(info.hops, 2);
}

static void elf_read_refuses_what_is_not_a_program(void **state)
{
	unsigned char buf[512];
	size_t n = make_elf(buf, true, true, "/lib64/ld-linux-x86-64.so.2");
	struct gs_elf_info info;
	struct gs_errbuf eb = {0};
	char loop[300];
	const char *p;

	(void)state;
	/* Missing file, text, an empty "#!", an ELF cut inside its path. */
	(void)snprintf(loop, sizeof(loop), "%s/none", dir);
	assert_int_equal(gs_elf_read(loop, &info, &eb), GS_ERR_NOT_FOUND);
	assert_int_equal(gs_elf_read(write_file("txt", "hello\n", 6), &info,
	                             &eb),
	                 GS_ERR_PARSE);
	assert_int_equal(gs_elf_read(write_file("bang", "#!\n", 3), &info, &eb),
	                 GS_ERR_PARSE);
	assert_int_equal(gs_elf_read(write_file("cut", buf, n - 4), &info, &eb),
	                 GS_ERR_PARSE);
	assert_string_equal(info.interp, "");
	/* A script that runs itself. */
	(void)snprintf(loop, sizeof(loop), "#!%s/self\n", dir);
	p = write_file("self", loop, strlen(loop));
	assert_int_equal(gs_elf_read(p, &info, &eb), GS_ERR_PARSE);
}

static void elf_read_bounds_hostile_headers(void **state)
{
	unsigned char buf[512];
	size_t n;
	struct gs_elf_info info;
	struct gs_errbuf eb = {0};

	(void)state;
	/* An interpreter length past the cap. */
	n = make_elf(buf, true, true, "/lib64/ld-linux-x86-64.so.2");
	put(buf + 64 + 56 + 32, 1u << 20, 8, true);
	assert_int_equal(gs_elf_read(write_file("big", buf, n), &info, &eb),
	                 GS_ERR_PARSE);
	/* A path without its NUL. */
	n = make_elf(buf, true, true, "/lib64/ld-linux-x86-64.so.2");
	put(buf + 64 + 56 + 32, strlen("/lib64/ld-linux-x86-64.so.2"), 8, true);
	assert_int_equal(gs_elf_read(write_file("nonul", buf, n), &info, &eb),
	                 GS_ERR_PARSE);
	/* Program headers at an offset past any file. */
	n = make_elf(buf, true, true, "/lib64/ld-linux-x86-64.so.2");
	put(buf + 32, UINT64_MAX - 8, 8, true);
	assert_int_equal(gs_elf_read(write_file("far", buf, n), &info, &eb),
	                 GS_ERR_PARSE);
	/* Tens of thousands of program headers. */
	n = make_elf(buf, true, true, "/lib64/ld-linux-x86-64.so.2");
	put(buf + 56, 40000, 2, true);
	assert_int_equal(gs_elf_read(write_file("many", buf, n), &info, &eb),
	                 GS_ERR_PARSE);
}

static void elf_libc_of_names_the_loader_by_file_name(void **state)
{
	static const struct {
		const char *interp;
		enum gs_elf_libc libc;
	} rows[] = {
	    {"/lib64/ld-linux-x86-64.so.2", GS_ELF_LIBC_GLIBC},
	    {"/lib/ld-linux-aarch64.so.1", GS_ELF_LIBC_GLIBC},
	    {"/lib/ld-linux-armhf.so.3", GS_ELF_LIBC_GLIBC},
	    {"/lib64/ld64.so.2", GS_ELF_LIBC_GLIBC},
	    {"/usr/lib/ld.so.1", GS_ELF_LIBC_GLIBC},
	    {"/lib/ld-musl-x86_64.so.1", GS_ELF_LIBC_MUSL},
	    {"/lib/ld-musl-aarch64.so.1", GS_ELF_LIBC_MUSL},
	    {"ld-musl-x86_64.so.1", GS_ELF_LIBC_MUSL},
	    {"/nix/store/x-glibc/lib/ld-linux-x86-64.so.2", GS_ELF_LIBC_GLIBC},
	    {"/system/bin/linker64", GS_ELF_LIBC_OTHER},
	    {"", GS_ELF_LIBC_NONE},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		assert_int_equal(gs_elf_libc_of(rows[i].interp), rows[i].libc);
	assert_string_equal(gs_elf_libc_name(GS_ELF_LIBC_MUSL), "musl");
	assert_string_equal(gs_elf_libc_name(GS_ELF_LIBC_GLIBC), "glibc");
	assert_string_equal(gs_elf_libc_name(GS_ELF_LIBC_NONE), "none");
}

/* The programs on this machine: the test binary itself is glibc's. */
static void elf_read_reads_this_test_binary_as_glibc(void **state)
{
	struct gs_elf_info info;
	struct gs_errbuf eb = {0};

	(void)state;
	assert_int_equal(gs_elf_read("/proc/self/exe", &info, &eb), GS_OK);
	assert_int_equal(info.libc, GS_ELF_LIBC_GLIBC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        elf_read_finds_the_interpreter_in_every_class_and_byte_order),
	    cmocka_unit_test(elf_read_follows_a_script_to_its_interpreter),
	    cmocka_unit_test(elf_read_refuses_what_is_not_a_program),
	    cmocka_unit_test(elf_read_bounds_hostile_headers),
	    cmocka_unit_test(elf_libc_of_names_the_loader_by_file_name),
	    cmocka_unit_test(elf_read_reads_this_test_binary_as_glibc),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
