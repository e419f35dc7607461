/*
 * test_mps.c - the helper-program runner (gs/cmd.h) and the MPS control
 * driver (gs/mps.h) against /bin/sh stand-ins: the environment a caller
 * sets or removes, stdin and stdout, stderr's routes, the deadline, a
 * daemon that keeps the output pipe open, and the pid file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gs/cmd.h"
#include "gs/mps.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void run_sets_and_removes_environment_and_passes_stdin(void **state)
{
	char *argv[] = {"/bin/sh", "-c",
	                "printf '%s|%s|%s|' \"$GS_A\" \"${GS_B-unset}\" "
	                "\"$GS_C\"; cat",
	                NULL};
	const char *env[] = {"GS_A=first", "GS_B", "GS_C=1", "GS_C=2", NULL};
	char out[128];

	(void)state;
	assert_int_equal(setenv("GS_B", "inherited", 1), 0);
	assert_int_equal(
	    gs_cmd_run(argv, env, "in\n", out, sizeof(out), 5000, 0), 0);
	assert_string_equal(out, "first|unset|2|in\n");
	assert_int_equal(unsetenv("GS_B"), 0);
}

static void run_routes_stderr_as_asked(void **state)
{
	char *argv[] = {"/bin/sh", "-c", "echo out; echo err >&2; exit 4",
	                NULL};
	char out[64];

	(void)state;
	assert_int_equal(gs_cmd_run(argv, NULL, NULL, out, sizeof(out), 5000,
	                            GS_CMD_ERR_NULL),
	                 4);
	assert_string_equal(out, "out\n");
	assert_int_equal(gs_cmd_run(argv, NULL, NULL, out, sizeof(out), 5000,
	                            GS_CMD_ERR_OUT),
	                 4);
	assert_non_null(strstr(out, "err"));
	assert_non_null(strstr(out, "out"));
}

static void run_does_not_wait_for_a_daemon_holding_the_pipe(void **state)
{
	char *argv[] = {"/bin/sh", "-c", "echo up; sleep 3 & exit 0", NULL};
	char out[64];
	double t0 = now_s();

	(void)state;
	assert_int_equal(
	    gs_cmd_run(argv, NULL, NULL, out, sizeof(out), 10000, 0), 0);
	assert_string_equal(out, "up\n");
	assert_true(now_s() - t0 < 2.0);
}

static void run_kills_a_program_past_its_deadline(void **state)
{
	char *argv[] = {"/bin/sh", "-c", "sleep 5", NULL};
	char *none[] = {"/nonexistent/gs-program", NULL};
	double t0 = now_s();

	(void)state;
	assert_int_equal(gs_cmd_run(argv, NULL, NULL, NULL, 0, 200, 0), -1);
	assert_true(now_s() - t0 < 2.0);
	assert_int_not_equal(gs_cmd_run(none, NULL, NULL, NULL, 0, 2000, 0), 0);
}

static void control_gets_the_daemons_directories_and_devices(void **state)
{
	char dir[] = "/tmp/gs-mps-test.XXXXXX", prog[96], out[256];
	const char *env[] = {"GS_EXTRA=x", NULL};
	struct gs_mps_ctl c = {0};
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	(void)snprintf(prog, sizeof(prog), "%s/ctl", dir);
	f = fopen(prog, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\nprintf '%s %s %s %s %s' \"$1\" "
	      "\"$CUDA_MPS_PIPE_DIRECTORY\" \"$CUDA_MPS_LOG_DIRECTORY\" "
	      "\"${CUDA_VISIBLE_DEVICES-none}\" \"$GS_EXTRA\"\n",
	      f);
	fclose(f);
	assert_int_equal(chmod(prog, 0700), 0);
	c.prog = prog;
	c.pipe_dir = "/p";
	c.log_dir = "/l";
	c.visible = "GPU-1";
	c.env = env;
	c.timeout_ms = 5000;
	assert_int_equal(gs_mps_start(&c, out, sizeof(out)), 0);
	assert_string_equal(out, "-d /p /l GPU-1 x");
	c.visible = NULL;
	assert_int_equal(setenv("CUDA_VISIBLE_DEVICES", "0", 1), 0);
	assert_int_equal(gs_mps_control(&c, NULL, NULL, out, sizeof(out)), 0);
	assert_string_equal(out, " /p /l none x");
	assert_int_equal(unsetenv("CUDA_VISIBLE_DEVICES"), 0);
	assert_int_equal(unlink(prog), 0);
	assert_int_equal(rmdir(dir), 0);
}

static void pid_file_counts_only_a_live_daemon(void **state)
{
	char dir[] = "/tmp/gs-mps-test.XXXXXX", path[96];
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(gs_mps_pid(dir), 0); /* no file */
	(void)snprintf(path, sizeof(path), "%s/" GS_MPS_PID_FILE, dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	assert_int_equal(gs_mps_pid(dir), (int32_t)getpid());
	assert_int_equal(gs_mps_wait_up(dir, 100, 10), (int32_t)getpid());
	assert_false(gs_mps_wait_gone(dir, 50, 10));
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "1\n"); /* init: never an MPS daemon of ours */
	fclose(f);
	assert_int_equal(gs_mps_pid(dir), 0);
	assert_true(gs_mps_wait_gone(dir, 50, 10));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(run_sets_and_removes_environment_and_passes_stdin),
	    cmocka_unit_test(run_routes_stderr_as_asked),
	    cmocka_unit_test(run_does_not_wait_for_a_daemon_holding_the_pipe),
	    cmocka_unit_test(run_kills_a_program_past_its_deadline),
	    cmocka_unit_test(control_gets_the_daemons_directories_and_devices),
	    cmocka_unit_test(pid_file_counts_only_a_live_daemon),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
