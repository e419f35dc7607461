/*
 * swapcheck.c - what the swap tests need of the sim driver to see a
 * kernel reach memory that is being moved (tests/integration/swap/
 * launch_storm_prog.c): a gs_* kernel whose buffer has nothing mapped
 * behind it faults, and a launch can be made to take time before it
 * reaches the driver's lock.
 *
 * Unmapped buffers: on a GPU, a kernel that touches an address of a
 * reserved range (cuMemAddressReserve) where no physical memory is mapped
 * (never mapped, or cuMemUnmap'ed since) takes an MMU fault: Xid 31, and
 * CUDA_ERROR_ILLEGAL_ADDRESS sticky for its context. The sim applies the
 * effect of its own kernels (include/gs/kernels.h) at launch, in
 * launch.c, where such a buffer used to be passed over silently;
 * gs__launch_unmapped finds the first such buffer of a launch, for
 * launch.c to fault on like a gs_fault store. Kernels other than the gs_*
 * ones run in the interpreter (exec_run.c), which reports its own faults.
 *
 * Launch delay: GPUSLICE_SIM_LAUNCH_DELAY_NS (unset: none) makes every
 * kernel launch sleep that long after its call enters the driver and
 * before it takes the driver's lock and queues the kernel, as a real
 * driver spends microseconds checking and encoding a launch before it
 * touches the GPU. It widens the window between a shim's last look at
 * its swap stop and the kernel's arrival, so that a test of the stop
 * fails every time the stop leaves that window open, not once in a
 * thousand runs. Read once, at the first launch. Copies likewise:
 * GPUSLICE_SIM_COPY_DELAY_NS (unset: none) makes every copy of gs__xfer
 * (copy.c: host, device, any direction, sync or async) sleep before it
 * takes the lock, for the test of the shim's stop at copies.
 *
 * Calls addr.c only.
 */
#include "cuda_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs/kernels.h"

/* The pointer parameters of each kernel with an effect on memory. */
static const struct {
	const char *name;
	int n_params;
	int ptrs; /* its first `ptrs` parameters are device pointers */
} effect_kernels[] = {
    {GS_KERNEL_FILL, 3, 1},
    {GS_KERNEL_BURN, 3, 1},
    {GS_KERNEL_MATMUL, 4, 3},
    {GS_KERNEL_INFER_LAYER, 5, 3},
};

bool gs__launch_unmapped(const struct gs__launch *l, uint64_t *at)
{
	const struct gs__entry *e = l->func->entry;

	for (size_t k = 0; k < sizeof(effect_kernels) / sizeof(effect_kernels[0]);
	     k++) {
		if (strcmp(e->name, effect_kernels[k].name) != 0 ||
		    e->n_params != effect_kernels[k].n_params)
			continue;
		for (int i = 0; i < effect_kernels[k].ptrs; i++) {
			const struct gs__alloc *a;
			uint64_t p = 0;

			if (e->param_size[i] != 8)
				return false;
			memcpy(&p, l->args + e->param_off[i], 8);
			a = gs__alloc_find(p, 1);
			if (a != NULL && a->kind == GS__A_RESERVE) {
				*at = p;
				return true;
			}
		}
		return false;
	}
	return false;
}

static uint64_t delay_ns, copy_delay_ns;
static pthread_once_t delay_once = PTHREAD_ONCE_INIT;

/* Nanoseconds in environment variable `name`: 0 unless a whole number up
 * to 10 s. */
static uint64_t env_ns(const char *name)
{
	const char *v = getenv(name);
	char *end = NULL;
	unsigned long long ns;

	if (v == NULL || *v == '\0')
		return 0;
	ns = strtoull(v, &end, 10);
	return end != NULL && *end == '\0' && ns <= 10000000000ULL ? ns : 0;
}

static void delay_read(void)
{
	delay_ns = env_ns("GPUSLICE_SIM_LAUNCH_DELAY_NS");
	copy_delay_ns = env_ns("GPUSLICE_SIM_COPY_DELAY_NS");
}

static void delay_sleep(uint64_t ns)
{
	struct timespec ts;

	if (ns == 0)
		return;
	ts.tv_sec = (time_t)(ns / 1000000000ULL);
	ts.tv_nsec = (long)(ns % 1000000000ULL);
	while (nanosleep(&ts, &ts) != 0)
		;
}

void gs__launch_delay(void)
{
	(void)pthread_once(&delay_once, delay_read);
	delay_sleep(delay_ns);
}

void gs__copy_delay(void)
{
	(void)pthread_once(&delay_once, delay_read);
	delay_sleep(copy_delay_ns);
}
