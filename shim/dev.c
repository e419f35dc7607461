/*
 * dev.c - devices: the CUDA ordinals of this process as the region's GPU
 * slots (registered by UUID on first use), the current context's device,
 * an NVML device's slot, and the refusal of a GPU a daemon does not
 * manage. The launch, memory and NVML paths call it; it calls only
 * shim.c and the region.
 */
#include "shim_int.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static void uuid_format(const CUuuid *u, char *out, size_t n)
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	(void)snprintf(out, n,
	               "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	               b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8],
	               b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

int gs__dev_slot(CUdevice ord, uint64_t *total)
{
	struct gs__ordinal *o;
	char uuid[GS_REGION_UUID_MAX];
	CUuuid u;
	size_t bytes = 0;
	CUresult r = CUDA_ERROR_NOT_SUPPORTED;
	bool foreign;
	int slot;

	if (ord < 0 || ord >= GS_SHIM_MAX_ORDINALS || gs__g.region == NULL)
		return -1;
	o = &gs__g.ord[ord];
	slot = __atomic_load_n(&o->slot, __ATOMIC_ACQUIRE);
	if (slot >= 0 || slot == -2) {
		if (total != NULL)
			*total = o->total;
		return slot >= 0 ? slot : -1;
	}
	if (gs__real.cuDeviceGetUuid_v2 != NULL)
		r = gs__real.cuDeviceGetUuid_v2(&u, ord);
	if (r != CUDA_SUCCESS && gs__real.cuDeviceGetUuid != NULL)
		r = gs__real.cuDeviceGetUuid(&u, ord);
	if (r != CUDA_SUCCESS)
		return -1; /* maybe not initialised yet: try again later */
	uuid_format(&u, uuid, sizeof(uuid));
	if (gs__real.cuDeviceTotalMem_v2 != NULL)
		(void)gs__real.cuDeviceTotalMem_v2(&bytes, ord);
	slot = gs_region_device(gs__g.region, uuid, bytes);
	foreign = slot == -(int)GS_ERR_NOT_FOUND &&
	          gs_region_arb_client(gs__g.region);
	(void)pthread_mutex_lock(&gs__g.mu);
	o->total = bytes;
	/* A daemon registers its GPUs itself: one it has not (a MIG
	 * instance made behind its back, until its next pass) is asked for
	 * again later, and no context is made on it meanwhile
	 * (gs__dev_refused). */
	o->foreign = foreign;
	__atomic_store_n(&o->slot, slot >= 0 ? slot : foreign ? -1 : -2,
	                 __ATOMIC_RELEASE);
	(void)pthread_mutex_unlock(&gs__g.mu);
	if (slot < 0 && !foreign)
		gs_error(GS_SHIM_TAG, "gpu=%s no region slot (%d)", uuid, slot);
	if (total != NULL)
		*total = bytes;
	return slot >= 0 ? slot : -1;
}

/*
 * Whether a process of a slice must not use GPU `ord`: the daemon's region
 * has no such GPU, so nothing of it could be counted or capped there (a
 * GPU the daemon does not manage), or the GPU could not be given a slot
 * in the region's GPU table at all. Fails closed: never "no cap". A MIG
 * instance made behind the daemon's back is registered on its next
 * housekeeping pass, so this waits up to GS_DEV_REGISTER_WAIT_MS for it.
 */
#define GS_DEV_REGISTER_WAIT_MS 1500

bool gs__dev_refused(CUdevice ord)
{
	static bool said;

	if (ord < 0 || ord >= GS_SHIM_MAX_ORDINALS || !gs__enforcing())
		return false;
	for (int waited = 0;; waited += 50) {
		if (gs__dev_slot(ord, NULL) >= 0 ||
		    !__atomic_load_n(&gs__g.ord[ord].foreign, __ATOMIC_RELAXED)) {
			/* A GPU that could not be given a slot (-2: the table
			 * full, its lock out of reach) is refused: nothing on
			 * it could be charged. */
			if (__atomic_load_n(&gs__g.ord[ord].slot,
			                    __ATOMIC_ACQUIRE) == -2)
				break;
			if (waited > 0)
				gs_warn(GS_SHIM_TAG,
				        "device %d was unknown to gpusliced for %d ms (a MIG instance made behind its back?)",
				        (int)ord, waited);
			return false;
		}
		if (waited >= GS_DEV_REGISTER_WAIT_MS)
			break;
		(void)nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
	}
	if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		gs_error(GS_SHIM_TAG,
		         "slice=%s pid=%d: device %d is not a GPU gpusliced manages, or has no slot in the region; no context on it (CUDA_ERROR_DEVICE_UNAVAILABLE)",
		         gs__g.cfg.slice, (int)getpid(), (int)ord);
	return true;
}

/*
 * The calling thread's current context, its device and that device's
 * slot, cached: asked of the driver once, then again only after the
 * thread changed its current context (gs__dev_ctx_changed, from the
 * hooks that do) or some context went away (gs__dev_ctx_gone: any
 * thread's cache may name it). gen 0 is never current.
 */
struct cur_cache {
	CUcontext ctx;
	CUdevice ord;
	int slot;
	uint64_t gen;
};
static __thread struct cur_cache cur
    __attribute__((tls_model("initial-exec")));
static uint64_t cur_gen = 1;

void gs__dev_ctx_changed(void)
{
	cur.gen = 0;
}

void gs__dev_ctx_gone(void)
{
	__atomic_add_fetch(&cur_gen, 1, __ATOMIC_RELEASE);
}

/* Fills the cache; false when there is no current context or device. */
static bool cur_fill(void)
{
	uint64_t gen = __atomic_load_n(&cur_gen, __ATOMIC_ACQUIRE);
	CUcontext c = NULL;
	CUdevice d;
	int slot;

	if (gs__real.cuCtxGetCurrent == NULL ||
	    gs__real.cuCtxGetCurrent(&c) != CUDA_SUCCESS || c == NULL ||
	    gs__real.cuCtxGetDevice == NULL ||
	    gs__real.cuCtxGetDevice(&d) != CUDA_SUCCESS)
		return false;
	slot = gs__dev_slot(d, NULL);
	if (slot < 0)
		return false; /* asked again next time */
	cur.ctx = c;
	cur.ord = d;
	cur.slot = slot;
	cur.gen = gen;
	return true;
}

static inline bool cur_valid(void)
{
	return GS_LIKELY(cur.gen ==
	                 __atomic_load_n(&cur_gen, __ATOMIC_ACQUIRE)) ||
	       cur_fill();
}

int gs__dev_current(CUdevice *ord)
{
	CUdevice d;

	if (cur_valid()) {
		if (ord != NULL)
			*ord = cur.ord;
		return cur.slot;
	}
	if (gs__real.cuCtxGetDevice == NULL ||
	    gs__real.cuCtxGetDevice(&d) != CUDA_SUCCESS)
		return -1;
	if (ord != NULL)
		*ord = d;
	return gs__dev_slot(d, NULL);
}

CUcontext gs__dev_current_ctx(void)
{
	CUcontext c = NULL;

	if (cur_valid())
		return cur.ctx;
	if (gs__real.cuCtxGetCurrent != NULL)
		(void)gs__real.cuCtxGetCurrent(&c);
	return c;
}

static void dev_atfork_child(void)
{
	gs__dev_ctx_gone();
}

__attribute__((constructor)) static void dev_register(void)
{
	gs__on_fork_child(dev_atfork_child);
}

int gs__dev_from_uuid(const char *uuid)
{
	if (gs__g.region == NULL)
		return -1;
	return gs_region_device(gs__g.region, uuid, 0);
}
