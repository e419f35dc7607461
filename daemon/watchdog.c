/*
 * watchdog.c - memory backstop and fault handling (see watchdog.h).
 *
 * Process -> slice: a process belongs to a slice when the region lists it
 * (the shim attached it), when it was attached through the API, or when
 * one of its ancestors (up to 16 levels, /proc/<pid>/stat) did. The last
 * rule catches a tenant that never loaded the shim but was started by
 * `gpuslice run`, whose runner process holds the slice.
 *
 * Episodes: a slice is acted on when it goes over (limit + grace), once;
 * it is acted on again only after it came back under. With action "flag"
 * coming back under clears the flag.
 */
#include "watchdog.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gs/log.h"
#include "node_int.h"

#ifdef GS_HAVE_SIM_STATE
#include "sim/state.h"
#endif

#define WD_MAX_PROCS  512
#define WD_MAX_OWNERS 2048

struct owner {
	int32_t pid;
	int64_t slice_id;
};

struct gs_watchdog {
	struct gs_node *node;
	struct gs_reconciler *rec;
	/* slices that are over their limit now (ids), for episodes */
	int n_over;
	int64_t over[GS_REGION_MAX_SLICES * 4];
#ifdef GS_HAVE_SIM_STATE
	struct gs_sim_map *sim;
	uint64_t xid_seen[GS_GPUS_MAX];
#endif
	struct owner owners[WD_MAX_OWNERS];
	int n_owners;
	/* Owners seen lately, so that a process that faulted and exited
	 * before its Xid was read is still placed. A ring. */
	struct owner recent[WD_MAX_OWNERS];
	int n_recent, recent_next;
};

gs_err gs_watchdog_create(struct gs_node *node, struct gs_reconciler *rec,
                          const char *sim_dir, struct gs_watchdog **out,
                          struct gs_errbuf *eb)
{
	struct gs_watchdog *w = calloc(1, sizeof(*w));

	if (w == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	w->node = node;
	w->rec = rec;
#ifdef GS_HAVE_SIM_STATE
	if (sim_dir && sim_dir[0]) {
		struct gs_errbuf seb = {0};

		if (gs_sim_state_open(sim_dir, &w->sim, &seb) != GS_OK) {
			gs_warn("watchdog", "sim state not readable: %s",
			        seb.msg);
			w->sim = NULL;
		} else {
			struct gs_sim_state *st = gs_sim_state_get(w->sim);

			for (uint32_t i = 0; i < st->n_gpus && i < GS_GPUS_MAX;
			     i++)
				w->xid_seen[i] = st->gpus[i].xid_seq;
		}
	}
#else
	(void)sim_dir;
#endif
	*out = w;
	return GS_OK;
}

void gs_watchdog_destroy(struct gs_watchdog *w)
{
	if (w == NULL)
		return;
#ifdef GS_HAVE_SIM_STATE
	gs_sim_state_close(w->sim);
#endif
	free(w);
}

/* The parent of `pid` from /proc/<pid>/stat, or 0. */
static int32_t parent_of(int32_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	int ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (f == NULL)
		return 0;
	if (fgets(buf, sizeof(buf), f) == NULL) {
		fclose(f);
		return 0;
	}
	fclose(f);
	/* The command name may hold spaces and parentheses: skip to the
	 * last ')'. */
	p = strrchr(buf, ')');
	if (p == NULL || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return 0;
	return (int32_t)ppid;
}

/* Lock held: who owns which pid, from the region and the API. */
static void collect_owners(struct gs_watchdog *w)
{
	struct gs_node *node = w->node;

	w->n_owners = 0;
	if (node->region) {
		struct gs_proc_ref it = {.slot = -1};
		struct gs_proc_info *pi = malloc(sizeof(*pi));

		while (pi && gs_region_proc_next(node->region, &it, pi)) {
			for (int i = 0; i < node->n; i++) {
				struct gs__nslice *ns = node->v[i];

				if (!ns->has_ref ||
				    ns->ref.slot != pi->slice.slot ||
				    ns->ref.generation != pi->slice.generation)
					continue;
				if (w->n_owners < WD_MAX_OWNERS)
					w->owners[w->n_owners++] =
					    (struct owner){pi->pid, ns->s.id};
				break;
			}
		}
		free(pi);
	}
	for (int i = 0; i < node->n; i++) {
		const struct gs_slice *s = &node->v[i]->s;

		for (int k = 0; k < s->n_pids && w->n_owners < WD_MAX_OWNERS;
		     k++)
			w->owners[w->n_owners++] =
			    (struct owner){s->pids[k], s->id};
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
static void live_rate(struct gs_node *node, struct gs__nslice *ns)
{
	struct gs_slice_usage u;
	int64_t now = gs_now_ns();

	if (node->region == NULL || !ns->has_ref ||
	    gs_region_slice_usage(node->region, &ns->ref, &u) != GS_OK)
		return;
	ns->live.n_procs = u.n_procs;
	ns->live.mem_used = u.mem_used;
	ns->live.mem_peak = u.mem_peak;
	ns->live.busy_ns = u.busy_ns;
	ns->live.throttled_ns = u.throttled_ns;
	if (ns->rate_t_ns && now - ns->rate_t_ns >= 500000000 &&
	    u.busy_ns >= ns->rate_busy_ns)
		ns->live.compute_pct = 100.0 *
		                       (double)(u.busy_ns - ns->rate_busy_ns) /
		                       (double)(now - ns->rate_t_ns);
	if (ns->rate_t_ns == 0 || now - ns->rate_t_ns >= 500000000) {
		ns->rate_busy_ns = u.busy_ns;
		ns->rate_t_ns = now;
	}
}

struct tally {
	int64_t id;
	uint64_t mem;
	int n;
	int32_t pids[16];
};

void gs_watchdog_tick(struct gs_watchdog *w)
{
	struct gs_node *node = w->node;
	const struct gs_config *cfg = node->cfg;
	struct gs_gpu_proc *procs;
	struct tally *t;
	int64_t *now_over;
	int n_t = 0, n_now = 0;
	struct gs__wr *wr;

	procs = malloc(sizeof(*procs) * WD_MAX_PROCS);
	t = calloc(GS_REGION_MAX_SLICES * 4, sizeof(*t));
	now_over = calloc(GS_REGION_MAX_SLICES * 4, sizeof(*now_over));
	wr = gs__wr_new();
	if (procs == NULL || t == NULL || now_over == NULL || wr == NULL)
		goto out;

	pthread_mutex_lock(&node->lock);
	collect_owners(w);
	remember(w);
	for (int g = 0; g < node->gpus->n; g++) {
		int n = 0;

		if (gs_gpus_processes(node->gpus, g, procs, WD_MAX_PROCS, &n) !=
		    GS_OK)
			continue;
		for (int k = 0; k < n; k++) {
			int64_t id = owner_of(w, procs[k].pid);
			struct tally *x = NULL;

			if (id < 0)
				continue;
			for (int j = 0; j < n_t; j++)
				if (t[j].id == id)
					x = &t[j];
			if (x == NULL) {
				if (n_t == GS_REGION_MAX_SLICES * 4)
					continue;
				x = &t[n_t++];
				x->id = id;
			}
			x->mem += procs[k].mem_bytes;
			if (x->n < 16)
				x->pids[x->n++] = procs[k].pid;
		}
	}
	for (int i = 0; i < node->n; i++) {
		struct gs__nslice *ns = node->v[i];
		struct tally *x = NULL;
		uint64_t limit = ns->s.spec.memory_bytes;

		for (int j = 0; j < n_t; j++)
			if (t[j].id == ns->s.id)
				x = &t[j];
		live_rate(node, ns);
		ns->live.nvml_mem = x ? x->mem : 0;
		ns->n_nvml_procs = x ? x->n : 0;
		if (x && x->n)
			ns->procs_seen = true;
		/* NVML counts each process's CUDA context too; the shim's
		 * cap does not. */
		if (limit == 0 || x == NULL ||
		    x->mem <=
		        limit + cfg->watchdog_grace_bytes +
		            (uint64_t)x->n * cfg->watchdog_context_bytes) {
			if (was_over(w, ns->s.id) &&
			    ns->s.state == GS_SLICE_FLAGGED &&
			    cfg->watchdog_action == GS_WATCHDOG_FLAG) {
				ns->s.state = GS_SLICE_READY;
				ns->s.reason[0] = '\0';
				gs__wr_slice_put(wr, &ns->s);
				gs__wr_event(wr, "watchdog.cleared", &ns->s,
				             "back within its memory limit");
			}
			continue;
		}
		now_over[n_now++] = ns->s.id;
		if (was_over(w, ns->s.id))
			continue;
		/* A new episode: act. */
		{
			char pids[128] = "";
			size_t off = 0;
			bool kill_it = cfg->watchdog_action == GS_WATCHDOG_KILL;

			for (int k = 0; k < x->n && off + 12 < sizeof(pids);
			     k++)
				off += (size_t)snprintf(
				    pids + off, sizeof(pids) - off, "%s%d",
				    k ? "," : "", (int)x->pids[k]);
			if (kill_it)
				for (int k = 0; k < x->n; k++)
					(void)kill(x->pids[k], SIGKILL);
			ns->s.state = GS_SLICE_FLAGGED;
			snprintf(ns->s.reason, sizeof(ns->s.reason),
			         "NVML shows %llu MiB, limit %llu MiB%s",
			         (unsigned long long)(x->mem >> 20),
			         (unsigned long long)(limit >> 20),
			         kill_it ? "; processes killed" : "");
			ns->s.updated_ns = gs_now_ns();
			ns->watchdog_actions++;
			if (kill_it)
				node->ctr.watchdog_kills++;
			else
				node->ctr.watchdog_flags++;
			gs__wr_slice_put(wr, &ns->s);
			gs__wr_event(
			    wr, kill_it ? "watchdog.kill" : "watchdog.flag",
			    &ns->s, "%s (pids %s)", ns->s.reason, pids);
			gs_warn("watchdog",
			        "slice=%s over its memory limit: %s pids=%s",
			        ns->s.name, ns->s.reason, pids);
		}
	}
	gs__wr_submit_detached(node, wr);
	wr = NULL;
	pthread_mutex_unlock(&node->lock);
	memcpy(w->over, now_over, sizeof(*now_over) * (size_t)n_now);
	w->n_over = n_now;
out:
	if (wr) {
		gs__wr_fini(wr);
		free(wr);
	}
	free(procs);
	free(t);
	free(now_over);
}

void gs_watchdog_remember(struct gs_watchdog *w)
{
	pthread_mutex_lock(&w->node->lock);
	collect_owners(w);
	remember(w);
	pthread_mutex_unlock(&w->node->lock);
}

/* The pid the sim recorded for the newest unseen Xid on `gpu`, or 0. */
static int32_t sim_xid_pid(struct gs_watchdog *w, int gpu)
{
#ifdef GS_HAVE_SIM_STATE
	struct gs_sim_state *st;
	int32_t pid = 0;

	if (w->sim == NULL || gpu < 0 || gpu >= GS_GPUS_MAX)
		return 0;
	st = gs_sim_state_get(w->sim);
	if ((uint32_t)gpu >= st->n_gpus || gs_sim_lock(st) != GS_OK)
		return 0;
	{
		struct gs_sim_gpu *g = &st->gpus[gpu];

		while (w->xid_seen[gpu] < g->xid_seq) {
			const struct gs_sim_xid *x =
			    &g->xid[w->xid_seen[gpu] % GS_SIM_XID_RING];

			w->xid_seen[gpu]++;
			if (x->seq == w->xid_seen[gpu]) {
				pid = x->pid;
				break;
			}
		}
	}
	gs_sim_unlock(st);
	return pid;
#else
	(void)w;
	(void)gpu;
	return 0;
#endif
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

static void handle_xid(struct gs_watchdog *w, const struct gs_gpu_event *ev)
{
	struct gs_node *node = w->node;
	struct gs__wr *wr = gs__wr_new();
	int32_t pid = sim_xid_pid(w, ev->gpu);
	int64_t culprit = -1;
	bool mps = false;
	int mps_gi = -1, n_active = 0;
	char why[128];

	pthread_mutex_lock(&node->lock);
	collect_owners(w);
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
		if (ns->n_nvml_procs || ns->live.n_procs || ns->s.n_pids)
			n_active++;
	}
	snprintf(why, sizeof(why), "Xid %llu on gpu %d%s", ev->xid, ev->gpu,
	         pid > 0 ? "" : " (culprit unknown)");
	for (int i = 0; i < node->n; i++) {
		struct gs__nslice *ns = node->v[i];
		bool hit;

		if (ns->s.gpu_index != ev->gpu)
			continue;
		if (ev->gi_id >= 0 && ns->s.gi_id != ev->gi_id)
			continue;
		if (mps && (ns->s.mode == GS_MODE_MPS ||
		            ns->s.mode == GS_MODE_MIG_MPS))
			/* An MPS fault reaches every client of the server:
			 * every slice with a process on it. */
			hit = ns->s.id == culprit || ns->n_nvml_procs ||
			      ns->live.n_procs || ns->s.n_pids;
		else if (culprit >= 0)
			hit = ns->s.id == culprit;
		else if (ev->gi_id >= 0)
			hit = true;
		else if (pid > 0)
			/* The driver named a process in no slice. */
			hit = false;
		else
			hit = n_active <= 1 || ns->n_nvml_procs ||
			      ns->live.n_procs;
		if (!hit)
			continue;
		if (mps && ns->s.id != culprit && culprit >= 0)
			fault_one(w, ns, wr,
			          "MPS server fault caused by another slice");
		else
			fault_one(w, ns, wr, why);
	}
	gs__wr_event(wr, "gpu.xid", NULL, "gpu %d xid %llu gi %d pid %d",
	             ev->gpu, ev->xid, ev->gi_id, (int)pid);
	gs__wr_submit_detached(node, wr);
	pthread_mutex_unlock(&node->lock);
	if (gs_xid_is_gpu_fault(ev->xid)) {
		char reason[96];

		snprintf(reason, sizeof(reason), "Xid %llu", ev->xid);
		if (gs_node_gpu_set_unhealthy(node, ev->gpu, reason)) {
			gs_warn("watchdog", "gpu=%d unhealthy: %s", ev->gpu,
			        reason);
			gs_node_event(node, "gpu.unhealthy", "", "", ev->gpu,
			              "GPU %d unhealthy: %s (until gpusliced "
			              "restarts)",
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
