/*
 * park.c - the parking policy (gs/park.h): whether a quota reclaim's
 * victim is parked instead of killed, and which parked slices resume.
 * Resuming is admission again (gs_admit) with the request pinned to the
 * parked slice's own GPU, mode and amounts, on a working copy of the
 * snapshot that grows by each slice resumed before it.
 */
#include "gs/park.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool gs_park_may_park(const struct gs_park_victim *v, char *why, size_t why_len)
{
	char tmp[GS_PARK_WHY_MAX];
	const char *no = NULL;

	if (why == NULL || why_len == 0) {
		why = tmp;
		why_len = sizeof(tmp);
	}
	why[0] = '\0';
	if (!v->swap_on)
		no = "swap is off on this node (swap.oversubscribe 1)";
	else if (gs_mode_is_mig(v->mode))
		no = "a MIG slice's memory is not swapped";
	else if (v->isolation == GS_ISOLATION_EXCLUSIVE)
		no = "a whole GPU's memory is not swapped";
	else if (v->swap == GS_SWAP_NEVER)
		no = "its slice is swap: never";
	else if (v->pinned != NULL && v->pinned[0]) {
		(void)snprintf(why, why_len, "it is pinned: its process %s",
		               v->pinned);
		return false;
	} else if (!v->movable)
		no = "no process of it holds movable memory";
	else if (v->resident_bytes > v->host_free_bytes) {
		(void)snprintf(
		    why, why_len,
		    "its %llu MiB would take swapped contents past swap.host_memory (%llu MiB left)",
		    (unsigned long long)(v->resident_bytes >> 20),
		    (unsigned long long)(v->host_free_bytes >> 20));
		return false;
	}
	if (no == NULL)
		return true;
	(void)snprintf(why, why_len, "%s", no);
	return false;
}

bool gs_park_before(const struct gs_park_waiting *a,
                    const struct gs_park_waiting *b)
{
	if (a->slice->priority != b->slice->priority)
		return a->slice->priority > b->slice->priority;
	if (a->parked_ns != b->parked_ns)
		return a->parked_ns < b->parked_ns;
	return a->slice->id < b->slice->id;
}

/* Whether waiting[i] is admitted back as it was, on the working
 * snapshot. OUT: *borrowed. GS_ERR_NOMEM only. */
static gs_err fits_back(const struct gs_adm_snapshot *work,
                        const struct gs_park_waiting *w, bool *fits,
                        bool *borrowed)
{
	const struct gs_adm_slice *s = w->slice;
	struct gs_adm_request req;
	struct gs_adm_decision dec;
	gs_err err;

	memset(&req, 0, sizeof(req));
	req.spec = *w->spec;
	req.spec.mode = s->mode;
	req.spec.memory_bytes = s->memory_bytes;
	req.spec.compute_pct = s->compute_pct;
	memset(&req.spec.gpu, 0, sizeof(req.spec.gpu));
	req.spec.gpu.kind = GS_GPU_INDEX;
	req.spec.gpu.index = s->gpu;
	req.team = s->team >= 0 ? s->team : work->cfg.default_team;
	req.owner_uid = s->owner_uid;
	/* its owner's limits hold as at any create (root's slices, made by
	 * an administrator or an integration, are not bound by them) */
	req.admin = s->owner_uid == 0;
	err = gs_admit(work, &req, &dec, NULL);
	*fits = err == GS_OK && dec.n_victims == 0 && dec.gpu == s->gpu &&
	        dec.memory_bytes == s->memory_bytes;
	*borrowed = dec.borrowed;
	gs_adm_decision_fini(&dec);
	return err == GS_ERR_NOMEM ? err : GS_OK;
}

gs_err gs_park_plan_resume(const struct gs_adm_snapshot *sn,
                           const struct gs_park_waiting *waiting, size_t n,
                           struct gs_park_resume *out, size_t *n_out,
                           struct gs_errbuf *eb)
{
	struct gs_adm_snapshot *work = NULL;
	struct gs_adm_slice *slices = NULL;
	size_t *order = NULL;
	bool blocked[GS_ADM_GPUS_MAX] = {false};
	gs_err err = GS_OK;

	*n_out = 0;
	if (n == 0)
		return GS_OK;
	if (sn == NULL || waiting == NULL || out == NULL || sn->n_slices < 0)
		return gs_fail(eb, GS_ERR_INVALID, "park: bad arguments");
	for (size_t i = 0; i < n; i++)
		if (waiting[i].slice == NULL || waiting[i].spec == NULL)
			return gs_fail(eb, GS_ERR_INVALID,
			               "park: waiting slice %zu is incomplete",
			               i);
	work = malloc(sizeof(*work));
	slices = calloc((size_t)sn->n_slices + n + 1, sizeof(*slices));
	order = calloc(n, sizeof(*order));
	if (work == NULL || slices == NULL || order == NULL) {
		err = gs_fail(eb, GS_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* priority, then park time, then id (insertion sort: a node parks
	 * a handful) */
	for (size_t i = 0; i < n; i++) {
		size_t j = i;

		while (j > 0 &&
		       gs_park_before(&waiting[i], &waiting[order[j - 1]])) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	*work = *sn;
	if (sn->n_slices > 0)
		memcpy(slices, sn->slices,
		       (size_t)sn->n_slices * sizeof(*slices));
	work->slices = slices;
	work->demand = NULL;
	for (size_t k = 0; k < n; k++) {
		const struct gs_park_waiting *w = &waiting[order[k]];
		int gpu = w->slice->gpu;
		bool fits = false, borrowed = false;

		if (gpu < 0 || gpu >= sn->n_gpus || blocked[gpu])
			continue;
		/* the parked slices not yet back hold their slots; this one
		 * takes its own back */
		work->n_parked = (int)(n - *n_out - 1);
		err = fits_back(work, w, &fits, &borrowed);
		if (err) {
			err = gs_fail(eb, err, "out of memory");
			goto out;
		}
		if (!fits) {
			blocked[gpu] = true;
			continue;
		}
		out[*n_out].waiting = order[k];
		out[*n_out].borrowed = borrowed;
		(*n_out)++;
		slices[work->n_slices++] = *w->slice;
	}
out:
	free(order);
	free(slices);
	free(work);
	return err;
}
