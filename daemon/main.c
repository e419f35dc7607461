/*
 * main.c - gpusliced: the node daemon's start, run and stop.
 *
 *   start: config -> GPUs (NVML, or the simulator where the config or
 *          --gpus asks for it) -> store -> region -> model (and its
 *          actor) -> reconciler -> recover -> watchdog -> API
 *   run:   the API's threads serve requests; one tick thread runs the
 *          watchdog (every watchdog.interval_ms), Xid events (every
 *          100 ms), housekeeping and the reconciler (every second) and
 *          the ledger (every ledger.interval_ms); the arbiter thread
 *          gives the compute turns on every GPU (gs_region_arbitrate,
 *          woken by the processes' bell, at least every 100 ms)
 *   reload: SIGHUP (systemctl reload) reads the configuration file again
 *          and applies what can change while running: log.level and the
 *          watchdog's action, interval and grace; other changed keys are
 *          named in the log as needing a restart. A file that no longer
 *          parses keeps the running configuration.
 *   stop:  SIGTERM/SIGINT: stop serving, a last ledger row, flush, close.
 *          Slices, MPS daemons and tenants keep running; the next start
 *          recovers them. kill -9 loses nothing acknowledged either.
 *
 * The run directory (socket, shared region, MPS pipes) is the socket's
 * directory, so one --socket keeps daemons on a machine apart. Each of the
 * state and run directories holds a gpusliced.lock (flock, 0600, the
 * holder's pid) taken before anything else there is touched: a second
 * daemon on either exits 1 and leaves the live one's region alone.
 *
 * Under systemd (Type=notify) it tells the service manager READY=1 once
 * the API socket answers, RELOADING=1/READY=1 around a reload and
 * STOPPING=1 on the way out, as datagrams to $NOTIFY_SOCKET (the protocol
 * of sd_notify(3), written here to need no libsystemd).
 *
 * When the state directory is also the run directory (--state-dir D
 * --socket D/api.sock) the one gpusliced.lock there covers both.
 *
 * Startup refuses rather than start empty: a state.db of 0 bytes, one that
 * is not a database or cannot be written, or a slice row that does not
 * parse is an error naming it (exit 1); only a missing state.db is a
 * fresh start. The state directory is private (0700) and state.db 0600.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "config.h"
#include "gpu.h"
#include "gs/log.h"
#include "gs/paths.h"
#include "gs/proc.h"
#include "gs/region.h"
#include "gs/region_swap.h"
#include "gs/safepath.h"
#include "metrics.h"
#include "node.h"
#include "reconcile.h"
#include "server.h"
#include "store.h"
#include "watchdog.h"

#include "gs_sim/state.h"

#define TICK_MS 100
/* The longest the daemon waits for the region's usage mutex, which tenants
 * share (see gs_region_set_lock_wait). */
#define REGION_LOCK_WAIT_MS 100

struct daemon {
	struct gs_config cfg;
	struct gs_gpus gpus;
	struct gs_store *store;
	struct gs_region *region;
	struct gs_node *node;
	struct gs_reconciler *rec;
	struct gs_watchdog *wd;
	struct gs_server *srv;
	struct gs_api api;
	struct gs_metrics_ctx mctx;
	char run_dir[256];
	char mps_dir[300];
	char sim_dir[256];
	pthread_t tick;
	pthread_t events;
	pthread_t arbiter;
	pthread_mutex_t tlock;
	pthread_cond_t tcond;
	bool stopping;
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: gpusliced [options]\n"
	    "\n"
	    "The gpuslice node daemon: keeps slices, teams, quotas and the usage ledger,\n"
	    "serves the API on a Unix socket, enforces limits (region, MPS, MIG) and\n"
	    "watches what NVML sees. Runs in the foreground; stop it with SIGTERM.\n"
	    "\n"
	    "options:\n"
	    "  --config FILE      YAML configuration (docs/config.md)\n"
	    "  --state-dir DIR    where the database lives (store.state_dir)\n"
	    "  --socket PATH      API socket (api.socket); its directory is the run\n"
	    "                     directory (shared region, MPS pipes)\n"
	    "  --gpus auto|real|sim  which GPUs to use (node.gpus)\n"
	    "  --log-level LEVEL  debug, info, warn, error (log.level)\n"
	    "  --log-file FILE    append the log there instead of stderr\n"
	    "  --watchdog-action flag|kill  what the watchdog does (watchdog.action)\n"
	    "  --check-config     read the configuration, report, exit\n"
	    "\n"
	    "signals: SIGTERM/SIGINT stop; SIGHUP re-reads the config (log.level and\n"
	    "watchdog.* apply at once, other keys at the next start)\n"
	    "  -h, --help         this text\n"
	    "\n"
	    "exit status: 0 stopped cleanly, 1 failed to start, 2 bad options or config\n");
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Prepends `dir` to PATH (so the sim's MPS and nvidia-smi stand-ins win). */
static void path_prepend(const char *dir)
{
	const char *old = getenv("PATH");
	char *np = NULL;

	if (asprintf(&np, "%s:%s", dir, old ? old : "/usr/bin:/bin") < 0)
		return;
	(void)setenv("PATH", np, 1);
	free(np);
}

/*
 * The simulator: its state directory (GPUSLICE_SIM_DIR when set, else the
 * config's, else <state-dir>/sim), created with the configured GPUs when
 * missing; its NVML and tools where gs_paths_sim_dir finds them (the build
 * tree's sim/ or the installed <libdir>/gpuslice/sim).
 */
static gs_err use_sim(struct daemon *d, struct gs_errbuf *eb)
{
	char simbin[PATH_MAX], lib[PATH_MAX + 32];
	const char *env = getenv("GPUSLICE_SIM_DIR");
	char state[PATH_MAX + 16];
	struct stat st;

	if (!gs_paths_sim_dir(simbin, sizeof(simbin)))
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "the simulator is not installed beside gpusliced (no sim/ next to its bin/, no <libdir>/gpuslice/sim)");
	if (env && env[0])
		snprintf(d->sim_dir, sizeof(d->sim_dir), "%s", env);
	else if (d->cfg.sim_dir[0])
		snprintf(d->sim_dir, sizeof(d->sim_dir), "%s", d->cfg.sim_dir);
	else
		snprintf(d->sim_dir, sizeof(d->sim_dir), "%.240s/sim",
		         d->cfg.state_dir);
	(void)setenv("GPUSLICE_SIM_DIR", d->sim_dir, 1);
	snprintf(state, sizeof(state), "%s/node.state", d->sim_dir);
	if (stat(state, &st) != 0) {
		struct gs_sim_gpu_init init[GS_SIM_MAX_GPUS];
		char spec[80];
		int n = 0;
		gs_err err;

		snprintf(spec, sizeof(spec), "%dx%s", d->cfg.sim_count,
		         d->cfg.sim_model);
		err = gs_sim_gpus_parse(spec, init, GS_SIM_MAX_GPUS, &n, eb);
		if (!err)
			err =
			    gs_sim_state_create(d->sim_dir, init, n, false, eb);
		if (err)
			return err;
		gs_info("gpusliced", "simulated node created dir=%s gpus=%s",
		        d->sim_dir, spec);
	}
	path_prepend(simbin);
	snprintf(lib, sizeof(lib), "%s/libnvidia-ml.so.1", simbin);
	return gs_gpus_open(&d->gpus, lib, eb);
}

/*
 * The GPUs the config asks for. `sim` is the only way onto the simulator:
 * `auto` and `real` take what NVML finds, and when NVML fails (no driver,
 * a driver/library mismatch after an upgrade, no GPU) or turns out to be
 * the simulator's, gpusliced says so and does not start - a production
 * node must never accept slices on a simulated GPU because its driver
 * broke.
 */
static gs_err open_gpus(struct daemon *d, struct gs_errbuf *eb)
{
	struct gs_errbuf reb = {0};
	gs_err err;

	if (d->cfg.gpus == GS_GPUS_SIM)
		return use_sim(d, eb);
	err = gs_gpus_open(&d->gpus, d->cfg.nvml_library, &reb);
	if (err)
		return gs_fail(eb, err,
		               "no usable GPU and no fallback to a simulated node (ask for one with node.gpus: sim or --gpus sim); NVML: %s",
		               reb.msg);
	if (d->gpus.sim) {
		gs_gpus_close(&d->gpus);
		return gs_fail(eb, GS_ERR_UNAVAILABLE,
		               "NVML (%s) is the gpuslice simulator, not a GPU driver; set node.gpus: sim or --gpus sim to run on a simulated node",
		               d->cfg.nvml_library);
	}
	return GS_OK;
}

static void say_gpus(const struct gs_gpus *g)
{
	gs_info("gpusliced", "%d GPU%s via %s (%s, driver %s)", g->n,
	        g->n == 1 ? "" : "s", g->library,
	        g->sim ? "SIMULATED: numbers measure gpuslice, not a GPU"
	               : "real GPUs",
	        g->driver);
	for (int i = 0; i < g->n; i++)
		gs_info("gpusliced",
		        "gpu=%d %s model=%s uuid=%s memory=%lluMiB mig=%s",
		        i, g->gpu[i].name, g->gpu[i].model, g->gpu[i].uuid,
		        (unsigned long long)(g->gpu[i].memory_bytes >> 20),
		        g->gpu[i].mig_on        ? "on"
		        : g->gpu[i].mig_capable ? "off"
		                                : "n/a");
}

/* Logs a tick step that held the tick up; *t is then the time now. */
static void slow_step(struct daemon *d, const char *step, int64_t *t)
{
	int64_t now = mono_ms();

	(void)d;
	if (now - *t > 200)
		gs_warn("gpusliced", "tick step=%s took %lldms", step,
		        (long long)(now - *t));
	*t = now;
}

static void *tick_main(void *arg)
{
	struct daemon *d = arg;
	int64_t next_wd = 0, next_sec = 0,
	        next_led = mono_ms() + d->cfg.ledger_interval_ms;

	pthread_mutex_lock(&d->tlock);
	while (!d->stopping) {
		int64_t now = mono_ms();
		struct timespec ts;

		pthread_mutex_unlock(&d->tlock);
		gs_watchdog_remember(d->wd);
		if (now >= next_wd) {
			gs_watchdog_tick(d->wd);
			next_wd = now + d->cfg.watchdog_interval_ms;
			slow_step(d, "watchdog", &now);
		}
		if (now >= next_sec) {
			(void)gs_node_housekeep(d->node);
			slow_step(d, "housekeep", &now);
			gs_reconciler_tick(d->rec);
			next_sec = now + 1000;
			slow_step(d, "reconcile", &now);
		}
		if (now >= next_led) {
			gs_node_ledger_sample(d->node);
			next_led = now + d->cfg.ledger_interval_ms;
			slow_step(d, "ledger", &now);
		}
		(void)gs_store_flush(d->store);
		(void)gs_store_checkpoint(d->store);
		slow_step(d, "store", &now);
		pthread_mutex_lock(&d->tlock);
		if (d->stopping)
			break;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += TICK_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		(void)pthread_cond_timedwait(&d->tcond, &d->tlock, &ts);
	}
	pthread_mutex_unlock(&d->tlock);
	return NULL;
}

/* The least time between two passes of the arbiter: a tenant ringing
 * its bell without pause costs the daemon at most one pass per this. */
#define ARBITER_MIN_GAP_NS 100000ull

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The scheduler's arbiter (gs_region_arbitrate): gives the turns on each
 * GPU, woken by the processes' bell or its own deadline. */
static void *arbiter_main(void *arg)
{
	struct daemon *d = arg;
	uint64_t last = 0;

	/* Every hand-over of a turn waits for this thread: ahead of the
	 * host's batch work (best effort; gpusliced runs as root). */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), -10) != 0)
		gs_warn("gpusliced", "arbiter thread priority: %s",
		        strerror(errno));

	while (!__atomic_load_n(&d->stopping, __ATOMIC_ACQUIRE)) {
		uint64_t next = 100000000ull, now = mono_ns();

		if (last != 0 && now - last < ARBITER_MIN_GAP_NS) {
			struct timespec gap = {
			    0, (long)(ARBITER_MIN_GAP_NS - (now - last))};

			(void)nanosleep(&gap, NULL);
		}
		last = mono_ns();
		if (gs_region_arbitrate(d->region, &next) != GS_OK)
			next = 10000000ull; /* the lock was out of reach */
		if (next > 100000000ull)
			next = 100000000ull;
		gs_region_arbiter_wait(d->region, next);
	}
	return NULL;
}

/* The Xid thread: blocks in NVML's event wait. */
static void *events_main(void *arg)
{
	struct daemon *d = arg;

	for (;;) {
		bool stop;

		pthread_mutex_lock(&d->tlock);
		stop = d->stopping;
		pthread_mutex_unlock(&d->tlock);
		if (stop)
			break;
		gs_watchdog_events(d->wd, 200);
	}
	return NULL;
}

/*
 * Takes <dir>/<name> with flock, exclusively, without waiting, and writes
 * this pid into it. The lock lasts as long as the process (the fd is
 * never closed). OUT: *fd. Fails naming the holder's pid when another
 * process holds it.
 */
static gs_err take_lock(const char *dir, const char *name, const char *what,
                        int *fd, struct gs_errbuf *eb)
{
	char path[PATH_MAX], pid[32] = "";
	ssize_t n;
	int f, e;

	snprintf(path, sizeof(path), "%.4000s/%s", dir, name);
	f = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (f < 0) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "cannot open %s: %s", path,
		               strerror(e));
	}
	if (flock(f, LOCK_EX | LOCK_NB) != 0) {
		e = errno;
		n = pread(f, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		close(f);
		if (e == EWOULDBLOCK)
			return gs_fail(eb, GS_ERR_BUSY,
			               "another gpusliced (pid %s) uses %s %s; not starting a second one on it",
			               pid[0] ? pid : "?", what, dir);
		return gs_fail(eb, GS_ERR_IO, "flock %s: %s", path,
		               strerror(e));
	}
	(void)fchmod(f, 0600);
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(f, 0) != 0 || pwrite(f, pid, (size_t)n, 0) != n) {
		e = errno;
		close(f);
		return gs_fail(eb, GS_ERR_IO, "cannot write %s: %s", path,
		               strerror(e));
	}
	*fd = f;
	return GS_OK;
}

/* Whether a and b name the same directory (same device and inode). */
static bool same_dir(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/*
 * The state directory holds every tenant's slices, labels and usage: it
 * must be ours and private. One owned by another user or shared (sticky,
 * like /tmp) is refused; ours is made 0700, or 0711 when the simulator's
 * state lives inside it (tenants' processes read that, never state.db).
 */
static gs_err private_state_dir(struct daemon *d, struct gs_errbuf *eb)
{
	const char *dir = d->cfg.state_dir;
	size_t len = strlen(dir);
	struct stat st;
	mode_t want = 0700;
	int e;

	if (stat(dir, &st) != 0) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "state dir %s: %s", dir,
		               strerror(e));
	}
	if (!S_ISDIR(st.st_mode))
		return gs_fail(eb, GS_ERR_INVALID,
		               "state dir %s is not a directory", dir);
	if (st.st_uid != geteuid())
		return gs_fail(
		    eb, GS_ERR_PERM,
		    "state dir %s belongs to uid %u, not to this daemon's uid %u: it must be private to gpusliced",
		    dir, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & S_ISVTX)
		return gs_fail(
		    eb, GS_ERR_PERM,
		    "state dir %s is a shared directory (sticky bit): give gpusliced a directory of its own",
		    dir);
	if (d->gpus.sim && strncmp(d->sim_dir, dir, len) == 0 &&
	    d->sim_dir[len] == '/')
		want = 0711;
	if ((st.st_mode & 07777) != want) {
		if (chmod(dir, want) != 0) {
			e = errno;
			return gs_fail(eb, GS_ERR_IO, "chmod %s: %s", dir,
			               strerror(e));
		}
		gs_info("gpusliced", "state dir %s was mode %04o, now %04o",
		        dir, (unsigned)(st.st_mode & 07777), (unsigned)want);
	}
	return GS_OK;
}

/* state.db and its WAL and shared-memory files: 0600, whatever made them. */
static gs_err private_db(const char *db, struct gs_errbuf *eb)
{
	static const char *const sfx[] = {"", "-wal", "-shm"};
	char path[PATH_MAX + 8];
	int e;

	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", db, sfx[i]);
		if (chmod(path, 0600) != 0 && errno != ENOENT) {
			e = errno;
			return gs_fail(eb, GS_ERR_IO, "chmod %s: %s", path,
			               strerror(e));
		}
	}
	return GS_OK;
}

static gs_err read_token(const char *path, char *out, size_t len,
                         struct gs_errbuf *eb)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (f == NULL)
		return gs_fail(eb, GS_ERR_IO, "token file %s: %s", path,
		               strerror(errno));
	n = fread(out, 1, len - 1, f);
	fclose(f);
	out[n] = '\0';
	while (n &&
	       (out[n - 1] == '\n' || out[n - 1] == '\r' || out[n - 1] == ' '))
		out[--n] = '\0';
	if (n < 16)
		return gs_fail(
		    eb, GS_ERR_INVALID,
		    "token file %s: token shorter than 16 characters", path);
	return GS_OK;
}

/*
 * sd_notify(3)'s protocol: one datagram of "KEY=value" lines to the
 * AF_UNIX socket named by $NOTIFY_SOCKET (a leading '@' is the abstract
 * namespace). Nothing happens outside systemd; a failure is logged once
 * per message, since the service manager then times the start out and
 * says so itself.
 */
static void notify(const char *msg)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t len;
	int fd, e;

	if (path == NULL || (path[0] != '/' && path[0] != '@'))
		return;
	len = strlen(path);
	if (len >= sizeof(sa.sun_path)) {
		gs_warn("gpusliced", "NOTIFY_SOCKET=%s is too long", path);
		return;
	}
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa,
	           (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) <
	        0) {
		e = errno;
		gs_warn("gpusliced", "notify %s=%s: %s", "NOTIFY_SOCKET", path,
		        strerror(e));
	}
	if (fd >= 0)
		close(fd);
}

static const char *level_name(int l)
{
	static const char *const names[] = {"debug", "info", "warn", "error",
	                                    "off"};

	return l >= 0 && l <= GS_LOG_OFF ? names[l] : "?";
}

/* What the command line set; it wins over the file, at start and reload. */
struct overrides {
	const char *config, *state_dir, *sock, *gpus, *level, *log_file;
	const char *wd_action;
};

/* Applies the command line over d's config. Returns 0, or 2 (bad option,
 * said on stderr). */
static int apply_overrides(struct gs_config *cfg, const struct overrides *o)
{
	if (o->state_dir)
		snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s",
		         o->state_dir);
	if (o->sock) {
		if (strlen(o->sock) >= sizeof(cfg->socket)) {
			fprintf(stderr, "gpusliced: socket path too long\n");
			return 2;
		}
		snprintf(cfg->socket, sizeof(cfg->socket), "%s", o->sock);
	}
	if (o->gpus) {
		if (strcmp(o->gpus, "auto") == 0)
			cfg->gpus = GS_GPUS_AUTO;
		else if (strcmp(o->gpus, "real") == 0)
			cfg->gpus = GS_GPUS_REAL;
		else if (strcmp(o->gpus, "sim") == 0)
			cfg->gpus = GS_GPUS_SIM;
		else {
			fprintf(stderr, "gpusliced: --gpus must be auto, real or sim\n");
			return 2;
		}
	}
	if (o->level) {
		int l = gs_log_level_parse(o->level);

		if (l < 0) {
			fprintf(stderr, "gpusliced: bad --log-level '%s'\n",
			        o->level);
			return 2;
		}
		cfg->log_level = l;
	}
	if (o->log_file)
		snprintf(cfg->log_file, sizeof(cfg->log_file), "%s",
		         o->log_file);
	if (o->wd_action) {
		if (strcmp(o->wd_action, "flag") == 0)
			cfg->watchdog_action = GS_WATCHDOG_FLAG;
		else if (strcmp(o->wd_action, "kill") == 0)
			cfg->watchdog_action = GS_WATCHDOG_KILL;
		else {
			fprintf(stderr, "gpusliced: --watchdog-action must be flag or kill\n");
			return 2;
		}
	}
	return 0;
}

/*
 * SIGHUP: the config file again. Applies log.level and watchdog.* (read
 * by the tick and events threads, hence the atomic stores); names every
 * other setting that differs and needs a restart. Without --config there
 * is nothing to re-read.
 */
static void reload(struct daemon *d, const struct overrides *o)
{
	static struct gs_config next;
	struct gs_errbuf eb = {0};
	struct gs_config *cur = &d->cfg;
	char later[256] = "";
	gs_err err;

	notify("RELOADING=1");
	if (o->config == NULL) {
		gs_info("gpusliced", "SIGHUP: started without --config, nothing to re-read");
		notify("READY=1");
		return;
	}
	gs_config_defaults(&next, getuid() == 0, getenv("XDG_RUNTIME_DIR"),
	                   getenv("HOME"));
	err = gs_config_load(&next, o->config, &eb);
	if (!err)
		err = gs_config_check_teams(&next, &eb);
	if (!err && apply_overrides(&next, o) != 0)
		err = gs_fail(&eb, GS_ERR_INVALID, "bad command line");
	if (err) {
		gs_error("gpusliced", "reload of %s refused, the running configuration stays: %s",
		         o->config, gs_errbuf_msg(&eb, err));
		notify("READY=1");
		return;
	}
	if (strcmp(next.socket, cur->socket) != 0)
		strcat(later, " api.socket");
	if (strcmp(next.tcp, cur->tcp) != 0)
		strcat(later, " api.tcp");
	if (strcmp(next.state_dir, cur->state_dir) != 0)
		strcat(later, " store.state_dir");
	if (next.gpus != cur->gpus)
		strcat(later, " node.gpus");
	if (next.n_teams != cur->n_teams ||
	    memcmp(next.teams, cur->teams,
	           sizeof(next.teams[0]) * (size_t)next.n_teams) != 0)
		strcat(later, " teams");
	__atomic_store_n(&cur->log_level, next.log_level, __ATOMIC_RELAXED);
	gs_log_set_level((enum gs_log_level)next.log_level);
	__atomic_store_n(&cur->watchdog_action, next.watchdog_action,
	                 __ATOMIC_RELAXED);
	__atomic_store_n(&cur->watchdog_interval_ms, next.watchdog_interval_ms,
	                 __ATOMIC_RELAXED);
	__atomic_store_n(&cur->watchdog_grace_bytes, next.watchdog_grace_bytes,
	                 __ATOMIC_RELAXED);
	__atomic_store_n(&cur->watchdog_context_bytes,
	                 next.watchdog_context_bytes, __ATOMIC_RELAXED);
	__atomic_store_n(&cur->watchdog_compute_grace_pct,
	                 next.watchdog_compute_grace_pct, __ATOMIC_RELAXED);
	gs_info("gpusliced", "config reloaded from %s: log.level=%s watchdog.action=%s watchdog.interval_ms=%d%s%s",
	        o->config, level_name(next.log_level),
	        next.watchdog_action == GS_WATCHDOG_KILL ? "kill" : "flag",
	        next.watchdog_interval_ms,
	        later[0] ? "; changed, applied at the next start:" : "", later);
	gs_debug("gpusliced", "reload done pid=%d", (int)getpid());
	notify("READY=1");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"config", required_argument, NULL, 'c'},
	    {"state-dir", required_argument, NULL, 'd'},
	    {"socket", required_argument, NULL, 's'},
	    {"gpus", required_argument, NULL, 'g'},
	    {"log-level", required_argument, NULL, 'l'},
	    {"log-file", required_argument, NULL, 'L'},
	    {"check-config", no_argument, NULL, 'C'},
	    {"watchdog-action", required_argument, NULL, 'W'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	static struct daemon D;
	struct daemon *d = &D;
	struct gs_errbuf eb = {0};
	struct overrides ov = {0};
	bool check = false;
	struct gs_server_opts so;
	char token[512] = "", db[PATH_MAX];
	sigset_t sigs;
	int opt, sig, lockfd = -1, runlockfd = -1, kept = 0, cleaned = 0,
	              status = 1;
	struct group *gr;
	gs_err err;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			ov.config = optarg;
			break;
		case 'd':
			ov.state_dir = optarg;
			break;
		case 's':
			ov.sock = optarg;
			break;
		case 'g':
			ov.gpus = optarg;
			break;
		case 'l':
			ov.level = optarg;
			break;
		case 'L':
			ov.log_file = optarg;
			break;
		case 'C':
			check = true;
			break;
		case 'W':
			ov.wd_action = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "gpusliced: unexpected argument '%s'\n",
		        argv[optind]);
		return 2;
	}
	gs_config_defaults(&d->cfg, getuid() == 0, getenv("XDG_RUNTIME_DIR"),
	                   getenv("HOME"));
	if (ov.config) {
		err = gs_config_load(&d->cfg, ov.config, &eb);
		if (err) {
			fprintf(stderr, "gpusliced: %s\n",
			        gs_errbuf_msg(&eb, err));
			return 2;
		}
	}
	if (apply_overrides(&d->cfg, &ov) != 0)
		return 2;
	if (check) {
		err = gs_config_check_teams(&d->cfg, &eb);
		if (err) {
			fprintf(stderr, "gpusliced: %s\n",
				gs_errbuf_msg(&eb, err));
			return 2;
		}
		printf("%s: ok (socket %s, state %s, %d teams)\n",
		       ov.config ? ov.config : "built-in defaults", d->cfg.socket,
		       d->cfg.state_dir, d->cfg.n_teams);
		return 0;
	}
	gs_log_set_level((enum gs_log_level)d->cfg.log_level);
	if (d->cfg.log_file[0]) {
		int rc = gs_log_open(d->cfg.log_file);

		if (rc != 0) {
			fprintf(stderr, "gpusliced: cannot open log %s: %s\n",
			        d->cfg.log_file, gs_safe_why(d->cfg.log_file, -rc));
			return 1;
		}
	}

	/* Signals are taken by sigwait in this thread only. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	err = gs_safe_mkdir(d->cfg.state_dir, 0700, false, &eb);
	if (err) {
		gs_error("gpusliced", "state dir: %s", gs_errbuf_msg(&eb, err));
		return 1;
	}
	err = take_lock(d->cfg.state_dir, "gpusliced.lock", "state dir",
	                &lockfd, &eb);
	if (err) {
		gs_error("gpusliced", "%s", gs_errbuf_msg(&eb, err));
		return 1;
	}
	snprintf(d->run_dir, sizeof(d->run_dir), "%.107s", d->cfg.socket);
	{
		char *slash = strrchr(d->run_dir, '/');

		if (slash && slash != d->run_dir)
			*slash = '\0';
		else
			snprintf(d->run_dir, sizeof(d->run_dir), ".");
	}
	err = gs_safe_mkdir(d->run_dir, 0755, true, &eb);
	if (err) {
		gs_error("gpusliced", "run dir: %s", gs_errbuf_msg(&eb, err));
		return 1;
	}
	/* Before anything in the run directory is touched: opening the
	 * region as its owner resets it, which would empty a live daemon's.
	 * A run directory that is the state directory is held already (a
	 * second flock on the same file from this process would fail). */
	if (!same_dir(d->run_dir, d->cfg.state_dir))
		err = take_lock(d->run_dir, "gpusliced.lock", "run directory",
		                &runlockfd, &eb);
	if (err) {
		gs_error("gpusliced", "%s", gs_errbuf_msg(&eb, err));
		return 1;
	}
	snprintf(d->mps_dir, sizeof(d->mps_dir), "%.250s/mps", d->run_dir);

	err = open_gpus(d, &eb);
	if (err) {
		gs_error("gpusliced", "no GPUs: %s", gs_errbuf_msg(&eb, err));
		return 1;
	}
	if (d->gpus.sim)
		snprintf(d->gpus.sim_dir, sizeof(d->gpus.sim_dir), "%.255s",
		         d->sim_dir);
	say_gpus(&d->gpus);

	err = private_state_dir(d, &eb);
	snprintf(db, sizeof(db), "%.4000s/state.db", d->cfg.state_dir);
	if (!err)
		err = private_db(db, &eb);
	if (err) {
		gs_error("gpusliced", "%s", gs_errbuf_msg(&eb, err));
		goto out_gpus;
	}
	{
		/* What SQLite creates (the file, -wal, -shm) is 0600. */
		mode_t old = umask(077);

		err = gs_store_open(db, (enum gs_store_sync)d->cfg.synchronous,
		                    &d->store, &eb);
		(void)umask(old);
	}
	if (err) {
		/* The store's messages name it and the file. */
		gs_error("gpusliced", "%s", gs_errbuf_msg(&eb, err));
		goto out_gpus;
	}
	/* Concurrent requests share commits (group commit). */
	err = gs_store_start_committer(d->store, &eb);
	if (err) {
		gs_error("gpusliced", "store: %s", gs_errbuf_msg(&eb, err));
		goto out_store;
	}
	err = gs_region_open(d->run_dir, GS_REGION_OWNER, &d->region, &eb);
	if (err) {
		gs_error("gpusliced", "region in %s: %s", d->run_dir,
		         gs_errbuf_msg(&eb, err));
		goto out_store;
	}
	if (gs_region_repaired_lock(d->region))
		gs_warn("gpusliced",
		        "region in %s: its shared lock was held past the deadline (a stopped or hostile process); made new region files (running processes keep their limits)",
		        d->run_dir);
	if (gs_region_replaced_version(d->region))
		gs_warn("gpusliced",
		        "region in %s: its files were of another layout version (an upgrade); made new region files (slices come back from the store; running processes keep the old files until they restart)",
		        d->run_dir);
	/* Tenants share the usage mutex: never queue behind one for long. */
	gs_region_set_lock_wait(d->region, REGION_LOCK_WAIT_MS);
	/* How long its processes' allocations wait for room (swap.need_wait);
	 * the config bounds it as the region does. */
	err = gs_region_set_need_wait(
	    d->region, (uint32_t)(d->cfg.swap_need_wait_s * 1000), &eb);
	if (err) {
		gs_error("gpusliced", "region in %s: %s", d->run_dir,
		         gs_errbuf_msg(&eb, err));
		goto out_region;
	}
	{
		struct gs_node_opts no = {
		    .cfg = &d->cfg,
		    .store = d->store,
		    .gpus = &d->gpus,
		    .region = d->region,
		    .region_dir = d->run_dir,
		    .mps_dir = d->mps_dir,
		};

		err = gs_node_create(&no, &d->node, &eb);
	}
	if (err) {
		gs_error("gpusliced", "%s", gs_errbuf_msg(&eb, err));
		goto out_region;
	}
	/* The reconciler first: a create that recovery resumes may need
	 * its MPS starter. */
	err = gs_reconciler_create(d->node, &d->rec, &eb);
	if (err) {
		gs_error("gpusliced", "%s", gs_errbuf_msg(&eb, err));
		goto out_node;
	}
	err = gs_node_recover(d->node, &kept, &cleaned, &eb);
	if (err) {
		gs_error("gpusliced", "recovery: %s", gs_errbuf_msg(&eb, err));
		goto out_wd;
	}
	gs_info("gpusliced", "recovered slices kept=%d cleaned=%d", kept,
	        cleaned);
	gs_node_event(d->node, "daemon.started", "", "", -1,
	              "pid %d, %d GPU%s (%s), %d slices kept, %d cleaned",
	              (int)getpid(), d->gpus.n, d->gpus.n == 1 ? "" : "s",
	              d->gpus.sim ? "simulated" : "real", kept, cleaned);

	{
		char klog[300];

		if (d->cfg.watchdog_kernel_log[0])
			snprintf(klog, sizeof(klog), "%.255s",
			         d->cfg.watchdog_kernel_log);
		else if (d->gpus.sim)
			/* The simulated driver logs its Xids there, in the
			 * real driver's format. */
			snprintf(klog, sizeof(klog), "%.250s/kmsg", d->sim_dir);
		else
			snprintf(klog, sizeof(klog), "/dev/kmsg");
		err = gs_watchdog_create(d->node, d->rec, klog, &d->wd, &eb);
	}
	if (err) {
		gs_error("gpusliced", "%s", gs_errbuf_msg(&eb, err));
		goto out_wd;
	}
	gs_reconciler_timeslice(d->rec);
	gs_reconciler_tick(d->rec);

	d->mctx.node = d->node;
	d->mctx.rec = d->rec;
	d->api.node = d->node;
	d->api.metrics = gs_metrics_render;
	d->api.metrics_ctx = &d->mctx;
	d->api.gpu_extra = gs_reconciler_gpu_json;
	d->api.gpu_extra_ctx = d->rec;
	if (d->cfg.tcp[0] && d->cfg.token_file[0]) {
		err = read_token(d->cfg.token_file, token, sizeof(token), &eb);
		if (err) {
			gs_error("gpusliced", "%s", gs_errbuf_msg(&eb, err));
			goto out_wd;
		}
	}
	gr = getgrnam(d->cfg.admin_group);
	memset(&so, 0, sizeof(so));
	so.socket_path = d->cfg.socket;
	so.tcp = d->cfg.tcp;
	so.token = token[0] ? token : NULL;
	so.admin_gid = gr ? gr->gr_gid : (gid_t)-1;
	so.max_body = d->cfg.max_body_bytes;
	so.max_connections = d->cfg.max_connections;
	so.max_per_user = d->cfg.max_connections_per_user;
	so.idle_timeout_s = d->cfg.idle_timeout_s;
	so.handler = gs_api_handle;
	so.ctx = &d->api;

	pthread_mutex_init(&d->tlock, NULL);
	pthread_cond_init(&d->tcond, NULL);
	if (pthread_create(&d->tick, NULL, tick_main, d) != 0) {
		gs_error("gpusliced", "cannot start the tick thread");
		goto out_wd;
	}
	if (pthread_create(&d->events, NULL, events_main, d) != 0 ||
	    pthread_create(&d->arbiter, NULL, arbiter_main, d) != 0) {
		gs_error("gpusliced", "cannot start the events and arbiter threads");
		pthread_mutex_lock(&d->tlock);
		__atomic_store_n(&d->stopping, true, __ATOMIC_RELEASE);
		pthread_cond_signal(&d->tcond);
		pthread_mutex_unlock(&d->tlock);
		pthread_join(d->tick, NULL);
		goto out_wd;
	}
	err = gs_server_start(&so, &d->srv, &eb);
	if (err) {
		gs_error("gpusliced", "api: %s", gs_errbuf_msg(&eb, err));
		goto out_tick;
	}
	gs_info("gpusliced", "serving socket=%s%s%s state=%s run=%s pid=%d",
	        d->cfg.socket, d->cfg.tcp[0] ? " tcp=" : "", d->cfg.tcp,
	        d->cfg.state_dir, d->run_dir, (int)getpid());
	/* gs_server_start returns with the socket bound and listening: a
	 * client connecting now is answered. */
	{
		char ready[64];

		snprintf(ready, sizeof(ready), "READY=1\nMAINPID=%d",
		         (int)getpid());
		notify(ready);
	}

	for (;;) {
		if (sigwait(&sigs, &sig) != 0)
			continue;
		if (sig == SIGHUP) {
			reload(d, &ov);
			continue;
		}
		break;
	}
	gs_info("gpusliced", "stopping (signal %d)", sig);
	notify("STOPPING=1");
	status = 0;
	gs_server_stop(d->srv);
out_tick:
	pthread_mutex_lock(&d->tlock);
	__atomic_store_n(&d->stopping, true, __ATOMIC_RELEASE);
	pthread_cond_signal(&d->tcond);
	pthread_mutex_unlock(&d->tlock);
	pthread_join(d->tick, NULL);
	pthread_join(d->events, NULL);
	pthread_join(d->arbiter, NULL);
	gs_node_ledger_sample(d->node);
	(void)gs_store_flush(d->store);
out_wd:
	gs_watchdog_destroy(d->wd);
	gs_reconciler_destroy(d->rec);
out_node:
	gs_node_destroy(d->node);
out_region:
	gs_region_close(d->region);
out_store:
	gs_store_close(d->store);
out_gpus:
	gs_gpus_close(&d->gpus);
	return status;
}
