/* test_daemon_procwatch.c - who ran a process, recorded as it started
 * (daemon/procwatch.c), asked for after the process ended. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "procwatch.h"

static uint64_t realtime_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

/* A child that becomes `uid` (when root) and ends 50 ms later. */
static pid_t short_child(uid_t uid)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (geteuid() == 0 && setresuid(uid, uid, uid) != 0)
			_exit(2);
		usleep(50000);
		_exit(0);
	}
	return pid;
}

static void the_owner_of_a_process_that_ended_is_known(void **state)
{
	struct gs__procwatch *pw = gs__procwatch_create();
	uid_t want = geteuid() == 0 ? 65534 : geteuid();
	uint64_t before = realtime_us();
	int status = 0;
	pid_t pid;

	(void)state;
	assert_non_null(pw);
	if (!gs__procwatch_live(pw)) {
		gs__procwatch_destroy(pw);
		skip(); /* no proc connector here (not root, or none) */
	}
	pid = short_child(want);
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(status, 0);
	usleep(100000); /* the reader thread takes the events */
	assert_int_equal(gs__procwatch_uid(pw, pid, 0), (int64_t)want);
	assert_int_equal(gs__procwatch_uid(pw, pid, realtime_us()),
	                 (int64_t)want);
	/* A run of that pid that started well before this one: unknown. */
	assert_int_equal(gs__procwatch_uid(pw, pid, before - 5000000), -1);
	gs__procwatch_destroy(pw);
}

static void a_scan_records_what_runs_now(void **state)
{
	struct gs__procwatch *pw = gs__procwatch_create();

	(void)state;
	assert_non_null(pw);
	/* Live or not, a process met alive is recorded. */
	gs__procwatch_note(pw, getpid());
	gs__procwatch_scan(pw);
	assert_int_equal(gs__procwatch_uid(pw, getpid(), realtime_us()),
	                 (int64_t)getuid());
	assert_int_equal(gs__procwatch_uid(pw, 0x7ffffff0, 0), -1);
	gs__procwatch_destroy(pw);
	gs__procwatch_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(the_owner_of_a_process_that_ended_is_known),
	    cmocka_unit_test(a_scan_records_what_runs_now),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
