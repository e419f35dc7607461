/*
 * safepath.c - directories and files that are created or trusted where
 * another user could have put a symbolic link first (safepath.h). Owns
 * nothing. The checks are lstat and O_NOFOLLOW, so a link planted at the
 * last component is refused; a parent that another user owns is refused
 * too, since its owner could replace what is in it after the check.
 */
#include "gs/safepath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gs_safe_open(const char *path, int flags, mode_t mode)
{
	return open(path, flags | O_NOFOLLOW | O_CLOEXEC, mode);
}

const char *gs_safe_why(const char *path, int e)
{
	struct stat st;

	/* With O_CREAT some kernels answer EACCES for a link, not ELOOP. */
	if (e == ELOOP || (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)))
		return "it is a symbolic link; refusing to follow it (another user may have planted it)";
	return strerror(e);
}

/* Whether st (a directory) is ours or root's and no one else may write
 * it, bar a sticky one (/tmp). OUT: why not. */
static bool trusted(const struct stat *st, uid_t me, const char **why)
{
	if (st->st_uid != me && st->st_uid != 0) {
		*why = "belongs to another user";
		return false;
	}
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
		*why = "is writable by other users";
		return false;
	}
	return true;
}

gs_err gs_safe_mkdir(const char *dir, mode_t mode, bool force,
                     struct gs_errbuf *eb)
{
	char buf[PATH_MAX], parent[PATH_MAX];
	struct stat st;
	uid_t me = geteuid();
	const char *why = NULL;
	char *slash;
	int fd, e;

	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return gs_fail(eb, GS_ERR_RANGE, "directory path too long: %s",
		               dir);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		(void)mkdir(buf, 0755); /* checked below, where it matters */
		*p = '/';
	}
	if (mkdir(buf, mode) == 0) {
		force = true;
	} else if (errno != EEXIST) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "mkdir %s: %s", dir, strerror(e));
	}
	if (lstat(buf, &st) != 0) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "%s: %s", dir, strerror(e));
	}
	if (S_ISLNK(st.st_mode))
		return gs_fail(eb, GS_ERR_PERM,
		               "%s is a symbolic link; refusing to follow it (another user may have planted it)",
		               dir);
	if (!S_ISDIR(st.st_mode))
		return gs_fail(eb, GS_ERR_INVALID, "%s is not a directory", dir);
	if (!trusted(&st, me, &why))
		return gs_fail(eb, GS_ERR_PERM,
		               "%s %s (uid %u, mode %03o); refusing it",
		               dir, why, (unsigned)st.st_uid,
		               (unsigned)(st.st_mode & 07777));
	snprintf(parent, sizeof(parent), "%s", buf);
	slash = strrchr(parent, '/');
	if (slash != NULL) {
		if (slash == parent)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (stat(parent, &st) == 0 && !trusted(&st, me, &why))
			return gs_fail(eb, GS_ERR_PERM,
			               "%s: its parent %s %s (uid %u, mode %03o); refusing it",
			               dir, parent, why, (unsigned)st.st_uid,
			               (unsigned)(st.st_mode & 07777));
	}
	fd = open(buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "%s: %s", dir,
		               gs_safe_why(buf, e));
	}
	if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) ||
	    (force && st.st_uid == me && (st.st_mode & 07777) != mode &&
	     fchmod(fd, mode) != 0)) {
		e = errno;
		close(fd);
		return gs_fail(eb, GS_ERR_IO, "%s: cannot set mode %03o: %s",
		               dir, (unsigned)mode, strerror(e));
	}
	close(fd);
	return GS_OK;
}
