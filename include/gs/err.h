/*
 * err.h - gpuslice's one error enum, its messages, and the error buffer.
 *
 * Every action in gpuslice returns a gs_err (GS_OK == 0). The fixed message
 * for each code comes from gs_strerror(); details (which value, which file,
 * which line) go into a struct gs_errbuf that the caller owns. The first
 * message written into a buffer wins, as in curl's failf(): the innermost
 * failure is usually the most precise one.
 *
 * The list below is the single source for the enum, the names and the
 * messages (an X-macro, like libuv's UV_ERRNO_MAP); the CLI maps each code
 * to a documented exit status with gs_err_exit_code().
 */
#ifndef GS_ERR_H
#define GS_ERR_H

#include <stdbool.h>
#include <stddef.h>

/* X(NAME, exit status, message) */
#define GS_ERR_MAP(X)                                                          \
	X(OK, 0, "success")                                                    \
	X(INVALID, 2, "invalid argument")                                      \
	X(PARSE, 2, "malformed input")                                         \
	X(RANGE, 2, "value out of range")                                      \
	X(UNKNOWN_MODEL, 2, "unknown GPU model")                               \
	X(UNKNOWN_PROFILE, 2, "unknown MIG profile")                           \
	X(NOMEM, 1, "out of host memory")                                      \
	X(NOT_FOUND, 3, "not found")                                           \
	X(EXISTS, 1, "already exists")                                         \
	X(PERM, 4, "permission denied")                                        \
	X(NO_FIT, 5, "request does not fit")                                   \
	X(QUOTA, 5, "quota exceeded")                                          \
	X(IO, 1, "input/output error")                                         \
	X(CORRUPT, 1, "state is corrupted")                                    \
	X(VERSION, 1, "state has an incompatible version")                     \
	X(BUSY, 1, "resource busy")                                            \
	X(UNSUPPORTED, 1, "operation not supported")                           \
	X(DRIVER, 1, "GPU driver error")                                       \
	X(TIMEOUT, 1, "timed out")                                             \
	X(UNAVAILABLE, 6, "service unavailable")                               \
	X(INTERNAL, 1, "internal error")

enum gs_err {
#define GS__ERR_ENUM(name, exit, msg) GS_ERR_##name,
	GS_ERR_MAP(GS__ERR_ENUM)
#undef GS__ERR_ENUM
	GS_ERR__COUNT
};
#define GS_OK GS_ERR_OK
typedef enum gs_err gs_err;

/* Fixed message for a code; never NULL (unknown codes get a fixed text). */
const char *gs_strerror(gs_err err);
/* The code's name without prefix, e.g. "NO_FIT". */
const char *gs_err_name(gs_err err);
/* The documented process exit status for a code (0 for GS_OK). */
int gs_err_exit_code(gs_err err);

/*
 * An error buffer the caller owns. Initialise with gs_errbuf_init() or
 * `struct gs_errbuf eb = {0}`. gs_fail() writes only while the buffer is
 * empty, so the first (innermost) message wins, and returns `code` so that
 * callers can write `return gs_fail(eb, GS_ERR_RANGE, "...", ...)`.
 * A NULL buffer is allowed and discards the message.
 */
#define GS_ERRBUF_SIZE 256
struct gs_errbuf {
	char msg[GS_ERRBUF_SIZE];
	bool set;
};

void gs_errbuf_init(struct gs_errbuf *eb);
gs_err gs_fail(struct gs_errbuf *eb, gs_err code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The buffer's message, or gs_strerror(code) when nothing was written. */
const char *gs_errbuf_msg(const struct gs_errbuf *eb, gs_err code);

#endif
