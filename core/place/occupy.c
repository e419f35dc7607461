/*
 * occupy.c - changing the inventory: a slice occupies a target, is
 * released from it, or a whole placement result is committed; each
 * change re-summarises the node.
 */
#include "place_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- changing the inventory ------------------------------------------- */

static gs_err check_target(const struct gs_place_inv *inv,
                           const struct gs_place_target *t,
                           struct gs_errbuf *eb)
{
	if (t->gpu < 0 || t->gpu >= inv->n_gpus)
		return gs_fail(eb, GS_ERR_INVALID, "no GPU %d", t->gpu);
	if (t->inst >= inv->n_inst ||
	    (t->inst >= 0 && inv->inst[t->inst].gpu != t->gpu))
		return gs_fail(eb, GS_ERR_INVALID,
		               "no MIG instance %d on GPU %d", t->inst, t->gpu);
	return GS_OK;
}

gs_err gs_place_occupy(struct gs_place_inv *inv,
                       const struct gs_place_target *target,
                       const struct gs_place_item *item, struct gs_errbuf *eb)
{
	struct gs_place_request req = {.n = 1};
	struct prep p;
	struct search s;
	struct dstate st;
	char dev[GS_PLACE_NAME_MAX + 64];
	gs_err err;
	bool fits;

	err = check_target(inv, target, eb);
	if (err != GS_OK)
		return err;
	req.item[0] = *item;
	err = gs__place_prepare(&req, &p, eb);
	if (err != GS_OK)
		return err;
	memset(&s, 0, sizeof(s));
	s.inv = inv;
	s.p = &p;
	gs__place_dev_name(inv, target->gpu, target->inst, dev, sizeof(dev));
	if (target->inst >= 0) {
		if (p.it[0].kind == GS_PLACE_WHOLE ||
		    (p.it[0].kind == GS_PLACE_FRACTION && !p.it[0].layered))
			return gs_fail(eb, GS_ERR_INVALID,
			               "%s: only MIG and mig+* slices go in a MIG instance",
			               dev);
		fits = gs__place_inst_fits(&s, target->inst, &p.it[0], &st);
	} else {
		if (inv->gpu[target->gpu].mig)
			return gs_fail(eb, GS_ERR_INVALID,
			               "%s is in MIG mode: name an instance",
			               dev);
		if (p.it[0].kind == GS_PLACE_MIG || p.it[0].layered)
			return gs_fail(eb, GS_ERR_INVALID,
			               "%s: a %s slice needs a MIG instance",
			               dev,
			               p.it[0].kind == GS_PLACE_MIG
			                   ? "MIG"
			                   : gs_mode_name(p.it[0].mode));
		fits = gs__place_gpu_fits(&s, target->gpu, &p.it[0], &st);
	}
	if (!fits)
		return gs_fail(eb, GS_ERR_NO_FIT,
		               "the slice does not fit on %s", dev);
	if (target->inst >= 0) {
		struct pinst *in = &inv->inst[target->inst];

		if (p.it[0].kind == GS_PLACE_MIG) {
			in->exclusive = true;
		} else {
			in->mem_used += p.it[0].mem;
			in->c_used += p.it[0].c;
			in->n_slices++;
			in->mode = (uint8_t)p.it[0].mode;
		}
	} else {
		struct pgpu *g = &inv->gpu[target->gpu];

		if (p.it[0].kind == GS_PLACE_WHOLE) {
			g->whole = true;
			g->mem_used = g->mem_total;
			g->c_used = 100;
		} else {
			g->mem_used += p.it[0].mem;
			g->c_used += p.it[0].c;
			g->mode = (uint8_t)p.it[0].mode;
		}
		g->n_slices++;
	}
	gs__place_summarise(inv, inv->gpu[target->gpu].node);
	return GS_OK;
}

gs_err gs_place_release(struct gs_place_inv *inv,
                        const struct gs_place_target *target,
                        const struct gs_place_item *item, struct gs_errbuf *eb)
{
	char dev[GS_PLACE_NAME_MAX + 64];
	gs_err err;

	err = check_target(inv, target, eb);
	if (err != GS_OK)
		return err;
	gs__place_dev_name(inv, target->gpu, target->inst, dev, sizeof(dev));
	if (target->inst >= 0) {
		struct pinst *in = &inv->inst[target->inst];

		if (item->kind == GS_PLACE_MIG) {
			if (!in->exclusive)
				return gs_fail(eb, GS_ERR_INVALID,
				               "%s is not held by a MIG slice",
				               dev);
			in->exclusive = false;
		} else {
			if (item->kind != GS_PLACE_FRACTION ||
			    in->n_slices == 0 || in->mode != item->mode ||
			    in->mem_used < item->memory_bytes ||
			    in->c_used < item->compute_pct)
				return gs_fail(eb, GS_ERR_INVALID,
				               "%s holds no such slice", dev);
			in->mem_used -= item->memory_bytes;
			in->c_used -= item->compute_pct;
			in->n_slices--;
		}
	} else {
		struct pgpu *g = &inv->gpu[target->gpu];

		if (item->kind == GS_PLACE_WHOLE) {
			if (!g->whole)
				return gs_fail(eb, GS_ERR_INVALID,
				               "%s is not held whole", dev);
			g->whole = false;
			g->mem_used = 0;
			g->c_used = 0;
		} else {
			if (item->kind != GS_PLACE_FRACTION || g->whole ||
			    g->n_slices == 0 || g->mode != item->mode ||
			    g->mem_used < item->memory_bytes ||
			    g->c_used < item->compute_pct)
				return gs_fail(eb, GS_ERR_INVALID,
				               "%s holds no such slice", dev);
			g->mem_used -= item->memory_bytes;
			g->c_used -= item->compute_pct;
		}
		g->n_slices--;
	}
	gs__place_summarise(inv, inv->gpu[target->gpu].node);
	return GS_OK;
}

gs_err gs_place_commit(struct gs_place_inv *inv,
                       const struct gs_place_request *req,
                       const struct gs_place_result *res, struct gs_errbuf *eb)
{
	int k;
	gs_err err = GS_OK;

	if (res->n != req->n)
		return gs_fail(eb, GS_ERR_INVALID,
		               "the result has %d slices, the request %d",
		               res->n, req->n);
	for (k = 0; k < req->n; k++) {
		err = gs_place_occupy(inv, &res->target[k], &req->item[k], eb);
		if (err != GS_OK)
			break;
	}
	if (err == GS_OK)
		return GS_OK;
	while (k-- > 0)
		(void)gs_place_release(inv, &res->target[k], &req->item[k],
		                       NULL);
	return err;
}
