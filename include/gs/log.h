/*
 * log.h - the one logging module. Messages are single lines with a level,
 * a component tag and key=value subjects (`gpu=0 slice=a`). The level is
 * checked before any argument is evaluated. Output goes to stderr by
 * default, or to a file set with gs_log_open(); the shim never uses the
 * default (it is a guest in the host's process) and logs only to a file.
 */
#ifndef GS_LOG_H
#define GS_LOG_H

enum gs_log_level {
	GS_LOG_DEBUG = 0,
	GS_LOG_INFO = 1,
	GS_LOG_WARN = 2,
	GS_LOG_ERROR = 3,
	GS_LOG_OFF = 4,
};

/* Process-wide level; the initial level is GS_LOG_INFO. */
extern int gs_log_level_current;

void gs_log_set_level(enum gs_log_level level);
/* Parses "debug|info|warn|error|off"; returns -1 on anything else. */
int gs_log_level_parse(const char *s);
/* Sends output to `path` (appending); NULL restores stderr. Returns 0 or -errno. */
int gs_log_open(const char *path);
/* Discards all output until gs_log_open() names a destination. */
void gs_log_silence(void);
void gs_log_write(enum gs_log_level level, const char *tag, const char *fmt,
		  ...) __attribute__((format(printf, 3, 4)));

#define gs_log(level, tag, ...)                                                \
	do {                                                                   \
		if ((int)(level) >= gs_log_level_current)                      \
			gs_log_write((level), (tag), __VA_ARGS__);             \
	} while (0)

#define gs_debug(tag, ...) gs_log(GS_LOG_DEBUG, tag, __VA_ARGS__)
#define gs_info(tag, ...) gs_log(GS_LOG_INFO, tag, __VA_ARGS__)
#define gs_warn(tag, ...) gs_log(GS_LOG_WARN, tag, __VA_ARGS__)
#define gs_error(tag, ...) gs_log(GS_LOG_ERROR, tag, __VA_ARGS__)

#endif
