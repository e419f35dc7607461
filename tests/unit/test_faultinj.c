/*
 * test_faultinj.c - GPUSLICE_FAULT and GPUSLICE_FAULT_COUNTS
 * (common/faultinj.c). The environment is read once per process, so each
 * case runs in a forked child that sets it first and reports through its
 * exit status (and, for the counts, the file it leaves at exit).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gs/faultinj.h"

/* Runs fn in a child with the two variables set (NULL: unset); returns
 * the child's exit status. */
static int in_child(const char *fault, const char *counts, int (*fn)(void))
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		if (fault != NULL)
			(void)setenv("GPUSLICE_FAULT", fault, 1);
		else
			(void)unsetenv("GPUSLICE_FAULT");
		if (counts != NULL)
			(void)setenv("GPUSLICE_FAULT_COUNTS", counts, 1);
		else
			(void)unsetenv("GPUSLICE_FAULT_COUNTS");
		/* exit, not _exit: the counts are written at exit */
		exit(fn());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static int nth_and_later(void)
{
	/* a:2 fails only the second call; b:3+ the third and every later */
	static const bool want_a[] = {false, true, false, false};
	static const bool want_b[] = {false, false, true, true, true};

	for (size_t i = 0; i < sizeof(want_a) / sizeof(want_a[0]); i++)
		if (gs_fault_hit("a") != want_a[i])
			return 10 + (int)i;
	for (size_t i = 0; i < sizeof(want_b) / sizeof(want_b[0]); i++)
		if (gs_fault_hit("b") != want_b[i])
			return 20 + (int)i;
	return gs_fault_hit("c") ? 30 : 0;
}

static void fails_the_nth_call_and_with_plus_every_later_one(void **state)
{
	(void)state;
	assert_int_equal(in_child("a:2,b:3+", NULL, nth_and_later), 0);
}

static int never(void)
{
	for (int i = 0; i < 1000; i++)
		if (gs_fault_hit("a") || gs_fault_hit("sim.malloc"))
			return 1;
	return 0;
}

static void unset_never_fails_and_a_zero_rule_is_ignored(void **state)
{
	(void)state;
	assert_int_equal(in_child(NULL, NULL, never), 0);
	assert_int_equal(in_child("a:0,sim.malloc:x", NULL, never), 0);
}

static int three_a_one_b(void)
{
	for (int i = 0; i < 3; i++)
		(void)gs_fault_hit("a");
	return gs_fault_hit("b") ? 0 : 1; /* b:1 still fails while counted */
}

static void counts_every_site_a_process_passed_through(void **state)
{
	char path[] = "/tmp/test_faultinj.XXXXXX", text[256] = "";
	int fd = mkstemp(path);
	FILE *f;
	size_t n;

	(void)state;
	assert_true(fd >= 0);
	(void)close(fd);
	assert_int_equal(in_child("b:1", path, three_a_one_b), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	(void)fclose(f);
	(void)unlink(path);
	assert_string_equal(text, "a 3\nb 1\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fails_the_nth_call_and_with_plus_every_later_one),
		cmocka_unit_test(unset_never_fails_and_a_zero_rule_is_ignored),
		cmocka_unit_test(counts_every_site_a_process_passed_through),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
