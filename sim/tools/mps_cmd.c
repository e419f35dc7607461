/*
 * mps_cmd.c - parser for the MPS control commands (see mps_cmd.h).
 *
 * A line is split on blanks into at most eight words; the first names the
 * command, the rest are checked against what that command takes. Numbers
 * are parsed strictly (no sign, no trailing junk, no overflow) because the
 * control daemon applies them to live servers.
 */
#include "mps_cmd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORDS    8
#define LINE_MAX_LEN 512

static const char *const op_names[] = {
#define GS__MPS_OP_NAME(op, name, args) name,
    GS_MPS_COMMANDS(GS__MPS_OP_NAME)
#undef GS__MPS_OP_NAME
};

static const char *const op_args[] = {
#define GS__MPS_OP_ARGS(op, name, args) args,
    GS_MPS_COMMANDS(GS__MPS_OP_ARGS)
#undef GS__MPS_OP_ARGS
};

const char *gs__mps_cmd_name(enum gs__mps_op op)
{
	if ((int)op < 0 || op >= GS_MPS__COUNT)
		return "?";
	return op_names[op];
}

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int parse_pct(const char *s, double *out)
{
	char *end;
	double v;

	if ((s[0] < '0' || s[0] > '9') && s[0] != '.')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !(v >= 0.0 && v <= 100.0))
		return -1;
	*out = v;
	return 0;
}

int gs__mps_parse_limit(const char *s, uint64_t *out_mib)
{
	char *end;
	unsigned long long v;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || v == 0)
		return -1;
	if ((end[0] == 'M' || end[0] == 'm') && end[1] == '\0') {
		*out_mib = v;
		return 0;
	}
	if ((end[0] == 'G' || end[0] == 'g') && end[1] == '\0' &&
	    v <= UINT64_MAX / 1024) {
		*out_mib = v * 1024;
		return 0;
	}
	return -1;
}

static int set_dev(struct gs__mps_cmd *out, const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= sizeof(out->dev))
		return -1;
	memcpy(out->dev, s, n + 1);
	return 0;
}

static int bad(char *err, size_t errlen, const char *fmt, const char *a,
               const char *b)
{
	if (err != NULL && errlen > 0)
		(void)snprintf(err, errlen, fmt, a, b);
	return -1;
}

static int parse_args(struct gs__mps_cmd *out, char **w, int n)
{
	switch (out->op) {
	case GS_MPS_QUIT: {
		uint32_t seconds;

		if (n == 0)
			return 0;
		/* "-t <seconds>": accepted; the sim stops at once anyway. */
		if (n != 2 || strcmp(w[0], "-t") != 0)
			return -1;
		return parse_u32(w[1], &seconds);
	}
	case GS_MPS_GET_SERVER_LIST:
	case GS_MPS_GET_DEFAULT_ATP:
	case GS_MPS_GET_DEFAULT_PRIO:
		return n == 0 ? 0 : -1;
	case GS_MPS_GET_SERVER_STATUS:
	case GS_MPS_GET_CLIENT_LIST:
	case GS_MPS_GET_ATP:
		return n == 1 ? parse_u32(w[0], &out->pid) : -1;
	case GS_MPS_START_SERVER:
		return n == 2 && strcmp(w[0], "-uid") == 0
		           ? parse_u32(w[1], &out->uid)
		           : -1;
	case GS_MPS_GET_DEVICE_CLIENT_LIST:
		if (n == 0)
			return 0;
		out->has_pid = 1;
		return n == 1 ? parse_u32(w[0], &out->pid) : -1;
	case GS_MPS_PS:
		if (n == 0)
			return 0;
		out->has_pid = 1;
		return n == 2 && strcmp(w[0], "-p") == 0
		           ? parse_u32(w[1], &out->pid)
		           : -1;
	case GS_MPS_SET_DEFAULT_ATP:
		return n == 1 ? parse_pct(w[0], &out->percentage) : -1;
	case GS_MPS_SET_ATP:
		if (n != 2 || parse_u32(w[0], &out->pid) != 0)
			return -1;
		return parse_pct(w[1], &out->percentage);
	case GS_MPS_SET_DEFAULT_MEM:
		if (n != 2 || set_dev(out, w[0]) != 0)
			return -1;
		return gs__mps_parse_limit(w[1], &out->limit_mib);
	case GS_MPS_GET_DEFAULT_MEM:
		return n == 1 ? set_dev(out, w[0]) : -1;
	case GS_MPS_SET_MEM:
		if (n != 3 || parse_u32(w[0], &out->pid) != 0 ||
		    set_dev(out, w[1]) != 0)
			return -1;
		return gs__mps_parse_limit(w[2], &out->limit_mib);
	case GS_MPS_GET_MEM:
		if (n != 2 || parse_u32(w[0], &out->pid) != 0)
			return -1;
		return set_dev(out, w[1]);
	case GS_MPS_TERMINATE_CLIENT:
		if (n != 2 || parse_u32(w[0], &out->pid) != 0)
			return -1;
		return parse_u32(w[1], &out->client_pid);
	case GS_MPS_SET_DEFAULT_PRIO:
		if (n != 1 ||
		    (strcmp(w[0], "0") != 0 && strcmp(w[0], "1") != 0))
			return -1;
		out->priority = w[0][0] - '0';
		return 0;
	case GS_MPS__COUNT:
		break;
	}
	return -1;
}

int gs__mps_cmd_parse(const char *line, struct gs__mps_cmd *out, char *err,
                      size_t errlen)
{
	char buf[LINE_MAX_LEN];
	char *w[MAX_WORDS], *save = NULL, *tok;
	size_t len = strlen(line);
	int n = 0;

	memset(out, 0, sizeof(*out));
	if (len >= sizeof(buf))
		return bad(err, errlen, "line too long%s%s", "", "");
	memcpy(buf, line, len + 1);
	for (tok = strtok_r(buf, " \t\r\n", &save); tok != NULL;
	     tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == MAX_WORDS)
			return bad(err, errlen, "too many arguments%s%s", "",
			           "");
		w[n++] = tok;
	}
	if (n == 0)
		return bad(err, errlen, "empty command%s%s", "", "");
	for (int op = 0; op < GS_MPS__COUNT; op++) {
		if (strcmp(w[0], op_names[op]) != 0)
			continue;
		out->op = (enum gs__mps_op)op;
		if (parse_args(out, w + 1, n - 1) != 0)
			return bad(err, errlen, "usage: %s %s", op_names[op],
			           op_args[op]);
		return 0;
	}
	return bad(err, errlen, "Unrecognized command: %s%s", w[0], "");
}
