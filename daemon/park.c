/*
 * park.c - a quota reclaim's victim parked instead of killed (see park.h
 * and core's gs/park.h, docs/swap.md "Parking"): the facts the policy
 * needs, read from the region under the node lock (the slice's swap
 * record: pin, swapped bytes; its books: memory held; its processes'
 * need records: movable memory), and the model's changes the policy's
 * answers make (PARKED and back, their events, rows and counters).
 *
 * The moves themselves are the swapper's (swapper.c): it swaps a parked
 * slice out (and keeps its processes waiting at their next GPU call),
 * asks gs__park_resume each idle tick, swaps a resumed slice back in as
 * the swap policy allows, and calls gs__park_fail when a park's swap-out
 * fails. Owns nothing.
 */
#include "park.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/log.h"
#include "gs/park.h"
#include "gs/region_swap.h"
#include "ledger.h"
#include "node_int.h"
#include "remove.h"
#include "slots.h"
#include "snapshot.h"
#include "trust.h"

/* Host memory that swapped contents hold or will hold: every slice's
 * swapped bytes, and what parked slices not yet out hold on the GPU.
 * Lock held. */
static uint64_t host_used(struct gs_node *node)
{
	uint64_t used = 0;

	for (int i = 0; i < node->n; i++) {
		struct gs__nslice *ns = node->v[i];
		struct gs_swap_rec rec;
		struct gs_slice_usage u;

		if (!ns->has_ref ||
		    gs_region_swap_read(node->region, &ns->ref, &rec) != GS_OK)
			continue;
		used += rec.swapped_bytes;
		if (ns->s.state == GS_SLICE_PARKED && rec.swapped_bytes == 0 &&
		    gs_region_slice_usage(node->region, &ns->ref, &u) == GS_OK)
			used += u.mem_used;
	}
	return used;
}

/* Whether a process of `ns` holds movable memory (its shim answers swap
 * requests). Lock held. */
static bool movable(struct gs_node *node, const struct gs__nslice *ns)
{
	struct gs_proc_ref it = {.slot = GS_REGION_NEED_NO_SCAN};
	struct gs_swap_need nd;
	bool any = false;

	while (gs_region_swap_need_next(node->region, &it, &nd))
		if (nd.slice.slot == ns->ref.slot &&
		    nd.slice.generation == ns->ref.generation &&
		    (nd.flags & GS_SWAP_PROC_MOVABLE))
			any = true;
	return any;
}

bool gs__park_victim(struct gs_node *node, struct gs__nslice *ns,
                     const char *team, const char *for_slice, struct gs__wr *wr,
                     char *why, size_t len)
{
	const struct gs_config *cfg = node->cfg;
	struct gs_park_victim v;
	struct gs_swap_rec rec;
	struct gs_slice_usage u;
	char pin[96] = "";
	uint64_t used;

	memset(&v, 0, sizeof(v));
	v.swap_on = cfg->swap_oversubscribe > 1.0 && node->region != NULL;
	v.mode = ns->s.mode;
	v.isolation = ns->s.spec.isolation;
	v.swap = ns->s.spec.swap;
	if (v.swap_on && ns->has_ref &&
	    gs_region_swap_read(node->region, &ns->ref, &rec) == GS_OK &&
	    gs_region_slice_usage(node->region, &ns->ref, &u) == GS_OK) {
		snprintf(pin, sizeof(pin), "%s",
		         gs_swap_pin_reason(rec.pinned));
		v.movable = movable(node, ns);
		v.resident_bytes = u.mem_used > rec.swapped_bytes
		                       ? u.mem_used - rec.swapped_bytes
		                       : 0;
		used = host_used(node);
		v.host_free_bytes = cfg->swap_host_memory == 0
		                        ? UINT64_MAX
		                        : (cfg->swap_host_memory > used
		                               ? cfg->swap_host_memory - used
		                               : 0);
	}
	v.pinned = pin[0] ? pin : NULL;
	if (!gs_park_may_park(&v, why, len))
		return false;
	/* A ledger row ends at the park: the time before it billed as
	 * live, the time after as parked (no GPU memory-time). */
	gs__ledger_sample(node, ns, wr, gs_now_ns());
	ns->s.state = GS_SLICE_PARKED;
	ns->s.parked_ns = gs_now_ns();
	ns->s.updated_ns = ns->s.parked_ns;
	/* show prints it after the state: "parked: team ..." */
	snprintf(ns->s.reason, sizeof(ns->s.reason),
	         "team %s reclaimed its guarantee for slice %s", team,
	         for_slice);
	/* Its limits say so (GS_SLICE_IS_PARKED), before the swapper asks for
	 * the swap-out: a process joining it starts stopped, and an
	 * allocation waiting for memory waits on (a failed write is logged;
	 * housekeeping writes it again). */
	(void)gs__slot_put(node, ns, NULL);
	gs__wr_slice_put(wr, &ns->s);
	gs__wr_event(
	    wr, "quota.park", &ns->s,
	    "parked: team %s reclaimed its guarantee for slice %s; it holds %.0f MiB on the GPU, swapped out now; its processes wait until it resumes",
	    team, for_slice, (double)v.resident_bytes / (1024.0 * 1024.0));
	node->ctr.parks++;
	gs_info("node", "slice=%s parked for=%s team=%s", ns->s.name, for_slice,
	        team);
	return true;
}

void gs__park_resume(struct gs_node *node, int64_t *ids, int max, int *n)
{
	struct gs_adm_snapshot *sn = NULL;
	struct gs_adm_slice *snap = NULL, *as = NULL;
	struct gs_park_waiting *w = NULL;
	struct gs_park_resume *out = NULL;
	struct gs__nslice **who = NULL;
	struct gs__wr *wr = NULL;
	struct gs_errbuf eb;
	size_t nw = 0, nr = 0;
	int64_t now;

	*n = 0;
	for (int i = 0; i < node->n; i++)
		if (node->v[i]->s.state == GS_SLICE_PARKED)
			nw++;
	if (nw == 0)
		return;
	gs_errbuf_init(&eb);
	sn = malloc(sizeof(*sn));
	as = calloc(nw, sizeof(*as));
	w = calloc(nw, sizeof(*w));
	out = calloc(nw, sizeof(*out));
	who = calloc(nw, sizeof(*who));
	if (sn == NULL || as == NULL || w == NULL || out == NULL ||
	    who == NULL || gs__node_snapshot(node, sn, &snap) != GS_OK) {
		gs_warn("node", "parked slices not looked at: out of memory");
		goto out;
	}
	nw = 0;
	for (int i = 0; i < node->n; i++) {
		struct gs__nslice *ns = node->v[i];

		if (ns->s.state != GS_SLICE_PARKED)
			continue;
		gs__node_adm_slice(node, &ns->s, &as[nw]);
		w[nw].slice = &as[nw];
		w[nw].spec = &ns->s.spec;
		w[nw].parked_ns = ns->s.parked_ns;
		who[nw++] = ns;
	}
	if (gs_park_plan_resume(sn, w, nw, out, &nr, &eb) != GS_OK) {
		gs_warn("node", "parked slices not looked at: %s",
		        gs_errbuf_msg(&eb, GS_ERR_NOMEM));
		goto out;
	}
	if (nr == 0)
		goto out;
	wr = gs__wr_new();
	if (wr == NULL) {
		gs_warn("node", "parked slices not resumed: out of memory");
		goto out;
	}
	now = gs_now_ns();
	for (size_t k = 0; k < nr && *n < max; k++) {
		struct gs__nslice *ns = who[out[k].waiting];
		double secs = (double)(now - ns->s.parked_ns) / 1e9;

		/* a row ends at the resume: its time was parked */
		gs__ledger_sample(node, ns, wr, now);
		ns->s.state = GS_SLICE_READY;
		ns->s.borrowed = out[k].borrowed;
		ns->s.reason[0] = '\0';
		ns->s.parked_ns = 0;
		ns->s.updated_ns = now;
		/* its limits lose GS_SLICE_IS_PARKED before its memory is asked
		 * back: its processes stopped since they joined go on */
		(void)gs__slot_put(node, ns, NULL);
		gs__wr_slice_put(wr, &ns->s);
		gs__wr_event(
		    wr, "quota.resume", &ns->s,
		    "resumed after %.0f s parked: gpu %d and team %s have room for it again%s",
		    secs, ns->s.gpu_index, ns->s.team,
		    out[k].borrowed ? " (borrowed)" : "");
		gs_info("node", "slice=%s resumed after %.1f s parked",
		        ns->s.name, secs);
		node->ctr.resumes++;
		ids[(*n)++] = ns->s.id;
	}
	gs__node_submit_detached(node, wr);
out:
	free(snap);
	free(sn);
	free(as);
	free(w);
	free(out);
	free(who);
}

void gs__park_fail(struct gs_node *node, int64_t id, const char *err_text)
{
	struct gs__nslice *ns;
	struct gs__wr wr;
	char why[256];

	pthread_mutex_lock(&node->lock);
	ns = gs__node_find_id(node, id);
	if (ns == NULL || ns->s.state != GS_SLICE_PARKED) {
		pthread_mutex_unlock(&node->lock);
		return;
	}
	snprintf(why, sizeof(why),
	         "preempted: %.120s; not parked: its swap-out failed (%s)",
	         ns->s.reason[0] ? ns->s.reason : "a quota reclaim", err_text);
	gs_warn("node", "slice=%s parking failed (%s): preempted", ns->s.name,
	        err_text);
	gs__wr_init(&wr);
	gs__trust_signal(node, ns, SIGTERM);
	gs__node_remove(node, ns, &wr, "quota.reclaim", why);
	gs__node_submit(node, &wr);
	pthread_mutex_unlock(&node->lock);
	(void)gs__node_wait(node, &wr, NULL);
}
