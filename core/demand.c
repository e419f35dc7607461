/*
 * demand.c - the demand history of gs/demand.h: decayed weights per slice
 * shape, a bounded table, and the placement scorer built from it. No libm
 * (gs_core links without it): 2^-x is computed here.
 */
#include "gs/demand.h"

#include <stdio.h>
#include <string.h>

#include "gs/frag.h"

static const char *const kind_names[] = {
    [GS_PLACE_FRACTION] = "fraction",
    [GS_PLACE_WHOLE] = "whole",
    [GS_PLACE_MIG] = "mig",
};

void gs_demand_init(struct gs_demand *d, int64_t half_life_ns)
{
	memset(d, 0, sizeof(*d));
	d->half_life_ns = half_life_ns;
}

const char *gs_demand_kind_name(enum gs_place_kind k)
{
	if ((unsigned)k >= sizeof(kind_names) / sizeof(kind_names[0]))
		return "unknown";
	return kind_names[k];
}

gs_err gs_demand_parse_kind(const char *name, enum gs_place_kind *out)
{
	for (unsigned k = 0; k < sizeof(kind_names) / sizeof(kind_names[0]);
	     k++) {
		if (strcmp(name, kind_names[k]) == 0) {
			*out = (enum gs_place_kind)k;
			return GS_OK;
		}
	}
	return GS_ERR_INVALID;
}

void gs_demand_shape_of(const struct gs_place_item *it,
                        struct gs_demand_shape *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = it->kind;
	switch (it->kind) {
	case GS_PLACE_FRACTION:
		out->memory_bytes = it->memory_bytes;
		out->compute_pct = it->compute_pct;
		break;
	case GS_PLACE_MIG:
		snprintf(out->mig_profile, sizeof(out->mig_profile), "%s",
		         it->mig_profile);
		break;
	case GS_PLACE_WHOLE:
		break;
	}
}

bool gs_demand_shape_equal(const struct gs_demand_shape *a,
                           const struct gs_demand_shape *b)
{
	return a->kind == b->kind && a->memory_bytes == b->memory_bytes &&
	       a->compute_pct == b->compute_pct &&
	       strcmp(a->mig_profile, b->mig_profile) == 0;
}

/* 2^-x for x >= 0: halvings for the whole part, a series for the rest. */
static double half_pow(double x)
{
	double r = 1, term = 1, sum = 1, y;
	int k;

	if (!(x > 0))
		return 1;
	if (x > 1100)
		return 0;
	for (k = 0; k + 1 <= x; k++)
		r *= 0.5;
	/* 2^-f = e^(-f ln 2) with f in [0, 1): |y| < 0.7, so 20 terms of
	 * the series are exact to double precision. */
	y = -(x - k) * 0.69314718055994530942;
	for (int i = 1; i <= 20; i++) {
		term *= y / i;
		sum += term;
	}
	return r * sum;
}

/* A weight stored at t, read at now. */
static double decayed(const struct gs_demand *d, double w, int64_t t,
                      int64_t now)
{
	if (d->half_life_ns <= 0 || now <= t)
		return w;
	return w * half_pow((double)(now - t) / (double)d->half_life_ns);
}

double gs_demand_weight(const struct gs_demand *d, int i, int64_t now_ns)
{
	if (i < 0 || i >= d->n)
		return 0;
	return decayed(d, d->cls[i].weight, d->cls[i].t_ns, now_ns);
}

double gs_demand_total(const struct gs_demand *d, int64_t now_ns)
{
	double t = 0;

	for (int i = 0; i < d->n; i++)
		t += gs_demand_weight(d, i, now_ns);
	return t;
}

static int find(const struct gs_demand *d, const struct gs_demand_shape *s)
{
	for (int i = 0; i < d->n; i++)
		if (gs_demand_shape_equal(&d->cls[i].shape, s))
			return i;
	return -1;
}

static int lightest(const struct gs_demand *d, int64_t now_ns)
{
	int best = 0;

	for (int i = 1; i < d->n; i++)
		if (gs_demand_weight(d, i, now_ns) <
		    gs_demand_weight(d, best, now_ns))
			best = i;
	return best;
}

void gs_demand_add(struct gs_demand *d, const struct gs_demand_shape *shape,
                   int64_t now_ns, int *index, struct gs_demand_shape *evicted,
                   bool *did_evict)
{
	int i = find(d, shape);

	if (did_evict)
		*did_evict = false;
	if (i >= 0) {
		struct gs_demand_class *c = &d->cls[i];

		c->weight = gs_demand_weight(d, i, now_ns) + 1;
		if (now_ns > c->t_ns)
			c->t_ns = now_ns;
	} else {
		if (d->n < GS_DEMAND_MAX_CLASSES) {
			i = d->n++;
		} else {
			i = lightest(d, now_ns);
			if (evicted)
				*evicted = d->cls[i].shape;
			if (did_evict)
				*did_evict = true;
		}
		d->cls[i].shape = *shape;
		d->cls[i].weight = 1;
		d->cls[i].t_ns = now_ns;
	}
	if (index)
		*index = i;
}

gs_err gs_demand_put(struct gs_demand *d, const struct gs_demand_class *c,
                     int64_t now_ns, struct gs_errbuf *eb)
{
	int i;

	if (!(c->weight >= 0) || c->weight > 1e300)
		return gs_fail(eb, GS_ERR_INVALID,
		               "demand class weight %g is not a finite number >= 0",
		               c->weight);
	i = find(d, &c->shape);
	if (i >= 0) {
		struct gs_demand_class *o = &d->cls[i];
		int64_t t = c->t_ns > o->t_ns ? c->t_ns : o->t_ns;

		o->weight = decayed(d, o->weight, o->t_ns, t) +
		            decayed(d, c->weight, c->t_ns, t);
		o->t_ns = t;
		return GS_OK;
	}
	if (d->n < GS_DEMAND_MAX_CLASSES) {
		d->cls[d->n++] = *c;
		return GS_OK;
	}
	i = lightest(d, now_ns);
	if (decayed(d, c->weight, c->t_ns, now_ns) >
	    gs_demand_weight(d, i, now_ns))
		d->cls[i] = *c;
	return GS_OK;
}

int gs_demand_prune(struct gs_demand *d, int64_t now_ns,
                    struct gs_demand_shape *dropped)
{
	int k = 0, n = 0;

	for (int i = 0; i < d->n; i++) {
		if (gs_demand_weight(d, i, now_ns) < GS_DEMAND_MIN_WEIGHT) {
			if (dropped)
				dropped[n] = d->cls[i].shape;
			n++;
			continue;
		}
		d->cls[k++] = d->cls[i];
	}
	d->n = k;
	return n;
}

gs_err gs_demand_scorer(const struct gs_demand *d, int64_t now_ns,
                        uint64_t gpu_memory_bytes, struct gs_trace_scorer **out,
                        struct gs_errbuf *eb)
{
	struct gs_trace_class cls[GS_DEMAND_MAX_CLASSES];
	size_t n = 0;

	*out = NULL;
	for (int i = 0; i < d->n; i++) {
		const struct gs_demand_shape *s = &d->cls[i].shape;
		struct gs_place_item it = {.kind = s->kind,
		                           .memory_bytes = s->memory_bytes,
		                           .compute_pct = s->compute_pct};
		int milli = gs_place_item_milli(&it, gpu_memory_bytes);
		double w = gs_demand_weight(d, i, now_ns);

		if (milli <= 0 || !(w > 0))
			continue;
		cls[n++] = (struct gs_trace_class){
		    .gpu_milli = (uint16_t)milli,
		    .num_gpu = 1,
		    .count = (uint32_t)(w + 0.5),
		    .p = w,
		};
	}
	if (n == 0)
		return GS_OK;
	return gs_trace_scorer_new_weighted(cls, n, out, eb);
}
