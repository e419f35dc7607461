/*
 * mps_server.c - the MPS control daemon gpuslice owns per device set (see
 * mps_server.h for the life cycle). The daemon is driven through its own
 * command line, as an administrator would: `nvidia-cuda-mps-control -d`
 * to start it, `quit` on its stdin to stop it; its pid file in the pipe
 * directory says whether it is alive (the driver: include/gs/mps.h). This
 * file owns the policy: the directory per device set, its locks, FAULT
 * recovery.
 */
#include "mps_server.h"
#include "gs/mps.h"
#include "gs/proc.h"
#include "gs/safepath.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CONTROL    GS_MPS_CONTROL
#define START_LOCK ".gpuslice-start.lock"
#define USERS_LOCK ".gpuslice-users.lock"
#define STOP_WAIT_MS 5000
#define FAULT_WAIT_MS 1500

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	(void)nanosleep(&ts, NULL);
}

/* The control program: $GPUSLICE_MPS_CONTROL, else the first on PATH. */
static bool control_path(char *out, size_t n)
{
	const char *env = getenv("GPUSLICE_MPS_CONTROL");

	if (env != NULL && env[0] != '\0') {
		(void)snprintf(out, n, "%s", env);
		return access(out, X_OK) == 0;
	}
	return gs_find_program(CONTROL, out, n);
}

bool gs_mps_server_control_found(void)
{
	char prog[4096];

	return control_path(prog, sizeof(prog));
}

/* The daemon is no client of ours: no shim in it. */
static const char *const control_env[] = {"LD_PRELOAD", NULL};

/* How to reach the daemon in pipe_dir (its log goes there too); NULL or
 * "" visible: CUDA_VISIBLE_DEVICES unset. Its output goes to /dev/null. */
static struct gs_mps_ctl ctl_of(const char *prog, const char *pipe_dir,
                                const char *visible)
{
	struct gs_mps_ctl c = {
	    .prog = prog,
	    .pipe_dir = pipe_dir,
	    .log_dir = pipe_dir,
	    .visible = visible != NULL && visible[0] != '\0' ? visible : NULL,
	    .env = control_env,
	    .flags = GS_CMD_ERR_NULL,
	};

	return c;
}

/* Whether the daemon whose pid file is in pipe_dir is alive. */
static bool daemon_alive(const char *pipe_dir)
{
	return gs_mps_pid(pipe_dir) != 0;
}

/*
 * A server in FAULT refuses new clients until its faulted ones are gone.
 * Waits up to FAULT_WAIT_MS for that; then restarts the daemon (the
 * faulted clients are lost anyway), so new work proceeds within ~2 s.
 */
static gs_err recover(const char *prog, const char *pipe_dir,
                      const char *visible, struct gs_errbuf *eb)
{
	struct gs_mps_ctl c = ctl_of(prog, pipe_dir, visible);
	int rc;

	if (!gs_mps_is_faulted(&c))
		return GS_OK;
	fprintf(stderr,
	        "gpuslice: the MPS server in %s is in FAULT (a client's fatal GPU error reached all its clients); waiting for it\n",
	        pipe_dir);
	for (int i = 0; i < FAULT_WAIT_MS / 50; i++) {
		sleep_ms(50);
		if (!daemon_alive(pipe_dir) || !gs_mps_is_faulted(&c))
			goto out_start;
	}
	fprintf(stderr, "gpuslice: restarting the MPS control daemon in %s\n",
	        pipe_dir);
	c.visible = NULL;
	(void)gs_mps_quit(&c);
	(void)gs_mps_wait_gone(pipe_dir, STOP_WAIT_MS, 50);
	c.visible = visible != NULL && visible[0] != '\0' ? visible : NULL;
out_start:
	if (daemon_alive(pipe_dir))
		return GS_OK;
	rc = gs_mps_start(&c, NULL, 0);
	if (rc != 0)
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "%s -d failed (status %d; log in %s)", prog, rc,
		               pipe_dir);
	return GS_OK;
}

static int lock_open(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];

	(void)snprintf(path, sizeof(path), "%s/%s", dir, name);
	/* A link planted here is refused (ELOOP or EACCES). */
	return gs_safe_open(path, O_RDWR | O_CREAT, 0600);
}

static int lock_wait(int fd, int op)
{
	while (flock(fd, op) != 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

/* A device set as a directory name: [A-Za-z0-9-] kept, others '_'. */
static void key_of(const char *visible, char *out, size_t n)
{
	size_t i = 0;

	if (visible == NULL || visible[0] == '\0')
		visible = "all";
	for (; visible[i] != '\0' && i + 1 < n && i < 96; i++) {
		char c = visible[i];

		out[i] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		          (c >= '0' && c <= '9') || c == '-')
		             ? c
		             : '_';
	}
	out[i] = '\0';
}

gs_err gs_mps_server_join(struct gs_mps_server *s, const char *run_dir,
                          const char *visible, struct gs_errbuf *eb)
{
	char prog[PATH_MAX], key[100], base[PATH_MAX];
	int start_fd, rc, e;
	gs_err err = GS_OK;

	s->users_fd = -1;
	s->started = false;
	if (!control_path(prog, sizeof(prog)))
		return gs_fail(eb, GS_ERR_UNSUPPORTED,
		               "MPS mode needs " CONTROL
		               " (not on PATH; GPUSLICE_MPS_CONTROL names it)");
	key_of(visible, key, sizeof(key));
	if (snprintf(base, sizeof(base), "%s/mps", run_dir) >=
	        (int)sizeof(base) ||
	    snprintf(s->pipe_dir, sizeof(s->pipe_dir), "%s/%s", base, key) >=
	        (int)sizeof(s->pipe_dir))
		return gs_fail(eb, GS_ERR_RANGE, "run directory %s is too long",
		               run_dir);
	/* Links planted in a shared run directory are refused. */
	err = gs_safe_mkdir(base, 0700, false, eb);
	if (err == GS_OK)
		err = gs_safe_mkdir(s->pipe_dir, 0700, false, eb);
	if (err != GS_OK)
		return err;
	start_fd = lock_open(s->pipe_dir, START_LOCK);
	if (start_fd < 0 || lock_wait(start_fd, LOCK_EX) != 0) {
		e = errno;
		err = gs_fail(eb, GS_ERR_IO, "cannot lock %s/" START_LOCK ": %s",
		              s->pipe_dir, strerror(e));
		goto out_close_start;
	}
	s->users_fd = lock_open(s->pipe_dir, USERS_LOCK);
	if (s->users_fd < 0 || lock_wait(s->users_fd, LOCK_SH) != 0) {
		e = errno;
		err = gs_fail(eb, GS_ERR_IO, "cannot lock %s/" USERS_LOCK ": %s",
		              s->pipe_dir, strerror(e));
		goto out_close_users;
	}
	if (!daemon_alive(s->pipe_dir)) {
		struct gs_mps_ctl c = ctl_of(prog, s->pipe_dir, visible);

		rc = gs_mps_start(&c, NULL, 0);
		if (rc != 0) {
			err = gs_fail(eb, GS_ERR_UNAVAILABLE,
			              "%s -d failed (status %d; log in %s)",
			              prog, rc, s->pipe_dir);
			goto out_close_users;
		}
		s->started = true;
	} else {
		err = recover(prog, s->pipe_dir, visible, eb);
		if (err != GS_OK)
			goto out_close_users;
	}
	(void)close(start_fd); /* drops the start lock */
	return GS_OK;

out_close_users:
	if (s->users_fd >= 0)
		(void)close(s->users_fd);
	s->users_fd = -1;
out_close_start:
	if (start_fd >= 0)
		(void)close(start_fd);
	return err;
}

void gs_mps_server_leave(struct gs_mps_server *s)
{
	char prog[PATH_MAX];
	int start_fd;

	if (s->users_fd < 0)
		return;
	start_fd = lock_open(s->pipe_dir, START_LOCK);
	if (start_fd >= 0)
		(void)lock_wait(start_fd, LOCK_EX);
	/* Last one out: nobody else holds the users lock. */
	if (flock(s->users_fd, LOCK_EX | LOCK_NB) == 0 &&
	    daemon_alive(s->pipe_dir) && control_path(prog, sizeof(prog))) {
		struct gs_mps_ctl c = ctl_of(prog, s->pipe_dir, NULL);

		if (gs_mps_quit(&c) != 0)
			fprintf(stderr,
			        "gpuslice: the MPS control daemon in %s did not take 'quit'\n",
			        s->pipe_dir);
		(void)gs_mps_wait_gone(s->pipe_dir, STOP_WAIT_MS, 50);
	}
	(void)close(s->users_fd);
	s->users_fd = -1;
	if (start_fd >= 0)
		(void)close(start_fd);
}
