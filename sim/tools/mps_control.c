/*
 * mps_control.c - build/sim/nvidia-cuda-mps-control: the MPS control
 * daemon stand-in for the simulated node (commands and environment as in
 * shared/reference/mps.md, legacy "v2" protocol).
 *
 *   nvidia-cuda-mps-control -d     start the daemon in the background
 *   nvidia-cuda-mps-control -f     run it in the foreground
 *   echo CMD | nvidia-cuda-mps-control
 *                                  send commands to the running daemon
 *
 * The daemon serves the devices named by CUDA_VISIBLE_DEVICES (indices,
 * GPU-/MIG- UUIDs; unset: every GPU with MIG off) and records, in the MPS
 * block of each device's engine in the node state (state.h, struct
 * gs_sim_mps): its pid and /proc start time, CUDA_MPS_PIPE_DIRECTORY, the
 * device's ordinal in its list, the defaults and, once started, the
 * server's pid. The CUDA stand-in runs a process whose
 * CUDA_MPS_PIPE_DIRECTORY matches as an MPS client on that engine; it and
 * the NVML stand-in check the recorded pid and start time, so a daemon
 * that died (kill -9) counts as absent. `quit` clears the records; a new
 * `-d` takes over records of a dead daemon and clears a FAULT.
 *
 * Talking to the daemon: a UNIX stream socket <pipe dir>/control. The
 * client sends each non-blank stdin line; the daemon answers with one
 * status byte ('0' ok, '1' error), the text to print, and a NUL. Errors go
 * to stderr and make the client exit 1.
 *
 * Servers: one per daemon (one user at a time, as MPS). The daemon forks
 * it ("nvidia-cuda-mps-server") on `start_server -uid N` or, polling every
 * TICK_MS, when a client appears on its devices without a server. The
 * server registers in the state as a process flagged
 * GS_SIM_PROC_MPS_SERVER on each device (so NVML lists it as a compute
 * process) and dies with its daemon (PR_SET_PDEATHSIG). A server started
 * takes the defaults of that moment (active thread percentage, pinned
 * memory limit); later set_default_* calls do not change it.
 *
 * The daemon exits by itself when the node state stops naming it
 * (`gpuslice sim reset`, or a new state file from `gpuslice sim init
 * --force`), as a real one would not outlive its driver.
 *
 * Log: <CUDA_MPS_LOG_DIRECTORY>/control.log (daemon life and every
 * command) and server.log (server start and stop).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mps_cmd.h"
#include "gs_sim/state.h"

#define PROG                             "nvidia-cuda-mps-control"
#define DEFAULT_PIPE_DIR                 "/tmp/nvidia-mps"
#define DEFAULT_LOG_DIR                  "/var/log/nvidia-mps"
#define PID_FILE                         "nvidia-cuda-mps-control.pid"
#define SOCK_NAME                        "control"
#define TICK_MS                          100
#define MAX_DEVS                         (GS_SIM_MAX_GPUS * GS_SIM_ENGINES)
#define REPLY_MAX                        16384
#define CUDA_ERROR_MPS_CLIENT_TERMINATED 810

/* Everything read from the environment, once (STYLE: one place). */
struct config {
	char pipe_dir[GS_SIM_PATH_LEN];
	char log_dir[GS_SIM_PATH_LEN];
	const char *visible;   /* CUDA_VISIBLE_DEVICES or NULL */
	const char *atp;       /* CUDA_MPS_ACTIVE_THREAD_PERCENTAGE */
	const char *mem_limit; /* CUDA_MPS_PINNED_DEVICE_MEM_LIMIT */
	const char *priority;  /* CUDA_MPS_CLIENT_PRIORITY */
};

struct dev {
	uint32_t gpu;
	uint32_t engine;
};

/* The daemon's own state (the daemon is one process; these are its). */
static struct {
	struct config cfg;
	struct gs_sim_map *map;
	struct gs_sim_state *st;
	ino_t state_ino; /* the state file we mapped */
	struct dev devs[MAX_DEVS];
	int n_devs;
	int listen_fd;
	pid_t server; /* 0 when none */
	uint32_t server_uid;
	bool down; /* records, socket and pid file are gone */
	volatile sig_atomic_t stop;
} d = {.listen_fd = -1};

/* ---- small helpers --------------------------------------------------- */

static void config_read(struct config *c)
{
	const char *p = getenv("CUDA_MPS_PIPE_DIRECTORY");
	const char *l = getenv("CUDA_MPS_LOG_DIRECTORY");

	(void)snprintf(c->pipe_dir, sizeof(c->pipe_dir), "%s",
	               p != NULL && *p ? p : DEFAULT_PIPE_DIR);
	(void)snprintf(c->log_dir, sizeof(c->log_dir), "%s",
	               l != NULL && *l ? l : DEFAULT_LOG_DIR);
	c->visible = getenv("CUDA_VISIBLE_DEVICES");
	c->atp = getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE");
	c->mem_limit = getenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT");
	c->priority = getenv("CUDA_MPS_CLIENT_PRIORITY");
}

static int mkdir_p(const char *dir)
{
	char tmp[GS_SIM_PATH_LEN];
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, dir, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Appends one "[date] message" line to <log dir>/<file>; best effort. */
static void logf_to(const char *file, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void logf_to(const char *file, const char *fmt, ...)
{
	char path[GS_SIM_PATH_LEN + 32], line[1024];
	struct timespec ts;
	struct tm tm;
	va_list ap;
	int fd, n;

	(void)snprintf(path, sizeof(path), "%s/%s", d.cfg.log_dir, file);
	(void)clock_gettime(CLOCK_REALTIME, &ts);
	(void)localtime_r(&ts.tv_sec, &tm);
	n = (int)strftime(line, sizeof(line), "[%Y-%m-%d %H:%M:%S", &tm);
	n += snprintf(line + n, sizeof(line) - (size_t)n, ".%03ld] ",
	              ts.tv_nsec / 1000000L);
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	(void)!write(fd, line, (size_t)n);
	(void)close(fd);
}

static int sock_path(const char *pipe_dir, struct sockaddr_un *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/%s", pipe_dir,
	             SOCK_NAME) >= (int)sizeof(sa->sun_path))
		return -1;
	return 0;
}

static struct gs_sim_mps *mps_of(const struct dev *v)
{
	return &d.st->gpus[v->gpu].engine[v->engine].mps;
}

static const char *uuid_of(const struct dev *v)
{
	const struct gs_sim_gpu *g = &d.st->gpus[v->gpu];

	return v->engine == 0 ? g->uuid : g->mig[v->engine - 1].uuid;
}

/* ---- devices: CUDA_VISIBLE_DEVICES ------------------------------------ */

/*
 * Lock held. The devices CUDA enumerates, in the CUDA stand-in's order:
 * each GPU with MIG off, and each MIG device (a GI with its CI) of a GPU
 * with MIG on, GPU by GPU. CUDA_VISIBLE_DEVICES indexes this list.
 */
static int cuda_devices(struct dev *out)
{
	int n = 0;

	for (uint32_t g = 0; g < d.st->n_gpus; g++) {
		const struct gs_sim_gpu *gpu = &d.st->gpus[g];

		if (!gpu->mig_mode) {
			out[n].gpu = g;
			out[n++].engine = 0;
			continue;
		}
		for (uint32_t s = 0; s < GS_SIM_MAX_MIG; s++) {
			if (!gpu->mig[s].in_use || !gpu->mig[s].ci_in_use ||
			    !gpu->engine[1 + s].live)
				continue;
			out[n].gpu = g;
			out[n++].engine = 1 + s;
		}
	}
	return n;
}

static void add_dev(const struct dev *v)
{
	for (int i = 0; i < d.n_devs; i++)
		if (d.devs[i].gpu == v->gpu && d.devs[i].engine == v->engine)
			return;
	if (d.n_devs < MAX_DEVS)
		d.devs[d.n_devs++] = *v;
}

/*
 * Lock held. Fills d.devs from CUDA_VISIBLE_DEVICES: indices into the
 * CUDA list, MIG-<uuid>, or GPU-<uuid> (a GPU with MIG on stands for all
 * of its MIG devices); UUIDs may be abbreviated to a prefix. Unset: every
 * device. Unlike CUDA, which stops at the first bad entry, the daemon
 * refuses to start: serving fewer devices than asked would be a surprise.
 */
static int resolve_devices(char *err, size_t errlen)
{
	struct dev all[MAX_DEVS];
	char buf[1024], *save = NULL, *tok;
	int n_all;

	d.n_devs = 0;
	n_all = cuda_devices(all);
	if (d.cfg.visible == NULL) {
		for (int i = 0; i < n_all; i++)
			add_dev(&all[i]);
	} else if (strlen(d.cfg.visible) >= sizeof(buf)) {
		(void)snprintf(err, errlen, "CUDA_VISIBLE_DEVICES is too long");
		return -1;
	} else {
		(void)snprintf(buf, sizeof(buf), "%s", d.cfg.visible);
		for (tok = strtok_r(buf, ", ", &save); tok != NULL;
		     tok = strtok_r(NULL, ", ", &save)) {
			size_t len = strlen(tok);
			int before = d.n_devs;
			char *end;

			if (tok[0] >= '0' && tok[0] <= '9') {
				unsigned long idx = strtoul(tok, &end, 10);

				if (*end == '\0' && idx < (unsigned long)n_all)
					add_dev(&all[idx]);
			} else {
				for (int i = 0; i < n_all; i++) {
					const char *gu =
					    d.st->gpus[all[i].gpu].uuid;

					if (strncmp(uuid_of(&all[i]), tok,
					            len) == 0 ||
					    (tok[0] == 'G' &&
					     strncmp(gu, tok, len) == 0))
						add_dev(&all[i]);
				}
			}
			if (d.n_devs == before) {
				(void)snprintf(err, errlen,
				               "CUDA_VISIBLE_DEVICES: no such device '%s'",
				               tok);
				return -1;
			}
		}
	}
	if (d.n_devs == 0) {
		(void)snprintf(err, errlen, "no usable device is visible");
		return -1;
	}
	return 0;
}

/* Lock held. DEV argument: an ordinal in our list or a UUID. */
static const struct dev *find_dev(const char *s)
{
	char *end;
	unsigned long idx;

	if (s[0] >= '0' && s[0] <= '9') {
		idx = strtoul(s, &end, 10);
		if (*end == '\0' && idx < (unsigned long)d.n_devs)
			return &d.devs[idx];
		return NULL;
	}
	for (int i = 0; i < d.n_devs; i++)
		if (strcmp(uuid_of(&d.devs[i]), s) == 0)
			return &d.devs[i];
	return NULL;
}

/* ---- state records ------------------------------------------------------- */

/* Lock held. Whether the record names a live control daemon. */
static bool record_live(const struct gs_sim_mps *m)
{
	return m->state != GS_SIM_MPS_OFF && m->control_pid > 0 &&
	       gs_sim_pid_alive(m->control_pid, m->control_start_time);
}

static bool is_ours(const struct gs_sim_mps *m)
{
	return m->control_pid == (int32_t)getpid();
}

static uint32_t parse_env_pct(const char *s)
{
	char *end;
	double v;

	if (s == NULL || *s == '\0')
		return 0;
	v = strtod(s, &end);
	if (*end != '\0' || !(v >= 1.0 && v <= 100.0))
		return 0;
	return (uint32_t)v;
}

/* Lock held: the env's per-device pinned limit for device ordinal i. */
static uint64_t env_limit_for(int i)
{
	char buf[512], *save = NULL, *tok;

	if (d.cfg.mem_limit == NULL || strlen(d.cfg.mem_limit) >= sizeof(buf))
		return 0;
	(void)snprintf(buf, sizeof(buf), "%s", d.cfg.mem_limit);
	for (tok = strtok_r(buf, ",", &save); tok != NULL;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		uint64_t mib;

		if (eq == NULL)
			continue;
		*eq = '\0';
		if (find_dev(tok) != &d.devs[i])
			continue;
		/* "512MB" appears in NVIDIA's own example: accept it. */
		if (strlen(eq + 1) > 1 && eq[strlen(eq + 1)] == 'B')
			eq[strlen(eq + 1)] = '\0';
		if (gs__mps_parse_limit(eq + 1, &mib) == 0)
			return mib << 20;
	}
	return 0;
}

/* Lock held: claims every device or explains who holds one. */
static int claim(char *err, size_t errlen)
{
	uint32_t atp = parse_env_pct(d.cfg.atp);
	uint32_t prio =
	    d.cfg.priority != NULL && strcmp(d.cfg.priority, "1") == 0 ? 1 : 0;

	for (int i = 0; i < d.n_devs; i++) {
		const struct gs_sim_mps *m = mps_of(&d.devs[i]);

		if (!record_live(m))
			continue;
		if (strcmp(m->pipe_dir, d.cfg.pipe_dir) == 0)
			(void)snprintf(err, errlen,
			               "An instance of this daemon is already running (pid %d)",
			               (int)m->control_pid);
		else
			(void)snprintf(err, errlen,
			               "%s is already served by the MPS control daemon pid %d (pipe directory %s)",
			               uuid_of(&d.devs[i]), (int)m->control_pid,
			               m->pipe_dir);
		return -1;
	}
	for (int i = 0; i < d.n_devs; i++) {
		struct gs_sim_mps *m = mps_of(&d.devs[i]);

		/* Whatever a dead daemon left, FAULT included, goes. */
		memset(m, 0, sizeof(*m));
		m->state = GS_SIM_MPS_ACTIVE;
		m->control_pid = (int32_t)getpid();
		m->control_start_time = gs_sim_pid_start_time(getpid());
		m->default_active_thread_pct = atp;
		m->default_client_priority = prio;
		m->default_pinned_mem_limit = env_limit_for(i);
		m->device_ordinal = (uint32_t)i;
		(void)snprintf(m->pipe_dir, sizeof(m->pipe_dir), "%s",
		               d.cfg.pipe_dir);
	}
	return 0;
}

/* Lock held: drops the server's process slots. */
static void release_server_slots(pid_t pid)
{
	uint64_t now = gs_sim_now_ns();

	for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
		const struct gs_sim_proc *p = &d.st->procs[i];

		if (p->state == GS_SIM_PROC_LIVE && p->pid == (int32_t)pid &&
		    (p->flags & GS_SIM_PROC_MPS_SERVER))
			gs_sim_proc_release(d.st, i, now, false);
	}
}

/* Lock held: clears our records (quit, or exit on a signal). */
static void unclaim(void)
{
	for (int i = 0; i < d.n_devs; i++) {
		struct gs_sim_mps *m = mps_of(&d.devs[i]);

		if (is_ours(m))
			memset(m, 0, sizeof(*m));
	}
	if (d.server > 0)
		release_server_slots(d.server);
}

/* ---- the server -------------------------------------------------------------
 */

static void server_main(void)
{
	sigset_t none;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	(void)prctl(PR_SET_NAME, "nvidia-cuda-mps-server");
	(void)signal(SIGTERM, SIG_DFL);
	(void)signal(SIGINT, SIG_DFL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	for (;;)
		(void)pause();
}

/* Lock held: starts the server for `uid`; 0 or -1 with err. */
static int server_start(uint32_t uid, char *err, size_t errlen)
{
	uint64_t now = gs_sim_now_ns(), start;
	pid_t pid;

	if (d.server > 0) {
		if (d.server_uid == uid)
			return 0;
		(void)snprintf(err, errlen,
		               "a server for uid %u is running (pid %d); MPS serves one user at a time",
		               d.server_uid, (int)d.server);
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		(void)snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		if (d.listen_fd >= 0)
			(void)close(d.listen_fd);
		server_main();
		_exit(0);
	}
	d.server = pid;
	d.server_uid = uid;
	start = gs_sim_pid_start_time(pid);
	for (int i = 0; i < d.n_devs; i++) {
		struct gs_sim_mps *m = mps_of(&d.devs[i]);
		const struct dev *v = &d.devs[i];
		int slot;

		m->server_pid = (int32_t)pid;
		m->server_start_time = start;
		m->server_uid = uid;
		m->active_thread_pct = m->default_active_thread_pct;
		m->pinned_mem_limit = m->default_pinned_mem_limit;
		slot = gs_sim_proc_acquire(d.st, (int32_t)pid, start, v->gpu,
		                           v->engine, now);
		if (slot >= 0) {
			struct gs_sim_proc *p = &d.st->procs[slot];

			p->flags |= GS_SIM_PROC_MPS_SERVER;
			(void)snprintf(p->comm, sizeof(p->comm), "%s",
			               "nvidia-cuda-mps-server");
		}
	}
	logf_to("server.log", "Server %d starting for uid %u", (int)pid, uid);
	logf_to("control.log", "Starting new server %d for user %u", (int)pid,
	        uid);
	return 0;
}

/* Lock held: forgets a server that exited. */
static void server_gone(void)
{
	logf_to("server.log", "Server %d exited", (int)d.server);
	release_server_slots(d.server);
	for (int i = 0; i < d.n_devs; i++) {
		struct gs_sim_mps *m = mps_of(&d.devs[i]);

		if (is_ours(m) && m->server_pid == (int32_t)d.server) {
			m->server_pid = 0;
			m->server_start_time = 0;
		}
	}
	d.server = 0;
}

static void server_stop(void)
{
	pid_t pid = d.server;

	if (pid <= 0)
		return;
	(void)kill(pid, SIGKILL);
	(void)waitpid(pid, NULL, 0);
	server_gone();
}

/* Lock held: the uid owning `pid` (its /proc entry), or our own. */
static uint32_t uid_of(int32_t pid)
{
	char path[64];
	struct stat sb;

	(void)snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &sb) == 0)
		return (uint32_t)sb.st_uid;
	return (uint32_t)getuid();
}

/* Lock held: clients on our devices. */
static bool is_client_here(const struct gs_sim_proc *p)
{
	if (p->state != GS_SIM_PROC_LIVE ||
	    !(p->flags & GS_SIM_PROC_MPS_CLIENT))
		return false;
	for (int i = 0; i < d.n_devs; i++)
		if (p->gpu == d.devs[i].gpu && p->engine == d.devs[i].engine)
			return true;
	return false;
}

/* Lock held, every tick: reap the server, start one for waiting clients. */
static void tick(void)
{
	char err[256];
	int status;
	bool ours = false;

	if (d.server > 0 && waitpid(d.server, &status, WNOHANG) == d.server)
		server_gone();
	for (int i = 0; i < d.n_devs; i++)
		if (is_ours(mps_of(&d.devs[i])))
			ours = true;
	{
		struct stat sb;

		/* `gpuslice sim init --force` renames a new file into place. */
		if (stat(gs_sim_state_path(d.map), &sb) != 0 ||
		    sb.st_ino != d.state_ino)
			ours = false;
	}
	if (!ours) {
		/* `gpuslice sim reset` or a new state file took them. */
		logf_to("control.log",
		        "Node state no longer names this daemon; exiting");
		d.stop = 1;
		return;
	}
	if (d.server > 0)
		return;
	for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
		const struct gs_sim_proc *p = &d.st->procs[i];

		if (is_client_here(p) &&
		    gs_sim_pid_alive(p->pid, p->start_time)) {
			if (server_start(uid_of(p->pid), err, sizeof(err)) != 0)
				logf_to("control.log", "%s", err);
			return;
		}
	}
}

/*
 * Lock held: stops the server, clears our records, removes the socket and
 * pid file. Done before `quit` is answered, so that a client that sees the
 * answer sees MPS gone and may start a new daemon at once.
 */
static void shut_down(void)
{
	char path[GS_SIM_PATH_LEN + 32];
	struct sockaddr_un su;

	if (d.down)
		return;
	server_stop();
	unclaim();
	if (sock_path(d.cfg.pipe_dir, &su) == 0)
		(void)unlink(su.sun_path);
	(void)snprintf(path, sizeof(path), "%s/%s", d.cfg.pipe_dir, PID_FILE);
	(void)unlink(path);
	d.down = true;
	d.stop = 1;
}

/* ---- commands ------------------------------------------------------------ */

struct reply {
	char text[REPLY_MAX];
	size_t len;
	bool error;
};

static void say(struct reply *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(struct reply *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (r->len >= sizeof(r->text) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(r->text + r->len, sizeof(r->text) - r->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		r->len += (size_t)n;
	if (r->len >= sizeof(r->text))
		r->len = sizeof(r->text) - 1;
}

static void fail(struct reply *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void fail(struct reply *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	r->error = true;
	r->len = 0;
	va_start(ap, fmt);
	n = vsnprintf(r->text, sizeof(r->text), fmt, ap);
	va_end(ap);
	r->len = n > 0 ? (size_t)n : 0;
	if (r->len >= sizeof(r->text))
		r->len = sizeof(r->text) - 1;
}

static bool our_server(uint32_t pid, struct reply *r)
{
	if (d.server > 0 && (uint32_t)d.server == pid)
		return true;
	fail(r, "Server %u not found", pid);
	return false;
}

static void fmt_limit(struct reply *r, uint64_t bytes)
{
	say(r, "%lluM\n", (unsigned long long)(bytes >> 20));
}

/* Lock held: runs one parsed command into the reply. */
static void run(const struct gs__mps_cmd *c, struct reply *r)
{
	const struct dev *v;
	char err[256];

	switch (c->op) {
	case GS_MPS_QUIT:
		shut_down();
		return;
	case GS_MPS_GET_SERVER_LIST:
		if (d.server > 0)
			say(r, "%d\n", (int)d.server);
		return;
	case GS_MPS_GET_SERVER_STATUS: {
		bool fault = false;

		if (!our_server(c->pid, r))
			return;
		for (int i = 0; i < d.n_devs; i++)
			if (mps_of(&d.devs[i])->state == GS_SIM_MPS_FAULT)
				fault = true;
		say(r, "%s\n", fault ? "FAULT" : "ACTIVE");
		return;
	}
	case GS_MPS_START_SERVER:
		if (server_start(c->uid, err, sizeof(err)) != 0)
			fail(r, "%s", err);
		return;
	case GS_MPS_GET_CLIENT_LIST:
		if (!our_server(c->pid, r))
			return;
		for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
			const struct gs_sim_proc *p = &d.st->procs[i];
			bool dup = false;

			if (!is_client_here(p))
				continue;
			for (int j = 0; j < i; j++)
				if (is_client_here(&d.st->procs[j]) &&
				    d.st->procs[j].pid == p->pid)
					dup = true;
			if (!dup)
				say(r, "%d\n", (int)p->pid);
		}
		return;
	case GS_MPS_GET_DEVICE_CLIENT_LIST:
		if (c->has_pid && !our_server(c->pid, r))
			return;
		for (int k = 0; k < d.n_devs; k++) {
			say(r, "%s", uuid_of(&d.devs[k]));
			for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
				const struct gs_sim_proc *p = &d.st->procs[i];

				if (is_client_here(p) &&
				    p->gpu == d.devs[k].gpu &&
				    p->engine == d.devs[k].engine)
					say(r, " %d", (int)p->pid);
			}
			say(r, "\n");
		}
		return;
	case GS_MPS_PS:
		if (c->has_pid && !our_server(c->pid, r))
			return;
		say(r, "PID ID SERVER DEVICE NAMESPACE COMMAND\n");
		for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
			const struct gs_sim_proc *p = &d.st->procs[i];
			const char *u;

			if (!is_client_here(p))
				continue;
			u = p->engine == 0
			        ? d.st->gpus[p->gpu].uuid
			        : d.st->gpus[p->gpu].mig[p->engine - 1].uuid;
			say(r, "%d %d %d %.12s - %.*s\n", (int)p->pid, i,
			    (int)d.server, u, (int)sizeof(p->comm), p->comm);
		}
		return;
	case GS_MPS_SET_DEFAULT_ATP:
		if (c->percentage < 1.0) {
			fail(r, "Invalid percentage %g", c->percentage);
			return;
		}
		for (int i = 0; i < d.n_devs; i++)
			mps_of(&d.devs[i])->default_active_thread_pct =
			    (uint32_t)c->percentage;
		return;
	case GS_MPS_GET_DEFAULT_ATP: {
		uint32_t pct = mps_of(&d.devs[0])->default_active_thread_pct;

		say(r, "%.1f\n", pct == 0 ? 100.0 : (double)pct);
		return;
	}
	case GS_MPS_SET_ATP:
		if (!our_server(c->pid, r))
			return;
		if (c->percentage < 1.0) {
			fail(r, "Invalid percentage %g", c->percentage);
			return;
		}
		for (int i = 0; i < d.n_devs; i++)
			mps_of(&d.devs[i])->active_thread_pct =
			    (uint32_t)c->percentage;
		return;
	case GS_MPS_GET_ATP: {
		const struct gs_sim_mps *m = mps_of(&d.devs[0]);
		uint32_t pct = m->active_thread_pct != 0
		                   ? m->active_thread_pct
		                   : m->default_active_thread_pct;

		if (!our_server(c->pid, r))
			return;
		say(r, "%.1f\n", pct == 0 ? 100.0 : (double)pct);
		return;
	}
	case GS_MPS_SET_DEFAULT_MEM:
	case GS_MPS_GET_DEFAULT_MEM:
		v = find_dev(c->dev);
		if (v == NULL) {
			fail(r, "Invalid device %s", c->dev);
			return;
		}
		if (c->op == GS_MPS_SET_DEFAULT_MEM)
			mps_of(v)->default_pinned_mem_limit = c->limit_mib
			                                      << 20;
		else
			fmt_limit(r, mps_of(v)->default_pinned_mem_limit);
		return;
	case GS_MPS_SET_MEM:
	case GS_MPS_GET_MEM:
		if (!our_server(c->pid, r))
			return;
		v = find_dev(c->dev);
		if (v == NULL) {
			fail(r, "Invalid device %s", c->dev);
			return;
		}
		if (c->op == GS_MPS_SET_MEM)
			mps_of(v)->pinned_mem_limit = c->limit_mib << 20;
		else
			fmt_limit(r, mps_of(v)->pinned_mem_limit != 0
			                 ? mps_of(v)->pinned_mem_limit
			                 : mps_of(v)->default_pinned_mem_limit);
		return;
	case GS_MPS_TERMINATE_CLIENT: {
		bool found = false;

		if (!our_server(c->pid, r))
			return;
		for (int i = 0; i < GS_SIM_MAX_PROCS; i++) {
			struct gs_sim_proc *p = &d.st->procs[i];

			if (is_client_here(p) &&
			    (uint32_t)p->pid == c->client_pid) {
				p->sticky_error =
				    CUDA_ERROR_MPS_CLIENT_TERMINATED;
				found = true;
			}
		}
		if (!found) {
			fail(r, "Client %u not found", c->client_pid);
			return;
		}
		say(r, "0\n");
		return;
	}
	case GS_MPS_SET_DEFAULT_PRIO:
		for (int i = 0; i < d.n_devs; i++)
			mps_of(&d.devs[i])->default_client_priority =
			    (uint32_t)c->priority;
		return;
	case GS_MPS_GET_DEFAULT_PRIO:
		say(r, "%u\n", mps_of(&d.devs[0])->default_client_priority);
		return;
	case GS_MPS__COUNT:
		break;
	}
	fail(r, "internal error");
}

/* Runs one line from a client; the state lock is taken here. */
static void handle_line(const char *line, struct reply *r)
{
	struct gs__mps_cmd c;
	char err[256];

	memset(r, 0, sizeof(*r));
	logf_to("control.log", "CMD %s", line);
	if (gs__mps_cmd_parse(line, &c, err, sizeof(err)) != 0) {
		fail(r, "%s", err);
		return;
	}
	if (gs_sim_lock(d.st) != GS_OK) {
		fail(r, "node state is not usable");
		return;
	}
	run(&c, r);
	gs_sim_unlock(d.st);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Serves one connection until EOF or quit. */
static void serve(int fd)
{
	char buf[1024];
	size_t have = 0;

	while (!d.stop) {
		char *nl;
		ssize_t n;

		nl = memchr(buf, '\n', have);
		if (nl == NULL) {
			if (have == sizeof(buf))
				return; /* a line longer than any command */
			n = read(fd, buf + have, sizeof(buf) - have);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return;
			have += (size_t)n;
			continue;
		}
		*nl = '\0';
		{
			static struct reply r;
			char status;

			handle_line(buf, &r);
			status = r.error ? '1' : '0';
			if (write_all(fd, &status, 1) != 0 ||
			    write_all(fd, r.text, r.len) != 0 ||
			    write_all(fd, "", 1) != 0)
				return;
		}
		have -= (size_t)(nl + 1 - buf);
		memmove(buf, nl + 1, have);
	}
}

/* ---- the daemon ------------------------------------------------------------
 */

static void on_signal(int sig)
{
	(void)sig;
	d.stop = 1;
}

static void daemon_loop(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	(void)sigaction(SIGTERM, &sa, NULL);
	(void)sigaction(SIGINT, &sa, NULL);
	(void)signal(SIGPIPE, SIG_IGN);
	while (!d.stop) {
		struct pollfd pfd = {.fd = d.listen_fd, .events = POLLIN};
		int n = poll(&pfd, 1, TICK_MS);

		if (n > 0 && (pfd.revents & POLLIN)) {
			int fd = accept4(d.listen_fd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0) {
				serve(fd);
				(void)close(fd);
			}
		}
		if (d.stop)
			break;
		if (gs_sim_lock(d.st) == GS_OK) {
			tick();
			gs_sim_unlock(d.st);
		}
	}
	if (gs_sim_lock(d.st) == GS_OK) {
		shut_down();
		gs_sim_unlock(d.st);
	} else {
		server_stop();
	}
	logf_to("control.log", "Control daemon exiting");
}

/* Tells the waiting parent how start-up went: "" ok, else the message. */
static void report(int fd, const char *msg)
{
	if (fd < 0)
		return;
	(void)write_all(fd, msg, strlen(msg) + 1);
	(void)close(fd);
}

/* Everything after the fork: claim devices, listen, serve. */
static int daemon_main(int ready_fd)
{
	char err[512], path[GS_SIM_PATH_LEN + 32];
	struct sockaddr_un su;
	FILE *f;
	int fd;

	if (gs_sim_lock(d.st) != GS_OK) {
		report(ready_fd, "node state is not usable");
		return 1;
	}
	if (resolve_devices(err, sizeof(err)) != 0 ||
	    claim(err, sizeof(err)) != 0) {
		gs_sim_unlock(d.st);
		report(ready_fd, err);
		return 1;
	}
	gs_sim_unlock(d.st);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	(void)sock_path(d.cfg.pipe_dir, &su);
	(void)unlink(su.sun_path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&su, sizeof(su)) != 0 ||
	    listen(fd, 16) != 0) {
		(void)snprintf(err, sizeof(err), "cannot listen on %s: %s",
		               su.sun_path, strerror(errno));
		if (gs_sim_lock(d.st) == GS_OK) {
			unclaim();
			gs_sim_unlock(d.st);
		}
		report(ready_fd, err);
		return 1;
	}
	d.listen_fd = fd;
	(void)snprintf(path, sizeof(path), "%s/%s", d.cfg.pipe_dir, PID_FILE);
	f = fopen(path, "we");
	if (f != NULL) {
		fprintf(f, "%d\n", (int)getpid());
		(void)fclose(f);
	}
	logf_to("control.log", "Starting control daemon (simulated), pid %d",
	        (int)getpid());
	for (int i = 0; i < d.n_devs; i++)
		logf_to("control.log", "Device %d: %s", i, uuid_of(&d.devs[i]));
	report(ready_fd, "");
	daemon_loop();
	return 0;
}

static int open_state(void)
{
	struct gs_errbuf eb = {0};
	char dir[GS_SIM_PATH_LEN];
	gs_err err;

	err = gs_sim_dir_resolve(NULL, dir, sizeof(dir), &eb);
	if (err == GS_OK)
		err = gs_sim_state_open(dir, &d.map, &eb);
	if (err != GS_OK) {
		fprintf(stderr, PROG ": %s\n", gs_errbuf_msg(&eb, err));
		return -1;
	}
	d.st = gs_sim_state_get(d.map);
	{
		struct stat sb;

		if (stat(gs_sim_state_path(d.map), &sb) == 0)
			d.state_ino = sb.st_ino;
	}
	return 0;
}

static int start_daemon(bool foreground)
{
	struct sockaddr_un su;
	char msg[600];
	int pfd[2], rc, e;
	ssize_t n;
	pid_t pid;

	if (sock_path(d.cfg.pipe_dir, &su) != 0) {
		fprintf(stderr, PROG ": pipe directory path is too long\n");
		return 1;
	}
	if ((e = mkdir_p(d.cfg.pipe_dir)) != 0) {
		fprintf(stderr, PROG ": cannot create %s: %s\n", d.cfg.pipe_dir,
		        strerror(-e));
		return 1;
	}
	if ((e = mkdir_p(d.cfg.log_dir)) != 0) {
		fprintf(stderr, PROG ": cannot create %s: %s\n", d.cfg.log_dir,
		        strerror(-e));
		return 1;
	}
	if (open_state() != 0)
		return 1;
	if (foreground)
		return daemon_main(-1);
	if (pipe2(pfd, O_CLOEXEC) != 0) {
		fprintf(stderr, PROG ": pipe: %s\n", strerror(errno));
		return 1;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, PROG ": fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);

		(void)close(pfd[0]);
		(void)setsid();
		if (null >= 0) {
			(void)dup2(null, 0);
			(void)dup2(null, 1);
			(void)dup2(null, 2);
			if (null > 2)
				(void)close(null);
		}
		_exit(daemon_main(pfd[1]));
	}
	(void)close(pfd[1]);
	n = read(pfd[0], msg, sizeof(msg) - 1);
	(void)close(pfd[0]);
	if (n <= 0) {
		fprintf(stderr, PROG ": daemon died during start-up\n");
		return 1;
	}
	msg[n] = '\0';
	if (msg[0] != '\0') {
		fprintf(stderr, PROG ": %s\n", msg);
		(void)waitpid(pid, &rc, 0);
		return 1;
	}
	return 0;
}

/* ---- the client
 * -------------------------------------------------------------- */

static int client(void)
{
	struct sockaddr_un su;
	char line[1024];
	int fd, status = 0;

	if (sock_path(d.cfg.pipe_dir, &su) != 0) {
		fprintf(stderr, PROG ": pipe directory path is too long\n");
		return 1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&su, sizeof(su)) != 0) {
		fprintf(stderr,
		        PROG ": Cannot find MPS control daemon process (pipe directory %s)\n",
		        d.cfg.pipe_dir);
		if (fd >= 0)
			(void)close(fd);
		return 1;
	}
	(void)signal(SIGPIPE, SIG_IGN);
	while (fgets(line, sizeof(line), stdin) != NULL) {
		size_t len = strcspn(line, "\r\n");
		char c, st = 0;
		bool first = true;

		line[len] = '\0';
		if (line[strspn(line, " \t")] == '\0')
			continue;
		line[len] = '\n';
		if (write_all(fd, line, len + 1) != 0)
			break;
		/* The reply: status byte, text, NUL. */
		for (;;) {
			ssize_t n = read(fd, &c, 1);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				/* quit closes the connection: not an error. */
				goto out;
			}
			if (first) {
				st = c;
				first = false;
				continue;
			}
			if (c == '\0')
				break;
			fputc(c, st == '0' ? stdout : stderr);
		}
		if (st != '0')
			status = 1;
	}
out:
	(void)close(fd);
	return status;
}

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: " PROG " [-d | -f | -h]\n"
	        "  -d  start the MPS control daemon in the background\n"
	        "  -f  run the MPS control daemon in the foreground\n"
	        "  -h  print this help\n"
	        "Without options, reads commands from stdin and sends them to the running daemon:\n");
	for (int op = 0; op < GS_MPS__COUNT; op++)
		fprintf(f, "  %s\n", gs__mps_cmd_name((enum gs__mps_op)op));
	fprintf(f,
	        "Environment: CUDA_MPS_PIPE_DIRECTORY (default %s), CUDA_MPS_LOG_DIRECTORY (default %s), CUDA_VISIBLE_DEVICES.\n"
	        "gpuslice's MPS control stand-in (simulated): it serves the simulated GPUs only.\n",
	        DEFAULT_PIPE_DIR, DEFAULT_LOG_DIR);
}

int main(int argc, char **argv)
{
	config_read(&d.cfg);
	if (argc == 1)
		return client();
	if (argc == 2 && strcmp(argv[1], "-d") == 0)
		return start_daemon(false);
	if (argc == 2 && strcmp(argv[1], "-f") == 0)
		return start_daemon(true);
	if (argc == 2 &&
	    (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, PROG ": invalid option '%s'\n", argv[1]);
	usage(stderr);
	return 1;
}
