/*
 * mps_server.c - the MPS control daemon gpuslice owns per device set (see
 * mps_server.h for the life cycle). The daemon is driven through its own
 * command line, as an administrator would: `nvidia-cuda-mps-control -d`
 * to start it, `quit` on its stdin to stop it; its pid file in the pipe
 * directory says whether it is alive.
 */
#include "mps_server.h"
#include "gs/proc.h"

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

#define CONTROL    "nvidia-cuda-mps-control"
#define PID_FILE   CONTROL ".pid"
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

/*
 * Runs the control program with `arg` (or none) and `input` on its stdin,
 * in the daemon's environment. Returns its exit status (-1: could not
 * run it). Its stdout goes to `out` (len bytes, NUL-terminated) when
 * given, else with stderr to /dev/null.
 */
static int control_run_out(const char *prog, const char *pipe_dir,
                           const char *visible, const char *arg,
                           const char *input, char *out, size_t len)
{
	int in[2], o[2] = {-1, -1}, st;
	size_t got = 0;
	pid_t pid;

	if (pipe2(in, O_CLOEXEC) != 0)
		return -1;
	if (out != NULL && pipe2(o, O_CLOEXEC) != 0) {
		(void)close(in[0]);
		(void)close(in[1]);
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		(void)close(in[0]);
		(void)close(in[1]);
		if (out != NULL) {
			(void)close(o[0]);
			(void)close(o[1]);
		}
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		(void)dup2(in[0], 0);
		if (null >= 0) {
			(void)dup2(out != NULL ? o[1] : null, 1);
			(void)dup2(null, 2);
		}
		/* The daemon is no client of ours: no shim in it. */
		(void)unsetenv("LD_PRELOAD");
		if (setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1) != 0 ||
		    setenv("CUDA_MPS_LOG_DIRECTORY", pipe_dir, 1) != 0)
			_exit(126);
		if (visible != NULL && visible[0] != '\0')
			(void)setenv("CUDA_VISIBLE_DEVICES", visible, 1);
		else
			(void)unsetenv("CUDA_VISIBLE_DEVICES");
		execl(prog, prog, arg, (char *)NULL);
		_exit(127);
	}
	(void)close(in[0]);
	if (input != NULL) {
		size_t n = strlen(input), off = 0;

		while (off < n) {
			ssize_t k = write(in[1], input + off, n - off);

			if (k <= 0)
				break;
			off += (size_t)k;
		}
	}
	(void)close(in[1]);
	if (out != NULL) {
		ssize_t k;

		(void)close(o[1]);
		while (got + 1 < len &&
		       ((k = read(o[0], out + got, len - 1 - got)) > 0 ||
		        (k < 0 && errno == EINTR)))
			if (k > 0)
				got += (size_t)k;
		out[got] = '\0';
		(void)close(o[0]);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool daemon_alive(const char *pipe_dir);

static int control_run(const char *prog, const char *pipe_dir,
                       const char *visible, const char *arg,
                       const char *input)
{
	return control_run_out(prog, pipe_dir, visible, arg, input, NULL, 0);
}

/* Whether one of the daemon's servers is in FAULT (a client's fatal GPU
 * error reached all of its clients, which have not all exited yet). */
static bool server_faulted(const char *prog, const char *pipe_dir)
{
	char list[256], cmd[64], st[64];
	char *save = NULL, *tok;

	if (control_run_out(prog, pipe_dir, NULL, NULL, "get_server_list\n",
	                    list, sizeof(list)) != 0)
		return false;
	for (tok = strtok_r(list, " \n", &save); tok != NULL;
	     tok = strtok_r(NULL, " \n", &save)) {
		(void)snprintf(cmd, sizeof(cmd), "get_server_status %.20s\n",
		               tok);
		if (control_run_out(prog, pipe_dir, NULL, NULL, cmd, st,
		                    sizeof(st)) == 0 &&
		    strncmp(st, "FAULT", 5) == 0)
			return true;
	}
	return false;
}

/*
 * A server in FAULT refuses new clients until its faulted ones are gone.
 * Waits up to FAULT_WAIT_MS for that; then restarts the daemon (the
 * faulted clients are lost anyway), so new work proceeds within ~2 s.
 */
static gs_err recover(const char *prog, const char *pipe_dir,
                      const char *visible, struct gs_errbuf *eb)
{
	int rc;

	if (!server_faulted(prog, pipe_dir))
		return GS_OK;
	fprintf(stderr,
	        "gpuslice: the MPS server in %s is in FAULT (a client's fatal "
	        "GPU error reached all its clients); waiting for it\n",
	        pipe_dir);
	for (int i = 0; i < FAULT_WAIT_MS / 50; i++) {
		sleep_ms(50);
		if (!daemon_alive(pipe_dir) || !server_faulted(prog, pipe_dir))
			goto out_start;
	}
	fprintf(stderr, "gpuslice: restarting the MPS control daemon in %s\n",
	        pipe_dir);
	(void)control_run(prog, pipe_dir, NULL, NULL, "quit\n");
	for (int i = 0; i < STOP_WAIT_MS / 50 && daemon_alive(pipe_dir); i++)
		sleep_ms(50);
out_start:
	if (daemon_alive(pipe_dir))
		return GS_OK;
	rc = control_run(prog, pipe_dir, visible, "-d", NULL);
	if (rc != 0)
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "%s -d failed (status %d; log in %s)", prog, rc,
		               pipe_dir);
	return GS_OK;
}

/* Whether the daemon whose pid file is in pipe_dir is alive. */
static bool daemon_alive(const char *pipe_dir)
{
	char path[PATH_MAX + 64];
	FILE *f;
	long pid = 0;

	(void)snprintf(path, sizeof(path), "%s/" PID_FILE, pipe_dir);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	if (fscanf(f, "%ld", &pid) != 1)
		pid = 0;
	(void)fclose(f);
	return pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

static int lock_open(const char *dir, const char *name)
{
	char path[PATH_MAX + 64];

	(void)snprintf(path, sizeof(path), "%s/%s", dir, name);
	return open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
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
	if ((mkdir(base, 0700) != 0 && errno != EEXIST) ||
	    (mkdir(s->pipe_dir, 0700) != 0 && errno != EEXIST)) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "cannot create %s: %s",
		               s->pipe_dir, strerror(e));
	}
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
		rc = control_run(prog, s->pipe_dir, visible, "-d", NULL);
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
		if (control_run(prog, s->pipe_dir, NULL, NULL, "quit\n") != 0)
			fprintf(stderr,
			        "gpuslice: the MPS control daemon in %s did not "
			        "take 'quit'\n",
			        s->pipe_dir);
		for (int i = 0; i < STOP_WAIT_MS / 50 &&
		                daemon_alive(s->pipe_dir);
		     i++)
			sleep_ms(50);
	}
	(void)close(s->users_fd);
	s->users_fd = -1;
	if (start_fd >= 0)
		(void)close(start_fd);
}
