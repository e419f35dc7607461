/*
 * watchdog_pod.c - the watchdog's Kubernetes rule: GPU processes placed
 * by their pod's cgroup (see watchdog_pod.h for the rule).
 *
 * Per process NVML lists, each tick: /proc/PID/cgroup is read (a few
 * hundred bytes; not cached, so a process moved to another cgroup is
 * judged by where it is now) and parsed (core/podcgroup.c); the pod UID
 * is looked up in the slices' `k8s_pod_uid` labels. The labels are
 * written once, when the claim is prepared, so a list is read as it was
 * then; a list marked incomplete (`k8s_pod_uid_more`) still places the
 * pods it names.
 *
 * Reports of processes outside their claims are kept in a small ring, so
 * that flag mode reports each process once rather than every tick.
 */
#include "watchdog_pod.h"

#include <errno.h>
#include <fcntl.h>
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

struct gs__wdpod {
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

/* Whether slice `s` is a claim's reserved for pod `uid`. */
static bool is_pods(const struct gs_slice *s, const char *uid)
{
	return list_has(label(s, "k8s_pod_uid"), uid);
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
	for (int i = 0; i < node->n && !known; i++)
		known = label(&node->v[i]->s, "k8s_pod_uid") != NULL;
	if (!known || !pod_of(pid, p->last_uid))
		return registered;
	known = false;
	for (int i = 0; i < node->n; i++) {
		const struct gs_slice *s = &node->v[i]->s;

		if (!is_pods(s, p->last_uid))
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
