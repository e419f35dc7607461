/*
 * bus.c - the sim's host<->device bus (bus.h): copy bandwidth per GPU
 * model, and the wait a copy takes (the modelled time from its call, the
 * sim's own memmove included, less the lateness of the thread's previous
 * wait).
 *
 * The table gives pinned-memory copy bandwidth over the GPU's host link,
 * as measured figures are usually quoted (about 80 % of the link's raw
 * rate): PCIe Gen5 x16 (H100, H200, B200 boards and SXM modules: their
 * host link is PCIe Gen5) about 50 GB/s; PCIe Gen4 x16 (A100, A30, L4,
 * L40S, A10) about 25 GB/s. GH200's and GB200's NVLink-C2C host link is
 * far faster and is listed at 400 GB/s. Unknown models get the Gen4
 * figure. Names are the catalog's (data/mig-profiles.json).
 *
 * The setting is read once (pthread_once), as the sim's driver reads its
 * environment at start; a value it cannot read leaves the bus off.
 */
#include "bus.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct {
	const char *prefix;
	double gbps;
} models[] = {
    {"GH200", 400.0}, {"GB200", 400.0}, {"H100", 50.0}, {"H200", 50.0},
    {"H20", 50.0},    {"B200", 50.0},   {"B100", 50.0}, {"A100", 25.0},
    {"A30", 25.0},    {"A10", 25.0},    {"L40", 25.0},  {"L4", 25.0},
};

#define GS__BUS_DEFAULT_GBPS 25.0

double gs__bus_model_gbps(const char *model)
{
	for (size_t i = 0; model && i < sizeof(models) / sizeof(models[0]); i++)
		if (strncmp(model, models[i].prefix,
		            strlen(models[i].prefix)) == 0)
			return models[i].gbps;
	return GS__BUS_DEFAULT_GBPS;
}

bool gs__bus_parse(const char *text, double *gbps)
{
	char *end;
	double x;

	*gbps = 0;
	if (text == NULL || text[0] == '\0' || strcmp(text, "off") == 0)
		return true;
	if (strcmp(text, "model") == 0) {
		*gbps = -1;
		return true;
	}
	errno = 0;
	x = strtod(text, &end);
	if (end == text || *end != '\0' || errno || !(x >= 0 && x <= 1e6))
		return false;
	*gbps = x;
	return true;
}

uint64_t gs__bus_copy_ns(double gbps, uint64_t len)
{
	if (!(gbps > 0))
		return 0;
	return (uint64_t)((double)len / gbps); /* bytes / (GB/s) = ns */
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static double setting; /* 0 off, -1 per model, else GB/s */

/* How late this thread's waits for asynchronous copies woke past their
 * modelled ends (ns), not yet taken off a copy: a sleep wakes tens of
 * microseconds late (timer slack, scheduling), which a copy engine
 * working through queued copies does not add, so the next copies' waits
 * are shortened by it until it is used up, or dropped when the next copy
 * comes after the bus was idle (GS__BUS_IDLE_NS). A synchronous copy's
 * lateness is the host's (the engine was idle): none is kept, and a
 * synchronous copy still never returns before its modelled time unless
 * queued copies before it were late. Time the sim's memmove ran past the model is the copy's
 * and is not taken off. */
static __thread uint64_t late_ns;
static __thread uint64_t late_at; /* when it was last added to */

/* A copy called longer than this after the thread's last wait found the
 * bus idle: the lateness is dropped. */
#define GS__BUS_IDLE_NS 1000000ULL

static void read_setting(void)
{
	if (!gs__bus_parse(getenv("GPUSLICE_SIM_BUS_GBPS"), &setting))
		setting = 0;
}

uint64_t gs__bus_now(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void gs__bus_wait(const char *model, uint64_t len, uint64_t since_ns,
                  bool queued)
{
	struct timespec ts;
	uint64_t ns, end, now, done, need, late;
	int saved = errno; /* the program's, as a driver leaves it */

	(void)pthread_once(&once, read_setting);
	if (setting == 0)
		goto out;
	ns = gs__bus_copy_ns(setting < 0 ? gs__bus_model_gbps(model) : setting,
	                     len);
	if (ns == 0)
		goto out;
	late = since_ns > late_at + GS__BUS_IDLE_NS ? 0 : late_ns;
	now = gs__bus_now();
	done = now > since_ns ? now - since_ns : 0; /* the sim's memmove */
	need = ns > done ? ns - done : 0;
	if (need <= late) { /* covered by earlier lateness */
		late_ns = late - need;
		late_at = now;
		goto out;
	}
	end = now + need - late;
	ts.tv_sec = (time_t)(end / 1000000000ULL);
	ts.tv_nsec = (long)(end % 1000000000ULL);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
	late_at = gs__bus_now();
	late_ns = queued ? late_at - end : 0;
out:
	errno = saved;
}
