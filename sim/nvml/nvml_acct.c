/*
 * nvml_acct.c - per-process accounting of the simulated NVML
 * (nvmlDevice{Get,Set}AccountingMode, ...AccountingPids, ...AccountingStats,
 * ...AccountingBufferSize, ...ClearAccountingPids), imitating the driver's
 * semantics as NVML 13.3's header documents them:
 *
 *   - accounting is off until someone privileged (root here) turns it on
 *     for a GPU; while off, the queries answer NVML_ERROR_NOT_SUPPORTED;
 *     turning it off forgets every record;
 *   - it covers the processes that made a context on the GPU after it was
 *     turned on, running or terminated; the terminated ones are kept in a
 *     circular buffer (here the state's exited ring, GS_SIM_EXITED_RING
 *     records for the whole node, where the driver keeps 4000 per GPU),
 *     newest over oldest, until cleared;
 *   - a running process's stats have time 0, isRunning 1 and the share
 *     of its life so far with a kernel running; a terminated one's have
 *     time (ms its context was active) and the share of that time.
 *
 * The sim's own count behind it: a slot's busy_ns (GPU time its kernels
 * ran), kept in the exited ring when the slot goes. A process's life runs
 * from its start (/proc start time, which NVML reports as startTime) to
 * the release of its last slot. Where the sim cannot know what the driver
 * would: memoryUtilization is 0, and maxMemoryUsage is the memory in use
 * while the process runs and NVML_VALUE_NOT_AVAILABLE once it ended (the
 * exited ring keeps no peak). Accounting on MIG devices, and on a GPU with
 * MIG on, is not supported (as on the driver).
 */
#include "nvml_int.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static_assert(sizeof(nvmlAccountingStats_t) == 56, "nvmlAccountingStats_t");
static_assert(offsetof(nvmlAccountingStats_t, maxMemoryUsage) == 8,
              "nvmlAccountingStats_t.maxMemoryUsage");
static_assert(offsetof(nvmlAccountingStats_t, time) == 16,
              "nvmlAccountingStats_t.time");
static_assert(offsetof(nvmlAccountingStats_t, startTime) == 24,
              "nvmlAccountingStats_t.startTime");
static_assert(offsetof(nvmlAccountingStats_t, isRunning) == 32,
              "nvmlAccountingStats_t.isRunning");

/* The driver's buffer of terminated processes, per GPU. */
#define ACCT_BUFFER GS_SIM_EXITED_RING

/* One process as accounting sees it: its slots summed. */
struct acct {
	int32_t pid;
	uint64_t start_ticks; /* /proc start time */
	bool running;
	uint64_t end_ns; /* CLOCK_MONOTONIC, terminated only */
	uint64_t busy_ns;
	uint64_t mem;
};

static nvmlReturn_t enter_gpu(nvmlDevice_t h, struct gs__dev *d)
{
	struct gs_sim_state *st;
	nvmlReturn_t r = gs__nvml_enter(&st);

	if (r != NVML_SUCCESS)
		return r;
	r = gs__nvml_dev(st, h, d);
	if (r == NVML_SUCCESS && (d->m != NULL || d->g->mig_mode))
		r = NVML_ERROR_NOT_SUPPORTED;
	if (r != NVML_SUCCESS)
		gs__nvml_leave(st);
	return r;
}

/* enter_gpu, and accounting must be on (else NVML_ERROR_NOT_SUPPORTED). */
static nvmlReturn_t enter_acct(nvmlDevice_t h, struct gs__dev *d)
{
	nvmlReturn_t r = enter_gpu(h, d);

	if (r == NVML_SUCCESS && !d->g->acct_mode) {
		gs__nvml_leave(d->st);
		r = NVML_ERROR_NOT_SUPPORTED;
	}
	return r;
}

/* Clock c and CLOCK_BOOTTIME now, in ns (read together); returns the
 * /proc start time's ticks per second. */
static uint64_t clocks_now(clockid_t c, uint64_t *c_ns, uint64_t *boot_ns)
{
	struct timespec at, boot;
	long hz = sysconf(_SC_CLK_TCK);

	(void)clock_gettime(c, &at);
	(void)clock_gettime(CLOCK_BOOTTIME, &boot);
	*c_ns = (uint64_t)at.tv_sec * 1000000000ULL + (uint64_t)at.tv_nsec;
	*boot_ns =
	    (uint64_t)boot.tv_sec * 1000000000ULL + (uint64_t)boot.tv_nsec;
	return hz > 0 ? (uint64_t)hz : 100;
}

/* CLOCK_MONOTONIC ns of a /proc start time (clock ticks since boot). */
static uint64_t ticks_to_mono(uint64_t ticks)
{
	uint64_t since_boot, m, b;
	uint64_t hz = clocks_now(CLOCK_MONOTONIC, &m, &b);

	since_boot = ticks * (1000000000ULL / hz);
	/* Boot time runs ahead of monotonic time by the time suspended. */
	since_boot -= since_boot > b - m ? b - m : since_boot;
	return since_boot;
}

/* CPU time (CLOCK_REALTIME, us) of a /proc start time, to the ms (the
 * same answer on every call, whatever the clocks' phase). */
static uint64_t ticks_to_real_us(uint64_t ticks)
{
	uint64_t r, b;
	uint64_t hz = clocks_now(CLOCK_REALTIME, &r, &b);
	uint64_t boot_at_ms = r / 1000000ULL - b / 1000000ULL;

	return (boot_at_ms + ticks * 1000ULL / hz) * 1000ULL;
}

/* State locked: the accounting buffer's first exited record. */
static uint64_t first_seq(const struct gs_sim_state *st,
                          const struct gs_sim_gpu *g)
{
	uint64_t seq = st->exited_seq > GS_SIM_EXITED_RING
	                   ? st->exited_seq - GS_SIM_EXITED_RING
	                   : 0;
	/* A reset state restarts the ring: a clear from before it is void. */
	uint64_t clear = g->acct_clear_seq <= st->exited_seq ? g->acct_clear_seq
	                                                      : 0;

	return clear > seq ? clear : seq;
}

/* Adds one slot or record to the processes in v[0..*n), by pid and start. */
static void add(struct acct *v, int *n, int cap, int32_t pid, uint64_t ticks,
                bool running, uint64_t end_ns, uint64_t busy_ns, uint64_t mem)
{
	int k;

	for (k = 0; k < *n; k++)
		if (v[k].pid == pid && v[k].start_ticks == ticks)
			break;
	if (k == *n) {
		if (*n == cap)
			return;
		memset(&v[k], 0, sizeof(v[k]));
		v[k].pid = pid;
		v[k].start_ticks = ticks;
		(*n)++;
	}
	v[k].busy_ns += busy_ns;
	v[k].mem += mem;
	v[k].running = v[k].running || running;
	if (end_ns > v[k].end_ns)
		v[k].end_ns = end_ns;
}

/* State locked, accounting on: every accounted process of the GPU. */
static int collect(const struct gs__dev *d, struct acct *v, int cap)
{
	const struct gs_sim_state *st = d->st;
	uint64_t since = d->g->acct_since_ns;
	int n = 0;

	(void)gs_sim_reap(d->st, gs_sim_now_ns());
	gs_sim_engine_advance(d->st, d->gpu, 0, gs_sim_now_ns());
	for (uint64_t q = first_seq(st, d->g); q < st->exited_seq; q++) {
		const struct gs_sim_exited *x = &st->exited[q % GS_SIM_EXITED_RING];

		if (x->gpu != d->gpu || x->engine != 0 || x->end_ns < since)
			continue;
		add(v, &n, cap, x->pid, x->start_time, false, x->end_ns,
		    x->busy_ns, 0);
	}
	for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
		const struct gs_sim_proc *p = &st->procs[i];

		if (p->state != GS_SIM_PROC_LIVE || p->gpu != d->gpu ||
		    p->engine != 0 || p->created_ns < since)
			continue;
		add(v, &n, cap, p->pid, p->start_time, true, 0, p->busy_ns,
		    p->mem_used);
	}
	return n;
}

nvmlReturn_t nvmlDeviceGetAccountingMode(nvmlDevice_t device,
                                         nvmlEnableState_t *mode)
{
	struct gs__dev d;
	nvmlReturn_t r;

	if (mode == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = enter_gpu(device, &d);
	if (r != NVML_SUCCESS)
		return r;
	*mode = d.g->acct_mode ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
	gs__nvml_leave(d.st);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceSetAccountingMode(nvmlDevice_t device,
                                         nvmlEnableState_t mode)
{
	struct gs__dev d;
	nvmlReturn_t r;

	if (mode != NVML_FEATURE_ENABLED && mode != NVML_FEATURE_DISABLED)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = enter_gpu(device, &d);
	if (r != NVML_SUCCESS)
		return r;
	if (geteuid() != 0) {
		gs__nvml_leave(d.st);
		return NVML_ERROR_NO_PERMISSION;
	}
	if (mode == NVML_FEATURE_ENABLED && !d.g->acct_mode) {
		d.g->acct_mode = 1;
		d.g->acct_since_ns = gs_sim_now_ns();
		d.g->acct_clear_seq = d.st->exited_seq;
	} else if (mode == NVML_FEATURE_DISABLED) {
		/* Turning it off forgets every record. */
		d.g->acct_mode = 0;
		d.g->acct_clear_seq = d.st->exited_seq;
	}
	gs__nvml_leave(d.st);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetAccountingBufferSize(nvmlDevice_t device,
                                               unsigned int *bufferSize)
{
	struct gs__dev d;
	nvmlReturn_t r;

	if (bufferSize == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = enter_acct(device, &d);
	if (r != NVML_SUCCESS)
		return r;
	*bufferSize = ACCT_BUFFER;
	gs__nvml_leave(d.st);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceClearAccountingPids(nvmlDevice_t device)
{
	struct gs__dev d;
	nvmlReturn_t r;

	r = enter_gpu(device, &d);
	if (r != NVML_SUCCESS)
		return r;
	if (geteuid() != 0)
		r = NVML_ERROR_NO_PERMISSION;
	else if (!d.g->acct_mode)
		r = NVML_ERROR_NOT_SUPPORTED;
	else
		d.g->acct_clear_seq = d.st->exited_seq; /* terminated ones */
	gs__nvml_leave(d.st);
	return r;
}

/*
 * *count: the capacity of pids in, the number written (or needed) out;
 * NVML_ERROR_INSUFFICIENT_SIZE with the number needed when pids is NULL
 * or too small. A pid that ran twice is listed twice.
 */
nvmlReturn_t nvmlDeviceGetAccountingPids(nvmlDevice_t device,
                                         unsigned int *count,
                                         unsigned int *pids)
{
	struct acct v[GS_SIM_EXITED_RING + GS_SIM_MAX_PROCS];
	struct gs__dev d;
	nvmlReturn_t r;
	int n;

	if (count == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = enter_acct(device, &d);
	if (r != NVML_SUCCESS)
		return r;
	n = collect(&d, v, (int)(sizeof(v) / sizeof(v[0])));
	gs__nvml_leave(d.st);
	if (pids == NULL || *count < (unsigned int)n) {
		*count = (unsigned int)n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (int k = 0; k < n; k++)
		pids[k] = (unsigned int)v[k].pid;
	*count = (unsigned int)n;
	return NVML_SUCCESS;
}

/* Percent of `of` that `part` is, rounded, at most 100. */
static unsigned int pct(uint64_t part, uint64_t of)
{
	uint64_t p;

	if (of == 0)
		return 0;
	p = (part * 100 + of / 2) / of;
	return p > 100 ? 100 : (unsigned int)p;
}

/* The newest process with `pid` (a running one first). */
nvmlReturn_t nvmlDeviceGetAccountingStats(nvmlDevice_t device, unsigned int pid,
                                          nvmlAccountingStats_t *stats)
{
	struct acct v[GS_SIM_EXITED_RING + GS_SIM_MAX_PROCS];
	const struct acct *a = NULL;
	struct gs__dev d;
	uint64_t now, start;
	nvmlReturn_t r;
	int n;

	if (stats == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = enter_acct(device, &d);
	if (r != NVML_SUCCESS)
		return r;
	n = collect(&d, v, (int)(sizeof(v) / sizeof(v[0])));
	now = gs_sim_now_ns();
	gs__nvml_leave(d.st);
	for (int k = 0; k < n; k++) {
		if (v[k].pid != (int32_t)pid)
			continue;
		if (a == NULL || v[k].running ||
		    (!a->running && v[k].start_ticks > a->start_ticks))
			a = &v[k];
	}
	if (a == NULL)
		return NVML_ERROR_NOT_FOUND;
	memset(stats, 0, sizeof(*stats));
	start = ticks_to_mono(a->start_ticks);
	stats->startTime = ticks_to_real_us(a->start_ticks);
	stats->isRunning = a->running ? 1 : 0;
	if (a->running) {
		stats->gpuUtilization = pct(a->busy_ns, now > start ? now - start : 0);
		stats->maxMemoryUsage = a->mem;
	} else {
		uint64_t life = a->end_ns > start ? a->end_ns - start : 0;

		/* At least as long as its kernels ran. */
		if (life < a->busy_ns)
			life = a->busy_ns;
		stats->time = (life + 500000ULL) / 1000000ULL;
		stats->gpuUtilization = pct(a->busy_ns, life);
		stats->maxMemoryUsage = (unsigned long long)NVML_VALUE_NOT_AVAILABLE;
	}
	return NVML_SUCCESS;
}
