/*
 * test_region_guard.c - region files cut short under a live mapping
 * (region/guard.c, gs_region_truncated, gs_region_rebuild_usage): a
 * guarded mapping reads zeros where the file was cut instead of killing
 * the process with SIGBUS; a fault outside every guarded range still
 * takes the default action; a region reports its cut shared usage file
 * once and rebuilds it with its GPU table, so a new process can open the
 * region again.
 *
 * Each region test works in its own fresh directory under /tmp.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gs/region.h"
#include "guard.h"

#define LEN (64 * 1024)

/* A LEN-byte file of 0x5a bytes mapped shared; OUT: its fd. */
static unsigned char *map_scratch(const char *path, int *fd)
{
	unsigned char buf[4096];
	void *p;

	*fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(*fd >= 0);
	memset(buf, 0x5a, sizeof(buf));
	for (int i = 0; i < LEN / (int)sizeof(buf); i++)
		assert_int_equal(write(*fd, buf, sizeof(buf)), sizeof(buf));
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	assert_true(p != MAP_FAILED);
	return p;
}

static void guarded_mapping_of_a_cut_file_reads_zeros(void **state)
{
	char path[] = "/tmp/gs-test-guard-XXXXXX";
	unsigned char *p;
	int fd, tmp = mkstemp(path);

	(void)state;
	assert_true(tmp >= 0);
	close(tmp);
	p = map_scratch(path, &fd);
	assert_true(gs__guard_add(p, LEN));
	assert_int_equal(p[LEN - 1], 0x5a);
	assert_false(gs__guard_tripped(p));
	assert_int_equal(ftruncate(fd, 4096), 0); /* the first page stays */
	assert_int_equal(p[0], 0x5a);
	assert_int_equal(p[LEN - 1], 0); /* was SIGBUS */
	p[LEN - 2] = 7;                  /* writes land in the zero page */
	assert_int_equal(p[LEN - 2], 7);
	assert_true(gs__guard_tripped(p));
	assert_true(gs__guard_caught() >= 1);
	gs__guard_del(p);
	assert_false(gs__guard_tripped(p));
	munmap(p, LEN);
	close(fd);
	unlink(path);
}

static void fault_outside_the_guarded_ranges_still_kills(void **state)
{
	char path[] = "/tmp/gs-test-guard-XXXXXX";
	unsigned char *p, *q;
	int fd, fd2, status, tmp = mkstemp(path);
	char path2[sizeof(path) + 4];
	pid_t pid;

	(void)state;
	assert_true(tmp >= 0);
	close(tmp);
	snprintf(path2, sizeof(path2), "%s.b", path);
	p = map_scratch(path, &fd);
	q = map_scratch(path2, &fd2);
	assert_int_equal(ftruncate(fd2, 0), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		volatile unsigned char c;

		/* As in a program with no SIGBUS handler of its own (cmocka
		 * has one): the guard goes in front of the default action. */
		signal(SIGBUS, SIG_DFL);
		if (!gs__guard_add(p, LEN))
			_exit(2);
		c = q[100]; /* not guarded */
		(void)c;
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGBUS);
	munmap(p, LEN);
	munmap(q, LEN);
	close(fd);
	close(fd2);
	unlink(path);
	unlink(path2);
}

static void
cut_shared_usage_is_reported_once_and_rebuilt_with_its_gpus(void **state)
{
	char dir[] = "/tmp/gs-test-guard-dir-XXXXXX", path[96], cmd[128];
	const char *uuid = "GPU-12345678-1234-1234-1234-123456789abc";
	struct gs_region *r = NULL, *t = NULL;
	struct gs_errbuf eb = {0};
	struct gs_region_cut uids[4];
	bool shared = false;
	int dev;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(gs_region_open(dir, GS_REGION_RUNNER, &r, &eb), GS_OK);
	dev = gs_region_device(r, uuid, 80ULL << 30);
	assert_true(dev >= 0);
	assert_int_equal(gs_region_truncated(r, &shared, uids, 4), 0);
	assert_false(shared);

	snprintf(path, sizeof(path), "%s/usage", dir);
	assert_int_equal(truncate(path, 0), 0);
	/* The region reads what it maps: zeros now, not SIGBUS. */
	assert_null(gs_region_device_uuid(r, dev));
	assert_int_equal(gs_region_truncated(r, &shared, uids, 4), 0);
	assert_true(shared);
	assert_int_equal(gs_region_truncated(r, &shared, uids, 4), 0);
	assert_false(shared); /* reported once */
	/* Nobody can open it cut. */
	assert_int_not_equal(gs_region_open(dir, GS_REGION_TENANT, &t, NULL),
	                     GS_OK);

	assert_int_equal(gs_region_rebuild_usage(r, &eb), GS_OK);
	assert_string_equal(gs_region_device_uuid(r, dev), uuid);
	assert_int_equal(gs_region_open(dir, GS_REGION_TENANT, &t, &eb), GS_OK);
	assert_string_equal(gs_region_device_uuid(t, dev), uuid);
	gs_region_close(t);
	/* The new file is watched too. */
	assert_int_equal(truncate(path, 0), 0);
	assert_int_equal(gs_region_truncated(r, &shared, uids, 4), 0);
	assert_true(shared);
	assert_int_equal(gs_region_rebuild_usage(r, &eb), GS_OK);
	gs_region_close(r);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(guarded_mapping_of_a_cut_file_reads_zeros),
	    cmocka_unit_test(fault_outside_the_guarded_ranges_still_kills),
	    cmocka_unit_test(
	        cut_shared_usage_is_reported_once_and_rebuilt_with_its_gpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
