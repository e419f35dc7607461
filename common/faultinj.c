/*
 * faultinj.c - the GPUSLICE_FAULT switch (see include/gs/faultinj.h).
 * The variable is read once; counters are atomic.
 */
#include "gs/faultinj.h"

#include "gs/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RULES 16

struct rule {
	char site[64];
	unsigned long nth;
	bool and_later;
	unsigned long calls; /* atomic */
};

static struct rule rules[MAX_RULES];
static int n_rules;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void parse(void)
{
	const char *env = getenv("GPUSLICE_FAULT");
	char buf[1024], *save = NULL, *tok;

	if (env == NULL || env[0] == '\0')
		return;
	(void)snprintf(buf, sizeof(buf), "%s", env);
	for (tok = strtok_r(buf, ",", &save); tok && n_rules < MAX_RULES;
	     tok = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(tok, ':'), *end;
		struct rule *r = &rules[n_rules];

		if (colon == NULL || colon == tok ||
		    (size_t)(colon - tok) >= sizeof(r->site))
			continue;
		memcpy(r->site, tok, (size_t)(colon - tok));
		r->site[colon - tok] = '\0';
		r->nth = strtoul(colon + 1, &end, 10);
		r->and_later = *end == '+';
		if (r->nth == 0)
			continue;
		n_rules++;
	}
}

bool gs_fault_hit(const char *site)
{
	(void)pthread_once(&once, parse);
	for (int i = 0; i < n_rules; i++) {
		unsigned long k;

		if (strcmp(rules[i].site, site) != 0)
			continue;
		k = __atomic_add_fetch(&rules[i].calls, 1, __ATOMIC_RELAXED);
		if (k == rules[i].nth ||
		    (rules[i].and_later && k > rules[i].nth)) {
			/* Tests read this line to know the fault fired. */
			gs_warn("faultinj", "fault injected: %s call %lu", site,
			        k);
			return true;
		}
		return false;
	}
	return false;
}
