/*
 * safepath.h - creating and trusting directories and files that someone
 * else could have planted a symbolic link at (common/safepath.c): the
 * daemon's state and run directories, its socket's directory, its log,
 * the CLI's lock and output files. A link is refused, never followed.
 */
#ifndef GS_SAFEPATH_H
#define GS_SAFEPATH_H

#include <stdbool.h>
#include <sys/types.h>

#include "gs/err.h"

/*
 * mkdir -p `dir`, then trusts it only when it is a directory itself (not
 * a symbolic link), owned by this process's uid or root, and writable by
 * nobody else (unless sticky, as /tmp); its parent likewise owned by us
 * or root, or sticky (another user's parent could swap it). A directory
 * it made gets `mode` exactly, and so does one of ours that
 * existed when `force` (through a descriptor opened O_NOFOLLOW, never the
 * path). GS_ERR_PERM with the reason in eb otherwise; nothing is changed
 * then.
 */
gs_err gs_safe_mkdir(const char *dir, mode_t mode, bool force,
                     struct gs_errbuf *eb);

/*
 * open(2) with O_NOFOLLOW and O_CLOEXEC added: a link at `path` is
 * refused (ELOOP, or EACCES with O_CREAT on some kernels), never
 * followed; gs_safe_why words the failure.
 */
int gs_safe_open(const char *path, int flags, mode_t mode);

/* The message for an open of `path` (O_NOFOLLOW) that failed with errno
 * `e`: that it is a symbolic link, refused, or strerror(e). */
const char *gs_safe_why(const char *path, int e);

#endif
