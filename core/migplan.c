/*
 * migplan.c - the MIG layout planner (see migplan.h for the objective).
 *
 * The search walks memory-slice positions left to right. At each free
 * position it either places an instance that starts there (keeping the
 * idle instance that already sits there, or creating one of a profile that
 * still has unmet demand) or leaves the slice empty. Every non-overlapping
 * layout is reachable exactly once this way (a few thousand on an 8-slice
 * GPU, 76 on an A30).
 *
 * Two facts make the pruning exact:
 * - creating an instance of a profile whose demand is already served only
 *   adds a change, so it is never tried;
 * - a layout can serve at most one weight unit per free memory slice, so
 *   value + min(unserved demand, free slices ahead) bounds every
 *   completion; a branch whose bound cannot beat the best layout's value,
 *   or can only tie it with at least as many changes, is cut.
 * Changes so far (created, plus idle instances passed without keeping
 * them) never decrease, so they bound a branch's final change count.
 *
 * State is a small struct on the caller's stack; nothing allocates.
 */
#include "gs/migplan.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAX_SLICES GS_MIGPLAN_MAX_INSTANCES
#define NPROF      GS_CATALOG_MAX_PROFILES

struct cand {
	uint8_t prof;
	uint8_t start;
	uint8_t size;
	uint16_t mask;
};

struct search {
	int nslices;
	uint16_t inuse_mask;
	uint16_t all_mask;
	int ncand_at[MAX_SLICES];
	struct cand cand_at[MAX_SLICES][NPROF];
	int exist_at[MAX_SLICES]; /* idle existing profile at start, or -1 */
	int idle_prefix[MAX_SLICES + 1];
	int n_idle;
	int demand[NPROF];
	int weight[NPROF];
	int max_count[NPROF];
	int cslices[NPROF];
	int max_inst;
	int max_compute;

	/* the branch being explored */
	int total_cnt[NPROF];
	int free_cnt[NPROF];
	int n_inst;
	int compute;
	int value;
	int rem;
	int created;
	int kept;
	int depth;
	struct cand stack[MAX_SLICES];
	bool stack_create[MAX_SLICES];

	/* the best complete layout so far */
	bool have_best;
	int best_value;
	int best_changes;
	int best_depth;
	struct cand best[MAX_SLICES];
	bool best_create[MAX_SLICES];
	long nodes;
};

static int profile_index(const struct gs_gpu_model *m,
                         const struct gs_mig_profile *p)
{
	if (p < m->profiles || p >= m->profiles + m->n_profiles)
		return -1;
	return (int)(p - m->profiles);
}

static int popcount16(unsigned v)
{
	return __builtin_popcount(v);
}

static void record_if_better(struct search *s)
{
	int changes = s->created + (s->n_idle - s->kept);

	if (s->have_best &&
	    (s->value < s->best_value ||
	     (s->value == s->best_value && changes >= s->best_changes)))
		return;
	s->have_best = true;
	s->best_value = s->value;
	s->best_changes = changes;
	s->best_depth = s->depth;
	memcpy(s->best, s->stack, sizeof(s->stack[0]) * (size_t)s->depth);
	memcpy(s->best_create, s->stack_create,
	       sizeof(s->stack_create[0]) * (size_t)s->depth);
}

static void place(struct search *s, const struct cand *c, bool create, int dir)
{
	int p = c->prof;

	if (dir < 0) {
		s->depth--;
		if (s->free_cnt[p] <= s->demand[p]) {
			s->value -= s->weight[p];
			s->rem += s->weight[p];
		}
	}
	s->total_cnt[p] += dir;
	s->free_cnt[p] += dir;
	s->n_inst += dir;
	s->compute += dir * s->cslices[p];
	if (create)
		s->created += dir;
	else
		s->kept += dir;
	if (dir > 0) {
		if (s->free_cnt[p] <= s->demand[p]) {
			s->value += s->weight[p];
			s->rem -= s->weight[p];
		}
		s->stack[s->depth] = *c;
		s->stack_create[s->depth] = create;
		s->depth++;
	}
}

static void dfs(struct search *s, int pos)
{
	int lb_changes, ub, ahead;

	s->nodes++;
	while (pos < s->nslices && (s->inuse_mask >> pos & 1u))
		pos++;
	if (pos >= s->nslices) {
		record_if_better(s);
		return;
	}
	lb_changes = s->created + (s->idle_prefix[pos] - s->kept);
	ahead = popcount16(s->all_mask & ~s->inuse_mask & ~((1u << pos) - 1u));
	ub = s->value + (s->rem < ahead ? s->rem : ahead);
	if (s->have_best &&
	    (ub < s->best_value ||
	     (ub == s->best_value && lb_changes >= s->best_changes)))
		return;

	/* Keeping the idle instance that starts here costs nothing: try it
	 * first so that ties keep what exists. */
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < s->ncand_at[pos]; i++) {
			const struct cand *c = &s->cand_at[pos][i];
			int p = c->prof;
			bool keep = s->exist_at[pos] == p;

			if ((pass == 0) != keep)
				continue;
			if (c->mask & s->inuse_mask)
				continue;
			if (!keep && s->free_cnt[p] >= s->demand[p])
				continue;
			if (s->total_cnt[p] >= s->max_count[p] ||
			    s->n_inst >= s->max_inst ||
			    s->compute + s->cslices[p] > s->max_compute)
				continue;
			place(s, c, !keep, +1);
			dfs(s, pos + c->size);
			place(s, c, !keep, -1);
		}
	}
	dfs(s, pos + 1);
}

static gs_err unknown_profile(const struct gs_gpu_model *m, const char *name,
                              struct gs_errbuf *eb)
{
	char list[160];
	int n = 0;

	list[0] = '\0';
	for (int i = 0; i < m->n_profiles && n < (int)sizeof(list); i++)
		n += snprintf(list + n, sizeof(list) - (size_t)n, "%s%s",
		              i ? ", " : "", m->profiles[i].name);
	return gs_fail(eb, GS_ERR_UNKNOWN_PROFILE,
	               "unknown MIG profile '%s' on %s (it has %s)", name,
	               m->name, list);
}

gs_err gs_migplan_check_layout(const struct gs_gpu_model *m,
                               const struct gs_mig_instance *layout, int n,
                               struct gs_errbuf *eb)
{
	int count[NPROF] = {0};
	unsigned used = 0;
	int compute = 0;

	if (m == NULL)
		return gs_fail(eb, GS_ERR_UNKNOWN_MODEL, "no GPU model");
	if (n < 0 || n > m->max_gpu_instances)
		return gs_fail(eb, GS_ERR_INVALID,
		               "%d instances, %s holds at most %d", n, m->name,
		               m->max_gpu_instances);
	for (int i = 0; i < n; i++) {
		const struct gs_mig_profile *p = layout[i].profile;
		int pi = profile_index(m, p);
		unsigned mask;

		if (pi < 0)
			return gs_fail(eb, GS_ERR_UNKNOWN_PROFILE,
			               "instance %d is not a profile of %s", i,
			               m->name);
		if (!gs_catalog_placement_valid(p, layout[i].start))
			return gs_fail(eb, GS_ERR_INVALID,
			               "%s cannot start at memory slice %d on %s",
			               p->name, layout[i].start, m->name);
		mask = ((1u << p->memory_slices) - 1u) << layout[i].start;
		if (used & mask)
			return gs_fail(eb, GS_ERR_INVALID,
			               "%s@%d overlaps another instance",
			               p->name, layout[i].start);
		used |= mask;
		compute += p->compute_slices;
		if (++count[pi] > p->max_instances)
			return gs_fail(eb, GS_ERR_INVALID,
			               "%d instances of %s, %s holds at most %d",
			               count[pi], p->name, m->name,
			               p->max_instances);
	}
	if (compute > m->compute_slices)
		return gs_fail(eb, GS_ERR_INVALID,
		               "instances use %d compute slices, %s has %d",
		               compute, m->name, m->compute_slices);
	return GS_OK;
}

static void sort_instances(struct gs_mig_instance *a, int n)
{
	for (int i = 1; i < n; i++) {
		struct gs_mig_instance x = a[i];
		int j = i - 1;

		for (; j >= 0 && a[j].start > x.start; j--)
			a[j + 1] = a[j];
		a[j + 1] = x;
	}
}

static void sort_steps(struct gs_mig_step *a, int n)
{
	for (int i = 1; i < n; i++) {
		struct gs_mig_step x = a[i];
		int j = i - 1;

		for (; j >= 0 && (a[j].op > x.op ||
		                  (a[j].op == x.op && a[j].start > x.start));
		     j--)
			a[j + 1] = a[j];
		a[j + 1] = x;
	}
}

gs_err gs_migplan_solve(const struct gs_gpu_model *m,
                        const struct gs_mig_instance *current, int n_current,
                        const struct gs_mig_demand *demand, int n_demand,
                        struct gs_mig_plan *out, struct gs_errbuf *eb)
{
	struct search s;
	int order[NPROF], n_order = 0;
	int best_free[NPROF] = {0};
	bool kept_start[MAX_SLICES] = {false};
	gs_err err;

	if (m == NULL)
		return gs_fail(eb, GS_ERR_UNKNOWN_MODEL, "no GPU model");
	if (m->memory_slices > MAX_SLICES || m->n_profiles > NPROF)
		return gs_fail(eb, GS_ERR_UNSUPPORTED,
		               "%s has more memory slices than the planner handles",
		               m->name);
	if (n_current < 0 || n_demand < 0)
		return gs_fail(eb, GS_ERR_INVALID, "negative list length");
	err = gs_migplan_check_layout(m, current, n_current, eb);
	if (err != GS_OK)
		return err;

	memset(&s, 0, sizeof(s));
	s.nslices = m->memory_slices;
	s.all_mask = (uint16_t)((1u << s.nslices) - 1u);
	s.max_inst = m->max_gpu_instances;
	s.max_compute = m->compute_slices;
	for (int i = 0; i < MAX_SLICES; i++)
		s.exist_at[i] = -1;
	for (int p = 0; p < m->n_profiles; p++) {
		const struct gs_mig_profile *pr = &m->profiles[p];

		s.weight[p] = pr->memory_slices;
		s.max_count[p] = pr->max_instances;
		s.cslices[p] = pr->compute_slices;
		for (int k = 0; k < pr->n_placements; k++) {
			int st = pr->placements[k].start;
			struct cand *c;

			if (st < 0 || st + pr->memory_slices > s.nslices)
				continue;
			c = &s.cand_at[st][s.ncand_at[st]++];
			c->prof = (uint8_t)p;
			c->start = (uint8_t)st;
			c->size = (uint8_t)pr->memory_slices;
			c->mask = (uint16_t)(((1u << c->size) - 1u) << st);
		}
	}

	for (int i = 0; i < n_demand; i++) {
		int p = profile_index(m, demand[i].profile);
		int seen = 0;

		if (p < 0)
			return unknown_profile(m,
			                       demand[i].profile
			                           ? demand[i].profile->name
			                           : "(null)",
			                       eb);
		if (demand[i].count < 0 ||
		    demand[i].count > GS_MIGPLAN_MAX_DEMAND)
			return gs_fail(eb, GS_ERR_RANGE,
			               "demand %s=%d: count must be 0..%d",
			               m->profiles[p].name, demand[i].count,
			               GS_MIGPLAN_MAX_DEMAND);
		for (int k = 0; k < n_order; k++)
			seen |= order[k] == p;
		if (!seen)
			order[n_order++] = p;
		s.demand[p] += demand[i].count;
	}
	for (int k = 0; k < n_order; k++) {
		int p = order[k];

		if (s.demand[p] > m->profiles[p].max_instances)
			return gs_fail(
			    eb, GS_ERR_RANGE,
			    "demand %s=%d can never fit: %s holds at most %d of it",
			    m->profiles[p].name, s.demand[p], m->name,
			    m->profiles[p].max_instances);
		s.rem += s.demand[p] * s.weight[p];
	}

	for (int i = 0; i < n_current; i++) {
		int p = profile_index(m, current[i].profile);

		s.total_cnt[p]++;
		s.n_inst++;
		s.compute += s.cslices[p];
		if (current[i].in_use) {
			s.inuse_mask |= (uint16_t)(((1u << s.weight[p]) - 1u)
			                           << current[i].start);
		} else {
			s.exist_at[current[i].start] = p;
			s.n_idle++;
			/* Idle instances are re-counted when kept. */
			s.total_cnt[p]--;
			s.n_inst--;
			s.compute -= s.cslices[p];
		}
	}
	for (int i = 0; i < s.nslices; i++)
		s.idle_prefix[i + 1] = s.idle_prefix[i] + (s.exist_at[i] >= 0);

	dfs(&s, 0);

	/* The all-kept layout is always feasible, so a best exists. */
	memset(out, 0, sizeof(*out));
	for (int i = 0; i < n_current; i++)
		if (current[i].in_use)
			out->layout[out->n_layout++] = current[i];
	for (int i = 0; i < s.best_depth; i++) {
		const struct cand *c = &s.best[i];
		struct gs_mig_instance *inst = &out->layout[out->n_layout++];

		inst->profile = &m->profiles[c->prof];
		inst->start = c->start;
		inst->in_use = false;
		best_free[c->prof]++;
		if (s.best_create[i]) {
			struct gs_mig_step *st = &out->steps[out->n_steps++];

			st->op = GS_MIG_CREATE;
			st->profile = inst->profile;
			st->start = c->start;
		} else {
			kept_start[c->start] = true;
		}
	}
	for (int i = 0; i < s.nslices; i++) {
		if (s.exist_at[i] >= 0 && !kept_start[i]) {
			struct gs_mig_step *st = &out->steps[out->n_steps++];

			st->op = GS_MIG_DESTROY;
			st->profile = &m->profiles[s.exist_at[i]];
			st->start = i;
		}
	}
	sort_instances(out->layout, out->n_layout);
	sort_steps(out->steps, out->n_steps);
	for (int k = 0; k < n_order; k++) {
		int p = order[k];
		int served =
		    best_free[p] < s.demand[p] ? best_free[p] : s.demand[p];

		out->demand_weight += s.demand[p] * s.weight[p];
		if (served < s.demand[p]) {
			out->unmet[out->n_unmet].profile = &m->profiles[p];
			out->unmet[out->n_unmet].count = s.demand[p] - served;
			out->n_unmet++;
		}
	}
	out->served_weight = s.best_value;
	out->nodes = s.nodes;
	return GS_OK;
}

const struct gs_mig_profile *
gs_migplan_smallest_profile(const struct gs_gpu_model *m, uint64_t memory_bytes,
                            int compute_pct)
{
	const struct gs_mig_profile *best = NULL;

	if (m == NULL)
		return NULL;
	for (int i = 0; i < m->n_profiles; i++) {
		const struct gs_mig_profile *p = &m->profiles[i];
		uint64_t mib =
		    p->memory_mib ? p->memory_mib : p->memory_mib_nominal;

		if (p->attributes[0] != '\0')
			continue;
		if (memory_bytes > mib * 1024 * 1024)
			continue;
		/* compute_pct of the whole GPU, in compute slices. */
		if ((long)p->compute_slices * 100 <
		    (long)compute_pct * m->compute_slices)
			continue;
		if (best == NULL || p->memory_slices < best->memory_slices ||
		    (p->memory_slices == best->memory_slices &&
		     p->compute_slices < best->compute_slices))
			best = p;
	}
	return best;
}

/* ---- text forms */

/* Copies the next comma-separated item (spaces trimmed) into buf. */
static const char *next_item(const char *p, char *buf, size_t size,
                             bool *too_long)
{
	size_t n = 0;

	*too_long = false;
	while (*p == ' ')
		p++;
	while (*p && *p != ',') {
		if (n + 1 < size)
			buf[n++] = *p;
		else
			*too_long = true;
		p++;
	}
	while (n > 0 && buf[n - 1] == ' ')
		n--;
	buf[n] = '\0';
	return *p == ',' ? p + 1 : p;
}

static bool parse_small_int(const char *s, int max, int *out)
{
	long v = 0;

	if (*s == '\0')
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (*s - '0');
		if (v > max)
			v = (long)max + 1;
	}
	*out = (int)v;
	return true;
}

gs_err gs_migplan_parse_instances(const struct gs_gpu_model *m,
                                  const char *text, bool in_use,
                                  struct gs_mig_instance *out, int cap, int *n,
                                  struct gs_errbuf *eb)
{
	const char *p = text;

	if (m == NULL || text == NULL)
		return gs_fail(eb, GS_ERR_INVALID, "no model or text");
	while (*p) {
		char item[64];
		bool too_long;
		char *at;
		int start;
		const struct gs_mig_profile *pr;

		p = next_item(p, item, sizeof(item), &too_long);
		if (too_long)
			return gs_fail(eb, GS_ERR_PARSE,
			               "instance longer than %zu characters",
			               sizeof(item) - 1);
		if (item[0] == '\0')
			return gs_fail(eb, GS_ERR_PARSE,
			               "empty instance in '%s' (expected PROFILE@START,...)",
			               text);
		at = strchr(item, '@');
		if (at == NULL)
			return gs_fail(eb, GS_ERR_PARSE,
			               "instance '%s' needs @START (e.g. 3g.40gb@0)",
			               item);
		*at = '\0';
		if (!parse_small_int(at + 1, 99, &start))
			return gs_fail(eb, GS_ERR_PARSE,
			               "instance '%s@%s': start must be a memory-slice number",
			               item, at + 1);
		pr = gs_catalog_profile(m, item);
		if (pr == NULL)
			return unknown_profile(m, item, eb);
		if (*n >= cap)
			return gs_fail(eb, GS_ERR_RANGE,
			               "more than %d instances", cap);
		out[*n].profile = pr;
		out[*n].start = start;
		out[*n].in_use = in_use;
		(*n)++;
	}
	return GS_OK;
}

gs_err gs_migplan_parse_demand(const struct gs_gpu_model *m, const char *text,
                               struct gs_mig_demand *out, int cap, int *n,
                               struct gs_errbuf *eb)
{
	const char *p = text;

	if (m == NULL || text == NULL)
		return gs_fail(eb, GS_ERR_INVALID, "no model or text");
	while (*p) {
		char item[64];
		bool too_long;
		char *eq;
		int count;
		const struct gs_mig_profile *pr;

		p = next_item(p, item, sizeof(item), &too_long);
		if (too_long)
			return gs_fail(eb, GS_ERR_PARSE,
			               "demand longer than %zu characters",
			               sizeof(item) - 1);
		if (item[0] == '\0')
			return gs_fail(eb, GS_ERR_PARSE,
			               "empty demand in '%s' (expected PROFILE=COUNT,...)",
			               text);
		eq = strchr(item, '=');
		if (eq == NULL)
			return gs_fail(eb, GS_ERR_PARSE,
			               "demand '%s' needs =COUNT (e.g. 1g.10gb=4)",
			               item);
		*eq = '\0';
		if (!parse_small_int(eq + 1, GS_MIGPLAN_MAX_DEMAND, &count))
			return gs_fail(eb, GS_ERR_PARSE,
			               "demand '%s=%s': count must be a whole number",
			               item, eq + 1);
		if (count > GS_MIGPLAN_MAX_DEMAND)
			return gs_fail(eb, GS_ERR_RANGE,
			               "demand '%s=%s': count must be 0..%d",
			               item, eq + 1, GS_MIGPLAN_MAX_DEMAND);
		pr = gs_catalog_profile(m, item);
		if (pr == NULL)
			return unknown_profile(m, item, eb);
		if (*n >= cap)
			return gs_fail(eb, GS_ERR_RANGE,
			               "more than %d demand entries", cap);
		out[*n].profile = pr;
		out[*n].count = count;
		(*n)++;
	}
	return GS_OK;
}
