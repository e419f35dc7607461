/*
 * mps.c - the MPS control driver (see include/gs/mps.h): the control
 * program's command line through gs_cmd_run, and its pid file.
 */
#include "gs/mps.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ENV_MAX 64

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	(void)nanosleep(&ts, NULL);
}

int gs_mps_control(const struct gs_mps_ctl *c, const char *arg,
                   const char *input, char *out, size_t len)
{
	char pipe[PATH_MAX + 32], log[PATH_MAX + 32], vis[512];
	const char *env[ENV_MAX + 4];
	char *argv[3] = {(char *)c->prog, (char *)arg, NULL};
	int n = 0;

	for (int i = 0; c->env != NULL && c->env[i] != NULL; i++) {
		if (n == ENV_MAX)
			return -1;
		env[n++] = c->env[i];
	}
	if (snprintf(pipe, sizeof(pipe), "CUDA_MPS_PIPE_DIRECTORY=%s",
	             c->pipe_dir) >= (int)sizeof(pipe) ||
	    snprintf(log, sizeof(log), "CUDA_MPS_LOG_DIRECTORY=%s",
	             c->log_dir) >= (int)sizeof(log))
		return -1;
	env[n++] = pipe;
	env[n++] = log;
	if (c->visible != NULL) {
		if (snprintf(vis, sizeof(vis), "CUDA_VISIBLE_DEVICES=%s",
		             c->visible) >= (int)sizeof(vis))
			return -1;
		env[n++] = vis;
	} else {
		env[n++] = "CUDA_VISIBLE_DEVICES";
	}
	env[n] = NULL;
	return gs_cmd_run(argv, env, input, out, len, c->timeout_ms, c->flags);
}

int gs_mps_start(const struct gs_mps_ctl *c, char *out, size_t len)
{
	return gs_mps_control(c, "-d", NULL, out, len);
}

int gs_mps_quit(const struct gs_mps_ctl *c)
{
	return gs_mps_control(c, NULL, "quit\n", NULL, 0);
}

int32_t gs_mps_pid(const char *pipe_dir)
{
	char path[PATH_MAX + 64], buf[32];
	ssize_t k;
	long pid;
	int fd;

	if (snprintf(path, sizeof(path), "%s/" GS_MPS_PID_FILE, pipe_dir) >=
	    (int)sizeof(path))
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	k = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	if (k <= 0)
		return 0;
	buf[k] = '\0';
	pid = strtol(buf, NULL, 10);
	if (pid <= 1 || pid > INT32_MAX ||
	    (kill((pid_t)pid, 0) != 0 && errno == ESRCH))
		return 0;
	return (int32_t)pid;
}

int32_t gs_mps_wait_up(const char *pipe_dir, int timeout_ms, int step_ms)
{
	int32_t pid = gs_mps_pid(pipe_dir);

	for (int t = 0; pid == 0 && t < timeout_ms; t += step_ms) {
		sleep_ms(step_ms);
		pid = gs_mps_pid(pipe_dir);
	}
	return pid;
}

bool gs_mps_wait_gone(const char *pipe_dir, int timeout_ms, int step_ms)
{
	bool alive = gs_mps_pid(pipe_dir) != 0;

	for (int t = 0; alive && t < timeout_ms; t += step_ms) {
		sleep_ms(step_ms);
		alive = gs_mps_pid(pipe_dir) != 0;
	}
	return !alive;
}

bool gs_mps_is_faulted(const struct gs_mps_ctl *c)
{
	struct gs_mps_ctl q = *c;
	char list[256], cmd[64], st[64];
	char *save = NULL, *tok;

	q.visible = NULL;
	if (gs_mps_control(&q, NULL, "get_server_list\n", list, sizeof(list)) !=
	    0)
		return false;
	for (tok = strtok_r(list, " \n", &save); tok != NULL;
	     tok = strtok_r(NULL, " \n", &save)) {
		(void)snprintf(cmd, sizeof(cmd), "get_server_status %.20s\n",
		               tok);
		if (gs_mps_control(&q, NULL, cmd, st, sizeof(st)) == 0 &&
		    strncmp(st, "FAULT", 5) == 0)
			return true;
	}
	return false;
}
