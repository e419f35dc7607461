/*
 * study_run.c - runs a phase of workload processes (study_run.h).
 *
 * One loop in the calling thread: poll the jobs' stdout/stderr pipes,
 * start delayed jobs when their time comes, reap exited ones, kill those
 * past their limit, and call the sampler every GS_STUDY_SAMPLE_MS. A job
 * is a process group: when its leader exits (or is killed) the group gets
 * SIGKILL, so a stray grandchild cannot keep a pipe open and hang the
 * study. Output beyond GS_STUDY_CAPTURE_MAX is read and dropped.
 */
#include "study_run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gs/proc.h"

extern char **environ;

static volatile sig_atomic_t interrupted;

void gs_study_run_interrupt(void)
{
	interrupted = 1;
}

bool gs_study_run_interrupted(void)
{
	return interrupted != 0;
}

/* After a leader exits, how long its pipes may stay open. */
#define DRAIN_S 2.0

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void gs_study_job_init(struct gs_study_job *j, const char *name,
                       double timeout_s)
{
	memset(j, 0, sizeof(*j));
	snprintf(j->name, sizeof(j->name), "%s", name);
	j->timeout_s = timeout_s;
	j->pid = -1;
}

void gs_study_job_fini(struct gs_study_job *j)
{
	for (int i = 0; i < j->argc; i++)
		free(j->argv[i]);
	for (int i = 0; i < j->n_env; i++)
		free(j->env[i]);
	free(j->out);
	free(j->err);
	json_decref(j->result);
	json_decref(j->report);
	memset(j, 0, sizeof(*j));
	j->pid = -1;
}

static gs_err vadd(char **slot, const char *fmt, va_list ap)
{
	return vasprintf(slot, fmt, ap) < 0 ? GS_ERR_NOMEM : GS_OK;
}

gs_err gs_study_job_arg(struct gs_study_job *j, const char *fmt, ...)
{
	va_list ap;
	gs_err err;

	if (j->argc >= GS_STUDY_MAX_ARGS)
		return GS_ERR_RANGE;
	va_start(ap, fmt);
	err = vadd(&j->argv[j->argc], fmt, ap);
	va_end(ap);
	if (err == GS_OK)
		j->argv[++j->argc] = NULL;
	return err;
}

gs_err gs_study_job_env(struct gs_study_job *j, const char *fmt, ...)
{
	va_list ap;
	gs_err err;

	if (j->n_env >= GS_STUDY_MAX_ENV)
		return GS_ERR_RANGE;
	va_start(ap, fmt);
	err = vadd(&j->env[j->n_env], fmt, ap);
	va_end(ap);
	if (err == GS_OK)
		j->n_env++;
	return err;
}

bool gs_study_job_ok(const struct gs_study_job *j)
{
	return j->started && j->exited && !j->timed_out && j->status == 0;
}

/* ---- environment ----------------------------------------------------- */

struct envv {
	char **v;
	int n, cap;
};

static size_t key_len(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq != NULL ? (size_t)(eq - kv) : strlen(kv);
}

/* Applies "K=V" (set) or "K" (unset); strings are borrowed. */
static gs_err env_apply(struct envv *e, char *kv)
{
	size_t k = key_len(kv);
	bool set = kv[k] == '=';

	for (int i = 0; i < e->n; i++)
		if (key_len(e->v[i]) == k && strncmp(e->v[i], kv, k) == 0) {
			if (set) {
				e->v[i] = kv;
			} else {
				e->v[i] = e->v[--e->n];
				e->v[e->n] = NULL;
			}
			return GS_OK;
		}
	if (!set)
		return GS_OK;
	if (e->n + 2 > e->cap) {
		int cap = e->cap ? e->cap * 2 : 64;
		char **v = realloc(e->v, sizeof(*v) * (size_t)cap);

		if (v == NULL)
			return GS_ERR_NOMEM;
		e->v = v;
		e->cap = cap;
	}
	e->v[e->n++] = kv;
	e->v[e->n] = NULL;
	return GS_OK;
}

static gs_err env_build(struct envv *e, const char *const *base,
                        const struct gs_study_job *j)
{
	gs_err err = GS_OK;

	memset(e, 0, sizeof(*e));
	for (char **p = environ; err == GS_OK && *p != NULL; p++)
		err = env_apply(e, *p);
	for (int i = 0; err == GS_OK && base != NULL && base[i] != NULL; i++)
		err = env_apply(e, (char *)base[i]);
	for (int i = 0; err == GS_OK && i < j->n_env; i++)
		err = env_apply(e, j->env[i]);
	if (err == GS_OK && e->v == NULL)
		err = env_apply(e, (char *)"GS_STUDY=1");
	return err;
}

/* ---- one job --------------------------------------------------------- */

struct io {
	int fd[2]; /* stdout, stderr read ends; -1 when closed */
};

/* Writes j->input into a new pipe. OUT: *fd, the read end (-1: none). */
static gs_err input_pipe(const struct gs_study_job *j, int *fd)
{
	int pi[2];
	size_t len;

	*fd = -1;
	if (j->input == NULL)
		return GS_OK;
	len = strlen(j->input);
	if (len > 4096 || pipe2(pi, O_CLOEXEC) != 0)
		return GS_ERR_IO;
	/* Smaller than a pipe's buffer: the write cannot block. */
	if (write(pi[1], j->input, len) != (ssize_t)len) {
		close(pi[0]);
		close(pi[1]);
		return GS_ERR_IO;
	}
	close(pi[1]);
	*fd = pi[0];
	return GS_OK;
}

static gs_err job_start(struct gs_study_job *j, const char *const *base,
                        struct io *io, double t0, struct gs_errbuf *eb)
{
	int po[2], pe[2], in = -1;
	struct envv e;
	pid_t pid;
	gs_err err;
	int saved;

	io->fd[0] = io->fd[1] = -1;
	err = env_build(&e, base, j);
	if (err != GS_OK) {
		free(e.v);
		return gs_fail(eb, err, "cannot build the environment of %s",
		               j->name);
	}
	if (input_pipe(j, &in) != GS_OK) {
		free(e.v);
		return gs_fail(eb, GS_ERR_IO, "cannot pass input to %s",
		               j->name);
	}
	if (pipe2(po, O_CLOEXEC) != 0) {
		saved = errno;
		free(e.v);
		if (in >= 0)
			close(in);
		return gs_fail(eb, GS_ERR_IO, "pipe: %s", strerror(saved));
	}
	if (pipe2(pe, O_CLOEXEC) != 0) {
		saved = errno;
		close(po[0]);
		close(po[1]);
		if (in >= 0)
			close(in);
		free(e.v);
		return gs_fail(eb, GS_ERR_IO, "pipe: %s", strerror(saved));
	}
	pid = fork();
	if (pid == 0) {
		int null = in >= 0 ? in : open("/dev/null", O_RDONLY);

		(void)setpgid(0, 0);
		if (null >= 0)
			(void)dup2(null, 0);
		(void)dup2(po[1], 1);
		(void)dup2(pe[1], 2);
		execve(j->argv[0], j->argv, e.v);
		dprintf(2, "gpuslice bench study: cannot run %s: %s\n",
		        j->argv[0], strerror(errno));
		_exit(127);
	}
	saved = errno;
	free(e.v);
	close(po[1]);
	close(pe[1]);
	if (in >= 0)
		close(in);
	if (pid < 0) {
		close(po[0]);
		close(pe[0]);
		return gs_fail(eb, GS_ERR_IO, "fork: %s", strerror(saved));
	}
	(void)setpgid(pid, pid); /* either side may win the race */
	(void)fcntl(po[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(pe[0], F_SETFL, O_NONBLOCK);
	io->fd[0] = po[0];
	io->fd[1] = pe[0];
	j->pid = pid;
	j->started = true;
	j->start_s = now_s() - t0;
	return GS_OK;
}

/* Reads what is there; closes the fd at EOF. */
static void drain(struct gs_study_job *j, struct io *io, int which)
{
	char **buf = which == 0 ? &j->out : &j->err;
	size_t *len = which == 0 ? &j->out_len : &j->err_len;
	char tmp[8192];

	for (;;) {
		ssize_t r = read(io->fd[which], tmp, sizeof(tmp));

		if (r > 0) {
			size_t take = (size_t)r;

			if (*len + take > GS_STUDY_CAPTURE_MAX)
				take = GS_STUDY_CAPTURE_MAX - *len;
			if (take > 0) {
				char *nb = realloc(*buf, *len + take + 1);

				if (nb == NULL)
					continue; /* drop it; keep draining */
				memcpy(nb + *len, tmp, take);
				*len += take;
				nb[*len] = '\0';
				*buf = nb;
			}
			continue;
		}
		if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
			close(io->fd[which]);
			io->fd[which] = -1;
		}
		return;
	}
}

/* The last line of `text` that starts with `prefix`, parsed. */
static json_t *last_json(const char *text, const char *prefix)
{
	const char *p = text, *best = NULL;
	size_t plen = strlen(prefix);

	if (text == NULL)
		return NULL;
	while (*p != '\0') {
		const char *nl = strchr(p, '\n');

		if (strncmp(p, prefix, plen) == 0)
			best = p;
		if (nl == NULL)
			break;
		p = nl + 1;
	}
	if (best == NULL)
		return NULL;
	return json_loadb(best, strcspn(best, "\n"), 0, NULL);
}

static void job_finish(struct gs_study_job *j, int status, double t)
{
	j->exited = true;
	j->end_s = t;
	if (WIFEXITED(status))
		j->status = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		j->status = 128 + WTERMSIG(status);
	else
		j->status = 255;
	/* Orphans of the job (a shim child, a forked helper) go with it. */
	if (!j->detach)
		(void)kill(-j->pid, SIGKILL);
}

gs_err gs_study_phase_run(struct gs_study_job *jobs, int n,
                          const char *const *base_env, gs_study_sampler sampler,
                          void *ctx, double *wall_s, struct gs_errbuf *eb)
{
	struct io io[GS_STUDY_MAX_JOBS];
	double t0 = now_s(), next_sample = 0, last_exit = 0;
	double first_start = -1;
	gs_err err = GS_OK;
	int pending = n;

	if (n < 1 || n > GS_STUDY_MAX_JOBS)
		return gs_fail(eb, GS_ERR_INVALID, "a phase needs 1..%d jobs",
		               GS_STUDY_MAX_JOBS);
	for (int i = 0; i < n; i++)
		io[i].fd[0] = io[i].fd[1] = -1;

	for (;;) {
		struct pollfd pfd[2 * GS_STUDY_MAX_JOBS];
		int map[2 * GS_STUDY_MAX_JOBS], np = 0, open_fds = 0;
		double t = now_s() - t0, wait_s = 0.05;

		for (int i = 0; i < n; i++) {
			struct gs_study_job *j = &jobs[i];

			if (!j->started && !j->exited && interrupted) {
				j->exited = true;
				j->status = 128 + SIGINT;
				pending--;
				continue;
			}
			if (!j->started && !j->exited && t >= j->delay_s) {
				if (err == GS_OK)
					err = job_start(j, base_env, &io[i], t0,
					                eb);
				if (!j->started) {
					j->exited = true; /* never ran */
					j->status = 127;
					pending--;
					continue;
				}
				if (first_start < 0)
					first_start = j->start_s;
			}
			if (j->started && !j->exited) {
				int st;
				pid_t r = waitpid(j->pid, &st, WNOHANG);

				if (r == j->pid) {
					job_finish(j, st, t);
					last_exit = t;
					pending--;
					if (j->detach)
						for (int w = 0; w < 2; w++)
							if (io[i].fd[w] >= 0)
								drain(j, &io[i],
								      w);
				} else if (interrupted ||
				           t - j->start_s > j->timeout_s) {
					j->timed_out = !interrupted;
					(void)kill(-j->pid, SIGKILL);
					(void)kill(j->pid, SIGKILL);
				}
			}
		}
		if (sampler != NULL && t >= next_sample) {
			sampler(ctx, jobs, n, t);
			next_sample = t + GS_STUDY_SAMPLE_MS / 1000.0;
		}
		for (int i = 0; i < n; i++)
			for (int w = 0; w < 2; w++) {
				if (io[i].fd[w] < 0)
					continue;
				if (jobs[i].exited &&
				    (jobs[i].detach ||
				     t - jobs[i].end_s > DRAIN_S)) {
					close(io[i].fd[w]);
					io[i].fd[w] = -1;
					continue;
				}
				pfd[np].fd = io[i].fd[w];
				pfd[np].events = POLLIN;
				map[np++] = i * 2 + w;
				open_fds++;
			}
		if (pending == 0 && open_fds == 0)
			break;
		if (poll(pfd, (nfds_t)np, (int)(wait_s * 1000)) > 0)
			for (int k = 0; k < np; k++)
				if (pfd[k].revents &
				    (POLLIN | POLLHUP | POLLERR))
					drain(&jobs[map[k] / 2],
					      &io[map[k] / 2], map[k] % 2);
	}
	if (sampler != NULL)
		sampler(ctx, jobs, n, now_s() - t0);
	for (int i = 0; i < n; i++) {
		jobs[i].result = last_json(jobs[i].out, "{");
		jobs[i].report = last_json(jobs[i].err, "{\"slice\"");
	}
	*wall_s = first_start < 0 ? 0 : last_exit - first_start;
	return err;
}

/* The parent pid of `pid` (common's /proc reader), or -1. */
static pid_t parent_of(pid_t pid)
{
	int32_t ppid = -1;

	if (!gs_proc_stat((int32_t)pid, NULL, &ppid, NULL))
		return -1;
	return (pid_t)ppid;
}

int gs_study_job_of_pid(const struct gs_study_job *jobs, int n, pid_t pid)
{
	for (int depth = 0; depth < 8 && pid > 1; depth++) {
		for (int i = 0; i < n; i++)
			if (jobs[i].started && jobs[i].pid == pid)
				return i;
		pid = parent_of(pid);
	}
	return -1;
}
