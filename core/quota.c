/*
 * quota.c - hierarchical team quotas (see quota.h for the rules).
 *
 * The tree keeps, for each team, its parent, its depth and its "own"
 * guarantee: its guarantee minus its children's, the share that backs
 * slices attached to the team itself rather than to a child. Validation
 * guarantees that every own guarantee is >= 0 and that parent links end
 * at a top-level team, so walking up from any team terminates within
 * `depth` steps.
 *
 * Admission recomputes usage from the slice list on every call (a few
 * thousand slices cost microseconds) and keeps two arrays while it picks
 * victims: subtree usage and own usage per team. Taking a victim subtracts
 * its amounts from its team's own usage and from the subtree usage of the
 * team and of every ancestor, so the eligibility test of the next
 * candidate sees the state after the victims already taken.
 */
#include "gs/quota.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct qteam {
	char name[GS_QUOTA_NAME_MAX];
	int parent;
	int depth;
	struct gs_qvec guarantee;
	struct gs_qvec max;
	struct gs_qvec own_guarantee;
};

struct gs_quota_tree {
	int n;
	struct qteam *team;
};

static const char *const qres_names[GS_QRES__COUNT] = {
    [GS_QRES_MEMORY] = "memory",
    [GS_QRES_COMPUTE] = "compute",
    [GS_QRES_MIG] = "MIG slices",
};

const char *gs_qres_name(enum gs_qres r)
{
	if ((unsigned)r >= GS_QRES__COUNT)
		return "?";
	return qres_names[r];
}

int gs_qres_format(enum gs_qres r, int64_t amount, char *buf, size_t size)
{
	const int64_t mib = 1024 * 1024, gib = mib * 1024;

	if (amount == GS_QUOTA_UNLIMITED)
		return snprintf(buf, size, "unlimited");
	switch (r) {
	case GS_QRES_MEMORY:
		if (amount >= gib || amount <= -gib)
			return snprintf(buf, size, "%.1f GiB",
			                (double)amount / (double)gib);
		if (amount % mib == 0)
			return snprintf(buf, size, "%lld MiB",
			                (long long)(amount / mib));
		return snprintf(buf, size, "%lld bytes", (long long)amount);
	case GS_QRES_COMPUTE:
		return snprintf(buf, size, "%lld%%", (long long)amount);
	case GS_QRES_MIG:
		return snprintf(buf, size, "%lld", (long long)amount);
	default:
		return snprintf(buf, size, "%lld", (long long)amount);
	}
}

/* a + b without overflow: saturates at GS_QUOTA_UNLIMITED (both >= 0). */
static int64_t sat_add(int64_t a, int64_t b)
{
	if (a > GS_QUOTA_UNLIMITED - b)
		return GS_QUOTA_UNLIMITED;
	return a + b;
}

static int find_name(const struct gs_quota_team_def *defs, int n,
                     const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(defs[i].name, name) == 0)
			return i;
	return -1;
}

static gs_err check_names(const struct gs_quota_team_def *defs, int n,
                          struct gs_errbuf *eb)
{
	for (int i = 0; i < n; i++) {
		const char *name = defs[i].name;

		if (name == NULL || name[0] == '\0')
			return gs_fail(eb, GS_ERR_INVALID,
			               "team %d has an empty name", i);
		if (strlen(name) >= GS_QUOTA_NAME_MAX)
			return gs_fail(eb, GS_ERR_INVALID,
			               "team name '%.20s...' is longer than %d characters",
			               name, GS_QUOTA_NAME_MAX - 1);
		if (find_name(defs, i, name) >= 0)
			return gs_fail(eb, GS_ERR_EXISTS,
			               "team '%s' is defined twice", name);
	}
	return GS_OK;
}

/*
 * Three colours: 0 not seen, 1 on the path being walked, 2 known to end
 * at a top-level team. Meeting a 1 means the path closed on itself.
 */
static gs_err check_cycles(struct gs_quota_tree *t, struct gs_errbuf *eb)
{
	char *colour = calloc((size_t)t->n, 1);
	gs_err err = GS_OK;

	if (colour == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "no memory for the team tree");
	for (int i = 0; i < t->n && err == GS_OK; i++) {
		int j = i;

		while (j >= 0 && colour[j] == 0) {
			colour[j] = 1;
			j = t->team[j].parent;
		}
		if (j >= 0 && colour[j] == 1) {
			char msg[GS_ERRBUF_SIZE];
			size_t len = 0;
			int k = j;

			do {
				int w = snprintf(msg + len, sizeof(msg) - len,
				                 "%s -> ", t->team[k].name);
				if (w < 0 || (size_t)w >= sizeof(msg) - len)
					break;
				len += (size_t)w;
				k = t->team[k].parent;
			} while (k != j);
			err = gs_fail(eb, GS_ERR_INVALID,
			              "teams form a cycle: %s%s", msg,
			              t->team[j].name);
		}
		for (j = i; j >= 0 && colour[j] == 1; j = t->team[j].parent)
			colour[j] = 2;
	}
	free(colour);
	return err;
}

static int depth_of(struct gs_quota_tree *t, int i)
{
	if (t->team[i].depth >= 0)
		return t->team[i].depth;
	if (t->team[i].parent < 0)
		t->team[i].depth = 0;
	else
		t->team[i].depth = depth_of(t, t->team[i].parent) + 1;
	return t->team[i].depth;
}

static gs_err check_amounts(struct gs_quota_tree *t, struct gs_errbuf *eb)
{
	char a[48], b[48];

	for (int i = 0; i < t->n; i++) {
		struct qteam *q = &t->team[i];

		for (int r = 0; r < GS_QRES__COUNT; r++) {
			if (q->guarantee.v[r] < 0 || q->max.v[r] < 0)
				return gs_fail(eb, GS_ERR_RANGE,
				               "team %s: %s amounts must not be negative",
				               q->name, qres_names[r]);
			if (q->guarantee.v[r] > q->max.v[r]) {
				gs_qres_format(r, q->guarantee.v[r], a,
				               sizeof(a));
				gs_qres_format(r, q->max.v[r], b, sizeof(b));
				return gs_fail(eb, GS_ERR_RANGE,
				               "team %s: guaranteed %s %s exceeds its max %s",
				               q->name, a, qres_names[r], b);
			}
		}
		q->own_guarantee = q->guarantee;
	}
	for (int i = 0; i < t->n; i++) {
		int p = t->team[i].parent;

		if (p < 0)
			continue;
		for (int r = 0; r < GS_QRES__COUNT; r++)
			t->team[p].own_guarantee.v[r] -=
			    t->team[i].guarantee.v[r];
	}
	for (int i = 0; i < t->n; i++) {
		struct qteam *q = &t->team[i];

		for (int r = 0; r < GS_QRES__COUNT; r++) {
			int64_t sum = 0;

			if (q->own_guarantee.v[r] >= 0)
				continue;
			for (int c = 0; c < t->n; c++)
				if (t->team[c].parent == i)
					sum = sat_add(
					    sum, t->team[c].guarantee.v[r]);
			gs_qres_format(r, sum, a, sizeof(a));
			gs_qres_format(r, q->guarantee.v[r], b, sizeof(b));
			return gs_fail(eb, GS_ERR_RANGE,
			               "team %s: its children guarantee %s %s in total, more than its own %s",
			               q->name, a, qres_names[r], b);
		}
	}
	return GS_OK;
}

gs_err gs_quota_tree_create(const struct gs_quota_team_def *defs, int n,
                            struct gs_quota_tree **tree, struct gs_errbuf *eb)
{
	struct gs_quota_tree *t;
	gs_err err;

	*tree = NULL;
	if (n < 0 || (n > 0 && defs == NULL))
		return gs_fail(eb, GS_ERR_INVALID, "no team definitions");
	err = check_names(defs, n, eb);
	if (err != GS_OK)
		return err;
	t = malloc(sizeof(*t));
	if (t == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "no memory for the team tree");
	t->n = n;
	t->team = calloc(n > 0 ? (size_t)n : 1, sizeof(*t->team));
	if (t->team == NULL) {
		err = gs_fail(eb, GS_ERR_NOMEM, "no memory for the team tree");
		goto out_free;
	}
	for (int i = 0; i < n; i++) {
		struct qteam *q = &t->team[i];

		memcpy(q->name, defs[i].name, strlen(defs[i].name) + 1);
		q->guarantee = defs[i].guarantee;
		q->max = defs[i].max;
		q->depth = -1;
		q->parent = -1;
		if (defs[i].parent == NULL || defs[i].parent[0] == '\0')
			continue;
		q->parent = find_name(defs, n, defs[i].parent);
		if (q->parent < 0) {
			err = gs_fail(eb, GS_ERR_NOT_FOUND,
			              "team %s: parent '%s' is not defined",
			              q->name, defs[i].parent);
			goto out_free;
		}
	}
	err = check_cycles(t, eb);
	if (err != GS_OK)
		goto out_free;
	for (int i = 0; i < n; i++)
		(void)depth_of(t, i);
	err = check_amounts(t, eb);
	if (err != GS_OK)
		goto out_free;
	*tree = t;
	return GS_OK;

out_free:
	gs_quota_tree_destroy(t);
	return err;
}

void gs_quota_tree_destroy(struct gs_quota_tree *tree)
{
	if (tree == NULL)
		return;
	free(tree->team);
	free(tree);
}

int gs_quota_tree_count(const struct gs_quota_tree *tree)
{
	return tree->n;
}

int gs_quota_tree_find(const struct gs_quota_tree *tree, const char *name)
{
	for (int i = 0; i < tree->n; i++)
		if (strcmp(tree->team[i].name, name) == 0)
			return i;
	return -1;
}

const char *gs_quota_tree_name(const struct gs_quota_tree *tree, int i)
{
	return tree->team[i].name;
}

int gs_quota_tree_parent(const struct gs_quota_tree *tree, int i)
{
	return tree->team[i].parent;
}

int gs_quota_tree_depth(const struct gs_quota_tree *tree, int i)
{
	return tree->team[i].depth;
}

const struct gs_qvec *gs_quota_tree_guarantee(const struct gs_quota_tree *t,
                                              int i)
{
	return &t->team[i].guarantee;
}

const struct gs_qvec *gs_quota_tree_max(const struct gs_quota_tree *t, int i)
{
	return &t->team[i].max;
}

gs_err gs_quota_tree_check_capacity(const struct gs_quota_tree *tree,
                                    const struct gs_qvec *capacity,
                                    struct gs_errbuf *eb)
{
	char a[48], b[48];

	for (int r = 0; r < GS_QRES__COUNT; r++) {
		int64_t sum = 0;

		for (int i = 0; i < tree->n; i++)
			if (tree->team[i].parent < 0)
				sum =
				    sat_add(sum, tree->team[i].guarantee.v[r]);
		if (sum > capacity->v[r]) {
			gs_qres_format(r, sum, a, sizeof(a));
			gs_qres_format(r, capacity->v[r], b, sizeof(b));
			return gs_fail(eb, GS_ERR_RANGE,
			               "top-level teams guarantee %s %s in total, more than the cluster's %s",
			               a, qres_names[r], b);
		}
	}
	return GS_OK;
}

static gs_err check_vec(const struct gs_qvec *v, const char *what,
                        struct gs_errbuf *eb)
{
	for (int r = 0; r < GS_QRES__COUNT; r++)
		if (v->v[r] < 0)
			return gs_fail(eb, GS_ERR_INVALID,
			               "%s has a negative %s amount", what,
			               qres_names[r]);
	return GS_OK;
}

/* Fills own[] (direct slices) and usage[] (subtree) from the slices. */
static gs_err sum_usage(const struct gs_quota_tree *t,
                        const struct gs_quota_slice *slices, size_t n_slices,
                        struct gs_qvec *own, struct gs_qvec *usage,
                        struct gs_errbuf *eb)
{
	memset(own, 0, (size_t)t->n * sizeof(*own));
	memset(usage, 0, (size_t)t->n * sizeof(*usage));
	for (size_t s = 0; s < n_slices; s++) {
		const struct gs_quota_slice *sl = &slices[s];
		gs_err err;

		if (sl->team < 0 || sl->team >= t->n)
			return gs_fail(eb, GS_ERR_INVALID,
			               "slice %llu names team %d, which does not exist",
			               (unsigned long long)sl->id, sl->team);
		err = check_vec(&sl->use, "a slice", eb);
		if (err != GS_OK)
			return err;
		for (int r = 0; r < GS_QRES__COUNT; r++)
			own[sl->team].v[r] += sl->use.v[r];
	}
	for (int i = 0; i < t->n; i++)
		for (int j = i; j >= 0; j = t->team[j].parent)
			for (int r = 0; r < GS_QRES__COUNT; r++)
				usage[j].v[r] += own[i].v[r];
	return GS_OK;
}

gs_err gs_quota_usage(const struct gs_quota_tree *tree,
                      const struct gs_quota_slice *slices, size_t n_slices,
                      struct gs_qvec *usage, struct gs_errbuf *eb)
{
	struct gs_qvec *own = malloc(((size_t)tree->n + 1) * sizeof(*own));
	gs_err err;

	if (own == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "no memory for quota usage");
	err = sum_usage(tree, slices, n_slices, own, usage, eb);
	free(own);
	return err;
}

/* Working state of one admission. */
struct admit {
	const struct gs_quota_tree *t;
	const struct gs_quota_slice *slices;
	const struct gs_quota_request *req;
	struct gs_qvec *own;
	struct gs_qvec *usage;
	struct gs_qvec total;
	int64_t short_by[GS_QRES__COUNT];
};

static int lca(const struct gs_quota_tree *t, int a, int b)
{
	while (a >= 0 && b >= 0 && a != b) {
		if (t->team[a].depth >= t->team[b].depth)
			a = t->team[a].parent;
		else
			b = t->team[b].parent;
	}
	return a == b ? a : -1;
}

static bool is_borrowed(const struct admit *ad, const struct gs_quota_slice *s)
{
	const struct gs_quota_tree *t = ad->t;
	const struct gs_qvec *use, *guar;
	int x = s->team, l;

	if (x == ad->req->team)
		return false;
	l = lca(t, x, ad->req->team);
	if (l == x) {
		use = &ad->own[x];
		guar = &t->team[x].own_guarantee;
	} else {
		while (t->team[x].parent != l)
			x = t->team[x].parent;
		use = &ad->usage[x];
		guar = &t->team[x].guarantee;
	}
	for (int r = 0; r < GS_QRES__COUNT; r++)
		if (ad->short_by[r] > 0 && s->use.v[r] > 0 &&
		    use->v[r] > guar->v[r])
			return true;
	return false;
}

static void take(struct admit *ad, const struct gs_quota_slice *s)
{
	for (int r = 0; r < GS_QRES__COUNT; r++) {
		ad->own[s->team].v[r] -= s->use.v[r];
		ad->total.v[r] -= s->use.v[r];
		ad->short_by[r] -= s->use.v[r];
	}
	for (int j = s->team; j >= 0; j = ad->t->team[j].parent)
		for (int r = 0; r < GS_QRES__COUNT; r++)
			ad->usage[j].v[r] -= s->use.v[r];
}

static bool still_short(const struct admit *ad)
{
	for (int r = 0; r < GS_QRES__COUNT; r++)
		if (ad->short_by[r] > 0)
			return true;
	return false;
}

/* The documented order: priority up, then created down, then id down. */
static bool victim_before(const struct gs_quota_slice *a,
                          const struct gs_quota_slice *b)
{
	if (a->priority != b->priority)
		return a->priority < b->priority;
	if (a->created != b->created)
		return a->created > b->created;
	return a->id > b->id;
}

/*
 * Merge sort of slice indices (stable, O(n log n)); qsort has no context
 * argument and core keeps no globals. `tmp` holds n entries.
 */
static void sort_victims(size_t *idx, size_t *tmp, size_t n,
                         const struct gs_quota_slice *slices)
{
	for (size_t width = 1; width < n; width *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * width) {
			size_t mid = lo + width < n ? lo + width : n;
			size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
			size_t i = lo, j = mid, k = lo;

			while (i < mid && j < hi)
				tmp[k++] = victim_before(&slices[idx[j]],
				                         &slices[idx[i]])
				               ? idx[j++]
				               : idx[i++];
			while (i < mid)
				tmp[k++] = idx[i++];
			while (j < hi)
				tmp[k++] = idx[j++];
		}
		memcpy(idx, tmp, n * sizeof(*idx));
	}
}

/* Writes the decision's one-line reason (truncated to fit). */
static void set_why(struct gs_quota_decision *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void set_why(struct gs_quota_decision *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(out->why, sizeof(out->why), fmt, ap);
	va_end(ap);
}

static gs_err reject(struct gs_quota_decision *out, struct gs_errbuf *eb)
{
	out->verdict = GS_QUOTA_REJECT;
	return gs_fail(eb, GS_ERR_QUOTA, "%s", out->why);
}

/* Step 1: the max of the team and of every ancestor. */
static bool over_max(const struct admit *ad, struct gs_quota_decision *out)
{
	const struct gs_quota_tree *t = ad->t;
	char a[48], b[48];

	for (int j = ad->req->team; j >= 0; j = t->team[j].parent) {
		for (int r = 0; r < GS_QRES__COUNT; r++) {
			int64_t want = ad->usage[j].v[r] + ad->req->use.v[r];

			if (ad->req->use.v[r] == 0 ||
			    want <= t->team[j].max.v[r])
				continue;
			gs_qres_format(r, want, a, sizeof(a));
			gs_qres_format(r, t->team[j].max.v[r], b, sizeof(b));
			if (j == ad->req->team)
				set_why(out, "team %s would use %s %s, max %s",
				        t->team[j].name, a, qres_names[r], b);
			else
				set_why(out,
				        "team %s (an ancestor of %s) would use %s %s, max %s",
				        t->team[j].name,
				        t->team[ad->req->team].name, a,
				        qres_names[r], b);
			return true;
		}
	}
	return false;
}

/* Step 3's precondition: the request stays within the team's guarantee. */
static bool entitled(const struct admit *ad, struct gs_quota_decision *out)
{
	const struct qteam *q = &ad->t->team[ad->req->team];
	char a[48], b[48], c[48];

	for (int r = 0; r < GS_QRES__COUNT; r++) {
		int64_t want =
		    ad->usage[ad->req->team].v[r] + ad->req->use.v[r];
		int64_t idle = ad->req->use.v[r] - ad->short_by[r];

		if (ad->short_by[r] <= 0 || want <= q->guarantee.v[r])
			continue;
		gs_qres_format(r, want, a, sizeof(a));
		gs_qres_format(r, q->guarantee.v[r], b, sizeof(b));
		gs_qres_format(r, idle, c, sizeof(c));
		set_why(out,
		        "team %s would use %s %s, above its guarantee %s, and only %s is idle to borrow",
		        q->name, a, qres_names[r], b, c);
		return false;
	}
	return true;
}

static void describe_admit(const struct admit *ad,
                           struct gs_quota_decision *out)
{
	const char *name = ad->t->team[ad->req->team].name;
	char parts[3][64];
	int n = 0;

	if (out->verdict == GS_QUOTA_ADMIT_RECLAIM) {
		set_why(out,
		        "team %s takes back its guarantee: %zu borrowed slice%s to preempt",
		        name, out->n_victims, out->n_victims == 1 ? "" : "s");
		return;
	}
	for (int r = 0; r < GS_QRES__COUNT; r++) {
		char a[48];

		if (out->borrowed.v[r] == 0)
			continue;
		gs_qres_format(r, out->borrowed.v[r], a, sizeof(a));
		snprintf(parts[n++], sizeof(parts[0]), "%s %s", a,
		         qres_names[r]);
	}
	if (n == 0)
		set_why(out, "fits within team %s's guarantee", name);
	else
		set_why(out, "fits: team %s borrows %s%s%s%s%s", name, parts[0],
		        n > 1 ? ", " : "", n > 1 ? parts[1] : "",
		        n > 2 ? ", " : "", n > 2 ? parts[2] : "");
}

static gs_err pick_victims(struct admit *ad, size_t n_slices,
                           struct gs_quota_decision *out, struct gs_errbuf *eb)
{
	size_t *idx = malloc((n_slices + 1) * sizeof(*idx));
	size_t *tmp = malloc((n_slices + 1) * sizeof(*tmp));
	size_t n = 0;
	gs_err err = GS_OK;

	if (idx == NULL || tmp == NULL) {
		err = gs_fail(eb, GS_ERR_NOMEM, "no memory to pick victims");
		goto out_free;
	}
	for (size_t s = 0; s < n_slices; s++)
		if (ad->slices[s].team != ad->req->team)
			idx[n++] = s;
	sort_victims(idx, tmp, n, ad->slices);
	out->victims = tmp;
	tmp = NULL;
	for (size_t k = 0; k < n && still_short(ad); k++) {
		const struct gs_quota_slice *s = &ad->slices[idx[k]];

		if (!is_borrowed(ad, s))
			continue;
		take(ad, s);
		out->victims[out->n_victims++] = idx[k];
	}
out_free:
	free(idx);
	free(tmp);
	return err;
}

gs_err gs_quota_admit(const struct gs_quota_tree *tree,
                      const struct gs_qvec *capacity,
                      const struct gs_quota_slice *slices, size_t n_slices,
                      const struct gs_quota_request *req,
                      struct gs_quota_decision *out, struct gs_errbuf *eb)
{
	struct admit ad = {.t = tree, .slices = slices, .req = req};
	const struct qteam *q;
	gs_err err;

	memset(out, 0, sizeof(*out));
	out->verdict = GS_QUOTA_REJECT;
	if (req->team < 0 || req->team >= tree->n)
		return gs_fail(eb, GS_ERR_INVALID,
		               "the request names team %d, which does not exist",
		               req->team);
	err = check_vec(&req->use, "the request", eb);
	if (err != GS_OK)
		return err;
	ad.own = malloc(((size_t)tree->n + 1) * sizeof(*ad.own));
	ad.usage = malloc(((size_t)tree->n + 1) * sizeof(*ad.usage));
	if (ad.own == NULL || ad.usage == NULL) {
		err = gs_fail(eb, GS_ERR_NOMEM, "no memory for quota usage");
		goto out_free;
	}
	err = sum_usage(tree, slices, n_slices, ad.own, ad.usage, eb);
	if (err != GS_OK)
		goto out_free;

	q = &tree->team[req->team];
	for (int r = 0; r < GS_QRES__COUNT; r++) {
		int64_t after = ad.usage[req->team].v[r] + req->use.v[r];
		int64_t above = after - q->guarantee.v[r];

		for (int i = 0; i < tree->n; i++)
			if (tree->team[i].parent < 0)
				ad.total.v[r] += ad.usage[i].v[r];
		ad.short_by[r] = ad.total.v[r] + req->use.v[r] - capacity->v[r];
		out->borrowed.v[r] = above <= 0              ? 0
		                     : above < req->use.v[r] ? above
		                                             : req->use.v[r];
	}
	if (over_max(&ad, out)) {
		err = reject(out, eb);
		goto out_free;
	}
	if (!still_short(&ad)) {
		out->verdict = GS_QUOTA_ADMIT;
		describe_admit(&ad, out);
		goto out_free;
	}
	if (!entitled(&ad, out)) {
		err = reject(out, eb);
		goto out_free;
	}
	err = pick_victims(&ad, n_slices, out, eb);
	if (err != GS_OK)
		goto out_free;
	for (int r = 0; r < GS_QRES__COUNT; r++) {
		char a[48], b[48];
		int64_t need = ad.short_by[r];

		if (need <= 0)
			continue;
		/* short_by[] went down by what the victims freed. */
		gs_qres_format(r, req->use.v[r] - need, a, sizeof(a));
		gs_qres_format(r, req->use.v[r], b, sizeof(b));
		set_why(out,
		        "team %s is within its guarantee, but idle and borrowed %s add up to only %s of the %s it asks for",
		        q->name, qres_names[r], a, b);
		out->n_victims = 0;
		err = reject(out, eb);
		goto out_free;
	}
	out->verdict = GS_QUOTA_ADMIT_RECLAIM;
	describe_admit(&ad, out);
out_free:
	free(ad.own);
	free(ad.usage);
	return err;
}

void gs_quota_decision_fini(struct gs_quota_decision *d)
{
	if (d == NULL)
		return;
	free(d->victims);
	d->victims = NULL;
	d->n_victims = 0;
}
