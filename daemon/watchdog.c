/*
 * watchdog.c - memory backstop and fault handling (see watchdog.h).
 *
 * Process -> slice: a process belongs to a slice when the region lists it
 * (the shim attached it), when it was attached through the API, or when
 * one of its ancestors (up to 16 levels, /proc/<pid>/stat) did. The last
 * rule catches a tenant that never loaded the shim but was started by
 * `gpuslice run`, whose runner process holds the slice.
 *
 * The region's process table is writable by tenants, so an entry counts
 * only when the kernel confirms it (ground truth, checked every tick and
 * cached per slot): the process is alive with the start time recorded,
 * runs as the slice's owner (or root; any uid for a slice an
 * administrator made, owner 0), and asked for this slice itself - its
 * environment names it (GPUSLICE_SLICE), or it is the `gpuslice` runner.
 * Other entries are forged: they are evicted and reported, and never make
 * anyone a target (trust.c confirms them). Entries of another pid
 * namespace are ignored (their pids mean other processes here).
 *
 * What is checked, every tick, from NVML: each slice's memory (its
 * processes' sum against its cap), each strict slice's compute (its
 * processes' SM utilisation against its share plus
 * watchdog.compute_grace_pct), and processes on a GPU in no slice.
 *
 * Compute is judged over windows of at least 0.8 s (NVML's samples
 * averaged): a slice is over its share after two windows running over it,
 * or after one when a process in it was placed by its pod's cgroup alone
 * (watchdog_pod.h: no shim schedules it, so nothing pays its over-use
 * back); such a process's first sample (its life so far, some part of
 * the tick) is left out of the window rather than weighed as the whole
 * tick, so that a short burst as it starts is not taken for a second of
 * over-use. A window starts with a slice's first process.
 *
 * Episodes: a slice is acted on when it goes over (limit + grace), once;
 * it is acted on again only after it came back under. With action "flag"
 * coming back under clears the flag. With action "kill" the processes are
 * SIGKILLed through a pidfd after checking, at that moment, that each is
 * still the process NVML listed (start time) and runs as the slice's
 * owner (any uid in a slice owned by root); a process of another uid is
 * flagged, never signalled. A process in no slice is killed only when it
 * is not root's.
 */
#include "watchdog.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "acct.h"
#include "gs/log.h"
#include "gs/proc.h"
#include "ledger.h"
#include "node_int.h"
#include "trust.h"
#include "watchdog_pod.h"

#include "kmsg.h"

#define WD_MAX_PROCS  512
#define WD_MAX_OWNERS 2048

struct owner {
	int32_t pid;
	int64_t slice_id;
};

/* What the kernel said about a region slot's process, while the slot
 * holds the same entry. A cache, direct-mapped by the process reference's
 * slot (which names the usage file and the slot in it: every owner's
 * file and every private-books slice's file has its own), so a
 * collision costs only checking an entry again. */
#define WD_TRUST_BITS 12
struct trust {
	int32_t slot;        /* the process reference's */
	uint64_t generation; /* of the slot; 0 = not checked */
	int32_t pid;
	uint64_t start;
	int64_t slice_id;
	bool ok;
};

/* Processes on a GPU in no slice, reported once each. */
#define WD_MAX_STRAYS 256
struct stray {
	int32_t pid;
	uint64_t start;
};

/* What the watchdog keeps about one slice between ticks. */
struct wd_slice {
	int64_t id;
	uint64_t rate_busy_ns; /* busy_ns at rate_t_ns (compute achieved) */
	int64_t rate_t_ns;
	int n_nvml_procs;
	/* NVML SM share integrated over the current window (at least a
	 * second, so a token bucket's short burst is not "over") */
	double sm_acc; /* percent x seconds */
	double sm_t;   /* seconds */
	int sm_streak; /* full windows over the share, in a row */
	bool sm_over;  /* two windows running were over the share */
	int64_t last_act_ns; /* the watchdog's last action on it */
};

/* How soon kill mode acts again on a slice still over. */
#define WD_ACT_AGAIN_NS 500000000LL

/*
 * One owner's compute on one GPU, summed over its strict slices there: a
 * tenant that splits its burst over two slices, each over its share for
 * one window only, is over as an owner in every window.
 */
#define WD_MAX_OWNER_WINDOWS 256
struct owner_win {
	uint32_t uid;
	int gpu;
	double acc, t; /* percent x seconds, seconds */
	int streak;
	bool over;  /* the episode was acted on */
	bool live;  /* seen this tick */
	double now_pct, share; /* this tick: sum of NVML shares, of shares */
	int n_slices;
};

/* Repeat offences: processes in no slice, per uid. */
#define WD_MAX_OFFENDERS 64
struct offender {
	int64_t uid;
	int n;
};

struct gs_watchdog {
	struct gs_node *node;
	/* one per slice of the model at the last tick, ordered by id */
	struct wd_slice *ws;
	int n_ws;
	struct gs_reconciler *rec;
	/* slices that are over their limit now (ids), for episodes */
	int n_over;
	int64_t over[GS_REGION_MAX_SLICES * 4];
	struct gs_kmsg *kmsg; /* the kernel log's Xid lines, or NULL */
	struct owner owners[WD_MAX_OWNERS];
	int n_owners;
	/* Owners seen lately, so that a process that faulted and exited
	 * before its Xid was read is still placed. A ring. */
	struct owner recent[WD_MAX_OWNERS];
	int n_recent, recent_next;
	struct trust trust[1u << WD_TRUST_BITS];
	struct stray strays[WD_MAX_STRAYS];
	int n_strays;
	/* unscheduled processes seen at the last tick (a stray's key) */
	struct stray useen[WD_MAX_STRAYS];
	int n_useen;
	uint64_t util_since[GS_GPUS_MAX]; /* NVML sample timestamps, us */
	int64_t last_tick_ns;             /* CLOCK_REALTIME of the last tick */
	/* slices over their compute share now (ids), for episodes */
	int n_cover;
	int64_t cover[GS_REGION_MAX_SLICES * 4];
	struct gs__acct *acct; /* NVML accounting: the ledger's truth */
	struct owner_win ow[WD_MAX_OWNER_WINDOWS];
	int n_ow;
	struct offender off[WD_MAX_OFFENDERS];
	int n_off;
	bool kill; /* this tick: kill (action kill, or auto on a shared node) */
	struct gs__wdpod *pod; /* processes placed by their pod's cgroup */
};

/*
 * Lock held: whether the watchdog kills this tick. `auto` (the default)
 * kills wherever slices belong to more than one owner - tenants who must
 * not take from each other; each uid-0 slice (a Kubernetes claim's, a
 * Slurm job's) counts as an owner of its own - and flags on a node whose
 * slices are all one user's (a workstation).
 */
static bool kill_mode(const struct gs_node *node)
{
	int64_t first = -1;

	if (node->cfg->watchdog_action != GS_WATCHDOG_AUTO)
		return node->cfg->watchdog_action == GS_WATCHDOG_KILL;
	for (int i = 0; i < node->n; i++) {
		const struct gs_slice *s = &node->v[i]->s;
		int64_t owner = s->owner_uid != 0 ? (int64_t)s->owner_uid
		                                  : -2 - s->id;

		if (first == -1)
			first = owner;
		else if (owner != first)
			return true;
	}
	return false;
}

gs_err gs_watchdog_create(struct gs_node *node, struct gs_reconciler *rec,
                          const char *kernel_log, struct gs_watchdog **out,
                          struct gs_errbuf *eb)
{
	struct gs_watchdog *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	w->node = node;
	w->rec = rec;
	w->acct = gs__acct_create();
	w->pod = gs__wdpod_create();
	if (w->acct == NULL || w->pod == NULL) {
		gs__acct_destroy(w->acct);
		gs__wdpod_destroy(w->pod);
		free(w);
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	}
	if (kernel_log && kernel_log[0]) {
		struct gs_errbuf keb = {0};
		gs_err err = gs_kmsg_open(kernel_log, &w->kmsg, &keb);

		if (err != GS_OK) {
			/* Faults are still seen (NVML), only not attributed
			 * to a process: say so once. */
			gs_warn("watchdog",
			        "kernel log not readable (%s): Xid faults will not name their process",
			        gs_errbuf_msg(&keb, err));
			w->kmsg = NULL;
		}
	}
	*out = w;
	return GS_OK;
}

void gs_watchdog_destroy(struct gs_watchdog *w)
{
	if (w == NULL)
		return;
	gs_kmsg_close(w->kmsg);
	gs__acct_destroy(w->acct);
	gs__wdpod_destroy(w->pod);
	free(w->ws);
	free(w);
}

/* The parent of `pid`, or 0. */
static int32_t parent_of(int32_t pid)
{
	int32_t ppid = 0;

	return gs_proc_stat(pid, NULL, &ppid, NULL) ? ppid : 0;
}

/* Slice `id`'s state, or NULL (a slice the last tick did not see). */
static struct wd_slice *wd_of(struct gs_watchdog *w, int64_t id)
{
	int lo = 0, hi = w->n_ws - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (w->ws[mid].id == id)
			return &w->ws[mid];
		if (w->ws[mid].id < id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

/*
 * Lock held: one state per slice of the model, in its order (by id); a
 * slice's state stays while it does, a new one starts from zero, a gone
 * one's goes. False: out of memory (the states stay as they were).
 */
static bool wd_sync(struct gs_watchdog *w)
{
	struct gs_node *node = w->node;
	struct wd_slice *nv = calloc((size_t)node->n + 1, sizeof(*nv));

	if (nv == NULL)
		return false;
	for (int i = 0; i < node->n; i++) {
		const struct wd_slice *o = wd_of(w, node->v[i]->s.id);

		if (o != NULL)
			nv[i] = *o;
		nv[i].id = node->v[i]->s.id;
	}
	free(w->ws);
	w->ws = nv;
	w->n_ws = node->n;
	return true;
}

/*
 * Lock held: who owns which pid, from the region (entries the kernel
 * confirms; forged ones are evicted, with an event in `wr` when given)
 * and the API (pids attached by their owner or an administrator, while
 * they still run as someone allowed in the slice).
 */
static void collect_owners(struct gs_watchdog *w, struct gs__wr *wr)
{
	struct gs_node *node = w->node;

	w->n_owners = 0;
	if (node->region) {
		struct gs_proc_ref it = {.slot = -1};
		struct gs_proc_info *pi = malloc(sizeof(*pi));

		while (pi && gs_region_proc_next(node->region, &it, pi)) {
			struct gs__nslice *ns = NULL;
			struct trust *t;

			if (!pi->local || pi->ref.slot < 0)
				continue;
			for (int i = 0; i < node->n && ns == NULL; i++)
				if (node->v[i]->has_ref &&
				    node->v[i]->ref.slot == pi->slice.slot &&
				    node->v[i]->ref.generation ==
				        pi->slice.generation)
					ns = node->v[i];
			if (ns == NULL)
				continue;
			t = &w->trust[((uint32_t)pi->ref.slot * 2654435761u) >>
			              (32 - WD_TRUST_BITS)];
			if (!gs_region_pid_alive(pi->pid, pi->start_time))
				continue; /* gone: the region's reaping frees it */
			if (t->slot != pi->ref.slot ||
			    t->generation != pi->ref.generation ||
			    t->pid != pi->pid || t->start != pi->start_time ||
			    t->slice_id != ns->s.id) {
				const char *why = "";

				*t = (struct trust){
				    .slot = pi->ref.slot,
				    .generation = pi->ref.generation,
				    .pid = pi->pid,
				    .start = pi->start_time,
				    .slice_id = ns->s.id,
				    .ok = gs__trust_entry_genuine(pi, &ns->s,
				                                  &why)};
				if (!t->ok) {
					(void)gs_region_proc_detach(
					    node->region, &pi->ref);
					node->ctr.watchdog_flags++;
					gs_warn("watchdog",
					        "slice=%s forged process entry pid=%d evicted: %s",
					        ns->s.name, (int)pi->pid, why);
					if (wr)
						gs__wr_event(
						    wr, "watchdog.forged",
						    &ns->s,
						    "process entry for pid %d evicted: %s",
						    (int)pi->pid, why);
				}
			}
			if (t->ok && w->n_owners < WD_MAX_OWNERS)
				w->owners[w->n_owners++] =
				    (struct owner){pi->pid, ns->s.id};
		}
		free(pi);
	}
	for (int i = 0; i < node->n; i++) {
		const struct gs_slice *s = &node->v[i]->s;

		for (int k = 0; k < s->n_pids && w->n_owners < WD_MAX_OWNERS;
		     k++) {
			int64_t uid = gs_proc_uid(s->pids[k]);

			/* A pid reused by someone else's process. */
			if (uid < 0 || (s->owner_uid != 0 && uid != 0 &&
			                uid != (int64_t)s->owner_uid))
				continue;
			w->owners[w->n_owners++] =
			    (struct owner){s->pids[k], s->id};
		}
	}
}

static void remember(struct gs_watchdog *w)
{
	for (int i = 0; i < w->n_owners; i++) {
		bool known = false;

		for (int k = 0; k < w->n_recent && !known; k++)
			known = w->recent[k].pid == w->owners[i].pid &&
			        w->recent[k].slice_id == w->owners[i].slice_id;
		if (known)
			continue;
		w->recent[w->recent_next] = w->owners[i];
		w->recent_next = (w->recent_next + 1) % WD_MAX_OWNERS;
		if (w->n_recent < WD_MAX_OWNERS)
			w->n_recent++;
	}
}

static int64_t recent_owner(struct gs_watchdog *w, int32_t pid)
{
	for (int k = 0; k < w->n_recent; k++)
		if (w->recent[k].pid == pid)
			return w->recent[k].slice_id;
	return -1;
}

static int64_t owner_of(struct gs_watchdog *w, int32_t pid)
{
	for (int depth = 0; depth < 16 && pid > 1; depth++) {
		for (int i = 0; i < w->n_owners; i++)
			if (w->owners[i].pid == pid)
				return w->owners[i].slice_id;
		pid = parent_of(pid);
	}
	return -1;
}

/* gs__acct_place_fn: the slice of a process NVML accounting lists. */
static int64_t acct_place(void *ctx, int32_t pid, bool running)
{
	struct gs_watchdog *w = ctx;
	int64_t id = running ? owner_of(w, pid) : -1;

	return id >= 0 ? id : recent_owner(w, pid);
}

static void offence(struct gs_watchdog *w, int64_t uid, struct gs__wr *wr);

/* gs__acct_offend_fn: a process in no slice that ended unseen. */
static void acct_offend(void *ctx, int64_t uid, struct gs__wr *wr)
{
	offence(ctx, uid, wr);
}

static bool was_over(struct gs_watchdog *w, int64_t id)
{
	for (int i = 0; i < w->n_over; i++)
		if (w->over[i] == id)
			return true;
	return false;
}

/*
 * Compute achieved over the last second or so, from the region's GPU time
 * (the ledger's figure covers its longer interval). Lock held.
 */
static void live_rate(struct gs_node *node, struct gs__nslice *ns,
                      struct wd_slice *ws, struct gs__wr *wr)
{
	struct gs_slice_usage u;
	int64_t now = gs_now_ns();

	/* Checked books only (the tenant writes them). */
	if (gs__ledger_books(node, ns, &u, wr) != GS_OK)
		return;
	ns->live.n_procs = u.n_procs;
	ns->live.mem_used = u.mem_used;
	ns->live.mem_peak = u.mem_peak;
	ns->live.busy_ns = u.busy_ns;
	ns->live.throttled_ns = u.throttled_ns;
	gs__ledger_sm_advance(node, ns, u.busy_ns);
	if (ws->rate_t_ns && now - ws->rate_t_ns >= 500000000 &&
	    u.busy_ns >= ws->rate_busy_ns) {
		/* Busy time lands when a kernel's turn ends, so a window can
		 * hold more than its own length: one slice gets at most the
		 * whole GPU (the CLI fits a GPU's slices together). */
		double pct = 100.0 * (double)(u.busy_ns - ws->rate_busy_ns) /
		             (double)(now - ws->rate_t_ns);

		ns->live.compute_pct = pct > 100.0 ? 100.0 : pct;
	}
	if (ws->rate_t_ns == 0 || now - ws->rate_t_ns >= 500000000) {
		ws->rate_busy_ns = u.busy_ns;
		ws->rate_t_ns = now;
	}
}

/* A process NVML listed this tick, placed in a slice: a list per slice
 * (no cap: every process is judged and can be acted on). */
struct wd_proc {
	int32_t pid;
	uint64_t start;
	int next; /* the slice's next process in the tick's list, -1: none */
};

struct tally {
	int64_t id;
	uint64_t mem;
	/* its processes' context allowance: each process's at most what
	 * it holds (decoys holding a context only add nothing to share) */
	uint64_t allow;
	double sm_pct; /* sum of its processes' NVML SM share; -1 = none */
	/* one of its processes is placed by its pod's cgroup alone: the
	 * shim does not schedule it (gs__wdpod_place) */
	bool unscheduled;
	/* sm_pct for the compute window: without the first sample of an
	 * unscheduled process, which covers an unknown part of the tick
	 * (its life so far), so weighs nothing rather than the whole tick */
	double sm_win;
	int n;
	int head, tail; /* its processes in the tick's wd_proc list */
	const struct wd_proc *procs;
};

static bool in_list(const int64_t *v, int n, int64_t id)
{
	for (int i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

/*
 * SIGKILLs the processes of tally `x` that may be: still the process
 * NVML listed (start time), running as the slice's owner (any uid for a
 * slice an administrator made, owner 0; so root's processes only there).
 * Returns how many were signalled; names the others in `spared`.
 */
static int kill_tally(const struct tally *x, const struct gs_slice *s,
                      char *spared, size_t n_spared)
{
	size_t off = 0;
	int n = 0;

	spared[0] = '\0';
	for (int k = x->head; k >= 0; k = x->procs[k].next) {
		int32_t pid = x->procs[k].pid;
		int64_t uid = gs_proc_uid(pid);
		bool allowed = uid >= 0 && (s->owner_uid == 0 ||
		                            uid == (int64_t)s->owner_uid);

		if (allowed && gs_proc_signal(pid, x->procs[k].start, uid,
		                              SIGKILL) == 0) {
			n++;
			continue;
		}
		if (off + 12 < n_spared)
			off += (size_t)snprintf(spared + off, n_spared - off,
			                        "%s%d", off ? "," : "",
			                        (int)pid);
	}
	return n;
}

/* Lock held: acts on slice `ns` over a limit (what: "memory" or
 * "compute"), once per episode. */
static void act(struct gs_watchdog *w, struct gs__nslice *ns,
                const struct tally *x, const char *what, const char *detail,
                struct gs__wr *wr)
{
	struct gs_node *node = w->node;
	char pids[128] = "", spared[128];
	size_t off = 0;
	bool kill_it = w->kill;
	int killed = 0;

	for (int k = x->head; k >= 0 && off + 12 < sizeof(pids);
	     k = x->procs[k].next)
		off += (size_t)snprintf(pids + off, sizeof(pids) - off, "%s%d",
		                        off ? "," : "", (int)x->procs[k].pid);
	if (x->n > 0 && off + 12 >= sizeof(pids))
		snprintf(pids + off, sizeof(pids) - off, "... (%d)", x->n);
	if (kill_it)
		killed = kill_tally(x, &ns->s, spared, sizeof(spared));
	ns->s.state = GS_SLICE_FLAGGED;
	snprintf(ns->s.reason, sizeof(ns->s.reason), "%s%s%s", detail,
	         kill_it ? "; processes killed" : "",
	         kill_it && spared[0] ? " (not those of another uid)" : "");
	ns->s.updated_ns = gs_now_ns();
	ns->watchdog_actions++;
	if (kill_it && killed > 0)
		node->ctr.watchdog_kills++;
	else
		node->ctr.watchdog_flags++;
	gs__wr_slice_put(wr, &ns->s);
	gs__wr_event(wr, kill_it ? "watchdog.kill" : "watchdog.flag", &ns->s,
	             "over its %s: %s (pids %s%s%s)", what, detail, pids,
	             kill_it && spared[0] ? "; spared " : "",
	             kill_it ? spared : "");
	gs_warn("watchdog", "slice=%s over its %s: %s pids=%s", ns->s.name,
	        what, detail, pids);
}

/*
 * Lock held: one more process of `uid` found in no slice. Its third, and
 * every tenth after, is reported as a repeat offence (a tenant running
 * short processes past the slices, one after another).
 */
static void offence(struct gs_watchdog *w, int64_t uid, struct gs__wr *wr)
{
	struct offender *o = NULL;

	if (uid <= 0)
		return; /* root's are reported each; unknown: gone */
	for (int i = 0; i < w->n_off && o == NULL; i++)
		if (w->off[i].uid == uid)
			o = &w->off[i];
	if (o == NULL) {
		if (w->n_off == WD_MAX_OFFENDERS)
			w->n_off = 0; /* forget the oldest: count again */
		o = &w->off[w->n_off++];
		*o = (struct offender){.uid = uid};
	}
	o->n++;
	if (o->n != 3 && o->n % 10 != 0)
		return;
	w->node->ctr.watchdog_flags++;
	gs_warn("watchdog", "uid=%lld repeat offender: %d processes in no slice",
	        (long long)uid, o->n);
	gs__wr_event(wr, "watchdog.repeat_offender", NULL,
	             "uid %lld ran %d processes on a GPU in no slice",
	             (long long)uid, o->n);
}

/* Lock held: a process on GPU `g` in no slice (NVML shows it, nothing
 * places it). Reported once; killed with action kill unless it is root's
 * or gpuslice's own MPS server. */
static void stray(struct gs_watchdog *w, int g, int32_t pid, uint64_t start,
                  uint64_t mem, struct gs__wr *wr)
{
	struct gs_node *node = w->node;
	char comm[32] = "";
	int64_t uid;
	bool kill_it;

	for (int i = 0; i < w->n_strays; i++)
		if (w->strays[i].pid == pid && w->strays[i].start == start)
			return;
	if (w->n_strays == WD_MAX_STRAYS)
		w->n_strays = 0; /* forget the oldest reports: report again */
	w->strays[w->n_strays++] = (struct stray){pid, start};
	(void)gs_proc_comm(pid, comm, sizeof(comm));
	if (strncmp(comm, "nvidia-cuda-mps", 15) == 0)
		return; /* an MPS server: its clients are what counts */
	uid = gs_proc_uid(pid);
	kill_it = w->kill && uid > 0 &&
	          gs_proc_signal(pid, start, uid, SIGKILL) == 0;
	if (kill_it)
		node->ctr.watchdog_kills++;
	else
		node->ctr.watchdog_flags++;
	gs__wr_event(wr, kill_it ? "watchdog.kill" : "watchdog.unsliced", NULL,
	             "gpu %d: process %d (%s, uid %lld, %llu MiB) is in no slice%s",
	             g, (int)pid, comm[0] ? comm : "?", (long long)uid,
	             (unsigned long long)(mem >> 20),
	             kill_it ? "; killed" : "");
	gs_warn("watchdog", "gpu=%d pid=%d (%s uid=%lld) in no slice%s", g,
	        (int)pid, comm, (long long)uid, kill_it ? ": killed" : "");
	offence(w, uid, wr);
}

/* Whether the last tick saw unscheduled process `pid` (started `start`). */
static bool useen_has(const struct gs_watchdog *w, int32_t pid,
                      uint64_t start)
{
	for (int i = 0; i < w->n_useen; i++)
		if (w->useen[i].pid == pid && w->useen[i].start == start)
			return true;
	return false;
}

/* Whether a slice's compute share is judged: strict, time-sliced. */
static bool compute_judged(const struct gs_slice *s)
{
	int pct = s->spec.compute_pct;

	return pct > 0 && pct < 100 &&
	       s->spec.compute_mode != GS_COMPUTE_SHARE &&
	       s->mode != GS_MODE_MPS && s->mode != GS_MODE_MIG_MPS;
}

static struct owner_win *owner_win_get(struct gs_watchdog *w, uint32_t uid,
                                       int gpu)
{
	for (int i = 0; i < w->n_ow; i++)
		if (w->ow[i].uid == uid && w->ow[i].gpu == gpu)
			return &w->ow[i];
	if (w->n_ow == WD_MAX_OWNER_WINDOWS)
		return NULL;
	w->ow[w->n_ow] = (struct owner_win){.uid = uid, .gpu = gpu};
	return &w->ow[w->n_ow++];
}

/*
 * Lock held: compute judged per owner (a uid other than root; root's
 * slices are each a pod's or a job's) on each GPU, across its strict
 * slices there, against the sum of their shares plus the grace: over in
 * two windows running, each of its slices with processes is acted on
 * (kill mode: again each window while it stays over).
 */
static void owners_judge(struct gs_watchdog *w, const struct tally *t,
                         int n_t, double dt, int64_t now_ns,
                         struct gs__wr *wr)
{
	struct gs_node *node = w->node;
	const struct gs_config *cfg = node->cfg;
	int k = 0;

	for (int i = 0; i < w->n_ow; i++) {
		w->ow[i].live = false;
		w->ow[i].now_pct = w->ow[i].share = 0;
		w->ow[i].n_slices = 0;
	}
	for (int i = 0; i < node->n; i++) {
		const struct gs_slice *s = &node->v[i]->s;
		struct owner_win *o;

		if (s->owner_uid == 0 || s->state == GS_SLICE_PENDING ||
		    !compute_judged(s) || s->gpu_index < 0)
			continue;
		o = owner_win_get(w, s->owner_uid, s->gpu_index);
		if (o == NULL)
			continue;
		o->live = true;
		o->share += s->spec.compute_pct;
		o->n_slices++;
		for (int j = 0; j < n_t; j++)
			if (t[j].id == s->id && t[j].sm_pct > 0)
				o->now_pct += t[j].sm_pct;
	}
	for (int i = 0; i < w->n_ow; i++) {
		struct owner_win *o = &w->ow[i];

		if (!o->live)
			continue;
		w->ow[k++] = *o;
	}
	w->n_ow = k;
	for (int i = 0; i < w->n_ow; i++) {
		struct owner_win *o = &w->ow[i];
		char detail[160];
		bool over;

		/* One slice is judged as a slice already. */
		if (o->n_slices < 2 || dt <= 0)
			continue;
		o->acc += o->now_pct * dt;
		o->t += dt;
		if (o->t < 0.8)
			continue;
		over = o->acc / o->t >
		       (o->share > 100 ? 100 : o->share) +
		           cfg->watchdog_compute_grace_pct;
		o->streak = over ? o->streak + 1 : 0;
		snprintf(detail, sizeof(detail),
		         "NVML shows %.0f%% of the SMs for uid %u across its slices, shares %.0f%%",
		         o->acc / o->t, o->uid, o->share);
		o->acc = o->t = 0;
		if (o->streak < 2) {
			o->over = false;
			continue;
		}
		if (o->over && !w->kill)
			continue;
		o->over = true;
		for (int j = 0; j < node->n; j++) {
			struct gs__nslice *ns = node->v[j];

			if (ns->s.owner_uid != o->uid ||
			    ns->s.gpu_index != o->gpu || !compute_judged(&ns->s))
				continue;
			for (int q = 0; q < n_t; q++)
				if (t[q].id == ns->s.id && t[q].n > 0) {
					act(w, ns, &t[q], "owner's compute share",
					    detail, wr);
					if (wd_of(w, ns->s.id))
						wd_of(w, ns->s.id)->last_act_ns =
						    now_ns;
				}
		}
	}
}

void gs_watchdog_tick(struct gs_watchdog *w)
{
	struct gs_node *node = w->node;
	const struct gs_config *cfg = node->cfg;
	struct gs_gpu_proc *procs;
	struct gs_gpu_util *util;
	struct tally *t;
	int64_t *now_over, *now_cover;
	int n_t = 0, n_now = 0, n_cnow = 0;
	struct gs__wr *wr;
	int64_t now_ns;
	double dt;
	bool acct_on[GS_GPUS_MAX];
	struct wd_proc *seen;
	int n_seen = 0, cap_seen;
	struct stray useen[WD_MAX_STRAYS];
	int n_useen = 0;

	procs = malloc(sizeof(*procs) * WD_MAX_PROCS);
	util = malloc(sizeof(*util) * WD_MAX_PROCS);
	cap_seen = WD_MAX_PROCS * (node->gpus->n > 0 ? node->gpus->n : 1);
	seen = malloc(sizeof(*seen) * (size_t)cap_seen);
	t = calloc(GS_REGION_MAX_SLICES * 4, sizeof(*t));
	now_over = calloc(GS_REGION_MAX_SLICES * 4, sizeof(*now_over));
	now_cover = calloc(GS_REGION_MAX_SLICES * 4, sizeof(*now_cover));
	wr = gs__wr_new();
	if (procs == NULL || util == NULL || seen == NULL || t == NULL ||
	    now_over == NULL ||
	    now_cover == NULL || wr == NULL)
		goto out;

	pthread_mutex_lock(&node->lock);
	if (!wd_sync(w)) {
		pthread_mutex_unlock(&node->lock);
		gs_error("watchdog", "out of memory: tick skipped");
		goto out;
	}
	now_ns = gs_now_ns();
	w->kill = kill_mode(node);
	dt = w->last_tick_ns ? (double)(now_ns - w->last_tick_ns) / 1e9 : 0;
	if (dt > 5)
		dt = 5; /* a stalled tick does not weigh more than that */
	w->last_tick_ns = now_ns;
	collect_owners(w, wr);
	remember(w);
	gs__acct_poll(w->acct, node, acct_place, acct_offend, w, wr, acct_on);
	gs__wdpod_refresh(w->pod, node);
	for (int g = 0; g < node->gpus->n; g++) {
		int n = 0, n_u = 0;
		bool have_util;

		if (gs_gpus_processes(node->gpus, g, procs, WD_MAX_PROCS, &n) !=
		    GS_OK)
			continue;
		have_util =
		    g < GS_GPUS_MAX &&
		    gs_gpus_process_util(node->gpus, g, &w->util_since[g], util,
		                         WD_MAX_PROCS, &n_u) == GS_OK;
		for (int k = 0; k < n; k++) {
			int64_t reg = owner_of(w, procs[k].pid), id;
			struct tally *x = NULL;
			uint64_t start = 0;
			bool fresh;

			if (!gs_proc_stat(procs[k].pid, NULL, NULL, &start))
				continue; /* gone since NVML listed it */
			id = gs__wdpod_place(w->pod, node, g, procs[k].pid,
			                     reg);
			if (id == GS__WDPOD_OUTSIDE) {
				gs__wdpod_outside(w->pod, node, g, procs[k].pid,
				                  start, procs[k].mem_bytes,
				                  w->kill, wr);
				continue;
			}
			if (id < 0) {
				stray(w, g, procs[k].pid, start,
				      procs[k].mem_bytes, wr);
				continue;
			}
			for (int j = 0; j < n_t; j++)
				if (t[j].id == id)
					x = &t[j];
			if (x == NULL) {
				if (n_t == GS_REGION_MAX_SLICES * 4)
					continue;
				x = &t[n_t++];
				x->id = id;
				x->sm_pct = -1;
				x->head = x->tail = -1;
				x->procs = seen;
			}
			fresh = false;
			if (id != reg) {
				x->unscheduled = true;
				fresh = !useen_has(w, procs[k].pid, start);
				if (n_useen < WD_MAX_STRAYS)
					useen[n_useen++] =
					    (struct stray){procs[k].pid, start};
			}
			x->mem += procs[k].mem_bytes;
			x->allow += procs[k].mem_bytes < cfg->watchdog_context_bytes
			                ? procs[k].mem_bytes
			                : cfg->watchdog_context_bytes;
			for (int j = 0; have_util && j < n_u; j++)
				if (util[j].pid == procs[k].pid) {
					x->sm_pct =
					    (x->sm_pct < 0 ? 0 : x->sm_pct) +
					    util[j].sm_pct;
					if (!fresh)
						x->sm_win += util[j].sm_pct;
				}
			if (n_seen < cap_seen) {
				seen[n_seen] = (struct wd_proc){
				    .pid = procs[k].pid, .start = start, .next = -1};
				if (x->tail >= 0)
					seen[x->tail].next = n_seen;
				else
					x->head = n_seen;
				x->tail = n_seen++;
				x->n++;
			}
		}
	}
	for (int i = 0; i < node->n; i++) {
		struct gs__nslice *ns = node->v[i];
		struct wd_slice *ws = &w->ws[i];
		struct tally *x = NULL;
		uint64_t limit = ns->s.spec.memory_bytes;
		bool mem_over, cpu_over, again;
		int pct = ns->s.spec.compute_pct;
		char detail[160];

		/* Being created: no process of it runs yet, and its create
		 * owns its state until it is READY. */
		if (ns->s.state == GS_SLICE_PENDING)
			continue;
		for (int j = 0; j < n_t; j++)
			if (t[j].id == ns->s.id)
				x = &t[j];
		live_rate(node, ns, ws, wr);
		ns->live.nvml_mem = x ? x->mem : 0;
		/* Where NVML accounting works, the ledger bills what NVML
		 * measures: GPU time (acct.c) and memory held, here. */
		if (ns->s.gpu_index >= 0 && ns->s.gpu_index < GS_GPUS_MAX &&
		    acct_on[ns->s.gpu_index])
			gs__ledger_charge(node, ns->s.id, 0,
			                  x ? (double)x->mem * dt : 0);
		if (x && x->sm_pct >= 0)
			ns->live.nvml_compute_pct = x->sm_pct;
		else if (x == NULL)
			ns->live.nvml_compute_pct = 0;
		ws->n_nvml_procs = x ? x->n : 0;
		if (x && x->n)
			ns->procs_seen = true;
		/* NVML counts each process's CUDA context too; the shim's
		 * cap does not. */
		mem_over =
		    limit != 0 && x != NULL &&
		    x->mem > limit + cfg->watchdog_grace_bytes + x->allow;
		/* Compute: strict time-sliced slices (an MPS client's SM
		 * share is bounded by MPS itself; a share-mode slice may use
		 * what is idle). */
		if (x != NULL && x->sm_pct >= 0 && dt > 0) {
			ws->sm_acc += x->sm_win * dt;
			ws->sm_t += dt;
		}
		if (ws->sm_t >= 0.8) {
			bool over =
			    pct > 0 && pct < 100 &&
			    ns->s.spec.compute_mode != GS_COMPUTE_SHARE &&
			    ns->s.mode != GS_MODE_MPS &&
			    ns->s.mode != GS_MODE_MIG_MPS &&
			    ws->sm_acc / ws->sm_t >
			        (double)(pct + cfg->watchdog_compute_grace_pct);

			/* Over in two windows running: one window can catch
			 * a process's last burst as it exits (measured in the
			 * demo: 32 % in a 15 % slice for one second). A
			 * process the shim does not schedule (a pod's that
			 * skipped it) has no bucket to pay a burst back: its
			 * slice is over after one window, which with the
			 * grace still spans NVML's samples (#28: stopped
			 * within 2 s). */
			ws->sm_streak = over ? ws->sm_streak + 1 : 0;
			ws->sm_over =
			    ws->sm_streak >= (x != NULL && x->unscheduled ? 1
			                                                  : 2);
			if (ws->sm_over && x != NULL)
				x->sm_pct = ws->sm_acc / ws->sm_t;
			ws->sm_acc = ws->sm_t = 0;
		}
		if (x == NULL) {
			/* No process: the next one's window starts with it,
			 * not part-way through an idle one. */
			ws->sm_over = false;
			ws->sm_streak = 0;
			ws->sm_acc = ws->sm_t = 0;
		}
		cpu_over = ws->sm_over && x != NULL;
		if (mem_over)
			now_over[n_now++] = ns->s.id;
		if (cpu_over)
			now_cover[n_cnow++] = ns->s.id;
		if (!mem_over && !cpu_over) {
			if ((was_over(w, ns->s.id) ||
			     in_list(w->cover, w->n_cover, ns->s.id)) &&
			    ns->s.state == GS_SLICE_FLAGGED &&
			    !w->kill) {
				ns->s.state = GS_SLICE_READY;
				ns->s.reason[0] = '\0';
				gs__wr_slice_put(wr, &ns->s);
				gs__wr_event(wr, "watchdog.cleared", &ns->s,
				             "back within its limits");
			}
			continue;
		}
		/* Kill mode acts again for as long as the slice stays over
		 * (a process that came after the first action, one that
		 * survived it); flag mode once per episode. */
		again = w->kill &&
		        now_ns - ws->last_act_ns >= WD_ACT_AGAIN_NS;
		if (mem_over && (!was_over(w, ns->s.id) || again)) {
			snprintf(detail, sizeof(detail),
			         "NVML shows %llu MiB, limit %llu MiB",
			         (unsigned long long)(x->mem >> 20),
			         (unsigned long long)(limit >> 20));
			act(w, ns, x, "memory limit", detail, wr);
			ws->last_act_ns = now_ns;
			again = false;
		}
		if (cpu_over &&
		    (!in_list(w->cover, w->n_cover, ns->s.id) || again)) {
			snprintf(detail, sizeof(detail),
			         "NVML shows %.0f%% of the SMs, share %d%%",
			         x->sm_pct, pct);
			act(w, ns, x, "compute share", detail, wr);
			ws->last_act_ns = now_ns;
		}
	}
	owners_judge(w, t, n_t, dt, now_ns, wr);
	memcpy(w->useen, useen, sizeof(useen[0]) * (size_t)n_useen);
	w->n_useen = n_useen;
	gs__node_submit_detached(node, wr);
	wr = NULL;
	pthread_mutex_unlock(&node->lock);
	memcpy(w->over, now_over, sizeof(*now_over) * (size_t)n_now);
	w->n_over = n_now;
	memcpy(w->cover, now_cover, sizeof(*now_cover) * (size_t)n_cnow);
	w->n_cover = n_cnow;
out:
	if (wr) {
		gs__wr_fini(wr);
		free(wr);
	}
	free(procs);
	free(util);
	free(seen);
	free(t);
	free(now_over);
	free(now_cover);
}

void gs_watchdog_remember(struct gs_watchdog *w)
{
	struct gs__wr *wr = gs__wr_new();

	pthread_mutex_lock(&w->node->lock);
	collect_owners(w, wr);
	remember(w);
	gs__node_submit_detached(w->node, wr);
	pthread_mutex_unlock(&w->node->lock);
}

/*
 * The process the kernel log names for this Xid on `gpu` (the driver's
 * "NVRM: Xid (PCI:...): N, pid=P" line), or 0 when it names none. NVML's
 * event carries no process; the log line and the event arrive
 * independently, so this waits briefly for the line.
 */
static int32_t xid_pid(struct gs_watchdog *w, const struct gs_gpu_event *ev)
{
	const struct gs_gpu *g;
	struct gs_xid_line x;

	if (w->kmsg == NULL || ev->gpu < 0 || ev->gpu >= w->node->gpus->n)
		return 0;
	g = &w->node->gpus->gpu[ev->gpu];
	if (!g->has_pci)
		return 0;
	if (!gs_kmsg_take_xid(w->kmsg, g->pci_domain, g->pci_bus, g->pci_device,
	                      ev->xid, 10000, 300, &x))
		return 0;
	return x.pid > 0 ? x.pid : 0;
}

static void fault_one(struct gs_watchdog *w, struct gs__nslice *ns,
                      struct gs__wr *wr, const char *why)
{
	ns->s.state = GS_SLICE_FAULTED;
	snprintf(ns->s.reason, sizeof(ns->s.reason), "%s", why);
	ns->s.updated_ns = gs_now_ns();
	ns->faults++;
	w->node->ctr.faults++;
	gs__wr_slice_put(wr, &ns->s);
	gs__wr_event(wr, "slice.faulted", &ns->s, "%s", why);
	gs_warn("watchdog", "slice=%s faulted: %s", ns->s.name, why);
}

/*
 * An Xid that would mark a parked slice faulted (gs/park.h) leaves it
 * parked: its processes are stopped at their GPU calls and its memory is
 * out (or going out), so it had no work on the GPU to fault; faulted, it
 * would count again in its GPU's admission and its team's quota, in room
 * the reclaimer was admitted to. Said in an event on the slice.
 */
static void fault_parked(struct gs__nslice *ns, struct gs__wr *wr,
                         const char *why)
{
	gs__wr_event(
	    wr, "slice.fault_while_parked", &ns->s,
	    "%s: kept parked, not faulted: its processes are stopped and its memory is out of the GPU, so the fault is not its",
	    why);
	gs_info("watchdog", "slice=%s kept parked through %s", ns->s.name,
	        why);
}

static void handle_xid(struct gs_watchdog *w, const struct gs_gpu_event *ev)
{
	struct gs_node *node = w->node;
	struct gs__wr *wr = gs__wr_new();
	int32_t pid = xid_pid(w, ev);
	int64_t culprit = -1;
	bool mps = false;
	int mps_gi = -1, n_active = 0;
	char why[128];

	pthread_mutex_lock(&node->lock);
	collect_owners(w, wr);
	if (pid > 0) {
		culprit = owner_of(w, pid);
		if (culprit < 0)
			culprit = recent_owner(w, pid);
		if (culprit >= 0 && gs__node_find_id(node, culprit) == NULL)
			culprit = -1;
	}
	remember(w);
	for (int i = 0; i < node->n; i++) {
		struct gs__nslice *ns = node->v[i];
		const struct wd_slice *ws = wd_of(w, ns->s.id);
		int n_nvml = ws ? ws->n_nvml_procs : 0;

		if (ns->s.gpu_index != ev->gpu)
			continue;
		if (ev->gi_id >= 0 && ns->s.gi_id != ev->gi_id)
			continue;
		if (ns->s.mode == GS_MODE_MPS ||
		    ns->s.mode == GS_MODE_MIG_MPS) {
			mps = true;
			mps_gi =
			    ns->s.mode == GS_MODE_MIG_MPS ? ns->s.gi_id : -1;
		}
		/* a parked slice's processes are stopped (fault_parked) */
		if (ns->s.state != GS_SLICE_PARKED &&
		    (n_nvml || ns->live.n_procs || ns->s.n_pids))
			n_active++;
	}
	snprintf(why, sizeof(why), "Xid %llu on gpu %d%s", ev->xid, ev->gpu,
	         pid > 0 ? "" : " (culprit unknown)");
	for (int i = 0; i < node->n; i++) {
		struct gs__nslice *ns = node->v[i];
		const struct wd_slice *ws = wd_of(w, ns->s.id);
		int n_nvml = ws ? ws->n_nvml_procs : 0;
		bool hit;

		if (ns->s.gpu_index != ev->gpu ||
		    ns->s.state == GS_SLICE_PENDING)
			continue;
		if (ev->gi_id >= 0 && ns->s.gi_id != ev->gi_id)
			continue;
		if (mps && (ns->s.mode == GS_MODE_MPS ||
		            ns->s.mode == GS_MODE_MIG_MPS))
			/* An MPS fault reaches every client of the server:
			 * every slice with a process on it. */
			hit = ns->s.id == culprit || n_nvml ||
			      ns->live.n_procs || ns->s.n_pids;
		else if (culprit >= 0)
			hit = ns->s.id == culprit;
		else if (ev->gi_id >= 0)
			hit = true;
		else if (pid > 0)
			/* The driver named a process in no slice. */
			hit = false;
		else
			hit = n_active <= 1 || n_nvml || ns->live.n_procs;
		if (!hit)
			continue;
		if (ns->s.state == GS_SLICE_PARKED) {
			fault_parked(ns, wr, why);
			continue;
		}
		if (mps && ns->s.id != culprit && culprit >= 0)
			fault_one(w, ns, wr,
			          "MPS server fault caused by another slice");
		else
			fault_one(w, ns, wr, why);
	}
	gs__wr_event(wr, "gpu.xid", NULL, "gpu %d xid %llu gi %d pid %d",
	             ev->gpu, ev->xid, ev->gi_id, (int)pid);
	gs__node_submit_detached(node, wr);
	pthread_mutex_unlock(&node->lock);
	if (gs_xid_is_gpu_fault(ev->xid)) {
		char reason[96];

		snprintf(reason, sizeof(reason), "Xid %llu", ev->xid);
		if (gs_node_gpu_set_unhealthy(node, ev->gpu, reason)) {
			gs_warn("watchdog", "gpu=%d unhealthy: %s", ev->gpu,
			        reason);
			gs_node_event(node, "gpu.unhealthy", "", "", ev->gpu,
			              "GPU %d unhealthy: %s (until gpusliced restarts)",
			              ev->gpu, reason);
		}
	}
	if (mps && w->rec) {
		bool ok = gs_reconciler_mps_restart(w->rec, ev->gpu, mps_gi);

		gs_node_event(node, "mps.restart", "", "", ev->gpu,
		              "MPS control daemon restarted after Xid %llu: %s",
		              ev->xid, ok ? "ok" : "failed");
	}
}

void gs_watchdog_events(struct gs_watchdog *w, int timeout_ms)
{
	struct gs_gpu_event ev;

	for (int i = 0; i < 64; i++) {
		/* NVML is thread-safe; the wait holds no lock of ours, so the
		 * model serves requests meanwhile. */
		gs_err err =
		    gs_gpus_next_event(w->node->gpus, i ? 0 : timeout_ms, &ev);

		if (err == GS_ERR_UNSUPPORTED && timeout_ms > 0)
			usleep((useconds_t)timeout_ms * 1000);
		if (err)
			return;
		if (ev.gpu < 0)
			continue;
		gs_info("watchdog", "gpu=%d xid=%llu gi=%d", ev.gpu, ev.xid,
		        ev.gi_id);
		handle_xid(w, &ev);
	}
}
