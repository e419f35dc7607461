/*
 * acct.c - the ledger's ground truth (acct.h): per process that NVML
 * accounting lists, the GPU time already charged and the slice it is
 * charged to. Owned by the watchdog, which polls it every tick under the
 * node lock.
 *
 * A process is placed in a slice once, at first sight: by the kernel
 * (its own or an ancestor's confirmed entry, through the caller) while it
 * runs, or, when it ended before it was ever seen, by what was seen of it
 * while it ran. Each poll charges its slice what NVML's figure grew by
 * since (never less than zero: a running process's figure is a share of
 * its life to 1 %, and the final one, after it ended, settles it). A
 * process placed nowhere is reported once (`watchdog.unattributed`) and
 * its time counted for the metric; the report names its owner, recorded
 * when it started (procwatch.c: a process that ended before any watchdog
 * scan met it has nothing left in /proc to say whose it was).
 *
 * The first poll of a GPU after the daemon started takes what NVML
 * already holds as charged (the previous daemon's rows billed it).
 *
 * Each poll also corrects what limited slices are charged: a time-sliced
 * slice's books (the shim's event spans) also count what other contexts
 * ran inside its spans, so after the processes are charged, each such
 * slice's books and what NVML charged it go to its charge ratio
 * (chargeratio.c), and a ratio that moved is published in its limits
 * record (gs_region_slice_set_charge) for its shims to scale their
 * bucket's charge by.
 */
#include "acct.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chargeratio.h"
#include "gpu_acct.h"
#include "gs/log.h"
#include "ledger.h"
#include "node_int.h"
#include "procwatch.h"

#define ACCT_MAX_LIST 1024

struct rec {
	int gpu;
	int32_t pid;
	uint64_t start_us;
	int64_t slice_id; /* -1: in no slice */
	uint64_t charged_ns;
	uint64_t seen; /* poll number it was last listed in */
	bool reported;
	bool met_alive; /* listed running when first seen */
};

struct gs__acct {
	struct rec *v;
	int n, cap;
	uint64_t poll;
	bool polled[GS_GPUS_MAX];  /* a first poll was made */
	bool refused[GS_GPUS_MAX]; /* turning it on failed (said once) */
	struct gs_gpu_acct *list;
	struct gs__procwatch *pw; /* who ran each process */
	struct gs__cratio *cr;    /* limited slices' charge ratios */
};

struct gs__acct *gs__acct_create(void)
{
	struct gs__acct *a = calloc(1, sizeof(*a));

	if (a == NULL)
		return NULL;
	a->list = malloc(sizeof(*a->list) * ACCT_MAX_LIST);
	a->pw = gs__procwatch_create();
	a->cr = gs__cratio_create();
	if (a->list == NULL || a->pw == NULL || a->cr == NULL) {
		gs__cratio_destroy(a->cr);
		gs__procwatch_destroy(a->pw);
		free(a->list);
		free(a);
		return NULL;
	}
	return a;
}

void gs__acct_destroy(struct gs__acct *a)
{
	if (a == NULL)
		return;
	gs__cratio_destroy(a->cr);
	gs__procwatch_destroy(a->pw);
	free(a->v);
	free(a->list);
	free(a);
}

/*
 * Whether slice `ns`'s charge is corrected by NVML: a compute share on a
 * time-sliced GPU (its shims time batches and charge a bucket; under MPS
 * or MIG no other context's time falls inside its spans).
 */
static bool corrected(const struct gs__nslice *ns)
{
	return ns->s.spec.compute_pct > 0 && ns->s.mode == GS_MODE_TIMESLICE;
}

/* NVML's start times of one process agree to the millisecond or so. */
static bool same_start(uint64_t x, uint64_t y)
{
	return (x > y ? x - y : y - x) <= 20000;
}

static struct rec *rec_find(struct gs__acct *a, int g, int32_t pid,
                            uint64_t start_us)
{
	for (int i = 0; i < a->n; i++)
		if (a->v[i].gpu == g && a->v[i].pid == pid &&
		    same_start(a->v[i].start_us, start_us))
			return &a->v[i];
	return NULL;
}

static struct rec *rec_add(struct gs__acct *a)
{
	if (a->n == a->cap) {
		int cap = a->cap ? a->cap * 2 : 64;
		struct rec *nv = realloc(a->v, sizeof(*nv) * (size_t)cap);

		if (nv == NULL)
			return NULL;
		a->v = nv;
		a->cap = cap;
	}
	memset(&a->v[a->n], 0, sizeof(a->v[0]));
	return &a->v[a->n++];
}

static uint64_t realtime_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

/*
 * Lock held: process `x`, ended, used GPU time in no slice: reported once,
 * with its owner (the uid that ran it, recorded as it started), who is
 * flagged; an owner not known is said to be, and why.
 */
static void unattributed(struct gs__acct *a, struct gs_node *node, int g,
                         const struct gs_gpu_acct *x, struct rec *r,
                         gs__acct_offend_fn offend, void *ctx,
                         struct gs__wr *wr)
{
	int64_t uid = gs__procwatch_uid(a->pw, x->pid, x->start_us);
	const char *how = gs__procwatch_live(a->pw)
	                      ? "recorded as it started"
	                      : "from /proc scans each watchdog tick; the proc connector is unavailable";

	r->reported = true;
	if (uid >= 0)
		node->ctr.watchdog_flags++;
	gs_warn("watchdog", "gpu=%d pid=%d uid=%lld used %.3f s of GPU time in no slice",
	        g, (int)x->pid, (long long)uid, (double)r->charged_ns / 1e9);
	if (uid >= 0)
		gs__wr_event(wr, "watchdog.unattributed", NULL,
		             "gpu %d: process %d (uid %lld) used %.3f s of GPU time in no slice (NVML accounting; owner %s)",
		             g, (int)x->pid, (long long)uid,
		             (double)r->charged_ns / 1e9, how);
	else
		gs__wr_event(wr, "watchdog.unattributed", NULL,
		             "gpu %d: process %d (owner unknown) used %.3f s of GPU time in no slice (NVML accounting; owners %s)",
		             g, (int)x->pid, (double)r->charged_ns / 1e9, how);
	/* One the watchdog met alive was counted when it met it. */
	if (uid > 0 && !r->met_alive && offend != NULL)
		offend(ctx, uid, wr);
}

/*
 * Lock held: charges what process `x` on GPU `g` used since the last poll
 * (`now_us`: the time its running figure is counted to).
 */
static void charge(struct gs__acct *a, struct gs_node *node, int g,
                   const struct gs_gpu_acct *x, gs__acct_place_fn place,
                   gs__acct_offend_fn offend, void *ctx, struct gs__wr *wr,
                   bool first, uint64_t now_us)
{
	struct rec *r = rec_find(a, g, x->pid, x->start_us);
	struct gs__nslice *ns;
	uint64_t d = 0;

	if (r == NULL) {
		r = rec_add(a);
		if (r == NULL) {
			gs_error("watchdog", "gpu=%d pid=%d: out of memory for its accounting; not billed",
			         g, (int)x->pid);
			return;
		}
		r->gpu = g;
		r->pid = x->pid;
		r->start_us = x->start_us;
		r->slice_id = place(ctx, x->pid, x->running);
		r->met_alive = x->running;
		/* Met alive: its owner is known from here on. */
		if (x->running && r->slice_id < 0)
			gs__procwatch_note(a->pw, x->pid);
		/* What the previous daemon's rows billed already. */
		r->charged_ns = first ? x->busy_ns : 0;
	}
	r->seen = a->poll;
	if (x->busy_ns > r->charged_ns) {
		d = x->busy_ns - r->charged_ns;
		r->charged_ns = x->busy_ns;
	}
	ns = r->slice_id >= 0 ? gs__node_find_id(node, r->slice_id) : NULL;
	if (ns != NULL) {
		/* A running figure is a whole percent of the life so far:
		 * off by up to life / 200 at either end of a window. */
		if (corrected(ns))
			gs__cratio_add(a->cr, ns->s.id, d,
			               x->running && now_us > x->start_us
			                   ? (now_us - x->start_us) * 10
			                   : 0);
		if (d > 0)
			gs__ledger_charge(node, r->slice_id, d, 0);
		return;
	}
	if (d == 0)
		return;
	node->ctr.unattributed_gpu_ns += d;
	if (!x->running && !r->reported)
		unattributed(a, node, g, x, r, offend, ctx, wr);
}

/*
 * Lock held, after a poll: each corrected slice's charge ratio steps with
 * its books and what NVML charged it (valid when its GPU's accounting
 * works and its books pass the ledger's check), and a ratio that moved
 * is published for its shims.
 */
static void ratios(struct gs__acct *a, struct gs_node *node,
                   const bool on[GS_GPUS_MAX], struct gs__wr *wr)
{
	int64_t now = gs_now_ns();

	for (int i = 0; i < node->n; i++) {
		struct gs__nslice *ns = node->v[i];
		struct gs_slice_usage u;
		struct gs__cratio_fig f;
		struct gs_errbuf eb = {0};
		bool valid, publish;
		int g = ns->s.gpu_index;
		uint32_t q;

		/* (A slice the watchdog flagged still runs: still corrected.) */
		if (!corrected(ns) || !ns->has_ref || node->region == NULL ||
		    (ns->s.state != GS_SLICE_READY &&
		     ns->s.state != GS_SLICE_FLAGGED))
			continue;
		valid = g >= 0 && g < GS_GPUS_MAX && on[g] &&
		        gs__ledger_books(node, ns, &u, wr) == GS_OK;
		q = gs__cratio_step(a->cr, ns->s.id, now, valid,
		                    valid ? u.busy_ns : 0, &publish, &f);
		if (!publish)
			continue;
		if (gs_region_slice_set_charge(node->region, &ns->ref, q, &eb) !=
		    GS_OK) {
			gs_warn("ledger", "slice=%s charge ratio %.3f not published: %s",
			        ns->s.name, f.ratio, eb.msg);
			continue;
		}
		if (f.raw >= 0)
			gs_info("ledger", "slice=%s charge ratio %.3f (NVML %.3f s / books %.3f s over %.1f s)",
			        ns->s.name, f.ratio, f.nvml_s, f.books_s,
			        f.window_s);
		else
			gs_info("ledger", "slice=%s charge ratio %.3f (no recent window)",
			        ns->s.name, f.ratio);
	}
	gs__cratio_sweep(a->cr);
}

void gs__acct_poll(struct gs__acct *a, struct gs_node *node,
                   gs__acct_place_fn place, gs__acct_offend_fn offend,
                   void *ctx, struct gs__wr *wr, bool on[GS_GPUS_MAX])
{
	uint64_t now_us = realtime_us();
	int k = 0;

	memset(on, 0, sizeof(bool) * GS_GPUS_MAX);
	if (a == NULL)
		return;
	a->poll++;
	/* Without the proc connector: who runs what, seen now. */
	gs__procwatch_scan(a->pw);
	for (int g = 0; g < node->gpus->n && g < GS_GPUS_MAX; g++) {
		gs_err err = gs_gpus_accounting_on(node->gpus, g);
		int n = 0;

		if (err == GS_OK)
			err = gs_gpus_accounting(node->gpus, g, now_us, a->list,
			                         ACCT_MAX_LIST, &n);
		if (err != GS_OK) {
			if (!a->refused[g])
				gs_warn("watchdog", "gpu=%d NVML accounting unavailable (%s): its slices are billed from their books",
				        g, gs_err_name(err));
			a->refused[g] = true;
			continue;
		}
		if (a->refused[g])
			gs_info("watchdog", "gpu=%d NVML accounting works again", g);
		a->refused[g] = false;
		on[g] = true;
		for (int i = 0; i < n; i++)
			charge(a, node, g, &a->list[i], place, offend, ctx, wr,
			       !a->polled[g], now_us);
		a->polled[g] = true;
	}
	ratios(a, node, on, wr);
	/* Forget processes the driver forgot (out of its buffer). */
	for (int i = 0; i < a->n; i++)
		if (a->v[i].seen == a->poll ||
		    (a->v[i].gpu < GS_GPUS_MAX && !on[a->v[i].gpu]))
			a->v[k++] = a->v[i];
	a->n = k;
}
