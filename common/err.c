/*
 * err.c - names, messages and exit statuses of gs_err, and the error
 * buffer. All tables are generated from GS_ERR_MAP in include/gs/err.h so
 * they cannot drift apart.
 */
#include "gs/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const err_msgs[] = {
#define X(name, exit, msg) msg,
	GS_ERR_MAP(X)
#undef X
};

static const char *const err_names[] = {
#define X(name, exit, msg) #name,
	GS_ERR_MAP(X)
#undef X
};

static const int err_exits[] = {
#define X(name, exit, msg) exit,
	GS_ERR_MAP(X)
#undef X
};

const char *gs_strerror(gs_err err)
{
	if ((unsigned)err >= GS_ERR__COUNT)
		return "unknown error";
	return err_msgs[err];
}

const char *gs_err_name(gs_err err)
{
	if ((unsigned)err >= GS_ERR__COUNT)
		return "UNKNOWN";
	return err_names[err];
}

int gs_err_exit_code(gs_err err)
{
	if ((unsigned)err >= GS_ERR__COUNT)
		return 1;
	return err_exits[err];
}

void gs_errbuf_init(struct gs_errbuf *eb)
{
	eb->msg[0] = '\0';
	eb->set = false;
}

gs_err gs_fail(struct gs_errbuf *eb, gs_err code, const char *fmt, ...)
{
	va_list ap;

	if (eb == NULL || eb->set)
		return code;
	va_start(ap, fmt);
	(void)vsnprintf(eb->msg, sizeof(eb->msg), fmt, ap);
	va_end(ap);
	eb->set = true;
	return code;
}

const char *gs_errbuf_msg(const struct gs_errbuf *eb, gs_err code)
{
	if (eb != NULL && eb->set)
		return eb->msg;
	return gs_strerror(code);
}
