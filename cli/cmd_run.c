/*
 * cmd_run.c - `gpuslice run`: runs a command in a GPU slice, without a
 * daemon.
 *
 * The slice lives in the shared region of the run directory (see
 * include/gs/region.h). Without --slice it is an ephemeral slice of its
 * own ("run-<pid>"); with --slice NAME every `gpuslice run --slice NAME`
 * joins one slice and shares its budget: the first one creates it from
 * its flags, later ones take its limits as they are. When the daemon owns
 * the region, --slice joins the daemon's slice (its limits are read-only
 * here) and a run without --slice is refused (ask the daemon for a slice).
 *
 * The command runs with libgpuslice.so preloaded (LD_PRELOAD, prepended to
 * any the caller set; libgpuslice-musl.so when the program's ELF
 * interpreter is musl's, see gs/elfinfo.h) and GPUSLICE_SLICE /
 * GPUSLICE_RUN_DIR naming its slice. `gpuslice run` itself stays attached to the slice while the
 * command runs (so an ephemeral slice outlives a command that forks and
 * exits), forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT to it, and every 200 ms
 * reaps the slice's processes that died without detaching (kill -9), so
 * their memory comes back within a second. It exits with the command's
 * status (128 + signal when the command was killed).
 *
 * --mode picks how the slice shares the GPU. turns (default): the shim
 * gives slices turns on the GPU (time-slicing with limits). mps: the
 * command is a client of an MPS control daemon gpuslice owns for the
 * device (mps_server.c), so its kernels run alongside other slices'; the
 * compute share becomes CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (strict: the
 * share, so a slice alone stays within it; share: 100, idle SMs may be
 * used), the memory cap also CUDA_MPS_PINNED_DEVICE_MEM_LIMIT (a second
 * line behind the shim's cap, which still holds and measures), a low
 * priority CUDA_MPS_CLIENT_PRIORITY=1. The shim does not take turns for
 * an MPS slice (its compute limit in the region is 0). auto: seeds/004's
 * decision tree (core/advisor.c) on what --isolation says: none (the
 * tenants accept a shared fault domain: batch, notebooks, CI, trusted
 * inference) gives mps, fault (the slice wants its own fault domain)
 * gives turns, hard asks for MIG, which `run` refuses (a MIG instance is
 * the daemon's to make). --report says which and why ("mode_why").
 *
 * --report prints the slice's usage as one JSON line on stderr when the
 * command ends:
 *   {"slice":"a","gpu_busy_s":1.25,"memory_peak_bytes":4294967296,
 *    "throttled_s":0.5,"memory_byte_s":...,"launches":...,
 *    "mode":"mps","sm_share":0.3,"sm_time_s":0.375}
 * sm_time_s is the compute in SM-time: GPU-busy time x the share of the
 * GPU's SMs the slice may use (1 for turns: a turn has the whole GPU), so
 * MPS and time-sliced slices are billed on one scale.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gs/client.h"
#include "gs/advisor.h"
#include "gs/elfinfo.h"
#include "mps_server.h"
#include "gs/region.h"
#include "gs/paths.h"
#include "gs/proc.h"
#include "gs/spec.h"

#define CMD              "run"
#define REAP_INTERVAL_MS 200

static const char usage_text[] =
    "usage: gpuslice run [options] [--] CMD [ARGS...]\n"
    "\n"
    "Runs CMD in a GPU slice enforced by libgpuslice.so: a memory cap per\n"
    "GPU shared by all of the slice's processes, a compute limit in GPU\n"
    "time, and priority and weight between slices on one GPU. No daemon\n"
    "is needed. Exits with CMD's status.\n"
    "\n"
    "options:\n"
    "  --memory SIZE          memory cap per GPU: 512MiB, 8GiB, 8G (= GiB)\n"
    "  --compute PCT          compute limit, % of the GPU's time: 25 or 25%\n"
    "  --compute-mode MODE    strict (default): never above PCT;\n"
    "                         share: PCT is guaranteed, idle time is used\n"
    "  --mode MODE            turns (default): slices take turns on the GPU;\n"
    "                         mps: an MPS client of a gpuslice-owned MPS\n"
    "                         daemon, kernels run alongside other slices';\n"
    "                         auto: mps or turns from --isolation\n"
    "  --isolation I          for --mode auto: none (default; shares a\n"
    "                         fault domain) | fault (own fault domain:\n"
    "                         turns) | hard (MIG: not made by run)\n"
    "  --priority P           high | normal (default) | low\n"
    "  --weight W             share of contended time among slices of equal\n"
    "                         priority, 1..1000 (default 1)\n"
    "  --slice NAME           join (or create) the slice NAME; several runs\n"
    "                         with one NAME share one budget\n"
    "  --gpu INDEX|UUID       run on this GPU (sets CUDA_VISIBLE_DEVICES;\n"
    "                         an INDEX counts within an existing one)\n"
    "  --report               print the slice's usage as one JSON line on\n"
    "                         stderr when CMD ends\n"
    "  --swap                 back CMD's allocations with movable memory, so\n"
    "                         that they can be swapped to host memory\n"
    "                         (docs/swap.md)\n"
    "  --run-dir DIR          the region's directory (default\n"
    "                         $GPUSLICE_RUN_DIR, /run/gpuslice, ...)\n"
    "  --help                 this text\n"
    "\n"
    "environment: GPUSLICE_SHIM overrides the path of libgpuslice.so (a\n"
    "program on musl gets libgpuslice-musl.so from the same folder);\n"
    "GPUSLICE_LOG=[level:]FILE makes the shim log to FILE.\n"
    "Exit status: CMD's; 2 for a usage error, 1 when the slice cannot be\n"
    "set up, 3 when --slice names a daemon slice that does not exist.\n";

struct run_opts {
	struct gs_slice_spec spec; /* the limits as asked for (core/spec.c) */
	struct gs_slice_limits lim; /* ... as the shim enforces them */
	bool named;
	bool report;
	bool swap;
	const char *gpu;
	const char *run_dir;
	bool limits_given;
	bool mps;
	bool auto_mode;
	int isolation; /* enum iso */
	char why[160]; /* how auto chose */
};

/* --isolation for --mode auto */
enum iso { ISO_NONE, ISO_FAULT, ISO_HARD };

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		(void)kill((pid_t)child_pid, sig);
}

static void on_chld(int sig)
{
	(void)sig;
}

/*
 * --mode auto: the daemon's choice (core's gs_advisor_auto_mode, seeds/004's
 * tree) for the isolation --isolation names, on a node where gpuslice runs
 * the MPS control daemon itself when the program is there; hard needs a
 * MIG instance, which `gpuslice run` cannot make. Sets o->mps and o->why.
 */
static int pick_mode(struct run_opts *o)
{
	struct gs_slice_spec spec;
	struct gs_advice adv;
	enum gs_slice_mode mode;
	struct gs_errbuf eb = {0};

	if (o->isolation == ISO_HARD) {
		gs_cli_error(CMD,
		             "--mode auto --isolation hard needs a MIG instance: ask the daemon for a mig slice, or name an existing instance with --gpu MIG-...");
		return GS_EXIT_USAGE;
	}
	/* The daemon's walk (core's gs_advisor_auto_mode): none is a shared
	 * fault domain (MPS), fault one of its own (software fractions). */
	gs_spec_init(&spec);
	spec.mode = GS_MODE_AUTO;
	spec.isolation = o->isolation == ISO_NONE ? GS_ISOLATION_NONE
	                                          : GS_ISOLATION_MEMORY;
	if (gs_advisor_auto_mode(&spec, NULL, gs_mps_server_control_found(),
	                         &mode, &adv, &eb) != GS_OK) {
		gs_cli_error(CMD, "--mode auto: %s",
		             gs_errbuf_msg(&eb, GS_ERR_INTERNAL));
		return GS_EXIT_FAILURE;
	}
	o->mps = mode == GS_MODE_MPS;
	if (o->mps)
		(void)snprintf(o->why, sizeof(o->why),
		               "mps: tenants accept a shared fault domain, so kernels of all slices may run at once");
	else if (adv.mps_missing)
		(void)snprintf(o->why, sizeof(o->why),
		               "turns: tenants accept a shared fault domain, but there is no MPS control program here (nvidia-cuda-mps-control), so the slice takes turns");
	else
		(void)snprintf(o->why, sizeof(o->why),
		               "turns: the slice wants its own fault domain, so it takes turns in a context of its own");
	return 0;
}

enum {
	O_MEM = 1,
	O_COMP,
	O_CMODE,
	O_PRIO,
	O_WEIGHT,
	O_SLICE,
	O_GPU,
	O_REPORT,
	O_SWAP,
	O_DIR,
	O_MODE,
	O_ISO,
	O_HELP
};

/* The spec key of a limits option (also its long name). */
static const char *spec_key(int opt)
{
	switch (opt) {
	case O_MEM:
		return "memory";
	case O_COMP:
		return "compute";
	case O_CMODE:
		return "compute-mode";
	case O_PRIO:
		return "priority";
	default:
		return "weight";
	}
}

static int parse(int argc, char **argv, struct run_opts *o, int *first)
{
	static const struct option lo[] = {
	    {"memory", required_argument, NULL, O_MEM},
	    {"compute", required_argument, NULL, O_COMP},
	    {"compute-mode", required_argument, NULL, O_CMODE},
	    {"priority", required_argument, NULL, O_PRIO},
	    {"weight", required_argument, NULL, O_WEIGHT},
	    {"slice", required_argument, NULL, O_SLICE},
	    {"gpu", required_argument, NULL, O_GPU},
	    {"report", no_argument, NULL, O_REPORT},
	    {"swap", no_argument, NULL, O_SWAP},
	    {"run-dir", required_argument, NULL, O_DIR},
	    {"mode", required_argument, NULL, O_MODE},
	    {"isolation", required_argument, NULL, O_ISO},
	    {"help", no_argument, NULL, O_HELP},
	    {NULL, 0, NULL, 0},
	};
	struct gs_errbuf eb = {0};
	int c;

	gs_spec_init(&o->spec);
	gs_slice_limits_init(&o->lim, NULL);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+", lo, NULL)) != -1) {
		switch (c) {
		case O_MEM:
		case O_COMP:
		case O_CMODE:
		case O_PRIO:
		case O_WEIGHT:
			/* The daemon's spec keys, ranges and messages. */
			if (gs_spec_set(&o->spec, spec_key(c), optarg, &eb) !=
			    GS_OK) {
				gs_cli_error(CMD, "--%s: %s", spec_key(c),
				             eb.msg);
				return GS_EXIT_USAGE;
			}
			if (c != O_CMODE)
				o->limits_given = true;
			break;
		case O_SLICE:
			if (strlen(optarg) >= sizeof(o->lim.name)) {
				gs_cli_error(CMD, "slice name too long");
				return GS_EXIT_USAGE;
			}
			(void)snprintf(o->lim.name, sizeof(o->lim.name), "%s",
			               optarg);
			o->named = true;
			break;
		case O_GPU:
			o->gpu = optarg;
			break;
		case O_REPORT:
			o->report = true;
			break;
		case O_SWAP:
			o->swap = true;
			break;
		case O_DIR:
			o->run_dir = optarg;
			break;
		case O_MODE:
			o->auto_mode = strcmp(optarg, "auto") == 0;
			if (strcmp(optarg, "mps") == 0)
				o->mps = true;
			else if (strcmp(optarg, "turns") == 0 || o->auto_mode)
				o->mps = false;
			else {
				gs_cli_error(CMD,
				             "--mode must be turns, mps or auto, got '%s'",
				             optarg);
				return GS_EXIT_USAGE;
			}
			break;
		case O_ISO:
			if (strcmp(optarg, "none") == 0)
				o->isolation = ISO_NONE;
			else if (strcmp(optarg, "fault") == 0)
				o->isolation = ISO_FAULT;
			else if (strcmp(optarg, "hard") == 0)
				o->isolation = ISO_HARD;
			else {
				gs_cli_error(CMD,
				             "--isolation must be none, fault or hard, got '%s'",
				             optarg);
				return GS_EXIT_USAGE;
			}
			break;
		case O_HELP:
			fputs(usage_text, stdout);
			return -1;
		default:
			gs_cli_error(
			    CMD,
			    "unknown or incomplete option '%s' (see --help)",
			    argv[optind - 1]);
			return GS_EXIT_USAGE;
		}
	}
	{
		char name[sizeof(o->lim.name)];

		(void)snprintf(name, sizeof(name), "%s", o->lim.name);
		if (gs_spec_limits(&o->spec, &o->lim, &eb) != GS_OK)
			goto bad;
		(void)snprintf(o->lim.name, sizeof(o->lim.name), "%s", name);
		o->lim.owner_uid = (uint32_t)geteuid();
	}
	if (optind >= argc) {
		gs_cli_error(CMD, "no command to run (see --help)");
		return GS_EXIT_USAGE;
	}
	*first = optind;
	return o->auto_mode ? pick_mode(o) : 0;
bad:
	gs_cli_error(CMD, "%s", eb.msg);
	return GS_EXIT_USAGE;
}

/* $GPUSLICE_SHIM, else the build tree's or the installed libgpuslice.so
 * (gs_paths_shim). */
static int shim_path(char *out, size_t n)
{
	return gs_paths_shim(out, n) ? 0 : -1;
}

/* The file execvp would run for `cmd` (PATH searched as it does). */
static bool program_file(const char *cmd, char *out, size_t n)
{
	const char *path = getenv("PATH"), *p, *end;
	int k;

	if (strchr(cmd, '/') != NULL)
		return snprintf(out, n, "%s", cmd) < (int)n;
	for (p = path != NULL ? path : "/usr/local/bin:/bin:/usr/bin"; *p;
	     p = *end ? end + 1 : end) {
		end = strchrnul(p, ':');
		k = snprintf(out, n, "%.*s%s%s", (int)(end - p), p,
		             end > p ? "/" : "", cmd);
		if (k > 0 && (size_t)k < n && access(out, X_OK) == 0)
			return true;
	}
	return false;
}

/*
 * A program whose ELF interpreter is musl's gets libgpuslice-musl.so,
 * from the folder of `shim` (the glibc build, which musl's loader cannot
 * load). Fails when that build is missing: the program would run without
 * its limits. A program that cannot be read keeps `shim` (exec reports
 * what is wrong with it).
 */
static int shim_for_libc(char *shim, size_t n, const char *cmd)
{
	struct gs_elf_info info;
	char file[PATH_MAX], musl[PATH_MAX];
	const char *slash = strrchr(shim, '/');
	struct stat st;
	int k;

	if (!program_file(cmd, file, sizeof(file)) ||
	    gs_elf_read(file, &info, NULL) != GS_OK ||
	    info.libc != GS_ELF_LIBC_MUSL)
		return 0;
	k = snprintf(musl, sizeof(musl), "%.*slibgpuslice-musl.so",
	             slash != NULL ? (int)(slash - shim + 1) : 0, shim);
	if (k <= 0 || (size_t)k >= sizeof(musl) || (size_t)k >= n ||
	    stat(musl, &st) != 0) {
		gs_cli_error(CMD, "%s runs on musl (%s) and %s is missing: it would run without its limits",
		             file, info.interp, musl);
		return -1;
	}
	memcpy(shim, musl, (size_t)k + 1);
	return 0;
}

/* The entry `index` of a CUDA_VISIBLE_DEVICES list, or NULL. */
static char *visible_entry(const char *list, long index)
{
	char *copy = strdup(list), *save = NULL, *tok, *res = NULL;
	long i = 0;

	if (copy == NULL)
		return NULL;
	for (tok = strtok_r(copy, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save), i++)
		if (i == index) {
			res = strdup(tok);
			break;
		}
	free(copy);
	return res;
}

static int set_gpu(const char *gpu)
{
	const char *cur = getenv("CUDA_VISIBLE_DEVICES");
	char *end, *pick;
	long idx;

	errno = 0;
	idx = strtol(gpu, &end, 10);
	if (*end != '\0' || end == gpu || errno || idx < 0) {
		/* a UUID (GPU-..., MIG-...): names one device by itself */
		return setenv("CUDA_VISIBLE_DEVICES", gpu, 1);
	}
	if (cur == NULL || cur[0] == '\0')
		return setenv("CUDA_VISIBLE_DEVICES", gpu, 1);
	pick = visible_entry(cur, idx);
	if (pick == NULL) {
		gs_cli_error(
		    CMD, "--gpu %ld: CUDA_VISIBLE_DEVICES=%s has no such entry",
		    idx, cur);
		return -1;
	}
	idx = setenv("CUDA_VISIBLE_DEVICES", pick, 1);
	free(pick);
	return (int)idx;
}

static int child_env(const char *shim, const char *dir, const char *slice)
{
	const char *pre = getenv("LD_PRELOAD");
	char *v;
	int rc;

	if (pre != NULL && pre[0] != '\0' && strstr(pre, shim) == NULL) {
		size_t n = strlen(shim) + strlen(pre) + 2;

		v = malloc(n);
		if (v == NULL)
			return -1;
		(void)snprintf(v, n, "%s:%s", shim, pre);
		rc = setenv("LD_PRELOAD", v, 1);
		free(v);
		if (rc != 0)
			return -1;
	} else if (pre == NULL || pre[0] == '\0') {
		if (setenv("LD_PRELOAD", shim, 1) != 0)
			return -1;
	}
	if (setenv("GPUSLICE_SLICE", slice, 1) != 0 ||
	    setenv("GPUSLICE_RUN_DIR", dir, 1) != 0)
		return -1;
	return 0;
}

/*
 * The MPS client's environment: the daemon's pipe directory (its devices
 * are numbered from 0, so CUDA_VISIBLE_DEVICES goes), the SM share, the
 * memory cap in MiB for device 0, and a low priority as MPS's "below
 * normal".
 */
static int mps_env(const struct gs_mps_server *m,
                   const struct gs_slice_limits *lim, unsigned int sm_pct)
{
	char v[64];

	if (setenv("CUDA_MPS_PIPE_DIRECTORY", m->pipe_dir, 1) != 0 ||
	    unsetenv("CUDA_VISIBLE_DEVICES") != 0)
		return -1;
	(void)snprintf(v, sizeof(v), "%u", sm_pct);
	if (setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", v, 1) != 0)
		return -1;
	if (lim->mem_limit > 0) {
		unsigned long long mib = lim->mem_limit >> 20;

		(void)snprintf(v, sizeof(v), "0=%lluM", mib ? mib : 1);
		if (setenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", v, 1) != 0)
			return -1;
	}
	if (lim->priority == GS_REGION_PRIO_LOW &&
	    setenv("CUDA_MPS_CLIENT_PRIORITY", "1", 1) != 0)
		return -1;
	return 0;
}

static void report(struct gs_region *r, const struct gs_slice_ref *s,
                   const char *name, bool mps, unsigned int sm_pct,
                   const char *why)
{
	double busy_s;

	struct gs_slice_usage u;

	if (gs_region_slice_usage(r, s, &u) != GS_OK)
		memset(&u, 0, sizeof(u));
	busy_s = (double)u.busy_ns / 1e9;
	fprintf(
	    stderr,
	    "{\"slice\":\"%s\",\"gpu_busy_s\":%.6f,\"memory_peak_bytes\":%llu,\"throttled_s\":%.6f,\"memory_byte_s\":%.0f,\"launches\":%llu,\"mode\":\"%s\",\"sm_share\":%.2f,\"sm_time_s\":%.6f,\"mode_why\":\"%s\"}\n",
	    name, busy_s, (unsigned long long)u.mem_peak,
	    (double)u.throttled_ns / 1e9, u.mem_byte_s,
	    (unsigned long long)u.launches, mps ? "mps" : "turns",
	    (double)sm_pct / 100.0, busy_s * (double)sm_pct / 100.0,
	    why[0] ? why : (mps ? "mps: asked for" : "turns: asked for"));
	fflush(stderr);
}

/* Waits for the child, reaping the slice's dead processes meanwhile. */
static int wait_child(struct gs_region *r, pid_t pid)
{
	struct timespec ts = {0, REAP_INTERVAL_MS * 1000000L};
	int st;

	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return GS_EXIT_FAILURE;
		(void)gs_region_reap(r);
		(void)nanosleep(&ts, NULL); /* SIGCHLD cuts it short */
	}
	(void)gs_region_reap(r);
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return GS_EXIT_FAILURE;
}

/*
 * When a daemon answers and knows slice `name`, applies the environment it
 * gives for joining it (GPUSLICE_RUN_DIR, the GPU's CUDA_VISIBLE_DEVICES or
 * the MPS variables) and returns true; the caller then attaches the child's
 * pid. No daemon, or no such slice there: false, and `run` goes on with a
 * slice of its own run directory. OUT: *run_dir points into the
 * environment (setenv's copy).
 */
/*
 * Takes the daemon's environment for its slice `name`. True when joined;
 * false when there is no daemon to ask (a run of its own, daemonless).
 * *missing: the daemon answered that it has no such slice of the
 * caller's (it shows nobody another user's slice), so the run must not
 * quietly make a slice of the same name elsewhere.
 */
static bool join_daemon_slice(const char *name, const char **run_dir,
                              bool *missing)
{
	struct gs_errbuf eb = {0};
	json_t *js = NULL, *env;
	const char *k;
	json_t *v;
	gs_err err;

	*missing = false;
	err = gs_client_slice_get(gs_cli_socket, name, &js, &eb);
	if (err == GS_ERR_NOT_FOUND || err == GS_ERR_PERM)
		*missing = true;
	if (err != GS_OK)
		return false;
	env = json_object_get(js, "env");
	json_object_foreach(env, k, v)
	{
		if (json_is_string(v) &&
		    setenv(k, json_string_value(v), 1) != 0) {
			json_decref(js);
			return false;
		}
	}
	json_decref(js);
	*run_dir = getenv("GPUSLICE_RUN_DIR");
	return *run_dir != NULL;
}

int gs_cli_run(int argc, char **argv)
{
	struct run_opts o;
	struct gs_errbuf eb = {0};
	struct gs_region *r = NULL;
	struct gs_slice_ref slice;
	struct gs_proc_ref proc;
	struct sigaction sa;
	char dir[GS_REGION_DIR_MAX], shim[PATH_MAX];
	int first = 0, rc, status;
	bool created = false, daemon_slice = false;
	struct gs_mps_server mps = {.users_fd = -1};
	unsigned int sm_pct = 100;
	gs_err err;
	pid_t pid;

	memset(&o, 0, sizeof(o));
	rc = parse(argc, argv, &o, &first);
	if (rc != 0)
		return rc < 0 ? GS_EXIT_OK : rc;
	if (shim_path(shim, sizeof(shim)) != 0) {
		gs_cli_error(CMD,
		             "libgpuslice.so not found (set GPUSLICE_SHIM)");
		return GS_EXIT_FAILURE;
	}
	if (shim_for_libc(shim, sizeof(shim), argv[first]) != 0)
		return GS_EXIT_FAILURE;
	if (o.gpu != NULL && set_gpu(o.gpu) != 0)
		return GS_EXIT_USAGE;
	if (o.named && o.run_dir == NULL) {
		bool missing;

		daemon_slice = join_daemon_slice(o.lim.name, &o.run_dir,
		                                 &missing);
		if (missing) {
			gs_cli_error(CMD,
			             "gpusliced has no slice '%s' of yours (create it with `gpuslice create`, or give --run-dir for a slice without the daemon)",
			             o.lim.name);
			return GS_EXIT_NOT_FOUND;
		}
	}
	if (o.mps && daemon_slice) {
		gs_cli_error(CMD, "--mode mps: slice '%s' is the daemon's; its mode is the daemon's to choose",
		             o.lim.name);
		return GS_EXIT_USAGE;
	}
	if (o.mps) {
		/* MPS limits the SMs; the shim takes no turns for it. */
		if (o.lim.mode == GS_REGION_COMPUTE_STRICT &&
		    o.lim.compute_pct > 0)
			sm_pct = o.lim.compute_pct;
		o.lim.compute_pct = 0;
	}
	err = gs_region_dir_resolve(o.run_dir, dir, &eb);
	if (err == GS_OK)
		err = gs_region_open(dir, GS_REGION_RUNNER, &r, &eb);
	if (err != GS_OK)
		return gs_cli_fail(CMD, err, &eb);
	if (gs_region_replaced_version(r))
		gs_cli_error(CMD,
		            "note: %s held a region of another gpuslice build, made again (processes still running from that build keep their own limits and no longer take turns with this one's)",
		            dir);
	if (!o.named) {
		if (!gs_region_can_write_limits(r)) {
			gs_cli_error(
			    CMD,
			    "the daemon owns %s: name a slice with --slice",
			    dir);
			gs_region_close(r);
			return GS_EXIT_USAGE;
		}
		(void)snprintf(o.lim.name, sizeof(o.lim.name), "run-%d",
		               (int)getpid());
	}
	o.lim.flags = GS_SLICE_EPHEMERAL | (o.report ? GS_SLICE_MEASURE : 0) |
	              (o.mps ? GS_SLICE_MPS : 0) | (o.swap ? GS_SLICE_SWAP : 0);
	err = gs_region_slice_join(r, &o.lim, GS_PROC_RUNNER, &slice, &proc,
	                           &created, &eb);
	if (err != GS_OK) {
		rc = gs_cli_fail(CMD, err, &eb);
		gs_region_close(r);
		return rc;
	}
	if (!created) {
		struct gs_slice_limits cur;

		if (gs_region_slice_limits(r, &slice, &cur) == GS_OK) {
			if (o.limits_given &&
			    (cur.mem_limit != o.lim.mem_limit ||
			     cur.compute_pct != o.lim.compute_pct ||
			     cur.priority != o.lim.priority ||
			     cur.weight != o.lim.weight))
				gs_cli_error(
				    CMD,
				    "slice '%s' exists; its own limits apply",
				    o.lim.name);
			if (o.report && !(cur.flags & GS_SLICE_MEASURE) &&
			    gs_region_can_write_limits(r)) {
				cur.flags |= GS_SLICE_MEASURE;
				(void)gs_region_slice_update(r, &slice, &cur,
				                             NULL);
			}
		}
	}
	if (o.mps) {
		err = gs_mps_server_join(&mps, dir,
		                         getenv("CUDA_VISIBLE_DEVICES"), &eb);
		if (err != GS_OK) {
			status = gs_cli_fail(CMD, err, &eb);
			goto out;
		}
		if (mps_env(&mps, &o.lim, sm_pct) != 0) {
			gs_cli_error(CMD, "cannot set the environment: %s",
			             strerror(errno));
			status = GS_EXIT_FAILURE;
			goto out;
		}
	}
	if (child_env(shim, dir, o.lim.name) != 0) {
		gs_cli_error(CMD, "cannot set the environment: %s",
		             strerror(errno));
		status = GS_EXIT_FAILURE;
		goto out;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_chld;
	(void)sigaction(SIGCHLD, &sa, NULL);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		gs_cli_error(CMD, "fork: %s", strerror(errno));
		status = GS_EXIT_FAILURE;
		goto out;
	}
	if (pid == 0) {
		sa.sa_handler = SIG_DFL;
		(void)sigaction(SIGCHLD, &sa, NULL);
		execvp(argv[first], &argv[first]);
		fprintf(stderr, "gpuslice run: %s: %s\n", argv[first],
		        strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	child_pid = pid;
	if (daemon_slice) {
		struct gs_errbuf aeb = {0};

		/* The daemon's watchdog and on_exit policy follow the pid. */
		err = gs_client_slice_attach(gs_cli_socket, o.lim.name,
		                             (int32_t)pid, NULL, &aeb);
		if (err != GS_OK)
			gs_cli_error(CMD, "slice '%s': cannot attach pid %d: %s",
			             o.lim.name, (int)pid,
			             gs_errbuf_msg(&aeb, err));
	}
	sa.sa_handler = forward;
	(void)sigaction(SIGINT, &sa, NULL);
	(void)sigaction(SIGTERM, &sa, NULL);
	(void)sigaction(SIGHUP, &sa, NULL);
	(void)sigaction(SIGQUIT, &sa, NULL);
	status = wait_child(r, pid);
	child_pid = 0;
	if (o.report)
		report(r, &slice, o.lim.name, o.mps, sm_pct, o.why);
out:
	gs_mps_server_leave(&mps);
	(void)gs_region_slice_leave(r, &slice, &proc, NULL);
	gs_region_close(r);
	return status;
}
