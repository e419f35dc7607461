/*
 * cmd.c - running a helper program to completion (see include/gs/cmd.h).
 *
 * posix_spawnp, not fork: the daemon calling this is threaded and may be
 * large. The child's environment is built here in full (ours minus what
 * `env` overrides or removes, then `env`'s assignments), so nothing is
 * changed in the caller's process.
 */
#include "gs/cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Length of the name in "K=V" or "K". */
static size_t key_len(const char *e)
{
	const char *eq = strchr(e, '=');

	return eq != NULL ? (size_t)(eq - e) : strlen(e);
}

static bool same_key(const char *a, const char *b)
{
	size_t n = key_len(a);

	return n == key_len(b) && strncmp(a, b, n) == 0;
}

/* Whether entry i of env is overridden by a later one. */
static bool shadowed(const char *const env[], size_t i)
{
	for (size_t k = i + 1; env[k] != NULL; k++)
		if (same_key(env[i], env[k]))
			return true;
	return false;
}

/* The child's environment (pointers into environ and env); NULL: no
 * memory. The caller frees the array only. */
static char **child_env(const char *const env[])
{
	size_t n_env = 0, n_extra = 0, k = 0;
	char **envp;

	for (char **e = environ; e != NULL && *e != NULL; e++)
		n_env++;
	for (size_t i = 0; env != NULL && env[i] != NULL; i++)
		n_extra++;
	envp = calloc(n_env + n_extra + 1, sizeof(*envp));
	if (envp == NULL)
		return NULL;
	for (size_t i = 0; i < n_extra; i++)
		if (strchr(env[i], '=') != NULL && !shadowed(env, i))
			envp[k++] = (char *)env[i];
	/* Keep the rest of our environment, minus what env names. */
	for (char **e = environ; e != NULL && *e != NULL; e++) {
		bool named = false;

		for (size_t i = 0; i < n_extra && !named; i++)
			named = same_key(env[i], *e);
		if (!named)
			envp[k++] = *e;
	}
	return envp;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		(void)close(*fd);
	*fd = -1;
}

/* Appends what is in fd to out (used bytes so far in *used). Returns the
 * read(2) result. */
static ssize_t read_some(int fd, char *out, size_t len, size_t *used)
{
	char buf[512];
	ssize_t k = read(fd, buf, sizeof(buf));

	if (k > 0 && out != NULL && *used + 1 < len) {
		size_t c =
		    (size_t)k < len - 1 - *used ? (size_t)k : len - 1 - *used;

		memcpy(out + *used, buf, c);
		*used += c;
	}
	return k;
}

int gs_cmd_run(char *const argv[], const char *const env[], const char *input,
               char *out, size_t len, int timeout_ms, unsigned int flags)
{
	posix_spawn_file_actions_t fa;
	int in[2] = {-1, -1}, outp[2] = {-1, -1};
	long long deadline = mono_ms() + timeout_ms;
	char **envp;
	size_t used = 0;
	bool exited = false;
	pid_t pid;
	int status = -1, rc;

	if (out != NULL && len > 0)
		out[0] = '\0';
	envp = child_env(env);
	if (envp == NULL)
		return -1;
	if (pipe2(in, O_CLOEXEC) != 0 ||
	    (out != NULL && pipe2(outp, O_CLOEXEC) != 0))
		goto out;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	if (out != NULL)
		posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
	else
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY,
		                                 0);
	if (flags & GS_CMD_ERR_NULL)
		posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY,
		                                 0);
	else if ((flags & GS_CMD_ERR_OUT) && out != NULL)
		posix_spawn_file_actions_adddup2(&fa, outp[1], 2);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close_fd(&in[0]);
	close_fd(&outp[1]);
	if (rc != 0)
		goto out;
	if (input != NULL) {
		size_t n = strlen(input), off = 0;

		while (off < n) {
			ssize_t k = write(in[1], input + off, n - off);

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			off += (size_t)k;
		}
	}
	close_fd(&in[1]);
	for (;;) {
		struct pollfd pfd = {.fd = outp[0], .events = POLLIN};
		long long left = deadline - mono_ms();
		int wait_ms = 50;
		pid_t w;

		if (timeout_ms > 0 && left <= 0) {
			(void)kill(pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			status = -1;
			goto out;
		}
		if (timeout_ms > 0 && left < wait_ms)
			wait_ms = (int)left;
		if (outp[0] >= 0) {
			rc = poll(&pfd, 1, wait_ms);
			if (rc > 0 && read_some(outp[0], out, len, &used) <= 0)
				close_fd(&outp[0]); /* EOF: all of it */
		} else if (!exited) {
			struct timespec ts = {0, 5 * 1000000L};

			(void)nanosleep(&ts, NULL);
		}
		w = waitpid(pid, &status, WNOHANG);
		if (w == pid) {
			exited = true;
			/* What it wrote before it exited; a daemon it left
			 * behind may keep the pipe open. */
			while (outp[0] >= 0) {
				pfd.revents = 0;
				if (poll(&pfd, 1, 0) <= 0 ||
				    read_some(outp[0], out, len, &used) <= 0)
					close_fd(&outp[0]);
			}
			break;
		}
		if (w < 0 && errno != EINTR) {
			status = -1;
			goto out;
		}
	}
	status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
out:
	if (out != NULL && len > 0)
		out[used] = '\0';
	close_fd(&in[0]);
	close_fd(&in[1]);
	close_fd(&outp[0]);
	close_fd(&outp[1]);
	free(envp);
	return status;
}
