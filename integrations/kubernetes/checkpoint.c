/*
 * checkpoint.c - atomic files and the claim checkpoint (checkpoint.h).
 */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static gs_err make_dir(const char *dir, struct gs_errbuf *eb)
{
	char buf[4096];
	size_t n = strlen(dir);
	int e;

	if (n == 0 || n >= sizeof(buf))
		return gs_fail(eb, GS_ERR_INVALID, "bad directory '%s'", dir);
	memcpy(buf, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		buf[i] = '\0';
		if (mkdir(buf, 0755) != 0) {
			e = errno;
			if (e != EEXIST)
				return gs_fail(eb, GS_ERR_IO,
				               "cannot create %s: %s", buf,
				               strerror(e));
		}
		buf[i] = i == n ? '\0' : '/';
	}
	return GS_OK;
}

/* The atomic write; `durable`: fsync the file and the directory. */
static gs_err write_atomic(const char *dir, const char *name, const char *data,
                           size_t len, bool durable, struct gs_errbuf *eb)
{
	char tmp[4096], path[4096];
	size_t off = 0;
	int fd, dfd, e;
	gs_err err;

	err = make_dir(dir, eb);
	if (err != GS_OK)
		return err;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name);
	fd = mkstemp(tmp);
	if (fd < 0) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO,
		               "cannot create a temp file in %s: %s", dir,
		               strerror(e));
	}
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = w < 0 ? errno : EIO;
			goto out_unlink;
		}
		off += (size_t)w;
	}
	if (fchmod(fd, 0644) != 0 || (durable && fsync(fd) != 0)) {
		e = errno;
		goto out_unlink;
	}
	if (close(fd) != 0) {
		e = errno;
		fd = -1;
		goto out_unlink;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		e = errno;
		goto out_unlink;
	}
	dfd = durable ? open(dir, O_RDONLY | O_DIRECTORY) : -1;
	if (dfd >= 0) {
		(void)fsync(
		    dfd); /* best effort: the rename is already visible */
		close(dfd);
	}
	return GS_OK;
out_unlink:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return gs_fail(eb, GS_ERR_IO, "cannot write %s: %s", path, strerror(e));
}

gs_err gs_kfile_write_atomic(const char *dir, const char *name,
                             const char *data, size_t len, struct gs_errbuf *eb)
{
	return write_atomic(dir, name, data, len, true, eb);
}

gs_err gs_kfile_write_atomic_nosync(const char *dir, const char *name,
                                    const char *data, size_t len,
                                    struct gs_errbuf *eb)
{
	return write_atomic(dir, name, data, len, false, eb);
}

gs_err gs_kckpt_load(const char *dir, json_t **ck, struct gs_errbuf *eb)
{
	char path[4096];
	json_error_t je;
	json_t *o, *v;

	*ck = NULL;
	snprintf(path, sizeof(path), "%s/%s", dir, GS_KCKPT_FILE);
	if (access(path, F_OK) != 0) {
		*ck = json_pack("{s:i, s:{}}", "version", GS_KCKPT_VERSION,
		                "claims");
		return *ck ? GS_OK : gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	o = json_load_file(path, 0, &je);
	if (o == NULL)
		return gs_fail(eb, GS_ERR_CORRUPT,
		               "checkpoint %s: %s (line %d)", path, je.text,
		               je.line);
	v = json_object_get(o, "version");
	if (!json_is_integer(v) ||
	    !json_is_object(json_object_get(o, "claims"))) {
		json_decref(o);
		return gs_fail(eb, GS_ERR_CORRUPT,
		               "checkpoint %s has no version or claims", path);
	}
	if (json_integer_value(v) > GS_KCKPT_VERSION) {
		long long ver = (long long)json_integer_value(v);

		json_decref(o);
		return gs_fail(
		    eb, GS_ERR_VERSION,
		    "checkpoint %s has version %lld, this driver reads %d",
		    path, ver, GS_KCKPT_VERSION);
	}
	*ck = o;
	return GS_OK;
}

static gs_err save(const char *dir, const json_t *ck, bool durable,
                   struct gs_errbuf *eb)
{
	char *text = json_dumps(ck, JSON_COMPACT | JSON_SORT_KEYS);
	gs_err err;

	if (text == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	err = write_atomic(dir, GS_KCKPT_FILE, text, strlen(text), durable, eb);
	free(text);
	return err;
}

gs_err gs_kckpt_save(const char *dir, const json_t *ck, struct gs_errbuf *eb)
{
	return save(dir, ck, true, eb);
}

gs_err gs_kckpt_save_nosync(const char *dir, const json_t *ck,
                            struct gs_errbuf *eb)
{
	return save(dir, ck, false, eb);
}
