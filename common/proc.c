/*
 * proc.c - reading /proc and signalling by pidfd (see include/gs/proc.h).
 */
#include "gs/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

bool gs_proc_stat(int32_t pid, char *state, int32_t *ppid, uint64_t *start)
{
	char path[64], buf[1024];
	ssize_t n;
	int fd, pp = 0;
	char st = 0, *p, *f;
	unsigned long long t = 0;

	if (pid <= 0)
		return false;
	(void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	(void)close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* The command name may hold spaces and parentheses: fields start
	 * after the last ')'. */
	p = strrchr(buf, ')');
	if (p == NULL || sscanf(p + 1, " %c %d", &st, &pp) != 2)
		return false;
	/* p + 1 is the blank before field 3; field 22 follows the 19th
	 * blank after that one. */
	f = p + 1;
	for (int i = 0; i < 19 && f; i++)
		f = strchr(f + 1, ' ');
	if (f == NULL || sscanf(f, " %llu", &t) != 1)
		return false;
	if (state)
		*state = st;
	if (ppid)
		*ppid = (int32_t)pp;
	if (start)
		*start = (uint64_t)t;
	return true;
}

int64_t gs_proc_uid(int32_t pid)
{
	char path[64], line[256];
	FILE *f;
	int64_t uid = -1;

	if (pid <= 0)
		return -1;
	(void)snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "Uid:", 4) == 0) {
			uid = strtoll(line + 4, NULL, 10);
			break;
		}
	(void)fclose(f);
	return uid;
}

bool gs_proc_comm(int32_t pid, char *out, size_t n)
{
	char path[64];
	ssize_t k;
	int fd;

	if (pid <= 0 || n == 0)
		return false;
	(void)snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	k = read(fd, out, n - 1);
	(void)close(fd);
	if (k <= 0)
		return false;
	out[k] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return true;
}

bool gs_proc_env_is(int32_t pid, const char *name, const char *value)
{
	char path[64], want[512];
	char *buf = NULL;
	size_t len = 0, cap = 0;
	bool found = false;
	int fd, w;

	w = snprintf(want, sizeof(want), "%s=%s", name, value);
	if (pid <= 0 || w < 0 || (size_t)w >= sizeof(want))
		return false;
	(void)snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	for (;;) {
		ssize_t k;

		if (len + 4096 > cap) {
			char *nb;

			if (cap >= (1u << 20))
				break; /* an environment past 1 MiB: give up */
			nb = realloc(buf, cap ? cap * 2 : 8192);
			if (nb == NULL)
				break;
			buf = nb;
			cap = cap ? cap * 2 : 8192;
		}
		k = read(fd, buf + len, cap - len - 1);
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	(void)close(fd);
	for (size_t off = 0; buf && off < len;) {
		size_t l = strnlen(buf + off, len - off);

		if (l == (size_t)w && memcmp(buf + off, want, (size_t)w) == 0) {
			found = true;
			break;
		}
		off += l + 1;
	}
	free(buf);
	return found;
}

bool gs_proc_exe_base(int32_t pid, char *out, size_t n)
{
	char path[64], link[4096];
	const char *b;
	ssize_t k;

	if (pid <= 0 || n == 0)
		return false;
	(void)snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	k = readlink(path, link, sizeof(link) - 1);
	if (k <= 0)
		return false;
	link[k] = '\0';
	/* " (deleted)" when the binary was replaced: still its name. */
	{
		char *d = strstr(link, " (deleted)");

		if (d != NULL && d[10] == '\0')
			*d = '\0';
	}
	b = strrchr(link, '/');
	(void)snprintf(out, n, "%s", b ? b + 1 : link);
	return true;
}

int gs_proc_signal(int32_t pid, uint64_t start, int64_t uid, int sig)
{
	uint64_t now_start = 0;
	int fd, rc, e;

	if (pid <= 1) {
		errno = ESRCH;
		return -1;
	}
	fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (fd < 0)
		return -1;
	/* The pidfd pins this process: checks made now hold for the signal
	 * below even if the pid is reused meanwhile. */
	if (!gs_proc_stat(pid, NULL, NULL, &now_start) ||
	    (start != 0 && now_start != start)) {
		(void)close(fd);
		errno = ESRCH;
		return -1;
	}
	if (uid >= 0 && gs_proc_uid(pid) != uid) {
		(void)close(fd);
		errno = EPERM;
		return -1;
	}
	rc = (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
	e = errno;
	(void)close(fd);
	errno = e;
	return rc;
}

/* An executable regular file (a directory is "executable" too). */
bool gs_proc_self_exe(char *out, size_t n)
{
	ssize_t k;

	if (n == 0)
		return false;
	k = readlink("/proc/self/exe", out, n);
	if (k <= 0 || (size_t)k >= n) {
		out[0] = '\0';
		return false;
	}
	out[k] = '\0';
	return true;
}

static bool is_program(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       access(path, X_OK) == 0;
}

bool gs_find_program(const char *cmd, char *out, size_t n)
{
	const char *path = getenv("PATH");
	char full[4096];

	if (cmd == NULL || cmd[0] == '\0')
		return false;
	if (strchr(cmd, '/')) {
		if (!is_program(cmd))
			return false;
		return out == NULL || (size_t)snprintf(out, n, "%s", cmd) < n;
	}
	if (path == NULL)
		path = "/usr/bin:/bin";
	while (*path) {
		size_t len = strcspn(path, ":");
		int k = snprintf(full, sizeof(full), "%.*s/%s", (int)len,
		                 len ? path : ".", cmd);

		if (k > 0 && (size_t)k < sizeof(full) && is_program(full))
			return out == NULL ||
			       (size_t)snprintf(out, n, "%s", full) < n;
		path += len;
		if (*path == ':')
			path++;
	}
	return false;
}
