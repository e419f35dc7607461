/*
 * workload.c - the target workload M and the fragmentation measure of
 * the FGD paper (docs/placement.md, "How a replay works").
 *
 * M is the set of task classes that make up most of a task list, with
 * their popularity. A node's fragment for one class is the idle GPU that
 * class could not use there: all of it when the class cannot run on the
 * node at all (CPU-only class, wrong model, not enough CPU or devices),
 * else only the devices too small for one instance of it. The node's
 * fragmentation F_n(M) is the popularity-weighted sum over M.
 *
 * gs_trace_frag() is the hot path of FGD-style scoring (called a few
 * million times per replay), so M keeps the distinct per-GPU requests of
 * its classes in a sorted table: one merge of the node's sorted device
 * amounts with that table gives, for every request size at once, how many
 * devices fit it and how much sits on the ones that do not.
 */
#include "gs/frag.h"

#include <stdlib.h>
#include <string.h>

static int class_cmp_tuple(const struct gs_trace_class *a,
                           const struct gs_trace_class *b)
{
	if (a->cpu_milli != b->cpu_milli)
		return a->cpu_milli < b->cpu_milli ? -1 : 1;
	if (a->gpu_milli != b->gpu_milli)
		return a->gpu_milli < b->gpu_milli ? -1 : 1;
	if (a->num_gpu != b->num_gpu)
		return a->num_gpu < b->num_gpu ? -1 : 1;
	if (a->spec != b->spec)
		return a->spec < b->spec ? -1 : 1;
	return 0;
}

/* Most popular first (the weight being built sits in p: a task count,
 * or a decayed weight); equal weights: the larger tuple first (the Go
 * simulator's sort.Reverse over (count, tuple)). */
static int class_cmp_popular(const void *pa, const void *pb)
{
	const struct gs_trace_class *a = pa, *b = pb;

	if (a->p != b->p)
		return a->p > b->p ? -1 : 1;
	return -class_cmp_tuple(a, b);
}

static int class_cmp_tuple_q(const void *pa, const void *pb)
{
	return class_cmp_tuple(pa, pb);
}

/* Fills w->r / w->cls_r from w->cls. At most 256 distinct request sizes
 * (cls_r is a byte); a target workload is a few dozen classes. */
static gs_err build_lookup(struct gs_trace_workload *w, struct gs_errbuf *eb)
{
	bool seen[GS_TRACE_MILLI + 1] = {false};
	uint8_t index[GS_TRACE_MILLI + 1];
	size_t k = 0;

	w->nr = 0;
	for (size_t i = 0; i < w->n; i++) {
		uint16_t r = w->cls[i].gpu_milli;
		if (r > GS_TRACE_MILLI)
			return gs_fail(
			    eb, GS_ERR_RANGE,
			    "target workload: GPU request %u above %d milli", r,
			    GS_TRACE_MILLI);
		if (r > 0 && !seen[r]) {
			seen[r] = true;
			w->nr++;
		}
	}
	if (w->nr > 256)
		return gs_fail(
		    eb, GS_ERR_RANGE,
		    "target workload: more than 256 distinct GPU request sizes");
	w->r = malloc(sizeof(*w->r) * (w->nr ? w->nr : 1));
	w->cls_r = malloc(sizeof(*w->cls_r) * (w->n ? w->n : 1));
	if (w->r == NULL || w->cls_r == NULL)
		return gs_fail(eb, GS_ERR_NOMEM,
		               "target workload: out of memory");
	for (uint16_t r = 1; r <= GS_TRACE_MILLI; r++) {
		if (seen[r]) {
			index[r] = (uint8_t)k;
			w->r[k++] = r;
		}
	}
	for (size_t i = 0; i < w->n; i++) {
		uint16_t r = w->cls[i].gpu_milli;
		w->cls_r[i] = r > 0 ? index[r] : 0;
	}
	return GS_OK;
}

void gs_trace_workload_fini(struct gs_trace_workload *w)
{
	if (w == NULL)
		return;
	free(w->cls);
	free(w->r);
	free(w->cls_r);
	memset(w, 0, sizeof(*w));
}

gs_err gs_trace_workload_init_classes(struct gs_trace_workload *w,
                                      const struct gs_trace_class *cls,
                                      size_t n, struct gs_errbuf *eb)
{
	gs_err err;

	memset(w, 0, sizeof(*w));
	w->cls = malloc(sizeof(*w->cls) * (n ? n : 1));
	if (w->cls == NULL)
		return gs_fail(eb, GS_ERR_NOMEM,
		               "target workload: out of memory");
	if (n > 0)
		memcpy(w->cls, cls, sizeof(*cls) * n);
	w->n = n;
	err = build_lookup(w, eb);
	if (err != GS_OK)
		gs_trace_workload_fini(w);
	return err;
}

/* Weight of a class when M is built by GPU demand (p: its weight). */
static double class_demand(const struct gs_trace_class *c)
{
	return c->p * c->num_gpu * c->gpu_milli;
}

static int class_cmp_demand(const void *pa, const void *pb)
{
	const struct gs_trace_class *a = pa, *b = pb;
	double x = class_demand(a), y = class_demand(b);

	if (x != y)
		return x > y ? -1 : 1;
	return -class_cmp_tuple(a, b);
}

/*
 * Builds M from `all` (n classes, each weighing its `p`; taken over: on
 * success it becomes w->cls, on failure it is freed). Equal tuples are
 * merged, weights and counts added.
 */
static gs_err workload_build(struct gs_trace_workload *w,
                             struct gs_trace_class *all, size_t n,
                             double coverage_pct, bool by_demand,
                             struct gs_errbuf *eb)
{
	size_t nc = 0, take = 0;
	double cum = 0, need, total = 0;
	gs_err err;

	/* Group equal tuples: sort, then fold runs. */
	qsort(all, n, sizeof(*all), class_cmp_tuple_q);
	for (size_t i = 0; i < n; i++) {
		if (nc > 0 && class_cmp_tuple(&all[nc - 1], &all[i]) == 0) {
			all[nc - 1].count += all[i].count;
			all[nc - 1].p += all[i].p;
		} else {
			all[nc++] = all[i];
		}
	}
	for (size_t i = 0; i < nc; i++)
		total += class_demand(&all[i]);
	if (total == 0) /* no GPU demand at all: by count */
		by_demand = false;
	total = 0;
	for (size_t i = 0; i < nc; i++)
		total += by_demand ? class_demand(&all[i]) : all[i].p;
	qsort(all, nc, sizeof(*all),
	      by_demand ? class_cmp_demand : class_cmp_popular);
	need = coverage_pct * total / 100.0;
	for (; take < nc && cum < need; take++)
		cum += by_demand ? class_demand(&all[take]) : all[take].p;
	for (size_t i = 0; i < take; i++)
		all[i].p = (by_demand ? class_demand(&all[i]) : all[i].p) / cum;
	w->cls = all;
	w->n = take;
	err = build_lookup(w, eb);
	if (err != GS_OK)
		gs_trace_workload_fini(w);
	return err;
}

static gs_err workload_from_pods(struct gs_trace_workload *w,
                                 const struct gs_trace_pod *pods, size_t n,
                                 double coverage_pct, bool by_demand,
                                 struct gs_errbuf *eb)
{
	struct gs_trace_class *all;

	memset(w, 0, sizeof(*w));
	if (n == 0)
		return gs_fail(eb, GS_ERR_INVALID, "target workload: no tasks");
	all = malloc(sizeof(*all) * n);
	if (all == NULL)
		return gs_fail(eb, GS_ERR_NOMEM,
		               "target workload: out of memory");
	for (size_t i = 0; i < n; i++) {
		all[i] = (struct gs_trace_class){
		    .cpu_milli = pods[i].cpu_milli,
		    .gpu_milli = pods[i].gpu_milli,
		    .num_gpu = pods[i].num_gpu,
		    .spec = pods[i].spec,
		    .count = 1,
		    .p = 1,
		};
	}
	return workload_build(w, all, n, coverage_pct, by_demand, eb);
}

static gs_err workload_from_classes(struct gs_trace_workload *w,
                                    const struct gs_trace_class *cls,
                                    size_t n, double coverage_pct,
                                    bool by_demand, struct gs_errbuf *eb)
{
	struct gs_trace_class *all;
	size_t k = 0;

	memset(w, 0, sizeof(*w));
	all = malloc(sizeof(*all) * (n ? n : 1));
	if (all == NULL)
		return gs_fail(eb, GS_ERR_NOMEM,
		               "target workload: out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct gs_trace_class *c = &cls[i];
		struct gs_trace_pod pod = {.cpu_milli = c->cpu_milli,
		                           .gpu_milli = c->gpu_milli,
		                           .num_gpu = c->num_gpu,
		                           .spec = c->spec};

		if (!(c->p >= 0) || !gs_trace_pod_is_valid(&pod)) {
			free(all);
			return gs_fail(eb, GS_ERR_INVALID,
			               "target workload: class %zu is not a valid task shape with a weight >= 0",
			               i);
		}
		if (c->p > 0)
			all[k++] = *c;
	}
	if (k == 0) {
		free(all);
		return gs_fail(eb, GS_ERR_INVALID,
		               "target workload: no class with a weight");
	}
	return workload_build(w, all, k, coverage_pct, by_demand, eb);
}

gs_err gs_trace_workload_init_weighted(struct gs_trace_workload *w,
                                       const struct gs_trace_class *cls,
                                       size_t n, double coverage_pct,
                                       struct gs_errbuf *eb)
{
	return workload_from_classes(w, cls, n, coverage_pct, true, eb);
}

gs_err gs_trace_workload_init_popular(struct gs_trace_workload *w,
                                      const struct gs_trace_class *cls,
                                      size_t n, double coverage_pct,
                                      struct gs_errbuf *eb)
{
	return workload_from_classes(w, cls, n, coverage_pct, false, eb);
}

gs_err gs_trace_workload_init(struct gs_trace_workload *w,
                              const struct gs_trace_pod *pods, size_t n,
                              double coverage_pct, struct gs_errbuf *eb)
{
	return workload_from_pods(w, pods, n, coverage_pct, false, eb);
}

gs_err gs_trace_workload_init_demand(struct gs_trace_workload *w,
                                     const struct gs_trace_pod *pods, size_t n,
                                     double coverage_pct, struct gs_errbuf *eb)
{
	return workload_from_pods(w, pods, n, coverage_pct, true, eb);
}

double gs_trace_frag(const struct gs_trace_workload *w, int64_t cpu_free,
                     const uint16_t *gpu_free, unsigned ngpu, unsigned model)
{
	uint16_t g[GS_TRACE_MAX_DEVS];
	uint32_t fit[256];   /* per request size: devices with free >= it */
	uint32_t small[256]; /* per request size: free on the others */
	uint32_t idle = 0;
	double frag = 0;

	if (ngpu > GS_TRACE_MAX_DEVS)
		ngpu = GS_TRACE_MAX_DEVS;
	/* Insertion sort: at most 16 devices. */
	for (unsigned i = 0; i < ngpu; i++) {
		uint16_t v = gpu_free[i];
		unsigned j = i;
		idle += v;
		while (j > 0 && g[j - 1] > v) {
			g[j] = g[j - 1];
			j--;
		}
		g[j] = v;
	}
	if (idle == 0)
		return 0;
	{
		unsigned d = 0;
		uint32_t below = 0;
		/* build_lookup() keeps nr <= 256; say so to the compiler. */
		size_t nr = w->nr < 256 ? w->nr : 256;
		for (size_t k = 0; k < nr; k++) {
			while (d < ngpu && g[d] < w->r[k])
				below += g[d++];
			fit[k] = ngpu - d;
			small[k] = below;
		}
	}
	for (size_t m = 0; m < w->n; m++) {
		const struct gs_trace_class *c = &w->cls[m];
		uint32_t f = idle;

		if (c->gpu_milli > 0 &&
		    (c->spec == 0 || (c->spec >> model) & 1u)) {
			unsigned k = w->cls_r[m];
			if (fit[k] >= c->num_gpu &&
			    cpu_free >= (int64_t)c->cpu_milli)
				f = small[k];
		}
		frag += c->p * (double)f;
	}
	return frag;
}
