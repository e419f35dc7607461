/*
 * test_sim_driver.c - the sim's libcuda.so.1 as programs see it, linked
 * with -lcuda: memory until out-of-memory, time-slicing of two processes,
 * MPS concurrency and limits, a kill -9'd process's memory coming back at
 * once, faults under time-slicing and MPS, MIG instances as engines of
 * their own, streams/events/graphs/VMM/pools, invalid handles, and
 * refused state files.
 *
 * Each scenario runs its CUDA code in forked children (cuInit is once per
 * process and the parent never calls it) against a fresh node state in a
 * temporary directory. Durations are read from the sim's own clock
 * (events), so a loaded host shifts only when children start, not what
 * they measure; bounds allow for starts up to ~100 ms apart.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gs_sim/state.h"

#define GIB      (1ULL << 30)
#define MIB      (1ULL << 20)
#define OVERHEAD (500 * MIB)

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    "// the kernels of include/gs/kernels.h, bodies left out\n"
    ".visible .entry gs_spin(\n\t.param .u64 gs_spin_param_0\n)\n{\n\tret;\n}\n"
    ".visible .entry gs_fill(\n\t.param .u64 gs_fill_param_0,\n"
    "\t.param .u64 gs_fill_param_1,\n\t.param .f32 gs_fill_param_2\n)\n"
    "{\n\tret;\n}\n"
    ".visible .entry gs_fault(\n\t.param .u64 "
    "gs_fault_param_0\n)\n{\n\tret;\n}\n";

/* ---- parent side ------------------------------------------------------- */

struct shared {
	double v[8];
	int32_t pid[8];
};

struct fx {
	char dir[64];
	struct shared *sh;
};

static struct fx *F;

static int setup(void **state)
{
	struct gs_sim_gpu_init g[2];
	struct gs_errbuf eb = {0};
	struct fx *f = calloc(1, sizeof(*f));
	int n;

	snprintf(f->dir, sizeof(f->dir), "/tmp/gs-test-simdrv-XXXXXX");
	if (mkdtemp(f->dir) == NULL ||
	    gs_sim_gpus_parse("2xH100-SXM5-80GB", g, 2, &n, &eb) != GS_OK ||
	    gs_sim_state_create(f->dir, g, n, true, &eb) != GS_OK)
		return -1;
	f->sh = mmap(NULL, sizeof(*f->sh), PROT_READ | PROT_WRITE,
	             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (f->sh == MAP_FAILED)
		return -1;
	setenv("GPUSLICE_SIM_DIR", f->dir, 1);
	unsetenv("CUDA_VISIBLE_DEVICES");
	unsetenv("CUDA_MPS_PIPE_DIRECTORY");
	unsetenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	unsetenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
	F = f;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", f->dir, GS_SIM_STATE_FILE);
	unlink(path);
	rmdir(f->dir);
	munmap(f->sh, sizeof(*f->sh));
	free(f);
	return 0;
}

/* Opens the node state for the parent to look at or set up. */
static struct gs_sim_state *state_open(struct gs_sim_map **map)
{
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_sim_state_open(F->dir, map, &eb), GS_OK);
	return gs_sim_state_get(*map);
}

/* Marks engine 0 of `gpu` as served by an MPS daemon (this process); its
 * clients see that GPU as their device 0. */
static void mps_start(uint32_t gpu, uint32_t default_pct)
{
	struct gs_sim_map *map;
	struct gs_sim_state *st = state_open(&map);
	struct gs_sim_mps *m = &st->gpus[gpu].engine[0].mps;

	assert_int_equal(gs_sim_lock(st), GS_OK);
	m->state = GS_SIM_MPS_ACTIVE;
	m->control_pid = getpid();
	m->control_start_time = gs_sim_pid_start_time(getpid());
	m->default_active_thread_pct = default_pct;
	snprintf(m->pipe_dir, sizeof(m->pipe_dir), "%s/mps", F->dir);
	gs_sim_unlock(st);
	gs_sim_state_close(map);
}

struct child {
	pid_t pid;
	int ready[2]; /* child -> parent: set up */
	int go[2];    /* parent -> child: closed = go */
};

typedef void (*child_fn)(struct child *c, int arg);

static void start(struct child *c, child_fn fn, int arg)
{
	assert_int_equal(pipe(c->ready), 0);
	assert_int_equal(pipe(c->go), 0);
	fflush(NULL);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		/* drop the pipes of children started before this one: holding
		 * their write ends would keep their `go` from ever closing */
		for (int fd = 3; fd < 256; fd++)
			if (fd != c->ready[1] && fd != c->go[0])
				close(fd);
		fn(c, arg);
		/* exit(), not _exit(): the driver's exit-time teardown runs */
		exit(0);
	}
	close(c->ready[1]);
	close(c->go[0]);
}

/* Waits until the child says it is set up. */
static void wait_ready(struct child *c)
{
	char b;

	assert_int_equal(read(c->ready[0], &b, 1), 1);
}

static void go(struct child *c)
{
	close(c->go[1]);
	c->go[1] = -1;
}

/* Reaps the child; its exit status (0 = all its checks passed). */
static int finish(struct child *c)
{
	int status;

	if (c->go[1] >= 0)
		close(c->go[1]);
	assert_int_equal(waitpid(c->pid, &status, 0), c->pid);
	close(c->ready[0]);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int run(child_fn fn, int arg)
{
	struct child c;

	start(&c, fn, arg);
	go(&c);
	return finish(&c);
}

/* ---- child side -------------------------------------------------------- */

static void ck_at(CUresult got, CUresult want, const char *what, int line)
{
	const char *g = "?", *w = "?";

	if (got == want)
		return;
	cuGetErrorName(got, &g);
	cuGetErrorName(want, &w);
	fprintf(stderr, "child %d line %d: %s: got %s, want %s\n", getpid(),
	        line, what, g ? g : "?", w ? w : "?");
	_exit(1);
}
#define CK(x)     ck_at((x), CUDA_SUCCESS, #x, __LINE__)
#define CKE(x, e) ck_at((x), (e), #x, __LINE__)
#define REQUIRE(c)                                                             \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "child %d line %d: %s\n", getpid(),    \
			        __LINE__, #c);                                 \
			_exit(1);                                              \
		}                                                              \
	} while (0)

static void say_ready(struct child *c)
{
	char b = 'r';

	REQUIRE(write(c->ready[1], &b, 1) == 1);
}

static void await_go(struct child *c)
{
	char b;

	REQUIRE(read(c->go[0], &b, 1) == 0);
}

struct kit {
	CUcontext ctx;
	CUmodule mod;
	CUfunction spin, fill, fault;
	int sms;
};

static void kit_init(struct kit *k, int dev)
{
	CK(cuInit(0));
	CK(cuDevicePrimaryCtxRetain(&k->ctx, dev));
	CK(cuCtxSetCurrent(k->ctx));
	CK(cuModuleLoadData(&k->mod, ptx));
	CK(cuModuleGetFunction(&k->spin, k->mod, "gs_spin"));
	CK(cuModuleGetFunction(&k->fill, k->mod, "gs_fill"));
	CK(cuModuleGetFunction(&k->fault, k->mod, "gs_fault"));
	CK(cuDeviceGetAttribute(&k->sms,
	                        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
}

/* Launches n gs_spin kernels of `ns` on every SM it may use and returns
 * the sim-clock time they took (ms), from events around them. */
static double spin_ms(struct kit *k, int n, unsigned long long ns)
{
	void *args[] = {&ns};
	CUevent a, b;
	float ms;

	CK(cuEventCreate(&a, 0));
	CK(cuEventCreate(&b, 0));
	CK(cuEventRecord(a, NULL));
	for (int i = 0; i < n; i++)
		CK(cuLaunchKernel(k->spin, (unsigned)k->sms, 1, 1, 128, 1, 1, 0,
		                  NULL, args, NULL));
	CK(cuEventRecord(b, NULL));
	CK(cuEventSynchronize(b));
	CK(cuEventElapsedTime(&ms, a, b));
	CK(cuEventDestroy(a));
	CK(cuEventDestroy(b));
	return ms;
}

/* ---- memory -------------------------------------------------------------- */

static void child_alloc_until_oom(struct child *c, int arg)
{
	struct kit k;
	CUdeviceptr p[128];
	size_t free_b, total;
	int n = 0;
	CUresult r;

	(void)c;
	(void)arg;
	kit_init(&k, 0);
	CK(cuMemGetInfo(&free_b, &total));
	REQUIRE(total == 81559 * MIB);
	REQUIRE(free_b == total - OVERHEAD);
	while ((r = cuMemAlloc(&p[n], GIB)) == CUDA_SUCCESS && n < 127)
		n++;
	CKE(r, CUDA_ERROR_OUT_OF_MEMORY);
	F->sh->v[0] = n;
	CK(cuMemGetInfo(&free_b, &total));
	REQUIRE(free_b < GIB);
	CK(cuMemFree(p[0]));
	CK(cuMemAlloc(&p[0], GIB));
	CKE(cuMemAlloc(&p[n], GIB), CUDA_ERROR_OUT_OF_MEMORY);
	/* the rest is left to process exit */
}

static void allocation_runs_out_of_memory_at_capacity(void **state)
{
	struct gs_sim_map *map;
	struct gs_sim_state *st;

	(void)state;
	assert_int_equal(run(child_alloc_until_oom, 0), 0);
	assert_int_equal((int)F->sh->v[0],
	                 (int)((81559 * MIB - OVERHEAD) / GIB));
	/* the exiting process gave everything back */
	st = state_open(&map);
	assert_int_equal(st->gpus[0].engine[0].mem_used, 0);
	assert_int_equal(st->exited_seq, 1);
	assert_int_equal(st->exited[0].reaped, 0);
	gs_sim_state_close(map);
}

static void child_hold_10gib(struct child *c, int arg)
{
	struct kit k;
	CUdeviceptr p;

	(void)arg;
	kit_init(&k, 0);
	CK(cuMemAlloc(&p, 10 * GIB));
	say_ready(c);
	for (;;)
		pause();
}

static void child_take_70gib(struct child *c, int arg)
{
	struct kit k;
	CUdeviceptr p;

	(void)c;
	(void)arg;
	kit_init(&k, 0);
	CK(cuMemAlloc(&p, 70 * GIB));
	CK(cuMemFree(p));
}

static void memory_of_a_killed_process_comes_back_at_once(void **state)
{
	struct child a;

	(void)state;
	start(&a, child_hold_10gib, 0);
	wait_ready(&a);
	assert_int_equal(kill(a.pid, SIGKILL), 0);
	/* not waited for: a zombie holds no GPU memory either */
	usleep(20000);
	assert_int_equal(run(child_take_70gib, 0), 0);
	assert_int_equal(finish(&a), 128 + SIGKILL);
}

/* ---- time-slicing and MPS ------------------------------------------------ */

#define SPIN_N  20
#define SPIN_NS 25000000ULL /* 20 x 25 ms = 0.5 s of GPU work */

static void child_spin(struct child *c, int slot)
{
	struct kit k;

	kit_init(&k, 0);
	CUstream s;
	CK(cuStreamCreate(&s, 0)); /* warm up the paths */
	CK(cuStreamDestroy(s));
	say_ready(c);
	await_go(c);
	F->sh->v[slot] = spin_ms(&k, SPIN_N, SPIN_NS);
	F->sh->pid[slot] = getpid();
	F->sh->v[slot + 4] = k.sms;
}

static uint64_t exited_busy(const struct gs_sim_state *st, int32_t pid)
{
	for (uint64_t i = 0; i < st->exited_seq && i < GS_SIM_EXITED_RING; i++)
		if (st->exited[i].pid == pid)
			return st->exited[i].busy_ns;
	return 0;
}

static void one_process_alone_runs_at_full_speed(void **state)
{
	(void)state;
	assert_int_equal(run(child_spin, 0), 0);
	assert_true(F->sh->v[0] > 499.0 && F->sh->v[0] < 540.0);
}

static void two_time_sliced_processes_each_take_twice_as_long(void **state)
{
	struct child a, b;
	struct gs_sim_map *map;
	struct gs_sim_state *st;

	(void)state;
	start(&a, child_spin, 0);
	start(&b, child_spin, 1);
	wait_ready(&a);
	wait_ready(&b);
	go(&a);
	go(&b);
	assert_int_equal(finish(&a), 0);
	assert_int_equal(finish(&b), 0);
	print_message(
	    "time-sliced: %.1f ms and %.1f ms for 500 ms of work each\n",
	    F->sh->v[0], F->sh->v[1]);
	for (int i = 0; i < 2; i++)
		assert_true(F->sh->v[i] > 800.0 && F->sh->v[i] < 1050.0);
	/* busy time is exactly the kernels' time, whatever the contention */
	st = state_open(&map);
	assert_int_equal(exited_busy(st, F->sh->pid[0]), SPIN_N * SPIN_NS);
	assert_int_equal(exited_busy(st, F->sh->pid[1]), SPIN_N * SPIN_NS);
	gs_sim_state_close(map);
}

static void child_mps_spin(struct child *c, int slot)
{
	char pipe_dir[128];
	struct kit k;
	int on = 0;

	snprintf(pipe_dir, sizeof(pipe_dir), "%s/mps", F->dir);
	setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1);
	kit_init(&k, 0);
	CK(cuDeviceGetAttribute(&on, CU_DEVICE_ATTRIBUTE_MPS_ENABLED, 0));
	REQUIRE(on == 1);
	say_ready(c);
	await_go(c);
	F->sh->v[slot] = spin_ms(&k, SPIN_N, SPIN_NS);
	F->sh->pid[slot] = getpid();
	F->sh->v[slot + 4] = k.sms;
}

/* Two MPS clients (slots 0 and 1) started together on a server whose
 * default active thread percentage is `pct`; both must finish cleanly. */
static void two_mps_clients(uint32_t pct, void (*fn)(struct child *, int))
{
	struct child a, b;

	mps_start(1, pct);
	start(&a, fn, 0);
	start(&b, fn, 1);
	wait_ready(&a);
	wait_ready(&b);
	go(&a);
	go(&b);
	assert_int_equal(finish(&a), 0);
	assert_int_equal(finish(&b), 0);
}

static void mps_clients_on_half_the_sms_each_run_side_by_side(void **state)
{
	(void)state;
	two_mps_clients(50, child_mps_spin);
	print_message("MPS 50%%: %.1f ms and %.1f ms for 500 ms of work each\n",
	              F->sh->v[0], F->sh->v[1]);
	assert_int_equal((int)F->sh->v[4], 66);
	for (int i = 0; i < 2; i++)
		assert_true(F->sh->v[i] > 499.0 && F->sh->v[i] < 560.0);
}

static void child_mps_prio(struct child *c, int slot)
{
	if (slot == 1)
		setenv("CUDA_MPS_CLIENT_PRIORITY", "1", 1);
	child_mps_spin(c, slot);
}

/* CUDA_MPS_CLIENT_PRIORITY=1 (below normal): a client of normal priority
 * asking for every SM gets them all; the one below normal runs on what is
 * left (here nothing) and finishes after it. Without priorities both
 * would take twice as long. */
static void mps_client_below_normal_priority_yields_the_sms(void **state)
{
	(void)state;
	two_mps_clients(100, child_mps_prio);
	print_message("MPS 100%%, normal / below normal: %.1f ms and %.1f ms "
	              "for 500 ms of work each\n",
	              F->sh->v[0], F->sh->v[1]);
	assert_true(F->sh->v[0] > 499.0 && F->sh->v[0] < 600.0);
	assert_true(F->sh->v[1] > 900.0 && F->sh->v[1] < 1150.0);
}

static void child_mps_limits(struct child *c, int arg)
{
	char pipe_dir[128];
	struct kit k;
	CUdeviceptr p, q;

	(void)c;
	(void)arg;
	snprintf(pipe_dir, sizeof(pipe_dir), "%s/mps/", F->dir);
	setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1);
	setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "25", 1);
	setenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", "0=2G", 1);
	kit_init(&k, 0);
	/* a client can only lower the server's 50 % */
	REQUIRE(k.sms == 33);
	CK(cuMemAlloc(&p, GIB));
	CKE(cuMemAlloc(&q, GIB), CUDA_ERROR_OUT_OF_MEMORY);
	CK(cuMemAlloc(&q, 256 * MIB));
}

static void mps_client_limits_come_from_its_environment(void **state)
{
	(void)state;
	mps_start(1, 50);
	assert_int_equal(run(child_mps_limits, 0), 0);
}

/* ---- faults ----------------------------------------------------------------
 */

static void child_fault(struct child *c, int dev_env)
{
	char pipe_dir[128];
	struct kit k;
	void *bad = (void *)(uintptr_t)0x1000, *args[] = {&bad};
	CUdeviceptr p;

	if (dev_env) {
		snprintf(pipe_dir, sizeof(pipe_dir), "%s/mps", F->dir);
		setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1);
	}
	kit_init(&k, 0);
	say_ready(c);
	await_go(c);
	CK(cuLaunchKernel(k.fault, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CKE(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
	CKE(cuMemAlloc(&p, MIB), CUDA_ERROR_ILLEGAL_ADDRESS);
	F->sh->pid[7] = getpid();
}

/* A bystander: set up, then after `go` runs work and reports how it went
 * (v[slot] = 1 when everything succeeded, 2 when it saw the fault). */
static void child_bystander(struct child *c, int mps)
{
	char pipe_dir[128];
	struct kit k;
	unsigned long long ns = 1000000;
	void *args[] = {&ns};
	CUresult r;
	CUdeviceptr p;

	if (mps) {
		snprintf(pipe_dir, sizeof(pipe_dir), "%s/mps", F->dir);
		setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1);
	}
	kit_init(&k, 0);
	CK(cuMemAlloc(&p, MIB));
	say_ready(c);
	await_go(c);
	r = cuLaunchKernel(k.spin, 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL);
	if (r == CUDA_SUCCESS)
		r = cuCtxSynchronize();
	F->sh->v[mps] = r == CUDA_SUCCESS                 ? 1
	                : r == CUDA_ERROR_ILLEGAL_ADDRESS ? 2
	                                                  : -r;
}

static void child_new_client(struct child *c, int want)
{
	char pipe_dir[128];
	CUcontext ctx;

	(void)c;
	snprintf(pipe_dir, sizeof(pipe_dir), "%s/mps", F->dir);
	setenv("CUDA_MPS_PIPE_DIRECTORY", pipe_dir, 1);
	CK(cuInit(0));
	CKE(cuDevicePrimaryCtxRetain(&ctx, 0), (CUresult)want);
}

static void a_time_sliced_fault_hits_only_its_process(void **state)
{
	struct child a, b;
	struct gs_sim_map *map;
	struct gs_sim_state *st;

	(void)state;
	start(&b, child_bystander, 0);
	wait_ready(&b);
	assert_int_equal(run(child_fault, 0), 0);
	go(&b);
	assert_int_equal(finish(&b), 0);
	assert_int_equal((int)F->sh->v[0], 1);
	st = state_open(&map);
	assert_int_equal(st->gpus[0].xid_seq, 1);
	assert_int_equal(st->gpus[0].xid[0].xid, 31);
	assert_int_equal(st->gpus[0].xid[0].pid, F->sh->pid[7]);
	assert_int_equal(st->gpus[1].xid_seq, 0);
	gs_sim_state_close(map);
	(void)a;
}

static void an_mps_fault_hits_every_client_until_they_are_gone(void **state)
{
	struct child a, b;
	struct gs_sim_map *map;
	struct gs_sim_state *st;

	(void)state;
	mps_start(1, 100);
	start(&b, child_bystander, 1);
	wait_ready(&b);
	start(&a, child_fault, 1);
	wait_ready(&a);
	go(&a);
	assert_int_equal(finish(&a), 0);
	st = state_open(&map);
	assert_int_equal(st->gpus[1].engine[0].mps.state, GS_SIM_MPS_FAULT);
	gs_sim_state_close(map);
	/* new clients are refused while a faulted one is still there */
	assert_int_equal(run(child_new_client, CUDA_ERROR_MPS_SERVER_NOT_READY),
	                 0);
	go(&b);
	assert_int_equal(finish(&b), 0);
	assert_int_equal((int)F->sh->v[1], 2);
	st = state_open(&map);
	assert_int_equal(st->gpus[1].engine[0].mps.state, GS_SIM_MPS_ACTIVE);
	assert_int_equal(st->gpus[1].xid_seq, 1);
	gs_sim_state_close(map);
	assert_int_equal(run(child_new_client, CUDA_SUCCESS), 0);
}

/* ---- MIG ----------------------------------------------------------------- */

static void mig_setup(char uuids[2][GS_SIM_UUID_LEN])
{
	struct gs_sim_map *map;
	struct gs_sim_state *st = state_open(&map);
	struct gs_sim_gpu *g = &st->gpus[0];

	assert_int_equal(gs_sim_lock(st), GS_OK);
	g->mig_mode = 1;
	for (int i = 0; i < 2; i++) {
		struct gs_sim_mig *m = &g->mig[i];

		m->in_use = 1;
		m->gi_id = (uint32_t)(i + 1);
		m->profile_id = 9;
		m->start = (uint32_t)(4 * i);
		m->size = 4;
		m->ci_in_use = 1;
		snprintf(m->profile_name, sizeof(m->profile_name), "3g.40gb");
		gs_sim_uuid_make("MIG", m->uuid);
		memcpy(uuids[i], m->uuid, GS_SIM_UUID_LEN);
		gs_sim_engine_init(&g->engine[1 + i], 60, 40 * GIB,
		                   gs_sim_now_ns());
	}
	gs_sim_unlock(st);
	gs_sim_state_close(map);
}

static char mig_uuids[2][GS_SIM_UUID_LEN];

static void child_mig(struct child *c, int slot)
{
	struct kit k;
	char name[256];
	size_t free_b, total;
	CUdeviceptr p, q;
	int n;

	setenv("CUDA_VISIBLE_DEVICES", mig_uuids[slot], 1);
	kit_init(&k, 0);
	CK(cuDeviceGetCount(&n));
	REQUIRE(n == 1);
	REQUIRE(k.sms == 60);
	CK(cuDeviceGetName(name, sizeof(name), 0));
	REQUIRE(strstr(name, "MIG 3g.40gb") != NULL);
	CK(cuMemGetInfo(&free_b, &total));
	REQUIRE(total == 40 * GIB);
	CK(cuMemAlloc(&p, 39 * GIB));
	CKE(cuMemAlloc(&q, GIB), CUDA_ERROR_OUT_OF_MEMORY);
	say_ready(c);
	await_go(c);
	F->sh->v[slot] = spin_ms(&k, SPIN_N, SPIN_NS);
}

static void child_count(struct child *c, int want)
{
	int n;

	(void)c;
	CK(cuInit(0));
	CK(cuDeviceGetCount(&n));
	REQUIRE(n == want);
}

static void mig_instances_are_engines_of_their_own(void **state)
{
	struct child a, b;

	(void)state;
	mig_setup(mig_uuids);
	/* GPU 0's two instances and GPU 1 */
	assert_int_equal(run(child_count, 3), 0);
	start(&a, child_mig, 0);
	start(&b, child_mig, 1);
	wait_ready(&a);
	wait_ready(&b);
	go(&a);
	go(&b);
	assert_int_equal(finish(&a), 0);
	assert_int_equal(finish(&b), 0);
	print_message("MIG: %.1f ms and %.1f ms for 500 ms of work each\n",
	              F->sh->v[0], F->sh->v[1]);
	for (int i = 0; i < 2; i++)
		assert_true(F->sh->v[i] > 499.0 && F->sh->v[i] < 560.0);
}

/* ---- streams, events, graphs, VMM, pools -----------------------------------
 */

static void child_api_tour(struct child *c, int arg)
{
	struct kit k;
	unsigned long long ns = 10000000, n = 1024;
	float v = 2.5f, out[1024], ms;
	void *spin_args[] = {&ns};
	CUstream s;
	CUevent a, b;
	CUgraph g;
	CUgraphExec x;
	CUdeviceptr p;
	void *fill_args[] = {&p, &n, &v};
	size_t nodes = 0;

	(void)c;
	(void)arg;
	kit_init(&k, 0);

	/* streams and events on the sim clock */
	CK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, -3));
	CK(cuEventCreate(&a, 0));
	CK(cuEventCreate(&b, 0));
	CK(cuEventRecord(a, s));
	for (int i = 0; i < 3; i++)
		CK(cuLaunchKernel(k.spin, 1, 1, 1, 32, 1, 1, 0, s, spin_args,
		                  NULL));
	CK(cuEventRecord(b, s));
	CKE(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
	CKE(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
	CK(cuStreamSynchronize(s));
	CK(cuStreamQuery(s));
	CK(cuEventElapsedTime(&ms, a, b));
	/* 30 ms of kernels, plus whatever host time passed between the
	 * record and the first launch (the GPU idles meanwhile) */
	REQUIRE(ms > 29.99f && ms < 40.0f);

	/* a captured graph replays its kernels */
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	for (int i = 0; i < 4; i++)
		CK(cuLaunchKernel(k.spin, 1, 1, 1, 32, 1, 1, 0, s, spin_args,
		                  NULL));
	CK(cuStreamEndCapture(s, &g));
	CK(cuGraphGetNodes(g, NULL, &nodes));
	REQUIRE(nodes == 4);
	CK(cuGraphInstantiate(&x, g, 0));
	CK(cuEventRecord(a, s));
	CK(cuGraphLaunch(x, s));
	CK(cuGraphLaunch(x, s));
	CK(cuEventRecord(b, s));
	CK(cuEventSynchronize(b));
	CK(cuEventElapsedTime(&ms, a, b));
	REQUIRE(ms > 79.99f && ms < 90.0f);
	CK(cuGraphExecDestroy(x));
	CK(cuGraphDestroy(g));

	/* small kernels' results come back through memory */
	CK(cuMemAlloc(&p, n * 4));
	CK(cuLaunchKernel(k.fill, 8, 1, 1, 128, 1, 1, 0, NULL, fill_args,
	                  NULL));
	CK(cuMemcpyDtoH(out, p, sizeof(out)));
	REQUIRE(out[0] == 2.5f && out[1023] == 2.5f);
	CK(cuMemsetD32(p, 0x3f800000u, n));
	CK(cuMemcpyDtoH(out, p, sizeof(out)));
	REQUIRE(out[7] == 1.0f);
	CK(cuMemFree(p));

	/* virtual memory management */
	{
		CUmemAllocationProp prop = {0};
		CUmemAccessDesc acc = {0};
		CUmemGenericAllocationHandle h;
		size_t gran = 0;
		CUdeviceptr va;
		unsigned int w = 0;

		prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
		prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		prop.location.id = 0;
		CK(cuMemGetAllocationGranularity(
		    &gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
		REQUIRE(gran == 2 * MIB);
		CKE(cuMemCreate(&h, MIB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
		CK(cuMemCreate(&h, 2 * MIB, &prop, 0));
		CK(cuMemAddressReserve(&va, 4 * MIB, 0, 0, 0));
		CK(cuMemMap(va, 2 * MIB, 0, h, 0));
		acc.location = prop.location;
		acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		CK(cuMemSetAccess(va, 2 * MIB, &acc, 1));
		CK(cuMemsetD32(va + 4096, 7, 1));
		CK(cuMemcpyDtoH(&w, va + 4096, 4));
		REQUIRE(w == 7);
		CKE(cuMemcpyDtoH(&w, va + 2 * MIB, 4),
		    CUDA_ERROR_INVALID_VALUE);
		CK(cuMemUnmap(va, 2 * MIB));
		CK(cuMemRelease(h));
		CK(cuMemAddressFree(va, 4 * MIB));
	}

	/* stream-ordered allocation from the default pool */
	{
		CUmemoryPool pool;
		cuuint64_t used = 0;

		CK(cuDeviceGetDefaultMemPool(&pool, 0));
		CK(cuMemAllocAsync(&p, 3 * MIB, s));
		CK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
		                         &used));
		REQUIRE(used == 3 * MIB);
		CK(cuMemFreeAsync(p, s));
		CK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
		                         &used));
		REQUIRE(used == 0);
	}

	/* arrays count against device memory */
	{
		CUDA_ARRAY3D_DESCRIPTOR d = {0};
		CUarray arr;
		size_t f0, f1, t;

		d.Width = 1024;
		d.Height = 1024;
		d.Format = CU_AD_FORMAT_FLOAT;
		d.NumChannels = 4;
		CK(cuMemGetInfo(&f0, &t));
		CK(cuArray3DCreate(&arr, &d));
		CK(cuMemGetInfo(&f1, &t));
		REQUIRE(f0 - f1 == 16 * MIB);
		CK(cuArrayDestroy(arr));
	}

	CK(cuStreamDestroy(s));
	CK(cuEventDestroy(a));
	CK(cuEventDestroy(b));
}

static void streams_events_graphs_and_memory_apis_work(void **state)
{
	(void)state;
	assert_int_equal(run(child_api_tour, 0), 0);
}

static void child_bad_handles(struct child *c, int arg)
{
	struct kit k;
	CUstream s;
	CUfunction f;
	CUdevice d;
	CUdeviceptr p;
	CUcontext cur;
	void *bogus = (void *)(uintptr_t)0xdeadbeef;
	unsigned long long ns = 1;
	void *args[] = {&ns};
	int x = 0;

	(void)c;
	(void)arg;
	kit_init(&k, 0);
	CKE(cuStreamSynchronize((CUstream)bogus), CUDA_ERROR_INVALID_HANDLE);
	CKE(cuEventQuery((CUevent)bogus), CUDA_ERROR_INVALID_HANDLE);
	CKE(cuCtxSetCurrent((CUcontext)bogus), CUDA_ERROR_INVALID_CONTEXT);
	CKE(cuModuleGetFunction(&f, (CUmodule)bogus, "gs_spin"),
	    CUDA_ERROR_INVALID_HANDLE);
	CKE(cuModuleGetFunction(&f, k.mod, "nope"), CUDA_ERROR_NOT_FOUND);
	CKE(cuLaunchKernel((CUfunction)bogus, 1, 1, 1, 1, 1, 1, 0, NULL, args,
	                   NULL),
	    CUDA_ERROR_INVALID_HANDLE);
	CKE(cuLaunchKernel(k.spin, 1, 1, 1, 2048, 1, 1, 0, NULL, args, NULL),
	    CUDA_ERROR_INVALID_VALUE);
	CKE(cuLaunchKernel(k.spin, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
	    CUDA_ERROR_INVALID_VALUE);
	CKE(cuMemFree((CUdeviceptr)12345), CUDA_ERROR_INVALID_VALUE);
	CKE(cuMemcpyHtoD((CUdeviceptr)bogus, &x, 4), CUDA_ERROR_INVALID_VALUE);
	CKE(cuDeviceGet(&d, 7), CUDA_ERROR_INVALID_DEVICE);
	CKE(cuDeviceGetAttribute(&x, (CUdevice_attribute)100000, 0),
	    CUDA_ERROR_INVALID_VALUE);
	CKE(cuModuleLoadData((CUmodule *)&cur, "\x7f"
	                                       "ELF...."),
	    CUDA_ERROR_NOT_SUPPORTED);
	CKE(cuModuleLoadData((CUmodule *)&cur, "not ptx at all"),
	    CUDA_ERROR_INVALID_PTX);
	CK(cuStreamCreate(&s, 0));
	CK(cuStreamDestroy(s));
	CKE(cuStreamQuery(s), CUDA_ERROR_INVALID_HANDLE);
	CK(cuCtxPopCurrent(&cur));
	CK(cuCtxGetCurrent(&cur));
	REQUIRE(cur == NULL);
	CKE(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
	CKE(cuInit(1), CUDA_ERROR_INVALID_VALUE);
}

static void invalid_handles_and_arguments_give_errors_not_crashes(void **state)
{
	(void)state;
	assert_int_equal(run(child_bad_handles, 0), 0);
}

/* ---- state files
 * -------------------------------------------------------------- */

static void child_init_fails(struct child *c, int want)
{
	(void)c;
	CKE(cuInit(0), (CUresult)want);
	CKE(cuInit(0), (CUresult)want); /* and stays failed */
}

static void cuInit_refuses_missing_foreign_and_damaged_state(void **state)
{
	char path[128];
	struct gs_sim_map *map;
	struct gs_sim_state *st;

	(void)state;
	setenv("CUDA_VISIBLE_DEVICES", "", 1);
	assert_int_equal(run(child_init_fails, CUDA_ERROR_NO_DEVICE), 0);
	setenv("CUDA_VISIBLE_DEVICES", "GPU-nope", 1);
	assert_int_equal(run(child_init_fails, CUDA_ERROR_NO_DEVICE), 0);
	unsetenv("CUDA_VISIBLE_DEVICES");

	setenv("GPUSLICE_SIM_DIR", "/nonexistent/gpuslice-sim", 1);
	assert_int_equal(run(child_init_fails, CUDA_ERROR_NO_DEVICE), 0);
	setenv("GPUSLICE_SIM_DIR", F->dir, 1);

	st = state_open(&map);
	st->version = GS_SIM_STATE_VERSION + 7;
	assert_int_equal(
	    run(child_init_fails, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH), 0);
	st->version = GS_SIM_STATE_VERSION;
	st->magic = 42;
	assert_int_equal(run(child_init_fails, CUDA_ERROR_SYSTEM_NOT_READY), 0);
	st->magic = GS_SIM_STATE_MAGIC;
	gs_sim_state_close(map);
	snprintf(path, sizeof(path), "%s/%s", F->dir, GS_SIM_STATE_FILE);
	assert_int_equal(truncate(path, 1000), 0);
	assert_int_equal(run(child_init_fails, CUDA_ERROR_SYSTEM_NOT_READY), 0);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(allocation_runs_out_of_memory_at_capacity),
	    T(memory_of_a_killed_process_comes_back_at_once),
	    T(one_process_alone_runs_at_full_speed),
	    T(two_time_sliced_processes_each_take_twice_as_long),
	    T(mps_clients_on_half_the_sms_each_run_side_by_side),
	    T(mps_client_below_normal_priority_yields_the_sms),
	    T(mps_client_limits_come_from_its_environment),
	    T(a_time_sliced_fault_hits_only_its_process),
	    T(an_mps_fault_hits_every_client_until_they_are_gone),
	    T(mig_instances_are_engines_of_their_own),
	    T(streams_events_graphs_and_memory_apis_work),
	    T(invalid_handles_and_arguments_give_errors_not_crashes),
	    T(cuInit_refuses_missing_foreign_and_damaged_state),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
