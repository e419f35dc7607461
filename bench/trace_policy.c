/*
 * trace_policy.c - the registry of trace placement policies: names, the
 * callback table of each (policy_<name>.c), and the device rules they
 * share.
 */
#include "trace_int.h"

#include <strings.h>

#define GS__TRACE_POLICY_DECL(id, name, disp)                                  \
	extern const struct gs__trace_policy_ops gs__trace_policy_##name;
GS_TRACE_POLICY_MAP(GS__TRACE_POLICY_DECL)
#undef GS__TRACE_POLICY_DECL

/* clang-format off */
static const struct {
	const char *cli;
	const char *display;
	const struct gs__trace_policy_ops *ops;
} policies[] = {
#define GS__TRACE_POLICY_ROW(id, name, disp)                                   \
	[GS_TRACE_POLICY_##id] = {#name, disp, &gs__trace_policy_##name},
	GS_TRACE_POLICY_MAP(GS__TRACE_POLICY_ROW)
#undef GS__TRACE_POLICY_ROW
};
/* clang-format on */

const char *gs_trace_policy_name(enum gs_trace_policy p)
{
	return (unsigned)p < GS_TRACE_POLICY__COUNT ? policies[p].cli : NULL;
}

const char *gs_trace_policy_display(enum gs_trace_policy p)
{
	return (unsigned)p < GS_TRACE_POLICY__COUNT ? policies[p].display
	                                            : NULL;
}

int gs_trace_policy_parse(const char *name)
{
	for (int p = 0; p < GS_TRACE_POLICY__COUNT; p++) {
		if (strcasecmp(name, policies[p].cli) == 0)
			return p;
	}
	return -1;
}

const struct gs__trace_policy_ops *gs__trace_policy_ops(enum gs_trace_policy p)
{
	return (unsigned)p < GS_TRACE_POLICY__COUNT ? policies[p].ops : NULL;
}

int gs__trace_dev_bestfit(const struct gs_trace_nstate *s, uint16_t milli)
{
	int best = -1;

	for (unsigned d = 0; d < s->gpus; d++) {
		if (s->gpu_free[d] >= milli &&
		    (best < 0 || s->gpu_free[d] < s->gpu_free[best]))
			best = (int)d;
	}
	return best;
}
