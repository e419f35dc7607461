/*
 * nvml_event.c - NVML event sets over the node state's Xid rings.
 *
 * The CUDA stand-in posts an Xid into its GPU's ring (state.h,
 * gs_sim_xid_post) when a kernel faults. An event set remembers, per
 * registered GPU, the sequence number of the last event it delivered;
 * registration starts at the ring's current sequence, so events from
 * before it are not reported (as NVML documents). A waiter that fell more
 * than GS_SIM_XID_RING events behind skips to the oldest one still kept.
 * After `gpuslice sim reset` (sequence numbers restart) the set follows.
 *
 * Only nvmlEventTypeXidCriticalError is supported. Waiting polls the state
 * every POLL_MS: the state is a file mapping, not something a process can
 * block on, and an Xid is rare enough that a 10 ms delay is invisible.
 *
 * Sets live in a fixed table so that a handle can be checked before use;
 * the table and the sets' contents are guarded by sets_mu.
 */
#include "nvml_int.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#define MAX_SETS         64
#define POLL_MS          10u
#define SUPPORTED_EVENTS ((unsigned long long)nvmlEventTypeXidCriticalError)

struct nvmlEventSet_st {
	bool in_use;
	unsigned long long mask[GS_SIM_MAX_GPUS];
	uint64_t seen[GS_SIM_MAX_GPUS]; /* last sequence delivered */
};

static pthread_mutex_t sets_mu = PTHREAD_MUTEX_INITIALIZER;
static struct nvmlEventSet_st sets[MAX_SETS];

/* sets_mu held: whether `set` is a live set of ours. */
static bool set_valid(const struct nvmlEventSet_st *set)
{
	uintptr_t a = (uintptr_t)set, b = (uintptr_t)sets;

	if (set == NULL || a < b || a >= b + sizeof(sets) ||
	    (a - b) % sizeof(sets[0]) != 0)
		return false;
	return set->in_use;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	struct gs_sim_state *st;
	nvmlReturn_t r = gs__nvml_enter(&st);

	if (r != NVML_SUCCESS)
		return r;
	if (set == NULL) {
		gs__nvml_leave(st);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	r = NVML_ERROR_MEMORY;
	(void)pthread_mutex_lock(&sets_mu);
	for (int i = 0; i < MAX_SETS; i++) {
		if (!sets[i].in_use) {
			memset(&sets[i], 0, sizeof(sets[i]));
			sets[i].in_use = true;
			*set = &sets[i];
			r = NVML_SUCCESS;
			break;
		}
	}
	(void)pthread_mutex_unlock(&sets_mu);
	gs__nvml_leave(st);
	return r;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	struct gs_sim_state *st;
	nvmlReturn_t r = gs__nvml_enter(&st);

	if (r != NVML_SUCCESS)
		return r;
	(void)pthread_mutex_lock(&sets_mu);
	if (set_valid(set))
		set->in_use = false;
	else
		r = NVML_ERROR_INVALID_ARGUMENT;
	(void)pthread_mutex_unlock(&sets_mu);
	gs__nvml_leave(st);
	return r;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
                                              unsigned long long *eventTypes)
{
	struct gs_sim_state *st;
	struct gs__dev d;
	nvmlReturn_t r = gs__nvml_enter(&st);

	if (r != NVML_SUCCESS)
		return r;
	r = gs__nvml_dev(st, device, &d);
	if (r == NVML_SUCCESS && eventTypes == NULL)
		r = NVML_ERROR_INVALID_ARGUMENT;
	else if (r == NVML_SUCCESS && d.m != NULL)
		r = NVML_ERROR_NOT_SUPPORTED; /* per-instance events: no */
	else if (r == NVML_SUCCESS)
		*eventTypes = SUPPORTED_EVENTS;
	gs__nvml_leave(st);
	return r;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device,
                                      unsigned long long eventTypes,
                                      nvmlEventSet_t set)
{
	struct gs_sim_state *st;
	struct gs__dev d;
	nvmlReturn_t r = gs__nvml_enter(&st);

	if (r != NVML_SUCCESS)
		return r;
	r = gs__nvml_dev(st, device, &d);
	if (r != NVML_SUCCESS) {
		gs__nvml_leave(st);
		return r;
	}
	(void)pthread_mutex_lock(&sets_mu);
	if (!set_valid(set)) {
		r = NVML_ERROR_INVALID_ARGUMENT;
	} else if (d.m != NULL || eventTypes == 0 ||
	           (eventTypes & ~SUPPORTED_EVENTS) != 0) {
		/* Nothing registered; the set stays usable. */
		r = NVML_ERROR_NOT_SUPPORTED;
	} else {
		if (set->mask[d.gpu] == 0)
			set->seen[d.gpu] = d.g->xid_seq;
		set->mask[d.gpu] |= eventTypes;
	}
	(void)pthread_mutex_unlock(&sets_mu);
	gs__nvml_leave(st);
	return r;
}

/* Both locks held: the next undelivered event of `set`, if any. */
static bool next_event(struct gs_sim_state *st, struct nvmlEventSet_st *set,
                       nvmlEventData_t *out)
{
	for (uint32_t g = 0; st != NULL && g < st->n_gpus; g++) {
		const struct gs_sim_gpu *gpu = &st->gpus[g];
		const struct gs_sim_xid *x;
		uint64_t next;

		if (!(set->mask[g] & nvmlEventTypeXidCriticalError))
			continue;
		if (set->seen[g] > gpu->xid_seq)
			set->seen[g] = 0; /* the state was reset */
		if (gpu->xid_seq == set->seen[g])
			continue;
		next = set->seen[g] + 1;
		if (gpu->xid_seq > GS_SIM_XID_RING &&
		    next < gpu->xid_seq - GS_SIM_XID_RING + 1)
			next = gpu->xid_seq - GS_SIM_XID_RING + 1;
		x = &gpu->xid[(next - 1) % GS_SIM_XID_RING];
		set->seen[g] = next;
		if (x->seq != next)
			continue; /* overwritten meanwhile; try the next one */
		memset(out, 0, sizeof(*out));
		out->device = gs__nvml_gpu_handle(g);
		out->eventType = nvmlEventTypeXidCriticalError;
		out->eventData = x->xid;
		out->gpuInstanceId = x->engine > 0 ? x->gi_id : GS__NVML_NO_ID;
		out->computeInstanceId =
		    x->engine > 0 ? x->ci_id : GS__NVML_NO_ID;
		return true;
	}
	return false;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data,
                                 unsigned int timeoutms)
{
	uint64_t deadline = mono_ms() + timeoutms;

	if (data == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (;;) {
		struct gs_sim_state *st;
		nvmlReturn_t r = gs__nvml_enter(&st);
		bool got = false;
		uint64_t now;

		if (r != NVML_SUCCESS)
			return r;
		(void)pthread_mutex_lock(&sets_mu);
		if (!set_valid(set))
			r = NVML_ERROR_INVALID_ARGUMENT;
		else
			got = next_event(st, set, data);
		(void)pthread_mutex_unlock(&sets_mu);
		gs__nvml_leave(st);
		if (r != NVML_SUCCESS)
			return r;
		if (got)
			return NVML_SUCCESS;
		now = mono_ms();
		if (now >= deadline)
			return NVML_ERROR_TIMEOUT;
		{
			uint64_t left = deadline - now;
			struct timespec ts = {0, 0};

			ts.tv_nsec = (long)((left < POLL_MS ? left : POLL_MS) *
			                    1000000u);
			(void)nanosleep(&ts, NULL);
		}
	}
}

nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, gs__nvmlEventData_v1_t *data,
                              unsigned int timeoutms)
{
	nvmlEventData_t full;
	nvmlReturn_t r;

	if (data == NULL)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = nvmlEventSetWait_v2(set, &full, timeoutms);
	if (r != NVML_SUCCESS)
		return r;
	data->device = full.device;
	data->eventType = full.eventType;
	data->eventData = full.eventData;
	return NVML_SUCCESS;
}
