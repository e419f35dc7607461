/*
 * faultinj.c - the GPUSLICE_FAULT switch (see include/gs/faultinj.h).
 * The variables are read once; counters are atomic. `armed` is the fast
 * path: once the environment was read and names nothing, every call is
 * one load and a branch.
 *
 * With GPUSLICE_FAULT_COUNTS=FILE, every site the process passes through
 * is counted (a small table under a mutex: a test-only path) and the
 * counts are appended to FILE at exit, one "SITE CALLS" line each, so a
 * sweep knows which sites a run reaches and how often.
 */
#include "gs/faultinj.h"

#include "gs/log.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_RULES  16
#define MAX_COUNTS 64

struct rule {
	char site[64];
	unsigned long nth;
	bool and_later;
	unsigned long calls; /* atomic */
};

static struct rule rules[MAX_RULES];
static int n_rules;
static pthread_once_t once = PTHREAD_ONCE_INIT;
/* -1: environment not read yet, 0: nothing to do, 1: rules or counting */
static int armed = -1;

static struct {
	char site[64];
	unsigned long calls;
} counts[MAX_COUNTS];
static int n_counts;
static char counts_path[512];
static pthread_mutex_t counts_mu = PTHREAD_MUTEX_INITIALIZER;

static void counts_write(void)
{
	char buf[MAX_COUNTS * 96];
	size_t len = 0;
	int fd;

	(void)pthread_mutex_lock(&counts_mu);
	for (int i = 0; i < n_counts; i++) {
		int n = snprintf(buf + len, sizeof(buf) - len, "%s %lu\n",
		                 counts[i].site, counts[i].calls);

		if (n < 0 || (size_t)n >= sizeof(buf) - len)
			break;
		len += (size_t)n;
	}
	(void)pthread_mutex_unlock(&counts_mu);
	if (len == 0)
		return;
	fd = open(counts_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
	          0644);
	if (fd < 0)
		return;
	(void)!write(fd, buf, len); /* one write: lines of processes whole */
	(void)close(fd);
}

static void count(const char *site)
{
	int i;

	(void)pthread_mutex_lock(&counts_mu);
	for (i = 0; i < n_counts; i++)
		if (strcmp(counts[i].site, site) == 0)
			break;
	if (i == n_counts && n_counts < MAX_COUNTS) {
		(void)snprintf(counts[i].site, sizeof(counts[i].site), "%s",
		               site);
		n_counts++;
	}
	if (i < n_counts)
		counts[i].calls++;
	(void)pthread_mutex_unlock(&counts_mu);
}

static void parse(void)
{
	const char *env = getenv("GPUSLICE_FAULT");
	const char *cpath = getenv("GPUSLICE_FAULT_COUNTS");
	char buf[1024], *save = NULL, *tok;

	if (cpath != NULL && cpath[0] != '\0') {
		(void)snprintf(counts_path, sizeof(counts_path), "%s", cpath);
		(void)atexit(counts_write);
	}
	if (env == NULL || env[0] == '\0')
		goto out;
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
out:
	__atomic_store_n(&armed, n_rules > 0 || counts_path[0] != '\0',
	                 __ATOMIC_RELEASE);
}

bool gs_fault_hit(const char *site)
{
	int a = __atomic_load_n(&armed, __ATOMIC_ACQUIRE);

	if (a == 0)
		return false;
	if (a < 0)
		(void)pthread_once(&once, parse);
	if (counts_path[0] != '\0')
		count(site);
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
