/* test_safepath.c - directories and files another user could have put a
 * link at (common/safepath.c): refused, never followed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gs/safepath.h"

static char base[64];

static int setup(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/tmp/gs-safepath.XXXXXX");
	return mkdtemp(base) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

static void mkdir_makes_the_path_with_its_mode(void **state)
{
	char d[128];
	struct gs_errbuf eb = {0};
	struct stat st;

	(void)state;
	snprintf(d, sizeof(d), "%s/a/b/c", base);
	assert_int_equal(gs_safe_mkdir(d, 0700, false, &eb), GS_OK);
	assert_int_equal(lstat(d, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0700);
	/* Existing: left as it is, unless forced. */
	assert_int_equal(chmod(d, 0750), 0);
	assert_int_equal(gs_safe_mkdir(d, 0700, false, &eb), GS_OK);
	assert_int_equal(lstat(d, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0750);
	assert_int_equal(gs_safe_mkdir(d, 0755, true, &eb), GS_OK);
	assert_int_equal(lstat(d, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
}

static void mkdir_refuses_a_link_and_leaves_its_target(void **state)
{
	char d[128], target[128];
	struct gs_errbuf eb = {0};
	struct stat st;

	(void)state;
	snprintf(target, sizeof(target), "%s/target", base);
	snprintf(d, sizeof(d), "%s/link", base);
	assert_int_equal(mkdir(target, 0711), 0);
	assert_int_equal(chmod(target, 0711), 0);
	assert_int_equal(symlink(target, d), 0);
	assert_int_equal(gs_safe_mkdir(d, 0755, true, &eb), GS_ERR_PERM);
	assert_non_null(strstr(eb.msg, "symbolic link"));
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0711);
}

static void mkdir_refuses_a_directory_others_may_write(void **state)
{
	char d[128];
	struct gs_errbuf eb = {0};

	(void)state;
	snprintf(d, sizeof(d), "%s/open", base);
	assert_int_equal(mkdir(d, 0777), 0);
	assert_int_equal(chmod(d, 0777), 0);
	assert_int_equal(gs_safe_mkdir(d, 0755, true, &eb), GS_ERR_PERM);
	assert_non_null(strstr(eb.msg, "writable by other users"));
	/* Sticky, as /tmp: nobody can swap what is in it. */
	assert_int_equal(chmod(d, 01777), 0);
	gs_errbuf_init(&eb);
	assert_int_equal(gs_safe_mkdir(d, 01777, false, &eb), GS_OK);
}

static void mkdir_refuses_another_users_directory(void **state)
{
	char d[128], in[160];
	struct gs_errbuf eb = {0};

	(void)state;
	if (geteuid() != 0)
		skip(); /* only root can give a directory away */
	snprintf(d, sizeof(d), "%s/theirs", base);
	assert_int_equal(mkdir(d, 0755), 0);
	assert_int_equal(chown(d, 65534, 65534), 0);
	assert_int_equal(gs_safe_mkdir(d, 0755, false, &eb), GS_ERR_PERM);
	assert_non_null(strstr(eb.msg, "belongs to another user"));
	/* A directory of ours in theirs: they could swap it. */
	snprintf(in, sizeof(in), "%s/ours", d);
	assert_int_equal(mkdir(in, 0755), 0);
	gs_errbuf_init(&eb);
	assert_int_equal(gs_safe_mkdir(in, 0755, false, &eb), GS_ERR_PERM);
	assert_non_null(strstr(eb.msg, "its parent"));
}

static void open_refuses_a_link_and_says_so(void **state)
{
	char f[128], target[128];
	int fd;

	(void)state;
	snprintf(target, sizeof(target), "%s/file", base);
	snprintf(f, sizeof(f), "%s/flink", base);
	fd = open(target, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink(target, f), 0);
	fd = gs_safe_open(f, O_WRONLY | O_APPEND | O_CREAT, 0644);
	assert_true(fd < 0);
	assert_non_null(strstr(gs_safe_why(f, errno), "symbolic link"));
	fd = gs_safe_open(target, O_WRONLY | O_APPEND, 0);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(mkdir_makes_the_path_with_its_mode),
	    cmocka_unit_test(mkdir_refuses_a_link_and_leaves_its_target),
	    cmocka_unit_test(mkdir_refuses_a_directory_others_may_write),
	    cmocka_unit_test(mkdir_refuses_another_users_directory),
	    cmocka_unit_test(open_refuses_a_link_and_says_so),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
