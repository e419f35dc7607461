/*
 * jline.h - one flat JSON object on one line: how every workload reports
 * its results (or its error) on stdout.
 *
 * The object is built into a fixed buffer the caller owns (no allocation);
 * keys come out in the order they were added. Strings are escaped, numbers
 * that are not finite become null. A line that would outgrow the buffer is
 * marked overflowed and gs_jline_end() refuses it, rather than emitting
 * truncated JSON.
 */
#ifndef GS_WORKLOADS_JLINE_H
#define GS_WORKLOADS_JLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GS_JLINE_MAX 4096

struct gs_jline {
	char buf[GS_JLINE_MAX];
	size_t len;
	bool overflow;
	bool closed; /* gs_jline_end() ran; add no more members */
};

void gs_jline_init(struct gs_jline *j);
/* A string member; `val` NULL writes null. */
void gs_jline_str(struct gs_jline *j, const char *key, const char *val);
void gs_jline_int(struct gs_jline *j, const char *key, long long val);
void gs_jline_u64(struct gs_jline *j, const char *key, uint64_t val);
/* A number with 6 significant digits; NaN and infinities as null. */
void gs_jline_num(struct gs_jline *j, const char *key, double val);
void gs_jline_bool(struct gs_jline *j, const char *key, bool val);
void gs_jline_null(struct gs_jline *j, const char *key);

/*
 * Closes the object and returns the line (without newline), or NULL if it
 * overflowed. The buffer stays owned by `j`.
 */
const char *gs_jline_end(struct gs_jline *j);

/*
 * gs_jline_end(), then writes the line and a newline to `f` and flushes,
 * so a reader sees it even if the process is killed right after. Returns 0,
 * or -1 when the line overflowed or the write failed.
 */
int gs_jline_print(struct gs_jline *j, FILE *f);

#endif
