/*
 * test_sim_state.c - the sim's node state file (sim/state/state.c) and its
 * execution timeline (sim/state/sched.c): layout and validation, the GPU list
 * parser, reaping of dead processes (pid + start time, zombies), recovery
 * of the robust lock from a holder killed mid-update, and the schedule the
 * timeline computes (time-slicing, MPS concurrency, slice lengths).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gs/catalog.h"
#include "gs/proc.h"
#include "gs_sim/state.h"

#define MS 1000000ULL

/* ---- helpers ---------------------------------------------------------- */

struct fixture {
	char dir[64];
	char path[128];
};

static int setup_dir(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/gs-test-sim-XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, GS_SIM_STATE_FILE);
	*state = f;
	return 0;
}

static int teardown_dir(void **state)
{
	struct fixture *f = *state;

	(void)unlink(f->path);
	(void)rmdir(f->dir);
	free(f);
	return 0;
}

static void create(const struct fixture *f, const char *gpus)
{
	struct gs_sim_gpu_init g[GS_SIM_MAX_GPUS];
	struct gs_errbuf eb = {0};
	int n = 0;

	assert_int_equal(gs_sim_gpus_parse(gpus, g, GS_SIM_MAX_GPUS, &n, &eb),
	                 GS_OK);
	assert_int_equal(gs_sim_state_create(f->dir, g, n, true, &eb), GS_OK);
}

static void poke(const struct fixture *f, size_t off, const void *b, size_t n)
{
	int fd = open(f->path, O_WRONLY);

	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, b, n, (off_t)off), (ssize_t)n);
	close(fd);
}

/* ---- layout and validation --------------------------------------------- */

static void state_file_has_the_documented_layout(void **state)
{
	struct fixture *f = *state;
	struct gs_sim_map *map = NULL;
	struct gs_errbuf eb = {0};
	struct gs_sim_state *st;
	struct stat sb;

	create(f, "2xH100-SXM5-80GB,1xA100-SXM4-40GB");
	assert_int_equal(stat(f->path, &sb), 0);
	assert_int_equal((size_t)sb.st_size, sizeof(struct gs_sim_state));
	assert_int_equal(gs_sim_state_open(f->dir, &map, &eb), GS_OK);
	st = gs_sim_state_get(map);
	assert_int_equal(st->magic, GS_SIM_STATE_MAGIC);
	assert_int_equal(st->version, GS_SIM_STATE_VERSION);
	assert_int_equal(st->size, sizeof(*st));
	assert_int_equal(st->n_gpus, 3);
	assert_string_equal(st->gpus[0].model, "H100-SXM5-80GB");
	assert_string_equal(st->gpus[2].model, "A100-SXM4-40GB");
	assert_int_equal(st->gpus[0].sm_count, 132);
	assert_int_equal(st->gpus[2].sm_count,
	                 gs_catalog_find("A100-SXM4-40GB")->sm_count);
	assert_int_equal(strlen(st->gpus[1].uuid), 40);
	assert_memory_equal(st->gpus[1].uuid, "GPU-", 4);
	assert_int_equal(st->gpus[1].uuid[12], '-');
	assert_string_not_equal(st->gpus[0].uuid, st->gpus[1].uuid);
	assert_int_equal(st->gpus[0].engine[0].live, 1);
	assert_int_equal(st->gpus[0].engine[0].sm_count, 132);
	assert_int_equal(st->gpus[0].engine[0].mem_total,
	                 st->gpus[0].memory_total);
	assert_int_equal(st->gpus[0].engine[1].live, 0);
	assert_int_equal(gs_sim_lock(st), GS_OK);
	assert_int_equal(gs_sim_state_check(st, &eb), GS_OK);
	gs_sim_unlock(st);
	gs_sim_state_close(map);
}

static void create_refuses_to_replace_without_force(void **state)
{
	struct fixture *f = *state;
	struct gs_sim_gpu_init g[1];
	struct gs_errbuf eb = {0};
	int n;

	create(f, "1xH100-SXM5-80GB");
	assert_int_equal(gs_sim_gpus_parse("A100-SXM4-40GB", g, 1, &n, &eb),
	                 GS_OK);
	assert_int_equal(gs_sim_state_create(f->dir, g, n, false, &eb),
	                 GS_ERR_EXISTS);
}

struct parse_case {
	const char *spec;
	gs_err want;
	int n;
};

static void gpu_list_parser_reads_counts_and_names_bad_input(void **state)
{
	static const struct parse_case cases[] = {
	    {"2xH100-SXM5-80GB", GS_OK, 2},
	    {"H100-SXM5-80GB", GS_OK, 1},
	    {"2xH100-SXM5-80GB,1xA100-SXM4-40GB", GS_OK, 3},
	    {"1xa100-sxm4-40gb", GS_OK, 1},
	    {"", GS_ERR_PARSE, 0},
	    {"2x", GS_ERR_PARSE, 0},
	    {"H100-SXM5-80GB,", GS_ERR_PARSE, 0},
	    {",H100-SXM5-80GB", GS_ERR_PARSE, 0},
	    {"0xH100-SXM5-80GB", GS_ERR_RANGE, 0},
	    {"17xH100-SXM5-80GB", GS_ERR_RANGE, 0},
	    {"9xH100-SXM5-80GB,8xH100-SXM5-80GB", GS_ERR_RANGE, 0},
	    {"2xNOPE-9000", GS_ERR_UNKNOWN_MODEL, 0},
	};
	struct gs_sim_gpu_init g[GS_SIM_MAX_GPUS];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_errbuf eb = {0};
		int n = -1;
		gs_err e = gs_sim_gpus_parse(cases[i].spec, g, GS_SIM_MAX_GPUS,
		                             &n, &eb);

		if (e != cases[i].want)
			fail_msg("'%s': got %s, want %s", cases[i].spec,
			         gs_err_name(e), gs_err_name(cases[i].want));
		if (e == GS_OK)
			assert_int_equal(n, cases[i].n);
		else
			assert_true(eb.set);
	}
}

static void open_names_a_missing_file(void **state)
{
	struct fixture *f = *state;
	struct gs_sim_map *map = NULL;
	struct gs_errbuf eb = {0};

	assert_int_equal(gs_sim_state_open(f->dir, &map, &eb),
	                 GS_ERR_NOT_FOUND);
	assert_non_null(strstr(eb.msg, "sim init"));
}

static void open_refuses_another_version(void **state)
{
	struct fixture *f = *state;
	struct gs_sim_map *map = NULL;
	struct gs_errbuf eb = {0};
	uint32_t v = GS_SIM_STATE_VERSION + 1;

	create(f, "1xH100-SXM5-80GB");
	poke(f, offsetof(struct gs_sim_state, version), &v, sizeof(v));
	assert_int_equal(gs_sim_state_open(f->dir, &map, &eb), GS_ERR_VERSION);
	assert_non_null(strstr(eb.msg, "version"));
}

static void open_refuses_bad_magic_truncation_and_identity_damage(void **state)
{
	struct fixture *f = *state;
	struct gs_sim_map *map = NULL;
	struct gs_errbuf eb = {0};
	uint64_t junk = 0x1234;
	char x = 'Z';

	create(f, "1xH100-SXM5-80GB");
	poke(f, 0, &junk, sizeof(junk));
	assert_int_equal(gs_sim_state_open(f->dir, &map, &eb), GS_ERR_CORRUPT);

	create(f, "1xH100-SXM5-80GB");
	assert_int_equal(truncate(f->path, 4096), 0);
	gs_errbuf_init(&eb);
	assert_int_equal(gs_sim_state_open(f->dir, &map, &eb), GS_ERR_CORRUPT);

	create(f, "1xH100-SXM5-80GB");
	poke(f,
	     offsetof(struct gs_sim_state, gpus) +
	         offsetof(struct gs_sim_gpu, uuid) + 10,
	     &x, 1);
	gs_errbuf_init(&eb);
	assert_int_equal(gs_sim_state_open(f->dir, &map, &eb), GS_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, "checksum"));

	assert_int_equal(truncate(f->path, 10), 0);
	gs_errbuf_init(&eb);
	assert_int_equal(gs_sim_state_open(f->dir, &map, &eb), GS_ERR_CORRUPT);
}

static void check_finds_damage_and_repair_recounts_memory(void **state)
{
	struct fixture *f = *state;
	struct gs_sim_map *map = NULL;
	struct gs_errbuf eb = {0};
	struct gs_sim_state *st;
	int i;

	create(f, "1xH100-SXM5-80GB");
	assert_int_equal(gs_sim_state_open(f->dir, &map, &eb), GS_OK);
	st = gs_sim_state_get(map);
	assert_int_equal(gs_sim_lock(st), GS_OK);
	i = gs_sim_proc_acquire(st, getpid(), gs_sim_pid_start_time(getpid()),
	                        0, 0, gs_sim_now_ns());
	assert_true(i >= 0);
	st->procs[i].mem_used = 3 * MS;
	st->gpus[0].engine[0].mem_used = 7 * MS; /* half-done update */
	assert_int_equal(gs_sim_state_check(st, &eb), GS_ERR_CORRUPT);
	assert_int_equal(gs_sim_state_repair(st), 0);
	assert_int_equal(st->gpus[0].engine[0].mem_used, 3 * MS);
	gs_errbuf_init(&eb);
	assert_int_equal(gs_sim_state_check(st, &eb), GS_OK);
	st->procs[i].ring_head = st->procs[i].ring_tail + 1;
	assert_int_equal(gs_sim_state_check(st, &eb), GS_ERR_CORRUPT);
	gs_sim_state_repair(st);
	gs_errbuf_init(&eb);
	assert_int_equal(gs_sim_state_check(st, &eb), GS_OK);
	/* the engine's list of its slots is rebuilt too */
	memset(st->gpus[0].engine[0].slot_mask, 0,
	       sizeof(st->gpus[0].engine[0].slot_mask));
	assert_int_equal(gs_sim_state_check(st, &eb), GS_ERR_CORRUPT);
	gs_sim_state_repair(st);
	gs_errbuf_init(&eb);
	assert_int_equal(gs_sim_state_check(st, &eb), GS_OK);
	assert_true(st->gpus[0].engine[0].slot_mask[i / 64] &
	            (1ULL << (i % 64)));
	gs_sim_unlock(st);
	gs_sim_state_close(map);
}

/* ---- reaping ------------------------------------------------------------- */

static pid_t dead_child(bool wait_for_it)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	assert_true(pid > 0);
	if (wait_for_it) {
		assert_int_equal(waitpid(pid, NULL, 0), pid);
	} else {
		/* let it become a zombie */
		for (int i = 0; i < 200; i++) {
			char state = '?';

			if (gs_proc_stat((int32_t)pid, &state, NULL, NULL) &&
			    state == 'Z')
				break;
			usleep(5000);
		}
	}
	return pid;
}

static void reap_gives_back_memory_of_dead_and_reused_pids(void **state)
{
	struct fixture *f = *state;
	struct gs_sim_map *map = NULL;
	struct gs_errbuf eb = {0};
	struct gs_sim_state *st;
	uint64_t now = gs_sim_now_ns(), mine = gs_sim_pid_start_time(getpid());
	pid_t dead = dead_child(true), zombie = dead_child(false);
	int a, b, c, me;

	create(f, "1xH100-SXM5-80GB");
	assert_int_equal(gs_sim_state_open(f->dir, &map, &eb), GS_OK);
	st = gs_sim_state_get(map);
	assert_int_equal(gs_sim_lock(st), GS_OK);
	a = gs_sim_proc_acquire(st, dead, 12345, 0, 0, now);
	b = gs_sim_proc_acquire(st, zombie, gs_sim_pid_start_time(zombie), 0, 0,
	                        now);
	c = gs_sim_proc_acquire(st, getpid(), mine + 1, 0, 0, now); /* reused */
	me = gs_sim_proc_acquire(st, getpid(), mine, 0, 0, now);
	assert_true(a >= 0 && b >= 0 && c >= 0 && me >= 0);
	assert_int_not_equal(c, me);
	assert_false(gs_sim_pid_alive(zombie, gs_sim_pid_start_time(zombie)));
	assert_true(gs_sim_pid_alive(getpid(), mine));
	st->procs[a].mem_used = 10ULL << 30;
	st->procs[b].mem_used = 1ULL << 30;
	st->procs[c].mem_used = 1ULL << 20;
	st->procs[me].mem_used = 5ULL << 20;
	st->gpus[0].engine[0].mem_used = (11ULL << 30) + (6ULL << 20);
	st->procs[a].busy_ns = 42;

	assert_int_equal(gs_sim_reap(st, now), 3);
	assert_int_equal(st->gpus[0].engine[0].mem_used, 5ULL << 20);
	assert_int_equal(st->procs[a].state, GS_SIM_PROC_FREE);
	assert_int_equal(st->procs[me].state, GS_SIM_PROC_LIVE);
	assert_int_equal(st->reaped_total, 3);
	assert_int_equal(st->exited_seq, 3);
	assert_int_equal(st->exited[0].pid, dead);
	assert_int_equal(st->exited[0].busy_ns, 42);
	assert_int_equal(st->exited[0].reaped, 1);
	/* a freed slot comes back with a new generation */
	uint64_t gen = st->procs[a].generation;
	int again = gs_sim_proc_acquire(st, 1, 1, 0, 0, now);
	assert_int_equal(again, a);
	assert_int_equal(st->procs[again].generation, gen + 1);
	gs_sim_unlock(st);
	gs_sim_state_close(map);
	assert_int_equal(waitpid(zombie, NULL, 0), zombie);
}

static void lock_survives_a_holder_killed_mid_update(void **state)
{
	struct fixture *f = *state;
	struct gs_sim_map *map = NULL;
	struct gs_errbuf eb = {0};
	struct gs_sim_state *st;
	pid_t pid;
	int status;

	create(f, "1xH100-SXM5-80GB");
	assert_int_equal(gs_sim_state_open(f->dir, &map, &eb), GS_OK);
	st = gs_sim_state_get(map);
	pid = fork();
	if (pid == 0) {
		if (gs_sim_lock(st) != GS_OK)
			_exit(1);
		/* dies between updating the engine and the slot */
		st->gpus[0].engine[0].mem_used = 99 * MS;
		raise(SIGKILL);
		_exit(2);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(gs_sim_lock(st), GS_OK);
	assert_int_equal(st->lock_recoveries, 1);
	assert_int_equal(st->gpus[0].engine[0].mem_used, 0);
	gs_sim_unlock(st);
	/* and it is an ordinary lock again */
	assert_int_equal(gs_sim_lock(st), GS_OK);
	assert_int_equal(st->lock_recoveries, 1);
	gs_sim_unlock(st);
	gs_sim_state_close(map);
}

static void reset_drops_processes_and_mig_but_keeps_gpus(void **state)
{
	struct fixture *f = *state;
	struct gs_sim_map *map = NULL;
	struct gs_errbuf eb = {0};
	struct gs_sim_state *st;
	char uuid[GS_SIM_UUID_LEN];
	int i;

	create(f, "1xH100-SXM5-80GB");
	assert_int_equal(gs_sim_state_open(f->dir, &map, &eb), GS_OK);
	st = gs_sim_state_get(map);
	memcpy(uuid, st->gpus[0].uuid, sizeof(uuid));
	assert_int_equal(gs_sim_lock(st), GS_OK);
	i = gs_sim_proc_acquire(st, getpid(), 1, 0, 0, gs_sim_now_ns());
	st->procs[i].mem_used = MS;
	st->gpus[0].engine[0].mem_used = MS;
	st->gpus[0].mig_mode = 1;
	st->gpus[0].mig[0].in_use = 1;
	gs_sim_xid_post(st, 0, 31, 0, getpid(), gs_sim_now_ns());
	gs_sim_state_reset(st);
	assert_int_equal(st->procs[i].state, GS_SIM_PROC_FREE);
	assert_int_equal(st->gpus[0].engine[0].mem_used, 0);
	assert_int_equal(st->gpus[0].mig_mode, 0);
	assert_int_equal(st->gpus[0].mig[0].in_use, 0);
	assert_int_equal(st->gpus[0].xid_seq, 0);
	assert_int_equal(st->epoch, 2);
	assert_string_equal(st->gpus[0].uuid, uuid);
	assert_int_equal(gs_sim_state_check(st, &eb), GS_OK);
	gs_sim_unlock(st);
	gs_sim_state_close(map);
	/* the identity checksum still holds */
	assert_int_equal(gs_sim_state_open(f->dir, &map, &eb), GS_OK);
	gs_sim_state_close(map);
}

/* ---- timeline ------------------------------------------------------------ */

#define T0 (1000 * MS)

/* An in-memory one-GPU state with `sm` SMs on engine 0. */
static struct gs_sim_state *mem_state(uint32_t sm, uint32_t level)
{
	struct gs_sim_state *st = calloc(1, sizeof(*st));

	assert_non_null(st);
	st->n_gpus = 1;
	st->gpus[0].sm_count = sm;
	st->gpus[0].memory_total = 80ULL << 30;
	st->gpus[0].timeslice_level = level;
	gs_sim_engine_init(&st->gpus[0].engine[0], sm, 80ULL << 30, T0);
	return st;
}

static int add_slot(struct gs_sim_state *st, int32_t pid, bool mps)
{
	int i = gs_sim_proc_acquire(st, pid, 1, 0, 0, T0);

	assert_true(i >= 0);
	if (mps)
		st->procs[i].flags |= GS_SIM_PROC_MPS_CLIENT;
	return i;
}

/* Queues `n` kernels of `ns` each on `sms` SMs. */
static void queue(struct gs_sim_state *st, int i, int n, uint64_t ns,
                  uint32_t sms)
{
	struct gs_sim_proc *p = &st->procs[i];

	for (int k = 0; k < n; k++) {
		struct gs_sim_op *op = &p->ring[p->ring_tail % GS_SIM_RING];

		memset(op, 0, sizeof(*op));
		op->work = ns * sms;
		op->sms = sms;
		op->flags = GS_SIM_OP_KERNEL;
		if (p->ring_head == p->ring_tail)
			p->head_rem = op->work;
		p->ring_tail++;
	}
}

static void a_context_alone_runs_its_kernels_back_to_back(void **state)
{
	struct gs_sim_state *st = mem_state(132, 0);
	int a = add_slot(st, 100, false);

	(void)state;
	queue(st, a, 5, 1 * MS, 132);
	gs_sim_engine_advance(st, 0, 0, T0 + 10 * MS);
	assert_int_equal(st->procs[a].ring_head, 5);
	for (int k = 0; k < 5; k++)
		assert_int_equal(st->procs[a].ring[k].end_ns,
		                 T0 + (uint64_t)(k + 1) * MS);
	assert_int_equal(st->procs[a].busy_ns, 5 * MS);
	assert_int_equal(st->procs[a].sm_busy_ns, 5 * MS * 132);
	assert_int_equal(st->gpus[0].engine[0].busy_ns, 5 * MS);
	free(st);
}

static void fewer_sms_do_not_slow_a_kernel_that_fits(void **state)
{
	struct gs_sim_state *st = mem_state(132, 0);
	int a = add_slot(st, 100, false);

	(void)state;
	queue(st, a, 1, 3 * MS, 10);
	gs_sim_engine_advance(st, 0, 0, T0 + 10 * MS);
	assert_int_equal(st->procs[a].ring[0].end_ns, T0 + 3 * MS);
	free(st);
}

static void
timeslicing_splits_the_engine_between_two_busy_contexts(void **state)
{
	struct gs_sim_state *st = mem_state(132, 0);
	int a = add_slot(st, 100, false), b = add_slot(st, 101, false);

	(void)state;
	queue(st, a, 50, 10 * MS, 132);
	queue(st, b, 50, 10 * MS, 132);
	/* advancing in uneven steps gives the same schedule */
	gs_sim_engine_advance(st, 0, 0, T0 + 33 * MS);
	gs_sim_engine_advance(st, 0, 0, T0 + 33 * MS + 7);
	gs_sim_engine_advance(st, 0, 0, T0 + 100 * MS);
	assert_int_equal(st->procs[a].busy_ns + st->procs[b].busy_ns, 100 * MS);
	assert_int_equal(st->procs[a].busy_ns, 50 * MS);
	assert_int_equal(st->procs[b].busy_ns, 50 * MS);
	/* each 10 ms kernel now takes about 20 ms: A runs in the slices
	 * [0,2) [4,6) ... [16,18) and finishes its first at 18 ms */
	assert_int_equal(st->procs[a].ring_head, 5);
	assert_int_equal(st->procs[a].ring[0].end_ns, T0 + 18 * MS);
	assert_int_equal(st->procs[b].ring[0].end_ns, T0 + 20 * MS);
	free(st);
}

static void
timeslice_level_sets_how_long_a_context_keeps_the_engine(void **state)
{
	(void)state;
	assert_int_equal(gs_sim_timeslice_ns(0), 2 * MS);
	assert_int_equal(gs_sim_timeslice_ns(1), 1 * MS);
	assert_int_equal(gs_sim_timeslice_ns(2), 2 * MS);
	assert_int_equal(gs_sim_timeslice_ns(3), 5 * MS);
	assert_int_equal(gs_sim_timeslice_ns(9), 5 * MS);
	for (uint32_t level = 0; level < 4; level++) {
		struct gs_sim_state *st = mem_state(132, level);
		int a = add_slot(st, 100, false), b = add_slot(st, 101, false);
		uint64_t q = gs_sim_timeslice_ns(level);

		queue(st, a, 10, 10 * MS, 132);
		queue(st, b, 10, 10 * MS, 132);
		gs_sim_engine_advance(st, 0, 0, T0 + q);
		assert_int_equal(st->procs[a].busy_ns, q);
		assert_int_equal(st->procs[b].busy_ns, 0);
		gs_sim_engine_advance(st, 0, 0, T0 + 2 * q);
		assert_int_equal(st->procs[b].busy_ns, q);
		free(st);
	}
}

/*
 * A context alone keeps its time slice's phase (the timer re-arms at each
 * expiry): work another context queues mid-slice waits for that slice's
 * end, within one slice, and never takes the engine at once because the
 * holder's timer ran out while nobody else had work.
 */
static void work_arriving_mid_slice_waits_for_the_running_slice_to_end(
    void **state)
{
	struct gs_sim_state *st = mem_state(132, 0);
	int a = add_slot(st, 100, false), b = add_slot(st, 101, false);

	(void)state;
	queue(st, a, 1, 9 * MS, 132);
	gs_sim_engine_advance(st, 0, 0, T0 + 1);
	/* A alone from T0: slices end at 2, 4, 6 ... ms; B arrives at 6.5 */
	gs_sim_engine_advance(st, 0, 0, T0 + 6500000ULL);
	queue(st, b, 1, 1 * MS, 132);
	gs_sim_engine_advance(st, 0, 0, T0 + 20 * MS);
	/* A runs on to 8 ms, B from 8 to 9, A finishes its last 1 ms */
	assert_int_equal(st->procs[b].ring[0].end_ns, T0 + 9 * MS);
	assert_int_equal(st->procs[a].ring[0].end_ns, T0 + 10 * MS);
	free(st);
}

static void mps_clients_that_fit_run_side_by_side(void **state)
{
	struct gs_sim_state *st = mem_state(132, 0);
	int a = add_slot(st, 100, true), b = add_slot(st, 101, true);

	(void)state;
	queue(st, a, 1, 10 * MS, 66);
	queue(st, b, 1, 10 * MS, 66);
	gs_sim_engine_advance(st, 0, 0, T0 + 50 * MS);
	assert_int_equal(st->procs[a].ring[0].end_ns, T0 + 10 * MS);
	assert_int_equal(st->procs[b].ring[0].end_ns, T0 + 10 * MS);
	assert_int_equal(st->procs[a].busy_ns, 10 * MS);
	assert_int_equal(st->gpus[0].engine[0].busy_ns, 10 * MS);
	assert_int_equal(st->gpus[0].engine[0].sm_busy_ns, 10 * MS * 132);
	free(st);
}

static void mps_clients_asking_for_more_sms_than_exist_share_them(void **state)
{
	struct gs_sim_state *st = mem_state(132, 0);
	int a = add_slot(st, 100, true), b = add_slot(st, 101, true);

	(void)state;
	queue(st, a, 1, 10 * MS, 132);
	queue(st, b, 1, 10 * MS, 132);
	gs_sim_engine_advance(st, 0, 0, T0 + 50 * MS);
	assert_int_equal(st->procs[a].ring[0].end_ns, T0 + 20 * MS);
	assert_int_equal(st->procs[b].ring[0].end_ns, T0 + 20 * MS);
	assert_int_equal(st->procs[a].sm_busy_ns, 10 * MS * 132);
	free(st);
}

static void mps_server_takes_turns_with_a_non_mps_context(void **state)
{
	struct gs_sim_state *st = mem_state(132, 0);
	int a = add_slot(st, 100, true), b = add_slot(st, 101, true),
	    c = add_slot(st, 102, false);

	(void)state;
	queue(st, a, 10, 10 * MS, 66);
	queue(st, b, 10, 10 * MS, 66);
	queue(st, c, 10, 10 * MS, 132);
	gs_sim_engine_advance(st, 0, 0, T0 + 100 * MS);
	/* the MPS group and the other context each hold the engine half
	 * the time; inside the group both clients run all of it */
	assert_int_equal(st->procs[c].busy_ns, 50 * MS);
	assert_int_equal(st->procs[a].busy_ns, 50 * MS);
	assert_int_equal(st->procs[b].busy_ns, 50 * MS);
	free(st);
}

static void eta_never_overshoots_the_completion(void **state)
{
	struct gs_sim_state *st = mem_state(132, 0);
	int a = add_slot(st, 100, false), b = add_slot(st, 101, false);
	uint64_t eta;

	(void)state;
	queue(st, a, 3, 10 * MS, 132);
	queue(st, b, 3, 10 * MS, 132);
	gs_sim_engine_advance(st, 0, 0, T0 + 5 * MS);
	eta = gs_sim_proc_eta(st, a, 2);
	gs_sim_engine_advance(st, 0, 0, T0 + 200 * MS);
	assert_true(eta <= st->procs[a].ring[2].end_ns);
	assert_true(eta >= T0 + 5 * MS);
	free(st);
}

static void idle_time_is_not_charged(void **state)
{
	struct gs_sim_state *st = mem_state(132, 0);
	int a = add_slot(st, 100, false);

	(void)state;
	gs_sim_engine_advance(st, 0, 0, T0 + 50 * MS);
	queue(st, a, 1, 1 * MS, 132);
	gs_sim_engine_advance(st, 0, 0, T0 + 100 * MS);
	assert_int_equal(st->procs[a].ring[0].end_ns, T0 + 51 * MS);
	assert_int_equal(st->procs[a].busy_ns, 1 * MS);
	assert_int_equal(st->gpus[0].engine[0].busy_ns, 1 * MS);
	free(st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(
	        state_file_has_the_documented_layout, setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(
	        create_refuses_to_replace_without_force, setup_dir,
	        teardown_dir),
	    cmocka_unit_test(gpu_list_parser_reads_counts_and_names_bad_input),
	    cmocka_unit_test_setup_teardown(open_names_a_missing_file,
	                                    setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(open_refuses_another_version,
	                                    setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(
	        open_refuses_bad_magic_truncation_and_identity_damage,
	        setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(
	        check_finds_damage_and_repair_recounts_memory, setup_dir,
	        teardown_dir),
	    cmocka_unit_test_setup_teardown(
	        reap_gives_back_memory_of_dead_and_reused_pids, setup_dir,
	        teardown_dir),
	    cmocka_unit_test_setup_teardown(
	        lock_survives_a_holder_killed_mid_update, setup_dir,
	        teardown_dir),
	    cmocka_unit_test_setup_teardown(
	        reset_drops_processes_and_mig_but_keeps_gpus, setup_dir,
	        teardown_dir),
	    cmocka_unit_test(a_context_alone_runs_its_kernels_back_to_back),
	    cmocka_unit_test(fewer_sms_do_not_slow_a_kernel_that_fits),
	    cmocka_unit_test(
	        timeslicing_splits_the_engine_between_two_busy_contexts),
	    cmocka_unit_test(
	        timeslice_level_sets_how_long_a_context_keeps_the_engine),
	    cmocka_unit_test(
	        work_arriving_mid_slice_waits_for_the_running_slice_to_end),
	    cmocka_unit_test(mps_clients_that_fit_run_side_by_side),
	    cmocka_unit_test(
	        mps_clients_asking_for_more_sms_than_exist_share_them),
	    cmocka_unit_test(mps_server_takes_turns_with_a_non_mps_context),
	    cmocka_unit_test(eta_never_overshoots_the_completion),
	    cmocka_unit_test(idle_time_is_not_charged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
