/*
 * metrics.c - Prometheus text for /metrics (see metrics.h, docs/metrics.md).
 *
 * The page is built into a growing buffer with a hard cap (a node holds at
 * most a few hundred slices; 4 MiB is far above that). Label values are
 * escaped as the format requires (backslash, double quote, newline).
 * Everything is read under the node lock once, then formatted.
 *
 * The page is filtered for whoever asks: an administrator sees every
 * series; another local user sees the per-slice series of the slices they
 * own, the team series of those slices' teams, and the node-level
 * aggregates (per GPU and daemon-wide), which name no slice, team, label
 * or tenant. Other tenants' slices count in the aggregates only.
 */
#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "node_int.h"

#define METRICS_CAP (4u << 20)

struct buf {
	char *p;
	size_t len, cap;
	bool full;
};

static void put(struct buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->full)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt,
		              ap);
		va_end(ap);
		if (n < 0) {
			b->full = true;
			return;
		}
		if (b->p && (size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t cap = b->cap ? b->cap * 2 : 16384;
			char *np;

			while (cap < b->len + (size_t)n + 1)
				cap *= 2;
			if (cap > METRICS_CAP) {
				b->full = true;
				return;
			}
			np = realloc(b->p, cap);
			if (np == NULL) {
				b->full = true;
				return;
			}
			b->p = np;
			b->cap = cap;
		}
	}
}

/* Label value escaped per the text format. */
static const char *esc(const char *s, char *out, size_t len)
{
	size_t o = 0;

	for (; *s && o + 3 < len; s++) {
		if (*s == '\\' || *s == '"') {
			out[o++] = '\\';
			out[o++] = *s;
		} else if (*s == '\n') {
			out[o++] = '\\';
			out[o++] = 'n';
		} else {
			out[o++] = *s;
		}
	}
	out[o] = '\0';
	return out;
}

static void head(struct buf *b, const char *name, const char *type,
                 const char *help)
{
	put(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

struct srow {
	struct gs_slice s;
	struct gs_node_usage u;
	uint64_t wd_actions, faults;
	uint64_t launches;
	bool shown; /* the viewer may see this slice's own series */
};

static bool team_shown(const struct srow *rows, int n, const char *team)
{
	for (int i = 0; i < n; i++)
		if (rows[i].shown && strcmp(rows[i].s.team, team) == 0)
			return true;
	return false;
}

void gs_metrics_render(void *ctx, const struct gs_peer *viewer, char **body,
                       size_t *len)
{
	struct gs_metrics_ctx *mc = ctx;
	struct gs_node *node = mc->node;
	struct buf b = {0};
	struct srow *rows = NULL;
	struct gs_gpus *g = malloc(sizeof(*g));
	struct gs_node_counters c;
	int n = 0, n_teams = 0;
	struct gs_team *teams = NULL;
	uint64_t batches = 0, ops = 0;
	int util[GS_GPUS_MAX];
	uint64_t gmem_used[GS_GPUS_MAX];

	*body = NULL;
	*len = 0;
	if (g == NULL)
		return;
	pthread_mutex_lock(&node->lock);
	*g = *node->gpus;
	rows = calloc((size_t)node->n + 1, sizeof(*rows));
	for (int i = 0; rows && i < node->n; i++) {
		struct gs__nslice *ns = node->v[i];
		struct gs_slice_usage u;

		rows[n].s = ns->s;
		rows[n].shown = viewer->admin || ns->s.owner_uid == viewer->uid;
		rows[n].u = ns->live;
		rows[n].wd_actions = ns->watchdog_actions;
		rows[n].faults = ns->faults;
		if (node->region && ns->has_ref &&
		    gs_region_slice_usage(node->region, &ns->ref, &u) ==
		        GS_OK) {
			rows[n].u.n_procs = u.n_procs;
			rows[n].u.mem_used = u.mem_used;
			rows[n].u.busy_ns = u.busy_ns;
			rows[n].u.throttled_ns = u.throttled_ns;
			rows[n].u.sm_seconds =
			    gs__ledger_sm_seconds(node, ns, u.busy_ns);
			rows[n].launches = u.launches;
		}
		n++;
	}
	for (int i = 0; i < g->n; i++) {
		util[i] = gs_gpus_utilization(node->gpus, i);
		gmem_used[i] = gs_gpus_memory_used(node->gpus, i);
	}
	c = node->ctr;
	pthread_mutex_unlock(&node->lock);
	gs_store_stats(node->store, &batches, &ops);
	(void)gs_node_team_list(node, &teams, &n_teams);

	/* ---- slices ---- */
	{
		static const struct {
			const char *name, *type, *help;
		} fam[] = {
		    {"gpuslice_slice_memory_used_bytes", "gauge",
		     "GPU memory the slice's processes hold, by the shim's books"},
		    {"gpuslice_slice_memory_limit_bytes", "gauge",
		     "GPU memory cap of the slice (0: no cap)"},
		    {"gpuslice_slice_memory_nvml_bytes", "gauge",
		     "GPU memory NVML reports for the slice's processes (the watchdog's view)"},
		    {"gpuslice_slice_compute_achieved_percent", "gauge",
		     "share of the GPU's time the slice used over the last second or so"},
		    {"gpuslice_slice_compute_limit_percent", "gauge",
		     "compute share the slice may use (0: no limit)"},
		    {"gpuslice_slice_compute_nvml_percent", "gauge",
		     "SM utilisation NVML reports for the slice's processes (the watchdog's last window; to compare with the shim's figures)"},
		    {"gpuslice_slice_gpu_seconds_total", "counter",
		     "GPU time the slice's kernels ran"},
		    {"gpuslice_slice_sm_share", "gauge",
		     "share of its device's SMs the slice's kernels may use (MPS active thread percentage / 100; 1 for turns and MIG)"},
		    {"gpuslice_slice_sm_seconds_total", "counter",
		     "SM-time: GPU time x SM share, charged per interval (MPS and time-sliced slices on one scale)"},
		    {"gpuslice_slice_throttled_seconds_total", "counter",
		     "time the slice's launches waited for the scheduler (turns, priority, compute limit)"},
		    {"gpuslice_slice_queue_wait_seconds", "gauge",
		     "mean wait per kernel launch (throttled time / launches)"},
		    {"gpuslice_slice_processes", "gauge",
		     "processes attached to the slice"},
		    {"gpuslice_slice_faults_total", "counter",
		     "GPU faults (Xid, MPS) that hit the slice since the daemon started"},
		    {"gpuslice_slice_watchdog_actions_total", "counter",
		     "watchdog actions taken on the slice since the daemon started"},
		    {"gpuslice_slice_state", "gauge",
		     "1 for the slice's current state"},
		    {"gpuslice_slice_info", "gauge",
		     "1 per slice, with its mode, priority and labels"},
		    {"gpuslice_slice_memory_promised_bytes", "gauge",
		     "GPU memory promised to the slice (its cap; docs/swap.md)"},
		    {"gpuslice_slice_memory_resident_bytes", "gauge",
		     "of the promised memory, what is not swapped out (promised less swapped)"},
		    {"gpuslice_slice_memory_swapped_bytes", "gauge",
		     "of the promised memory, what is swapped out to host memory"},
		    {"gpuslice_slice_swap_outs_total", "counter",
		     "times the slice's memory was swapped out to host memory"},
		    {"gpuslice_slice_swap_ins_total", "counter",
		     "times the slice's memory was swapped back in"},
		    {"gpuslice_slice_swap_out_seconds_total", "counter",
		     "time the daemon's swap-outs of the slice took, request to answer"},
		    {"gpuslice_slice_swap_in_seconds_total", "counter",
		     "time the daemon's swap-ins of the slice took, request to answer"},
		};
		for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
			head(&b, fam[f].name, fam[f].type, fam[f].help);
			for (int i = 0; i < n; i++) {
				const struct srow *r = &rows[i];
				char sl[140], tm[140], lab[400];
				double v = 0;

				if (!r->shown)
					continue;
				snprintf(lab, sizeof(lab),
				         "gpu=\"%d\",slice=\"%s\",team=\"%s\"",
				         r->s.gpu_index,
				         esc(r->s.name, sl, sizeof(sl)),
				         esc(r->s.team, tm, sizeof(tm)));
				switch (f) {
				case 0:
					v = (double)r->u.mem_used;
					break;
				case 1:
					v = (double)r->s.spec.memory_bytes;
					break;
				case 2:
					v = (double)r->u.nvml_mem;
					break;
				case 3:
					v = r->u.compute_pct;
					break;
				case 4:
					v = r->s.spec.compute_pct;
					break;
				case 5:
					if (r->u.nvml_compute_pct < 0)
						continue; /* NVML has none */
					v = r->u.nvml_compute_pct;
					break;
				case 6:
					v = (double)r->u.busy_ns / 1e9;
					break;
				case 7:
					v = r->u.sm_share;
					break;
				case 8:
					v = r->u.sm_seconds;
					break;
				case 9:
					v = (double)r->u.throttled_ns / 1e9;
					break;
				case 10:
					v = r->launches
					        ? (double)r->u.throttled_ns /
					              1e9 / (double)r->launches
					        : 0;
					break;
				case 11:
					v = r->u.n_procs;
					break;
				case 12:
					v = (double)r->faults;
					break;
				case 13:
					v = (double)r->wd_actions;
					break;
				case 14:
					put(&b, "%s{%s,state=\"%s\"} 1\n",
					    fam[f].name, lab,
					    gs_slice_state_name(r->s.state));
					continue;
				case 15:
					put(&b, "%s{%s,mode=\"%s\",priority=\"%s\"",
					    fam[f].name, lab,
					    gs_mode_name(r->s.mode),
					    gs_priority_name(
					        r->s.spec.priority));
					for (int k = 0; k < r->s.n_labels; k++) {
						char lv[2 * GS_SLICE_LABEL_VALUE_MAX];

						put(&b, ",%s=\"%s\"",
						    r->s.labels[k].key,
						    esc(r->s.labels[k].value, lv,
						        sizeof(lv)));
					}
					put(&b, "} 1\n");
					continue;
				case 16:
					v = (double)r->s.spec.memory_bytes;
					break;
				case 17:
					v = r->s.spec.memory_bytes >
					            r->s.swap.swapped_bytes
					        ? (double)(r->s.spec.memory_bytes -
					                   r->s.swap.swapped_bytes)
					        : 0;
					break;
				case 18:
					v = (double)r->s.swap.swapped_bytes;
					break;
				case 19:
					v = (double)r->s.swap.swap_outs;
					break;
				case 20:
					v = (double)r->s.swap.swap_ins;
					break;
				case 21:
					v = (double)r->s.swap.out_ns_total / 1e9;
					break;
				case 22:
					v = (double)r->s.swap.in_ns_total / 1e9;
					break;
				}
				put(&b, "%s{%s} %.17g\n", fam[f].name, lab, v);
			}
		}
	}

	/* ---- GPUs ---- */
	head(&b, "gpuslice_gpu_memory_total_bytes", "gauge",
	     "physical memory of the GPU");
	for (int i = 0; i < g->n; i++) {
		char m[120];

		put(&b,
		    "gpuslice_gpu_memory_total_bytes{gpu=\"%d\",model=\"%s\"} %llu\n",
		    i, esc(g->gpu[i].model, m, sizeof(m)),
		    (unsigned long long)g->gpu[i].memory_bytes);
	}
	head(&b, "gpuslice_gpu_memory_used_bytes", "gauge",
	     "memory in use on the GPU as NVML reports it");
	for (int i = 0; i < g->n; i++)
		put(&b, "gpuslice_gpu_memory_used_bytes{gpu=\"%d\"} %llu\n", i,
		    (unsigned long long)gmem_used[i]);
	{
		static const char *const names[3] = {
		    "gpuslice_gpu_memory_allocated_bytes",
		    "gpuslice_gpu_compute_allocated_percent",
		    "gpuslice_gpu_slices"};
		static const char *const helps[3] = {
		    "memory promised to slices on the GPU",
		    "compute promised to slices on the GPU",
		    "slices placed on the GPU"};

		for (int f = 0; f < 3; f++) {
			head(&b, names[f], "gauge", helps[f]);
			for (int i = 0; i < g->n; i++) {
				uint64_t mem = 0, comp = 0, k = 0;

				for (int j = 0; j < n; j++) {
					if (rows[j].s.gpu_index != i)
						continue;
					mem += rows[j].s.spec.memory_bytes;
					comp += (uint64_t)rows[j]
					            .s.spec.compute_pct;
					k++;
				}
				put(&b, "%s{gpu=\"%d\"} %llu\n", names[f], i,
				    (unsigned long long)(f == 0   ? mem
				                         : f == 1 ? comp
				                                  : k));
			}
		}
	}
	head(&b, "gpuslice_gpu_utilization_percent", "gauge",
	     "share of time a kernel ran on the GPU (NVML)");
	for (int i = 0; i < g->n; i++)
		if (util[i] >= 0)
			put(&b,
			    "gpuslice_gpu_utilization_percent{gpu=\"%d\"} %d\n",
			    i, util[i]);
	head(&b, "gpuslice_gpu_healthy", "gauge",
	     "1 while the GPU is healthy, 0 after an Xid that is not an application error (until gpusliced restarts)");
	for (int i = 0; i < g->n; i++)
		put(&b, "gpuslice_gpu_healthy{gpu=\"%d\"} %d\n", i,
		    gs_node_gpu_health(node, i, NULL, 0) ? 1 : 0);
	head(&b, "gpuslice_gpu_mig_instances", "gauge",
	     "MIG instances on the GPU");
	for (int i = 0; i < g->n; i++)
		put(&b, "gpuslice_gpu_mig_instances{gpu=\"%d\"} %d\n", i,
		    g->gpu[i].n_mig);

	/* ---- teams ---- */
	{
		static const char *const names[4] = {
		    "gpuslice_team_memory_guarantee_bytes",
		    "gpuslice_team_memory_used_bytes",
		    "gpuslice_team_compute_guarantee_percent",
		    "gpuslice_team_compute_used_percent"};
		static const char *const helps[4] = {
		    "memory guaranteed to the team",
		    "memory held by the team's slices and its sub-teams'",
		    "compute guaranteed to the team (percent of one GPU)",
		    "compute held by the team's slices and its sub-teams'"};
		struct gs_team *t = calloc((size_t)n_teams + 1, sizeof(*t));
		struct gs_qvec *use = calloc((size_t)n_teams + 1, sizeof(*use));
		bool *ok = calloc((size_t)n_teams + 1, sizeof(*ok));

		for (int i = 0; t && use && ok && i < n_teams; i++)
			ok[i] = gs_node_team_get(node, teams[i].name, &t[i],
			                         &use[i]) == GS_OK;
		for (int f = 0; t && use && ok && f < 4; f++) {
			head(&b, names[f], "gauge", helps[f]);
			for (int i = 0; i < n_teams; i++) {
				char tm[140];
				int64_t v;

				if (!ok[i] || !(viewer->admin ||
				                team_shown(rows, n, t[i].name)))
					continue;
				v = f == 0   ? t[i].guarantee.v[GS_QRES_MEMORY]
				    : f == 1 ? use[i].v[GS_QRES_MEMORY]
				    : f == 2 ? t[i].guarantee.v[GS_QRES_COMPUTE]
				             : use[i].v[GS_QRES_COMPUTE];
				put(&b, "%s{team=\"%s\"} %lld\n", names[f],
				    esc(t[i].name, tm, sizeof(tm)),
				    (long long)v);
			}
		}
		free(t);
		free(use);
		free(ok);
	}

	/* ---- daemon ---- */
	head(&b, "gpuslice_slices", "gauge", "slices on the node");
	put(&b, "gpuslice_slices %d\n", n);
	head(&b, "gpuslice_slice_operations_total", "counter",
	     "slice creates and deletes acknowledged since start");
	put(&b,
	    "gpuslice_slice_operations_total{op=\"create\"} %llu\n"
	    "gpuslice_slice_operations_total{op=\"delete\"} %llu\n",
	    (unsigned long long)c.creates, (unsigned long long)c.deletes);
	head(&b, "gpuslice_admission_rejects_total", "counter",
	     "creates refused for quota or room");
	put(&b, "gpuslice_admission_rejects_total %llu\n",
	    (unsigned long long)c.rejects);
	head(&b, "gpuslice_reclaims_total", "counter",
	     "slices preempted to give a team back its guarantee");
	put(&b, "gpuslice_reclaims_total %llu\n",
	    (unsigned long long)c.reclaims);
	{
		int parked = 0;

		for (int i = 0; i < n; i++)
			parked += rows[i].s.state == GS_SLICE_PARKED;
		head(
		    &b, "gpuslice_parked_slices", "gauge",
		    "slices parked by a quota reclaim (swapped out, counted nowhere)");
		put(&b, "gpuslice_parked_slices %d\n", parked);
	}
	head(&b, "gpuslice_parks_total", "counter",
	     "reclaim victims parked instead of killed");
	put(&b, "gpuslice_parks_total %llu\n", (unsigned long long)c.parks);
	head(&b, "gpuslice_resumes_total", "counter", "parked slices resumed");
	put(&b, "gpuslice_resumes_total %llu\n",
	    (unsigned long long)c.resumes);
	head(&b, "gpuslice_watchdog_actions_total", "counter",
	     "watchdog actions by kind");
	put(&b,
	    "gpuslice_watchdog_actions_total{action=\"flag\"} %llu\n"
	    "gpuslice_watchdog_actions_total{action=\"kill\"} %llu\n",
	    (unsigned long long)c.watchdog_flags,
	    (unsigned long long)c.watchdog_kills);
	head(&b, "gpuslice_ledger_books_refused_total", "counter",
	     "region books the ledger refused (not finite, out of range, going back)");
	put(&b, "gpuslice_ledger_books_refused_total %llu\n",
	    (unsigned long long)c.books_refused);
	head(&b, "gpuslice_ledger_divergences_total", "counter",
	     "ledger rows where a slice's books and NVML disagree");
	put(&b, "gpuslice_ledger_divergences_total %llu\n",
	    (unsigned long long)c.ledger_divergences);
	head(&b, "gpuslice_unattributed_gpu_seconds_total", "counter",
	     "GPU time NVML accounting saw in no slice");
	put(&b, "gpuslice_unattributed_gpu_seconds_total %.3f\n",
	    (double)c.unattributed_gpu_ns / 1e9);
	head(&b, "gpuslice_faults_total", "counter",
	     "slices marked faulted (Xid, MPS)");
	put(&b, "gpuslice_faults_total %llu\n", (unsigned long long)c.faults);
	head(&b, "gpuslice_mps_daemons", "gauge",
	     "MPS control daemons the reconciler runs");
	put(&b, "gpuslice_mps_daemons %d\n",
	    mc->rec ? gs_reconciler_mps_running(mc->rec) : 0);
	head(&b, "gpuslice_store_commits_total", "counter",
	     "store transactions committed (group commit batches)");
	put(&b, "gpuslice_store_commits_total %llu\n",
	    (unsigned long long)batches);
	head(&b, "gpuslice_store_writes_total", "counter",
	     "write operations committed in those batches");
	put(&b, "gpuslice_store_writes_total %llu\n", (unsigned long long)ops);
	head(&b, "gpuslice_store_commit_failures_total", "counter",
	     "batches that failed to commit");
	put(&b, "gpuslice_store_commit_failures_total %llu\n",
	    (unsigned long long)c.commit_failures);
	head(&b, "gpuslice_daemon_start_time_seconds", "gauge",
	     "when the daemon started (Unix time)");
	put(&b, "gpuslice_daemon_start_time_seconds %.3f\n",
	    (double)c.started_ns / 1e9);
	head(&b, "gpuslice_simulated", "gauge",
	     "1 when the GPUs are the simulator's (numbers measure gpuslice's logic, not a GPU)");
	put(&b, "gpuslice_simulated %d\n", g->sim ? 1 : 0);

	free(rows);
	free(teams);
	free(g);
	if (b.full && b.p) {
		/* Truncated pages would mislead: say so instead. */
		b.len = 0;
		put(&b, "# gpuslice: metrics page over its size cap\n");
	}
	*body = b.p;
	*len = b.len;
}
