/*
 * prepare.c - names of policies and gang constraints, and a placement
 * request prepared for the search: profile keys resolved, the bounds it
 * implies and the tree edge it is ordered by, and the device selector.
 */
#include "place_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- names ------------------------------------------------------------ */

static const char *const policy_names[] = {"binpack", "spread", "frag"};
static const char *const gang_names[] = {"same-node", "same-gpu",
                                         "same-parent"};

const char *gs_place_policy_name(enum gs_place_policy p)
{
	return (unsigned)p < 3 ? policy_names[p] : "?";
}

gs_err gs_place_parse_policy(const char *text, enum gs_place_policy *p,
                             struct gs_errbuf *eb)
{
	for (int i = 0; i < 3; i++)
		if (text != NULL && strcasecmp(text, policy_names[i]) == 0) {
			*p = (enum gs_place_policy)i;
			return GS_OK;
		}
	return gs_fail(
	    eb, GS_ERR_PARSE,
	    "unknown placement policy '%s' (expected binpack|spread|frag)",
	    text ? text : "");
}

const char *gs_place_gang_name(enum gs_place_gang g)
{
	return (unsigned)g < 3 ? gang_names[g] : "?";
}

gs_err gs_place_parse_gang(const char *text, enum gs_place_gang *g,
                           struct gs_errbuf *eb)
{
	for (int i = 0; i < 3; i++)
		if (text != NULL && strcasecmp(text, gang_names[i]) == 0) {
			*g = (enum gs_place_gang)i;
			return GS_OK;
		}
	return gs_fail(eb, GS_ERR_PARSE,
	               "unknown gang constraint '%s' (expected same-node|same-gpu|same-parent)",
	               text ? text : "");
}

/* Fills the bounds of p from its items (p->n of them). */
void gs__place_prep_bounds(struct prep *p)
{
	memset(p->n_frac, 0, sizeof(p->n_frac));
	memset(p->max_mib, 0, sizeof(p->max_mib));
	memset(p->max_c, 0, sizeof(p->max_c));
	memset(p->sum_mib, 0, sizeof(p->sum_mib));
	memset(p->sum_c, 0, sizeof(p->sum_c));
	p->n_layered = 0;
	p->n_whole = 0;
	p->cats = 0;
	p->n_qcheck = 0;
	memset(p->group_mask, 0, sizeof(p->group_mask));
	for (int k = 0; k < p->n; k++) {
		const struct pitem *it = &p->it[k];
		uint64_t mib = it->mem / MIB;
		int c;

		p->cats |= (it->kind == GS_PLACE_MIG || it->layered)
		               ? CAT_MIG
		               : CAT_PLAIN;
		if (it->kind == GS_PLACE_FRACTION) {
			int m = q_map_of(it->mode), i = q_level_mem(it->mem);
			int j = q_level_c(it->c), dup = 0;

			for (int q = 0; q < p->n_qcheck; q++)
				dup |= p->qcheck[q].m == m &&
				       p->qcheck[q].i == i &&
				       p->qcheck[q].j == j;
			if (!dup) {
				p->qcheck[p->n_qcheck].m = (uint8_t)m;
				p->qcheck[p->n_qcheck].i = (uint8_t)i;
				p->qcheck[p->n_qcheck].j = (uint8_t)j;
				p->n_qcheck++;
			}
		}
		for (int q = 0; it->kind == GS_PLACE_MIG && q < it->n_keys;
		     q++) {
			if (it->keys[q] >= 256) /* past the mask: never prune */
				memset(p->group_mask[it->group], 0xff,
				       sizeof(p->group_mask[0]));
			else
				p->group_mask[it->group][it->keys[q] / 64] |=
				    1ULL << (it->keys[q] % 64);
		}
		if (it->kind == GS_PLACE_WHOLE)
			p->n_whole++;
		if (it->kind != GS_PLACE_FRACTION)
			continue;
		if (it->layered) {
			p->n_layered++;
			continue;
		}
		c = cls_of(it->mode);
		p->n_frac[c]++;
		if (mib > p->max_mib[c])
			p->max_mib[c] =
			    mib > UINT32_MAX ? UINT32_MAX : (uint32_t)mib;
		if (it->c > p->max_c[c])
			p->max_c[c] = it->c;
		p->sum_mib[c] += mib;
		p->sum_c[c] += it->c;
	}
	p->edge = E_CAT + p->cats - 1;
	if (p->n_whole > 0 && p->cats == CAT_PLAIN)
		p->edge = E_WHOLE;
	if (p->n == 1 && p->it[0].kind == GS_PLACE_FRACTION &&
	    !p->it[0].layered)
		p->edge =
		    e_cell(q_map_of(p->it[0].mode), p->it[0].mem, p->it[0].c);
}

static gs_err resolve_keys(struct pitem *it, const char *name,
                           struct gs_errbuf *eb)
{
	it->n_keys = 0;
	for (int i = 0; i < gs_catalog_count(); i++) {
		const struct gs_gpu_model *m = gs_catalog_get(i);
		const struct gs_mig_profile *p = gs_catalog_profile(m, name);

		if (p != NULL && it->n_keys < 16)
			it->keys[it->n_keys++] = gs__place_profile_key(i, m, p);
	}
	if (it->n_keys == 0)
		return gs_fail(
		    eb, GS_ERR_UNKNOWN_PROFILE,
		    "unknown MIG profile '%s' (no catalog GPU has it)", name);
	return GS_OK;
}

gs_err gs__place_prepare(const struct gs_place_request *req, struct prep *p,
                         struct gs_errbuf *eb)
{
	memset(p, 0, sizeof(*p));
	if (req->n < 1 || req->n > GS_PLACE_MAX_GANG)
		return gs_fail(eb, GS_ERR_INVALID,
		               "a request holds 1..%d slices, not %d",
		               GS_PLACE_MAX_GANG, req->n);
	if ((unsigned)req->policy > GS_PLACE_FRAG ||
	    (unsigned)req->gang > GS_GANG_SAME_PARENT)
		return gs_fail(eb, GS_ERR_INVALID,
		               "unknown placement policy or gang constraint");
	p->n = p->n_orig = req->n;
	p->gang = req->n == 1 ? GS_GANG_SAME_NODE : req->gang;
	p->policy = req->policy;
	if (req->gpu != NULL && req->gpu->kind != GS_GPU_ANY) {
		p->sel = req->gpu;
		if (req->gpu->kind == GS_GPU_MODEL)
			p->sel_model = gs_catalog_find(req->gpu->model);
	}
	for (int k = 0; k < req->n; k++) {
		const struct gs_place_item *in = &req->item[k];
		struct pitem *it = &p->it[k];
		gs_err err;

		it->kind = in->kind;
		it->mode = in->mode;
		it->profile = in->mig_profile;
		switch (in->kind) {
		case GS_PLACE_WHOLE:
			break;
		case GS_PLACE_FRACTION:
			if (in->mode != GS_MODE_TIMESLICE &&
			    in->mode != GS_MODE_MPS &&
			    !is_layered_mode(in->mode))
				return gs_fail(
				    eb, GS_ERR_INVALID,
				    "slice %d: a fractional slice needs mode timeslice, mps, mig+timeslice or mig+mps, not %s",
				    k + 1, gs_mode_name(in->mode));
			if (in->compute_pct < 0 || in->compute_pct > 100)
				return gs_fail(eb, GS_ERR_INVALID,
				               "slice %d: compute must be 0..100, got %d",
				               k + 1, in->compute_pct);
			it->layered = is_layered_mode(in->mode);
			it->mem = in->memory_bytes;
			it->c = in->compute_pct;
			if (!it->layered && in->mig_profile[0] != '\0')
				return gs_fail(
				    eb, GS_ERR_INVALID,
				    "slice %d: a MIG profile needs a MIG mode, not %s",
				    k + 1, gs_mode_name(in->mode));
			if (it->layered && in->mig_profile[0] != '\0') {
				err = resolve_keys(it, in->mig_profile, eb);
				if (err != GS_OK)
					return err;
			}
			break;
		case GS_PLACE_MIG:
			if (in->mig_profile[0] == '\0')
				return gs_fail(eb, GS_ERR_INVALID,
				               "slice %d: a MIG slice needs a profile",
				               k + 1);
			err = resolve_keys(it, in->mig_profile, eb);
			if (err != GS_OK)
				return err;
			it->group = -1;
			for (int g = 0; g < p->n_groups; g++)
				if (strcmp(p->group_name[g], in->mig_profile) ==
				    0)
					it->group = g;
			if (it->group < 0) {
				it->group = p->n_groups++;
				p->group_name[it->group] = in->mig_profile;
			}
			p->group_count[it->group]++;
			break;
		default:
			return gs_fail(eb, GS_ERR_INVALID,
			               "slice %d: unknown kind %d", k + 1,
			               (int)in->kind);
		}
	}
	if (req->n > 1 && p->gang == GS_GANG_SAME_GPU) {
		struct pitem sum = p->it[0];

		for (int k = 0; k < req->n; k++) {
			if (p->it[k].kind != GS_PLACE_FRACTION)
				return gs_fail(eb, GS_ERR_INVALID,
				               "a same-gpu gang shares one device: whole-GPU and MIG slices cannot be in it");
			if (p->it[k].mode != sum.mode ||
			    strcmp(p->it[k].profile, sum.profile) != 0)
				return gs_fail(eb, GS_ERR_INVALID,
				               "a same-gpu gang shares one device: its slices need one mode (and MIG profile)");
			if (k > 0) {
				sum.mem += p->it[k].mem;
				sum.c += p->it[k].c;
			}
		}
		p->it[0] = sum;
		p->n = 1;
	}
	if (req->n > 1 && p->gang == GS_GANG_SAME_PARENT)
		for (int k = 0; k < req->n; k++)
			if (p->it[k].kind != GS_PLACE_MIG)
				return gs_fail(eb, GS_ERR_INVALID,
				               "a same-parent gang takes MIG slices only (slice %d is not)",
				               k + 1);
	gs__place_prep_bounds(p);
	return GS_OK;
}
