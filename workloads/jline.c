/*
 * jline.c - the one-line JSON object builder of jline.h.
 *
 * Invariant: while not overflowed, buf[0..len) is "{" followed by the
 * members added so far, comma-separated, and buf[len] is '\0'.
 */
#include "jline.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

void gs_jline_init(struct gs_jline *j)
{
	j->buf[0] = '{';
	j->buf[1] = '\0';
	j->len = 1;
	j->overflow = false;
	j->closed = false;
}

static void put(struct gs_jline *j, const char *s, size_t n)
{
	if (j->overflow || j->closed)
		return;
	/* Keep one byte for the closing brace and one for the NUL. */
	if (n > sizeof(j->buf) - 2 - j->len) {
		j->overflow = true;
		return;
	}
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	j->buf[j->len] = '\0';
}

static void putf(struct gs_jline *j, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void putf(struct gs_jline *j, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		j->overflow = true;
		return;
	}
	put(j, tmp, (size_t)n);
}

static void put_string(struct gs_jline *j, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	put(j, "\"", 1);
	for (; *p; p++) {
		switch (*p) {
		case '"':
			put(j, "\\\"", 2);
			break;
		case '\\':
			put(j, "\\\\", 2);
			break;
		case '\n':
			put(j, "\\n", 2);
			break;
		case '\r':
			put(j, "\\r", 2);
			break;
		case '\t':
			put(j, "\\t", 2);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				putf(j, "\\u%04x", *p);
			else
				put(j, (const char *)p, 1);
		}
	}
	put(j, "\"", 1);
}

static void put_key(struct gs_jline *j, const char *key)
{
	if (j->len > 1)
		put(j, ",", 1);
	put_string(j, key);
	put(j, ":", 1);
}

void gs_jline_str(struct gs_jline *j, const char *key, const char *val)
{
	put_key(j, key);
	if (val)
		put_string(j, val);
	else
		put(j, "null", 4);
}

void gs_jline_int(struct gs_jline *j, const char *key, long long val)
{
	put_key(j, key);
	putf(j, "%lld", val);
}

void gs_jline_u64(struct gs_jline *j, const char *key, uint64_t val)
{
	put_key(j, key);
	putf(j, "%llu", (unsigned long long)val);
}

void gs_jline_num(struct gs_jline *j, const char *key, double val)
{
	put_key(j, key);
	if (isfinite(val))
		putf(j, "%.6g", val);
	else
		put(j, "null", 4);
}

void gs_jline_bool(struct gs_jline *j, const char *key, bool val)
{
	put_key(j, key);
	if (val)
		put(j, "true", 4);
	else
		put(j, "false", 5);
}

void gs_jline_null(struct gs_jline *j, const char *key)
{
	put_key(j, key);
	put(j, "null", 4);
}

const char *gs_jline_end(struct gs_jline *j)
{
	if (j->overflow)
		return NULL;
	/* put() always left room for this brace. */
	if (!j->closed) {
		j->buf[j->len++] = '}';
		j->buf[j->len] = '\0';
		j->closed = true;
	}
	return j->buf;
}

int gs_jline_print(struct gs_jline *j, FILE *f)
{
	const char *line = gs_jline_end(j);

	if (!line)
		return -1;
	if (fprintf(f, "%s\n", line) < 0 || fflush(f) != 0)
		return -1;
	return 0;
}
