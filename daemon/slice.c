/*
 * slice.c - names for the slice record's enums and the name rule shared by
 * slices and teams (see slice.h).
 */
#include "slice.h"

#include <string.h>

const char *gs_slice_state_name(int state)
{
	switch (state) {
	case GS_SLICE_READY:
		return "ready";
	case GS_SLICE_FLAGGED:
		return "flagged";
	case GS_SLICE_FAULTED:
		return "faulted";
	}
	return "unknown";
}

static bool name_char(char c, bool first)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return !first && (c == '.' || c == '_' || c == '-');
}

bool gs_name_is_valid(const char *s)
{
	size_t n = 0;

	if (s == NULL)
		return false;
	for (; s[n]; n++)
		if (n >= GS_NAME_MAX - 1 || !name_char(s[n], n == 0))
			return false;
	return n > 0;
}
