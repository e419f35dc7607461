/*
 * watchdog_pod.c - the watchdog's Kubernetes rule: GPU processes placed
 * by their pod's cgroup (see watchdog_pod.h for the rule).
 *
 * Per process NVML lists, each tick: /proc/PID/cgroup is read (a few
 * hundred bytes; not cached, so a process moved to another cgroup is
 * judged by where it is now) and parsed (core/podcgroup.c); the pod UID
 * is looked up in the claims' pods: each claim slice's consumers file
 * (gs/podcgroup.h), which the DRA plugin rewrites on every prepare of the
 * claim, so a pod that joined a shared claim later is there, with no cap
 * on their number; and the slice's `k8s_pod_uid` label, written once at
 * the first prepare (at most what fits in a label value).
 *
 * Consumers files are read once per tick, before the processes are
 * placed (gs__wdpod_refresh): a stat per claim slice, the file read again
 * only when it changed (inode, size, mtime). A directory or file that is
 * not root's (or gpusliced's own uid's), or that others may write, is
 * refused with a warning: a tenant must not name itself into a claim.
 *
 * Reports of processes outside their claims are kept in a small ring, so
 * that flag mode reports each process once rather than every tick.
 */
#include "watchdog_pod.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "gs/log.h"
#include "gs/podcgroup.h"
#include "gs/proc.h"

/* Processes outside their claims, reported once each. */
#define WDPOD_MAX_REPORTED 128

struct reported {
	int32_t pid;
	uint64_t start;
};

/* A consumers file larger than this is refused (GS_K8S_PODS_MAX UIDs
 * of 63 bytes and their newlines fit). */
#define WDPOD_FILE_MAX (64 * (GS_K8S_PODS_MAX + 1))

/* One claim slice's consumers file, as last read. */
struct podset {
	int64_t slice_id;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	char *text; /* checked; NULL: none (refused, or not read) */
	size_t len;
};

struct gs__wdpod {
	struct podset *sets; /* one per claim slice with a file */
	int n_sets;
	bool dir_warned; /* the directory was refused (warned once) */
	struct reported rep[WDPOD_MAX_REPORTED];
	int n_rep, next_rep;
	/* What the last gs__wdpod_place read, for gs__wdpod_outside. */
	int32_t last_pid;
	char last_uid[GS_POD_UID_MAX];
	int64_t last_claim; /* a slice of the pod's, for the event; -1 */
};

struct gs__wdpod *gs__wdpod_create(void)
{
	struct gs__wdpod *p = calloc(1, sizeof(*p));

	if (p != NULL)
		p->last_claim = -1;
	return p;
}

void gs__wdpod_destroy(struct gs__wdpod *p)
{
	if (p == NULL)
		return;
	for (int i = 0; i < p->n_sets; i++)
		free(p->sets[i].text);
	free(p->sets);
	free(p);
}

/* The slice's label `key`, or NULL. */
static const char *label(const struct gs_slice *s, const char *key)
{
	for (int i = 0; i < s->n_labels; i++)
		if (strcmp(s->labels[i].key, key) == 0)
			return s->labels[i].value;
	return NULL;
}

/* Whether the comma-separated `list` holds `uid` (case aside: the API
 * server writes UIDs in lower case, the cgroup parser returns them so). */
static bool list_has(const char *list, const char *uid)
{
	size_t n = strlen(uid);

	while (list != NULL && *list != '\0') {
		const char *comma = strchr(list, ',');
		size_t len = comma ? (size_t)(comma - list) : strlen(list);

		if (len == n && strncasecmp(list, uid, n) == 0)
			return true;
		list = comma ? comma + 1 : NULL;
	}
	return false;
}

static const struct podset *set_of(const struct gs__wdpod *p, int64_t id)
{
	for (int i = 0; i < p->n_sets; i++)
		if (p->sets[i].slice_id == id)
			return &p->sets[i];
	return NULL;
}

/* Whether slice `s` is a claim's reserved for pod `uid`. */
static bool is_pods(const struct gs__wdpod *p, const struct gs_slice *s,
                    const char *uid)
{
	const struct podset *ps = set_of(p, s->id);

	return list_has(label(s, "k8s_pod_uid"), uid) ||
	       (ps != NULL && ps->text != NULL &&
	        gs_podset_has(ps->text, ps->len, uid));
}

/* Whether a file or directory of consumers may be believed: root's or
 * ours, and nobody else may write it. */
static bool trusted(const struct stat *st)
{
	return (st->st_uid == 0 || st->st_uid == geteuid()) &&
	       (st->st_mode & 022) == 0;
}

/*
 * Reads slice `s`'s consumers file (opened as `fd`, `st` its stat) into
 * `ps`. A file refused leaves ps->text NULL, with a warning (once per
 * version of the file: the stat is kept, so it is read again only when
 * it changes).
 */
static void set_read(struct podset *ps, const struct gs_slice *s, int fd,
                     const struct stat *st)
{
	struct gs_errbuf eb = {0};
	const char *why = NULL;
	size_t off = 0;
	char *text;
	int n;

	free(ps->text);
	ps->text = NULL;
	ps->len = 0;
	if (!S_ISREG(st->st_mode) || !trusted(st))
		why = "not a regular file of root's that only root may write";
	else if (st->st_size > WDPOD_FILE_MAX)
		why = "too large";
	if (why != NULL) {
		gs_warn(
		    "watchdog",
		    "slice=%s consumers file refused (%s): its pods are placed by the label alone",
		    s->name, why);
		return;
	}
	text = malloc((size_t)st->st_size + 1);
	if (text == NULL) {
		gs_error("watchdog", "slice=%s consumers file: out of memory",
		         s->name);
		return;
	}
	while (off < (size_t)st->st_size) {
		ssize_t r = read(fd, text + off, (size_t)st->st_size - off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		off += (size_t)r;
	}
	if (gs_podset_check(text, off, &n, &eb) != GS_OK) {
		gs_warn(
		    "watchdog",
		    "slice=%s consumers file refused: %s; its pods are placed by the label alone",
		    s->name, gs_errbuf_msg(&eb, GS_ERR_PARSE));
		free(text);
		return;
	}
	ps->text = text;
	ps->len = off;
}

void gs__wdpod_refresh(struct gs__wdpod *p, const struct gs_node *node)
{
	const char *run = gs_node_region_dir(node);
	struct podset *nv = NULL;
	char path[320];
	struct stat st;
	int n = 0, dfd = -1;

	for (int i = 0; i < node->n && dfd < 0; i++) {
		if (label(&node->v[i]->s, "k8s_claim_uid") == NULL)
			continue;
		if (run == NULL || run[0] == '\0')
			break;
		(void)snprintf(path, sizeof(path), "%s/%s", run,
		               GS_K8S_PODS_DIR);
		dfd =
		    open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0 && errno == ENOENT)
			break; /* none yet: an older plugin, or no claim */
		if (dfd < 0 || fstat(dfd, &st) != 0 || !trusted(&st)) {
			if (!p->dir_warned)
				gs_warn(
				    "watchdog",
				    "%s is not a directory of root's that only root may write: consumers files ignored, pods are placed by the claims' labels alone",
				    path);
			p->dir_warned = true;
			if (dfd >= 0)
				(void)close(dfd);
			dfd = -1;
			break;
		}
		p->dir_warned = false;
	}
	if (dfd >= 0)
		nv = calloc((size_t)node->n, sizeof(*nv));
	for (int i = 0; nv != NULL && i < node->n; i++) {
		const struct gs_slice *s = &node->v[i]->s;
		const struct podset *old = set_of(p, s->id);
		struct podset *ps = &nv[n];
		int fd;

		if (label(s, "k8s_claim_uid") == NULL ||
		    fstatat(dfd, s->name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		n++;
		if (old != NULL && old->dev == st.st_dev &&
		    old->ino == st.st_ino && old->size == st.st_size &&
		    old->mtime.tv_sec == st.st_mtim.tv_sec &&
		    old->mtime.tv_nsec == st.st_mtim.tv_nsec) {
			*ps = *old; /* unchanged: its text moves over */
			p->sets[old - p->sets].text = NULL;
			continue;
		}
		*ps = (struct podset){.slice_id = s->id,
		                      .dev = st.st_dev,
		                      .ino = st.st_ino,
		                      .size = st.st_size,
		                      .mtime = st.st_mtim};
		fd = S_ISREG(st.st_mode)
		         ? openat(dfd, s->name,
		                  O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
		         : -1;
		if (fd < 0 || fstat(fd, &st) != 0) {
			if (fd >= 0)
				(void)close(fd);
			gs_warn(
			    "watchdog",
			    "slice=%s consumers file not readable: its pods are placed by the label alone",
			    s->name);
			continue;
		}
		set_read(ps, s, fd, &st);
		(void)close(fd);
	}
	if (dfd >= 0)
		(void)close(dfd);
	if (dfd >= 0 && nv == NULL) {
		gs_error("watchdog",
		         "out of memory: consumers files kept as last read");
		return;
	}
	for (int i = 0; i < p->n_sets; i++)
		free(p->sets[i].text);
	free(p->sets);
	p->sets = nv;
	p->n_sets = n;
}

/*
 * The pod of process `pid` from /proc/PID/cgroup into `uid`. False when
 * it is no pod's or gone; a cgroup text the parser refuses is logged (a
 * kubelet layout we do not know must not pass silently as "no pod").
 */
static bool pod_of(int32_t pid, char uid[GS_POD_UID_MAX])
{
	char path[64], text[8192];
	struct gs_podcgroup pc;
	struct gs_errbuf eb = {0};
	ssize_t n;
	gs_err err;
	int fd;

	(void)snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false; /* gone */
	n = read(fd, text, sizeof(text));
	(void)close(fd);
	if (n <= 0)
		return false;
	err = gs_podcgroup_parse(text, (size_t)n, &pc, &eb);
	if (err == GS_ERR_NOT_FOUND)
		return false;
	if (err != GS_OK) {
		gs_warn("watchdog", "pid=%d cgroup not understood: %s",
		        (int)pid, gs_errbuf_msg(&eb, err));
		return false;
	}
	memcpy(uid, pc.pod_uid, GS_POD_UID_MAX);
	return true;
}

int64_t gs__wdpod_place(struct gs__wdpod *p, const struct gs_node *node,
                        int gpu, int32_t pid, int64_t registered)
{
	int64_t here = -1;
	bool known = false;

	p->last_pid = 0;
	p->last_claim = -1;
	/* A node with no claim slices has nothing to place (and reads no
	 * cgroup files). */
	known = p->n_sets > 0;
	for (int i = 0; i < node->n && !known; i++)
		known = label(&node->v[i]->s, "k8s_pod_uid") != NULL;
	if (!known || !pod_of(pid, p->last_uid))
		return registered;
	known = false;
	for (int i = 0; i < node->n; i++) {
		const struct gs_slice *s = &node->v[i]->s;

		if (!is_pods(p, s, p->last_uid))
			continue;
		known = true;
		if (p->last_claim < 0)
			p->last_claim = s->id;
		if (s->gpu_index != gpu)
			continue;
		if (here < 0 || s->id == registered)
			here = s->id;
	}
	if (!known)
		return registered;
	p->last_pid = pid;
	return here >= 0 ? here : GS__WDPOD_OUTSIDE;
}

void gs__wdpod_outside(struct gs__wdpod *p, struct gs_node *node, int gpu,
                       int32_t pid, uint64_t start, uint64_t mem, bool kill,
                       struct gs__wr *wr)
{
	const char *uid = p->last_pid == pid ? p->last_uid : "?";
	const struct gs_slice *claim = NULL;
	char comm[32] = "";
	bool killed = false;

	for (int i = 0; i < p->n_rep; i++)
		if (p->rep[i].pid == pid && p->rep[i].start == start)
			return;
	p->rep[p->next_rep] = (struct reported){pid, start};
	p->next_rep = (p->next_rep + 1) % WDPOD_MAX_REPORTED;
	if (p->n_rep < WDPOD_MAX_REPORTED)
		p->n_rep++;
	for (int i = 0; i < node->n && claim == NULL; i++)
		if (p->last_pid == pid && node->v[i]->s.id == p->last_claim)
			claim = &node->v[i]->s;
	(void)gs_proc_comm(pid, comm, sizeof(comm));
	if (kill) {
		int rc = gs_proc_signal(pid, start, -1, SIGKILL);
		int e = errno;

		killed = rc == 0;
		if (!killed && e != ESRCH)
			gs_warn("watchdog",
			        "gpu=%d pid=%d could not be killed: %s", gpu,
			        (int)pid, strerror(e));
	}
	if (killed)
		node->ctr.watchdog_kills++;
	else
		node->ctr.watchdog_flags++;
	gs__wr_event(
	    wr, killed ? "watchdog.kill" : "watchdog.outside_claim", claim,
	    "gpu %d: process %d (%s, pod %s, %llu MiB) uses a GPU that no claim of its pod holds%s",
	    gpu, (int)pid, comm[0] ? comm : "?", uid,
	    (unsigned long long)(mem >> 20), killed ? "; killed" : "");
	gs_warn("watchdog",
	        "gpu=%d pid=%d (%s pod=%s) outside its pod's claims%s", gpu,
	        (int)pid, comm, uid, killed ? ": killed" : "");
}
