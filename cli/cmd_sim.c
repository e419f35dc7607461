/*
 * cmd_sim.c - `gpuslice sim`: create, inspect and reset the simulated GPU
 * node (gs_sim/state.h) that the sim's libcuda.so.1 and libnvidia-ml.so.1
 * share.
 *
 *   gpuslice sim init --gpus 2xH100-SXM5-80GB[,1xA100-SXM4-40GB] [--dir D]
 * [--force] gpuslice sim env [--dir D] gpuslice sim status [--dir D] [--json]
 *   gpuslice sim reset [--dir D]
 *
 * The directory is --dir, else $GPUSLICE_SIM_DIR, else
 * $XDG_RUNTIME_DIR/gpuslice-sim, else /tmp/gpuslice-sim-<uid>. Everything
 * printed says it comes from the sim. `status` reaps processes that died
 * and advances every GPU's timeline to now before it reads, so busy times
 * are exact as of the call.
 */
#include "cli.h"

#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gs/paths.h"
#include "gs/proc.h"
#include "gs_sim/state.h"

static const char *const CMD = "sim";

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: gpuslice sim <init|env|status|reset> [options]\n"
	    "\n"
	    "The simulated GPU node: one state file shared by every process that\n"
	    "loads the sim's libcuda.so.1 / libnvidia-ml.so.1. Its figures measure\n"
	    "gpuslice's logic, not a GPU.\n"
	    "\n"
	    "  init --gpus LIST [--force]  create the node; LIST is COUNTxMODEL[,...],\n"
	    "                              e.g. 2xH100-SXM5-80GB,1xA100-SXM4-40GB\n"
	    "  env                         print the exports that point programs at the sim\n"
	    "  status [--json]             GPUs, MIG instances, MPS, processes, busy time\n"
	    "  reset                       drop all processes, MIG instances and MPS state\n"
	    "\n"
	    "options:\n"
	    "  --dir D      state directory (default: $GPUSLICE_SIM_DIR, else\n"
	    "               $XDG_RUNTIME_DIR/gpuslice-sim, else /tmp/gpuslice-sim-$UID)\n"
	    "  --json       machine-readable status\n"
	    "  -h, --help   this text\n"
	    "\n"
	    "Exit status: 0 ok, 1 failure (bad or incompatible state file), 2 usage\n"
	    "or bad input (malformed --gpus, unknown model), 3 no state file.\n");
}

struct opts {
	const char *dir;
	const char *gpus;
	bool force;
	bool json;
};

static int parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
	    {"dir", required_argument, NULL, 'd'},
	    {"gpus", required_argument, NULL, 'g'},
	    {"force", no_argument, NULL, 'f'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	memset(o, 0, sizeof(*o));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->dir = optarg;
			break;
		case 'g':
			o->gpus = optarg;
			break;
		case 'f':
			o->force = true;
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			gs_cli_error(CMD,
			             "unknown or incomplete option '%s' (see `gpuslice sim --help`)",
			             argv[optind - 1]);
			return GS_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		gs_cli_error(CMD, "unexpected argument '%s'", argv[optind]);
		return GS_EXIT_USAGE;
	}
	return 0;
}

static int open_state(const struct opts *o, char *dir, size_t len,
                      struct gs_sim_map **map)
{
	struct gs_errbuf eb = {0};
	gs_err err;

	err = gs_sim_dir_resolve(o->dir, dir, (uint32_t)len, &eb);
	if (err == GS_OK)
		err = gs_sim_state_open(dir, map, &eb);
	if (err != GS_OK)
		return gs_cli_fail(CMD, err, &eb);
	return 0;
}

/* ---- init ------------------------------------------------------------ */

static int cmd_init(const struct opts *o)
{
	struct gs_sim_gpu_init gpus[GS_SIM_MAX_GPUS];
	struct gs_errbuf eb = {0};
	char dir[GS_SIM_PATH_LEN];
	int n = 0;
	gs_err err;

	if (o->gpus == NULL) {
		gs_cli_error(
		    CMD, "init needs --gpus (e.g. --gpus 2xH100-SXM5-80GB)");
		return GS_EXIT_USAGE;
	}
	err = gs_sim_gpus_parse(o->gpus, gpus, GS_SIM_MAX_GPUS, &n, &eb);
	if (err == GS_OK)
		err = gs_sim_dir_resolve(o->dir, dir, sizeof(dir), &eb);
	if (err == GS_OK)
		err = gs_sim_state_create(dir, gpus, n, o->force, &eb);
	if (err != GS_OK)
		return gs_cli_fail(CMD, err, &eb);
	printf("gpuslice sim: created a simulated node with %d GPU%s in %s\n",
	       n, n == 1 ? "" : "s", dir);
	return GS_EXIT_OK;
}

/* ---- env -------------------------------------------------------------- */

/* Prints s single-quoted for the shell. */
static void shell_quote(const char *s)
{
	putchar('\'');
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", stdout);
		else
			putchar(*s);
	}
	putchar('\'');
}

static int cmd_env(const struct opts *o)
{
	struct gs_errbuf eb = {0};
	char dir[GS_SIM_PATH_LEN], abs[PATH_MAX];
	char simdir[PATH_MAX + 16];
	const char *d = dir;
	gs_err err;

	err = gs_sim_dir_resolve(o->dir, dir, sizeof(dir), &eb);
	if (err != GS_OK)
		return gs_cli_fail(CMD, err, &eb);
	if (realpath(dir, abs) != NULL)
		d = abs;
	/* <build>/sim, or the installed <libdir>/gpuslice/sim */
	if (!gs_paths_sim_dir(simdir, sizeof(simdir))) {
		gs_cli_error(CMD, "cannot find the simulator's libraries (no sim/ beside this gpuslice's bin/, no <libdir>/gpuslice/sim)");
		return GS_EXIT_FAILURE;
	}
	printf(
	    "# gpuslice sim: point CUDA/NVML programs at the simulated node\n");
	printf("export GPUSLICE_SIM_DIR=");
	shell_quote(d);
	printf("\nexport LD_LIBRARY_PATH=");
	shell_quote(simdir);
	printf("${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\nexport PATH=");
	shell_quote(simdir);
	printf(":$PATH\n");
	return GS_EXIT_OK;
}

/* ---- reset ------------------------------------------------------------ */

static int cmd_reset(const struct opts *o)
{
	char dir[GS_SIM_PATH_LEN];
	struct gs_sim_map *map = NULL;
	struct gs_sim_state *st;
	int rc = open_state(o, dir, sizeof(dir), &map);

	if (rc != 0)
		return rc;
	st = gs_sim_state_get(map);
	if (gs_sim_lock(st) != GS_OK) {
		gs_cli_error(CMD, "cannot take the state lock of %s",
		             gs_sim_state_path(map));
		gs_sim_state_close(map);
		return GS_EXIT_FAILURE;
	}
	gs_sim_state_reset(st);
	gs_sim_unlock(st);
	printf("gpuslice sim: reset %s (epoch %" PRIu64 ")\n",
	       gs_sim_state_path(map), st->epoch);
	gs_sim_state_close(map);
	return GS_EXIT_OK;
}

/* ---- status ------------------------------------------------------------ */

struct proc_row {
	int32_t pid;
	uint64_t mem;
	uint64_t busy_ns;
	uint64_t sm_busy_ns;
	uint32_t engine;
	uint32_t flags;
	char comm[32];
};

static const char *mps_state_name(uint32_t s)
{
	return s == GS_SIM_MPS_ACTIVE  ? "active"
	       : s == GS_SIM_MPS_FAULT ? "fault"
	                               : "off";
}

static const char *compute_mode_name(uint32_t m)
{
	switch (m) {
	case 0:
		return "default";
	case 2:
		return "prohibited";
	case 3:
		return "exclusive_process";
	default:
		return "unknown";
	}
}

/* Rows of one GPU's processes, merged by pid across its engines. */
static int collect(const struct gs_sim_state *st, uint32_t g,
                   struct proc_row *rows)
{
	int n = 0;

	for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
		const struct gs_sim_proc *p = &st->procs[i];
		int j;

		if (p->state != GS_SIM_PROC_LIVE || p->gpu != g)
			continue;
		for (j = 0; j < n; j++)
			if (rows[j].pid == p->pid)
				break;
		if (j == n) {
			memset(&rows[n], 0, sizeof(rows[n]));
			rows[n].pid = p->pid;
			rows[n].engine = p->engine;
			rows[n].flags = p->flags;
			memcpy(rows[n].comm, p->comm, sizeof(rows[n].comm));
			rows[n].comm[sizeof(rows[n].comm) - 1] = '\0';
			n++;
		}
		rows[j].mem += p->mem_used;
		rows[j].busy_ns += p->busy_ns;
		rows[j].sm_busy_ns += p->sm_busy_ns;
	}
	return n;
}

static json_t *mps_json(const struct gs_sim_mps *m)
{
	if (m->state == GS_SIM_MPS_OFF)
		return json_null();
	return json_pack(
	    "{s:s, s:s, s:i, s:i, s:i, s:I, s:I}", "state",
	    mps_state_name(m->state), "pipe_dir", m->pipe_dir, "control_pid",
	    (int)m->control_pid, "default_active_thread_percentage",
	    (int)(m->default_active_thread_pct ? m->default_active_thread_pct
	                                       : 100),
	    "active_thread_percentage",
	    (int)(m->active_thread_pct           ? m->active_thread_pct
	          : m->default_active_thread_pct ? m->default_active_thread_pct
	                                         : 100),
	    "default_pinned_mem_limit_bytes",
	    (json_int_t)m->default_pinned_mem_limit, "pinned_mem_limit_bytes",
	    (json_int_t)m->pinned_mem_limit);
}

static json_t *status_json(const struct gs_sim_state *st, const char *dir,
                           uint64_t now)
{
	json_t *root = json_object(), *gpus = json_array(), *ex = json_array();

	for (uint32_t g = 0; g < st->n_gpus; g++) {
		const struct gs_sim_gpu *gpu = &st->gpus[g];
		struct proc_row rows[GS_SIM_MAX_PROCS];
		int n = collect(st, g, rows);
		json_t *o = json_object(), *procs = json_array(),
		       *migs = json_array(), *xids = json_array();
		uint64_t used = 0;

		for (int e = 0; e < GS_SIM_ENGINES; e++)
			if (gpu->engine[e].live)
				used += gpu->engine[e].mem_used;
		for (int i = 0; i < n; i++) {
			json_t *p = json_pack(
			    "{s:i, s:I, s:f, s:f, s:s, s:b}", "pid",
			    (int)rows[i].pid, "memory_bytes",
			    (json_int_t)rows[i].mem, "busy_s",
			    (double)rows[i].busy_ns / 1e9, "sm_busy_s",
			    (double)rows[i].sm_busy_ns / 1e9, "name",
			    rows[i].comm, "mps_client",
			    (rows[i].flags & GS_SIM_PROC_MPS_CLIENT) != 0);
			if (rows[i].engine > 0)
				json_object_set_new(
				    p, "mig_gi_id",
				    json_integer(
				        gpu->mig[rows[i].engine - 1].gi_id));
			json_array_append_new(procs, p);
		}
		for (int m = 0; m < GS_SIM_MAX_MIG; m++) {
			const struct gs_sim_mig *mi = &gpu->mig[m];
			const struct gs_sim_engine *e = &gpu->engine[1 + m];

			if (!mi->in_use)
				continue;
			json_array_append_new(
			    migs,
			    json_pack(
			        "{s:i, s:i, s:s, s:s, s:i, s:i, s:I, s:I, s:f, s:o}",
			        "gi_id", (int)mi->gi_id, "profile_id",
			        (int)mi->profile_id, "profile",
			        mi->profile_name, "uuid", mi->uuid,
			        "placement_start", (int)mi->start, "sm_count",
			        (int)e->sm_count, "memory_total_bytes",
			        (json_int_t)e->mem_total, "memory_used_bytes",
			        (json_int_t)e->mem_used, "busy_s",
			        (double)e->busy_ns / 1e9, "mps",
			        mps_json(&e->mps)));
		}
		for (uint64_t k = 0; k < GS_SIM_XID_RING && k < gpu->xid_seq;
		     k++) {
			const struct gs_sim_xid *x =
			    &gpu->xid[(gpu->xid_seq - 1 - k) % GS_SIM_XID_RING];
			json_array_append_new(
			    xids,
			    json_pack("{s:I, s:i, s:i, s:f}", "seq",
			              (json_int_t)x->seq, "xid", (int)x->xid,
			              "pid", (int)x->pid, "age_s",
			              now > x->time_ns
			                  ? (double)(now - x->time_ns) / 1e9
			                  : 0.0));
		}
		json_object_set_new(o, "index", json_integer(g));
		json_object_set_new(o, "uuid", json_string(gpu->uuid));
		json_object_set_new(o, "model", json_string(gpu->model));
		json_object_set_new(
		    o, "memory_total_bytes",
		    json_integer((json_int_t)gpu->memory_total));
		json_object_set_new(o, "memory_used_bytes",
		                    json_integer((json_int_t)used));
		json_object_set_new(o, "processes", procs);
		json_object_set_new(o, "name", json_string(gpu->name));
		json_object_set_new(o, "sm_count", json_integer(gpu->sm_count));
		json_object_set_new(
		    o, "compute_capability",
		    json_sprintf("%u.%u", gpu->cc_major, gpu->cc_minor));
		json_object_set_new(o, "timeslice_level",
		                    json_integer(gpu->timeslice_level));
		json_object_set_new(o, "timeslice_ms",
		                    json_real((double)gs_sim_timeslice_ns(
		                                  gpu->timeslice_level) /
		                              1e6));
		json_object_set_new(
		    o, "compute_mode",
		    json_string(compute_mode_name(gpu->compute_mode)));
		json_object_set_new(
		    o, "busy_s",
		    json_real((double)gpu->engine[0].busy_ns / 1e9));
		json_object_set_new(o, "mig_mode", json_boolean(gpu->mig_mode));
		json_object_set_new(o, "mig_instances", migs);
		json_object_set_new(o, "mps", mps_json(&gpu->engine[0].mps));
		json_object_set_new(o, "xid_events", xids);
		json_array_append_new(gpus, o);
	}
	for (uint64_t k = 0; k < GS_SIM_EXITED_RING && k < st->exited_seq;
	     k++) {
		const struct gs_sim_exited *x =
		    &st->exited[(st->exited_seq - 1 - k) % GS_SIM_EXITED_RING];
		json_array_append_new(
		    ex, json_pack("{s:i, s:i, s:f, s:f, s:b}", "pid",
		                  (int)x->pid, "gpu", (int)x->gpu, "busy_s",
		                  (double)x->busy_ns / 1e9, "sm_busy_s",
		                  (double)x->sm_busy_ns / 1e9, "reaped",
		                  x->reaped != 0));
	}
	json_object_set_new(root, "gpus", gpus);
	json_object_set_new(root, "source", json_string("sim"));
	json_object_set_new(root, "dir", json_string(dir));
	json_object_set_new(root, "epoch", json_integer((json_int_t)st->epoch));
	json_object_set_new(root, "exited", ex);
	json_object_set_new(root, "reaped_total",
	                    json_integer((json_int_t)st->reaped_total));
	return root;
}

static void human_bytes(uint64_t b, char *out, size_t len)
{
	if (b >= (1ULL << 30))
		snprintf(out, len, "%.1f GiB", (double)b / (1ULL << 30));
	else
		snprintf(out, len, "%.0f MiB", (double)b / (1ULL << 20));
}

static void status_human(const struct gs_sim_state *st, const char *dir)
{
	printf("simulated node %s (figures from the gpuslice sim, not a GPU)\n",
	       dir);
	printf("%-3s %-18s %-40s %-21s %4s %5s %-4s %s\n", "GPU", "MODEL",
	       "UUID", "MEMORY USED / TOTAL", "SMS", "SLICE", "MIG", "MPS");
	for (uint32_t g = 0; g < st->n_gpus; g++) {
		const struct gs_sim_gpu *gpu = &st->gpus[g];
		struct proc_row rows[GS_SIM_MAX_PROCS];
		int n = collect(st, g, rows);
		char used[32], total[32], mem[80];
		uint64_t u = 0;

		for (int e = 0; e < GS_SIM_ENGINES; e++)
			if (gpu->engine[e].live)
				u += gpu->engine[e].mem_used;
		human_bytes(u, used, sizeof(used));
		human_bytes(gpu->memory_total, total, sizeof(total));
		snprintf(mem, sizeof(mem), "%s / %s", used, total);
		printf("%-3u %-18s %-40s %-21s %4u %3.0fms %-4s %s\n", g,
		       gpu->model, gpu->uuid, mem, gpu->sm_count,
		       (double)gs_sim_timeslice_ns(gpu->timeslice_level) / 1e6,
		       gpu->mig_mode ? "on" : "off",
		       mps_state_name(gpu->engine[0].mps.state));
		for (int m = 0; m < GS_SIM_MAX_MIG; m++) {
			const struct gs_sim_mig *mi = &gpu->mig[m];
			const struct gs_sim_engine *e = &gpu->engine[1 + m];

			if (!mi->in_use)
				continue;
			human_bytes(e->mem_used, used, sizeof(used));
			human_bytes(e->mem_total, total, sizeof(total));
			printf(
			    "    MIG gi=%u %-10s %s  %s / %s  %u SMs  MPS %s\n",
			    mi->gi_id, mi->profile_name, mi->uuid, used, total,
			    e->sm_count, mps_state_name(e->mps.state));
		}
		for (int i = 0; i < n; i++) {
			human_bytes(rows[i].mem, used, sizeof(used));
			printf(
			    "    pid %-8d %-16s memory %-10s busy %.3f s%s\n",
			    (int)rows[i].pid, rows[i].comm, used,
			    (double)rows[i].busy_ns / 1e9,
			    (rows[i].flags & GS_SIM_PROC_MPS_CLIENT)
			        ? "  (MPS client)"
			        : "");
		}
		if (gpu->xid_seq > 0)
			printf(
			    "    %" PRIu64
			    " Xid event%s, last Xid %u (pid %d)\n",
			    gpu->xid_seq, gpu->xid_seq == 1 ? "" : "s",
			    gpu->xid[(gpu->xid_seq - 1) % GS_SIM_XID_RING].xid,
			    (int)gpu->xid[(gpu->xid_seq - 1) % GS_SIM_XID_RING]
			        .pid);
	}
}

static int cmd_status(const struct opts *o)
{
	char dir[GS_SIM_PATH_LEN];
	struct gs_sim_map *map = NULL;
	struct gs_sim_state *st, *snap;
	struct gs_errbuf eb = {0};
	uint64_t now;
	gs_err err;
	int rc = open_state(o, dir, sizeof(dir), &map);

	if (rc != 0)
		return rc;
	st = gs_sim_state_get(map);
	snap = malloc(sizeof(*snap));
	if (snap == NULL) {
		gs_sim_state_close(map);
		return gs_cli_fail(CMD, GS_ERR_NOMEM, NULL);
	}
	err = gs_sim_lock(st);
	if (err != GS_OK) {
		free(snap);
		gs_sim_state_close(map);
		gs_cli_error(CMD, "cannot take the state lock of %s",
		             gs_sim_state_path(map));
		return GS_EXIT_FAILURE;
	}
	err = gs_sim_state_check(st, &eb);
	if (err == GS_OK) {
		now = gs_sim_now_ns();
		(void)gs_sim_reap(st, now);
		gs_sim_advance_all(st, now);
		memcpy(snap, st, sizeof(*snap));
	}
	gs_sim_unlock(st);
	if (err != GS_OK) {
		free(snap);
		gs_sim_state_close(map);
		return gs_cli_fail(CMD, err, &eb);
	}
	if (o->json) {
		json_t *j = status_json(snap, dir, now);
		char *s = json_dumps(j, JSON_PRESERVE_ORDER | JSON_COMPACT);

		if (s != NULL)
			puts(s);
		free(s);
		json_decref(j);
	} else {
		status_human(snap, dir);
	}
	free(snap);
	gs_sim_state_close(map);
	return GS_EXIT_OK;
}

int gs_cli_sim(int argc, char **argv)
{
	struct opts o;
	const char *sub;
	int rc;

	if (argc < 2) {
		usage(stderr);
		return GS_EXIT_USAGE;
	}
	sub = argv[1];
	if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 ||
	    strcmp(sub, "help") == 0) {
		usage(stdout);
		return GS_EXIT_OK;
	}
	rc = parse(argc - 1, argv + 1, &o);
	if (rc != 0)
		return rc < 0 ? GS_EXIT_OK : rc;
	if (strcmp(sub, "init") == 0)
		return cmd_init(&o);
	if (strcmp(sub, "env") == 0)
		return cmd_env(&o);
	if (strcmp(sub, "status") == 0)
		return cmd_status(&o);
	if (strcmp(sub, "reset") == 0)
		return cmd_reset(&o);
	gs_cli_error(CMD, "unknown subcommand '%s' (init, env, status, reset)",
	             sub);
	return GS_EXIT_USAGE;
}
