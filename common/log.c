/*
 * log.c - line-oriented logging to stderr or a file. One write(2) per line
 * so concurrent processes appending to one file do not interleave within a
 * line. errno is preserved: logging never changes what a caller sees.
 */
#include "gs/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int gs_log_level_current = GS_LOG_INFO;
static int log_fd = 2;

void gs_log_set_level(enum gs_log_level level)
{
	gs_log_level_current = (int)level;
}

int gs_log_level_parse(const char *s)
{
	static const char *const names[] = {"debug", "info", "warn", "error",
					    "off"};
	for (int i = 0; i < 5; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

int gs_log_open(const char *path)
{
	int fd;

	if (path == NULL) {
		if (log_fd > 2)
			(void)close(log_fd);
		log_fd = 2;
		return 0;
	}
	/* A link planted where the log goes is refused (ELOOP), never
	 * followed: the daemon appends as root (gs_safe_why says so). */
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
	          0640);
	if (fd < 0)
		return -errno;
	if (log_fd > 2)
		(void)close(log_fd);
	log_fd = fd;
	return 0;
}

void gs_log_silence(void)
{
	if (log_fd > 2)
		(void)close(log_fd);
	log_fd = -1;
}

void gs_log_write(enum gs_log_level level, const char *tag, const char *fmt,
		  ...)
{
	static const char lv[] = "DIWE";
	int saved = errno;
	char line[1024];
	struct timeval tv;
	struct tm tm;
	size_t n;
	int k;
	va_list ap;

	if (log_fd < 0)
		goto out;
	(void)gettimeofday(&tv, NULL);
	(void)gmtime_r(&tv.tv_sec, &tm);
	k = snprintf(line, sizeof(line),
		     "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %c %s[%d]: ",
		     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		     tm.tm_min, tm.tm_sec, (long)(tv.tv_usec / 1000),
		     lv[level < 4 ? level : 3], tag, (int)getpid());
	n = k > 0 ? (size_t)k : 0;
	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	va_start(ap, fmt);
	k = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	if (k > 0)
		n += (size_t)k;
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	(void)!write(log_fd, line, n);
out:
	errno = saved;
}
