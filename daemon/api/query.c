/*
 * query.c - reading a request's query arguments: by key, times for
 * ?since= / ?until= (gs_api_parse_time), bounded integers.
 */
#include "api_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *gs_http_arg(const struct gs_http_req *req, const char *key)
{
	for (int i = 0; i < req->n_args; i++)
		if (strcmp(req->args[i].key, key) == 0)
			return req->args[i].value;
	return NULL;
}

gs_err gs_api_parse_time(const char *text, int64_t now_ns, int64_t *out_ns)
{
	char *end;
	double v;
	struct tm tm;
	const char *p;

	if (text == NULL || text[0] == '\0')
		return GS_ERR_PARSE;
	if (isdigit((unsigned char)text[0]) && strlen(text) >= 20 &&
	    text[4] == '-') {
		memset(&tm, 0, sizeof(tm));
		p = strptime(text, "%Y-%m-%dT%H:%M:%S", &tm);
		if (p == NULL || (*p != 'Z' && *p != '\0') ||
		    (*p == 'Z' && p[1] != '\0'))
			return GS_ERR_PARSE;
		{
			time_t t = timegm(&tm);

			/* 1970 .. 2255: what nanoseconds in an int64 hold. */
			if (t < 0 || t > 9000000000LL)
				return GS_ERR_RANGE;
			*out_ns = (int64_t)t * 1000000000;
		}
		return GS_OK;
	}
	v = strtod(text, &end);
	if (end == text || !(v >= 0))
		return GS_ERR_PARSE;
	if (v > 9e9)
		return GS_ERR_RANGE;
	if (*end == '\0') {
		*out_ns = (int64_t)(v * 1e9);
		return GS_OK;
	}
	if (end[1] != '\0')
		return GS_ERR_PARSE;
	switch (*end) {
	case 's':
		break;
	case 'm':
		v *= 60;
		break;
	case 'h':
		v *= 3600;
		break;
	case 'd':
		v *= 86400;
		break;
	case 'w':
		v *= 7 * 86400;
		break;
	default:
		return GS_ERR_PARSE;
	}
	if (v > 9e9)
		return GS_ERR_RANGE;
	*out_ns = now_ns - (int64_t)(v * 1e9);
	return GS_OK;
}

bool gs__api_parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	long long v;

	if (s == NULL || *s == '\0')
		return false;
	v = strtoll(s, &end, 10);
	if (*end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}
