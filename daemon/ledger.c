/*
 * ledger.c - the usage ledger: a cursor per slice (the region's usage
 * counters at its last row, and the SM-time charged so far) and the rows
 * the ledger tick appends for what each slice used since. Owns the
 * cursors (node->ledger, by slice id, under the node lock): they outlive
 * a reload of the model from the store, and a daemon that starts again
 * picks them up from the rows already written (gs__ledger_resume).
 *
 * SM-time (busy time x the SM share) is accumulated per interval so that
 * a share that changes is charged at the rate of each interval: sm_s
 * covers the region's busy time up to sm_busy_ns.
 *
 * Ground truth. The region's books are written by the tenant's own
 * processes (usage.<uid> is theirs), so they can say anything: a counter
 * held at zero, an infinity, a value going back. Where NVML accounting
 * works, the watchdog charges each slice the GPU time and memory-time
 * NVML measured for its kernel-confirmed processes (gs__ledger_charge),
 * and rows bill that; the books are only compared with it (books of a
 * measured slice that say less than NVML are a `ledger.divergence` event
 * and a metric: cross_check). Where it
 * does not (no NVML, accounting refused), rows bill the books. Either
 * way every figure read from the books is checked first
 * (gs__ledger_books): finite, within what the node's GPUs could hold,
 * counters never going back and never faster than the wall clock; books
 * that fail are refused for that sample (`ledger.books_refused`, once
 * per slice until they are sane again) and the slice's previous figures
 * stay.
 */
#include "ledger.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gs/log.h"
#include "node_int.h"

struct cursor {
	int64_t id;
	int64_t t_ns; /* the end of the last row */
	uint64_t busy_ns;
	uint64_t throttled_ns;
	double mem_byte_s;
	double sm_s;
	uint64_t sm_busy_ns;
	/* ground truth (NVML), charged by the watchdog: totals charged and
	 * the part already in rows */
	bool gt;
	uint64_t gt_busy_ns, gt_billed_ns;
	double gt_mem_byte_s, gt_mem_billed;
	/* the books at the last check: refused since (reported once) */
	bool books_bad;
	int64_t books_t_ns;
	uint64_t books_busy_ns; /* at books_t_ns */
	/* the cross-check: books' busy time at the last row, and what the
	 * books and NVML said since the window started */
	uint64_t xc_busy_ns;
	bool xc_set;
	double xc_books_s, xc_gt_s;
	int64_t xc_t0_ns;
};

/* The cursors, ordered by slice id. */
struct gs__ledger {
	int n, cap;
	struct cursor *v;
};

struct gs__ledger *gs__ledger_create(void)
{
	return calloc(1, sizeof(struct gs__ledger));
}

void gs__ledger_destroy(struct gs__ledger *led)
{
	if (led == NULL)
		return;
	free(led->v);
	free(led);
}

/* Index of slice `id`'s cursor, or where it would go (*found false). */
static int cursor_at(const struct gs__ledger *led, int64_t id, bool *found)
{
	int lo = 0, hi = led->n - 1;

	*found = false;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (led->v[mid].id == id) {
			*found = true;
			return mid;
		}
		if (led->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return lo;
}

static struct cursor *cursor_of(struct gs__ledger *led, int64_t id)
{
	bool found;
	int at;

	if (led == NULL)
		return NULL;
	at = cursor_at(led, id, &found);
	return found ? &led->v[at] : NULL;
}

/* Slice `id`'s cursor, made from `now` when it had none (NULL: out of
 * memory; the slice goes without rows until a cursor can be made). */
static struct cursor *cursor_add(struct gs__ledger *led, int64_t id,
                                 int64_t now)
{
	bool found;
	int at;

	if (led == NULL)
		return NULL;
	at = cursor_at(led, id, &found);
	if (found)
		return &led->v[at];
	if (led->n == led->cap) {
		int cap = led->cap ? led->cap * 2 : 64;
		struct cursor *nv = realloc(led->v, sizeof(*nv) * (size_t)cap);

		if (nv == NULL) {
			gs_error("ledger",
			         "slice id=%lld: out of memory for its cursor; no rows until there is",
			         (long long)id);
			return NULL;
		}
		led->v = nv;
		led->cap = cap;
	}
	memmove(&led->v[at + 1], &led->v[at],
	        sizeof(led->v[0]) * (size_t)(led->n - at));
	led->n++;
	memset(&led->v[at], 0, sizeof(led->v[at]));
	led->v[at].id = id;
	led->v[at].t_ns = now;
	return &led->v[at];
}

static struct cursor *cursor_get(struct gs_node *node, int64_t id)
{
	return cursor_add(node->ledger, id, gs_now_ns());
}

void gs__ledger_sync(struct gs_node *node, int64_t now)
{
	struct gs__ledger *led = node->ledger;
	int k = 0;

	if (led == NULL)
		return;
	for (int i = 0; i < led->n; i++)
		if (gs__node_find_id(node, led->v[i].id) != NULL)
			led->v[k++] = led->v[i];
	led->n = k;
	for (int i = 0; i < node->n; i++)
		(void)cursor_add(led, node->v[i]->s.id, now);
}

void gs__ledger_start(struct gs_node *node, int64_t id, int64_t t_ns)
{
	struct cursor *c = cursor_add(node->ledger, id, t_ns);

	if (c != NULL)
		c->t_ns = t_ns;
}

void gs__ledger_forget(struct gs_node *node, int64_t id)
{
	struct gs__ledger *led = node->ledger;
	bool found;
	int at;

	if (led == NULL)
		return;
	at = cursor_at(led, id, &found);
	if (!found)
		return;
	memmove(&led->v[at], &led->v[at + 1],
	        sizeof(led->v[0]) * (size_t)(led->n - at - 1));
	led->n--;
}

/*
 * A daemon that starts again picks the ledger up where it stopped: the
 * cursors of each slice it loads are what its rows already hold (the
 * region's books of a slice that outlived the daemon keep counting from
 * the slice's creation), and its next row starts where the last one ended
 * (the slice was held while the daemon was down). Without rows: from now
 * and from zero.
 */
void gs__ledger_resume(struct gs_node *node)
{
	for (int i = 0; i < node->n; i++) {
		struct gs__nslice *ns = node->v[i];
		struct cursor *c = cursor_of(node->ledger, ns->s.id);
		struct gs_store_ledger_sum sum;
		struct gs_errbuf eb = {0};

		if (gs_store_ledger_sum(node->store, ns->s.id, &sum, &eb) !=
		    GS_OK) {
			gs_warn("node",
			        "slice=%s ledger not resumed (its next row may count earlier usage again): %s",
			        ns->s.name, eb.msg);
			continue;
		}
		if (sum.t1_ns == 0 || c == NULL)
			continue;
		c->busy_ns = (uint64_t)(sum.gpu_seconds * 1e9);
		c->throttled_ns = (uint64_t)(sum.throttled_seconds * 1e9);
		if (ns->s.spec.memory_bytes == 0)
			c->mem_byte_s =
			    sum.gib_seconds * 1024.0 * 1024.0 * 1024.0;
		if (sum.t1_ns < c->t_ns)
			c->t_ns = sum.t1_ns;
	}
}

double gs__ledger_sm_seconds(struct gs_node *node, const struct gs__nslice *ns,
                             uint64_t busy_ns)
{
	const struct cursor *c = cursor_of(node->ledger, ns->s.id);
	double sm_s = c ? c->sm_s : 0;
	uint64_t sm_busy_ns = c ? c->sm_busy_ns : 0;

	if (busy_ns < sm_busy_ns)
		return sm_s;
	return sm_s +
	       (double)(busy_ns - sm_busy_ns) / 1e9 * gs_slice_sm_share(&ns->s);
}

void gs__ledger_sm_advance(struct gs_node *node, struct gs__nslice *ns,
                           uint64_t busy_ns)
{
	struct cursor *c = cursor_get(node, ns->s.id);
	double sm_s = gs__ledger_sm_seconds(node, ns, busy_ns);

	if (c != NULL) {
		c->sm_s = sm_s;
		c->sm_busy_ns = busy_ns;
	}
	ns->live.sm_share = gs_slice_sm_share(&ns->s);
	ns->live.sm_seconds = sm_s;
}

void gs__ledger_charge(struct gs_node *node, int64_t id, uint64_t busy_ns,
                       double mem_byte_s)
{
	struct cursor *c = cursor_get(node, id);

	if (c == NULL)
		return;
	c->gt = true;
	c->gt_busy_ns += busy_ns;
	if (isfinite(mem_byte_s) && mem_byte_s > 0)
		c->gt_mem_byte_s += mem_byte_s;
}

/* Why the books `u` of a slice cannot be true, or NULL when they may be. */
static const char *books_false(struct gs_node *node, const struct cursor *c,
                               const struct gs_slice_usage *u, int64_t now)
{
	uint64_t mem_max = 0;

	for (int g = 0; g < node->gpus->n; g++)
		mem_max += node->gpus->gpu[g].memory_bytes;
	if (!isfinite(u->mem_byte_s) || u->mem_byte_s < 0)
		return "memory-time is not a finite positive number";
	if (u->n_procs > GS_REGION_MAX_PROCS)
		return "more processes than the region holds";
	if (mem_max && (u->mem_used > mem_max || u->mem_peak > mem_max))
		return "more memory than the node's GPUs have";
	if (u->busy_ns > (uint64_t)INT64_MAX ||
	    u->throttled_ns > (uint64_t)INT64_MAX)
		return "a time counter out of range";
	if (c != NULL && c->books_t_ns && u->busy_ns > c->books_busy_ns && now > c->books_t_ns) {
		/* Busy time runs at most at the wall clock on each GPU. */
		uint64_t wall = (uint64_t)(now - c->books_t_ns);
		int n_dev = u->n_dev ? (int)u->n_dev : 1;

		if (u->busy_ns - c->books_busy_ns >
		    wall * (uint64_t)n_dev + 1000000000ULL)
			return "busy time ran faster than the clock";
	}
	return NULL;
}

gs_err gs__ledger_books(struct gs_node *node, struct gs__nslice *ns,
                        struct gs_slice_usage *u, struct gs__wr *wr)
{
	struct cursor *c = cursor_get(node, ns->s.id);
	int64_t now = gs_now_ns();
	const char *why;
	gs_err err;

	if (node->region == NULL || !ns->has_ref)
		return GS_ERR_NOT_FOUND;
	err = gs_region_slice_usage(node->region, &ns->ref, u);
	if (err != GS_OK || c == NULL)
		return err != GS_OK ? err : GS_ERR_NOMEM;
	why = books_false(node, c, u, now);
	if (why != NULL) {
		node->ctr.books_refused++;
		if (!c->books_bad) {
			c->books_bad = true;
			gs_warn("ledger", "slice=%s books refused: %s",
			        ns->s.name, why);
			if (wr)
				gs__wr_event(wr, "ledger.books_refused", &ns->s,
				             "the slice's books were refused: %s; NVML's figures stand",
				             why);
		}
		return GS_ERR_CORRUPT;
	}
	c->books_bad = false;
	c->books_t_ns = now;
	c->books_busy_ns = u->busy_ns;
	return GS_OK;
}

/* Lock held: refreshes ns->live from books that passed the check. */
static void live_from_books(struct gs__nslice *ns,
                            const struct gs_slice_usage *u)
{
	ns->live.n_procs = u->n_procs;
	ns->live.mem_used = u->mem_used;
	ns->live.mem_peak = u->mem_peak;
	ns->live.busy_ns = u->busy_ns;
	ns->live.throttled_ns = u->throttled_ns;
}

/*
 * Whether the shim keeps the slice's books whatever else is on its GPU:
 * a slice with a compute share, a priority or a weight takes the launch
 * slow path, where every batch is timed. A plain slice's processes take
 * the fast path (no timing, books at 0) while no measured slice shares
 * the GPU, so its books say nothing a cross-check could hold it to; and
 * nothing rests on them (no share to keep to; NVML bills).
 */
static bool books_kept(const struct gs__nslice *ns)
{
	return ns->s.spec.compute_pct > 0 ||
	       ns->s.spec.priority != GS_PRIORITY_NORMAL || ns->s.spec.weight > 1;
}

/*
 * Lock held: the books, summed over the rows of a window (a minute at
 * most), say less GPU time than NVML measured, by more than half a second
 * and a tenth: an event (work the slice's limits never saw; NVML bills),
 * and a new window. Only that direction means a lie. The shim times a
 * batch by the events around it, and on a time-sliced GPU another
 * context's turn that falls between them (a higher priority taking the
 * GPU, a neighbour's kernel outlasting its drain) is in the span: honest
 * books run above NVML (25-90 % in `make demo`), never below, and only
 * cost their own slice (its share is charged that span).
 */
static void cross_check(struct gs_node *node, struct gs__nslice *ns,
                        struct cursor *c, bool books_ok,
                        const struct gs_slice_usage *u, double gt_s,
                        struct gs__wr *wr, int64_t now)
{
	double books_s;

	if (!books_ok || !books_kept(ns) || !c->xc_set ||
	    u->busy_ns < c->xc_busy_ns || now - c->xc_t0_ns > 60000000000LL) {
		c->xc_set = books_ok;
		c->xc_busy_ns = books_ok ? u->busy_ns : 0;
		c->xc_books_s = c->xc_gt_s = 0;
		c->xc_t0_ns = now;
		return;
	}
	c->xc_books_s += (double)(u->busy_ns - c->xc_busy_ns) / 1e9;
	c->xc_gt_s += gt_s;
	c->xc_busy_ns = u->busy_ns;
	books_s = c->xc_books_s;
	gt_s = c->xc_gt_s;
	if (gt_s - books_s <= 0.5 + 0.1 * gt_s)
		return;
	c->xc_books_s = c->xc_gt_s = 0;
	c->xc_t0_ns = now;
	node->ctr.ledger_divergences++;
	gs_warn("ledger", "slice=%s books say %.3f s of GPU time, NVML %.3f s: under-reported",
	        ns->s.name, books_s, gt_s);
	gs__wr_event(wr, "ledger.divergence", &ns->s,
	             "books say %.3f s of GPU time, NVML measured %.3f s (billed)",
	             books_s, gt_s);
}

void gs__ledger_sample(struct gs_node *node, struct gs__nslice *ns,
                       struct gs__wr *wr, int64_t now)
{
	struct gs_usage_row r;
	struct gs_slice_usage u;
	struct cursor *c = cursor_get(node, ns->s.id);
	bool books_ok;
	double dt;

	/* A slice being created holds nothing anyone could use yet. */
	if (c == NULL)
		return;
	dt = (double)(now - c->t_ns) / 1e9;
	if (dt <= 0 || ns->s.state == GS_SLICE_PENDING ||
	    ns->s.state == GS_SLICE_FAILED)
		return;
	memset(&r, 0, sizeof(r));
	books_ok = gs__ledger_books(node, ns, &u, wr) == GS_OK;
	if (books_ok) {
		/* A counter that went back (new books) moves the cursor
		 * without charging. */
		if (u.busy_ns >= c->busy_ns)
			r.gpu_seconds = (double)(u.busy_ns - c->busy_ns) / 1e9;
		if (u.throttled_ns >= c->throttled_ns)
			r.throttled_seconds =
			    (double)(u.throttled_ns - c->throttled_ns) / 1e9;
		if (ns->s.spec.memory_bytes == 0 &&
		    u.mem_byte_s >= c->mem_byte_s)
			r.gib_seconds = (u.mem_byte_s - c->mem_byte_s) /
			                (1024.0 * 1024.0 * 1024.0);
		c->busy_ns = u.busy_ns;
		c->throttled_ns = u.throttled_ns;
		c->mem_byte_s = u.mem_byte_s;
		live_from_books(ns, &u);
		gs__ledger_sm_advance(node, ns, u.busy_ns);
	}
	if (c->gt) {
		/* NVML's figures bill; the books only cross-check them. */
		r.gpu_seconds = (double)(c->gt_busy_ns - c->gt_billed_ns) / 1e9;
		c->gt_billed_ns = c->gt_busy_ns;
		if (ns->s.spec.memory_bytes == 0)
			r.gib_seconds = (c->gt_mem_byte_s - c->gt_mem_billed) /
			                (1024.0 * 1024.0 * 1024.0);
		c->gt_mem_billed = c->gt_mem_byte_s;
		cross_check(node, ns, c, books_ok, &u, r.gpu_seconds, wr, now);
	}
	/* SM-time at the share of this interval (sm_advance's rate). */
	r.sm_seconds = r.gpu_seconds * gs_slice_sm_share(&ns->s);
	/* Memory is charged as reserved: a cap held is a cap others lack.
	 * A parked slice (gs/park.h) holds none: its contents are in host
	 * memory, its promise counted nowhere, so it is billed no GPU
	 * memory-time while parked (the cursors above still move). */
	if (ns->s.spec.memory_bytes)
		r.gib_seconds = (double)ns->s.spec.memory_bytes /
		                (1024.0 * 1024.0 * 1024.0) * dt;
	snprintf(r.mode, sizeof(r.mode), "%s", gs_mode_name(ns->s.mode));
	r.alloc_seconds =
	    dt * (ns->s.spec.compute_pct ? ns->s.spec.compute_pct : 100) /
	    100.0;
	/* Nor its compute: neither counts in its GPU's admission while it
	 * is parked. The row says how long it was parked. */
	if (ns->s.state == GS_SLICE_PARKED) {
		r.gib_seconds = 0;
		r.alloc_seconds = 0;
		r.parked_seconds = dt;
	}
	r.slice_id = ns->s.id;
	r.owner_uid = ns->s.owner_uid;
	snprintf(r.slice, sizeof(r.slice), "%s", ns->s.name);
	snprintf(r.team, sizeof(r.team), "%s", ns->s.team);
	if (ns->s.gpu_index >= 0 && ns->s.gpu_index < node->gpus->n)
		snprintf(r.gpu_model, sizeof(r.gpu_model), "%s",
		         node->gpus->gpu[ns->s.gpu_index].model);
	r.t0_ns = c->t_ns;
	r.t1_ns = now;
	c->t_ns = now;
	gs__wr_usage(wr, &r);
}

/* Writes a ledger row for every slice (the ledger tick). */
void gs_node_ledger_sample(struct gs_node *node)
{
	struct gs__wr *wr = gs__wr_new();
	int64_t now = gs_now_ns();

	pthread_mutex_lock(&node->lock);
	for (int i = 0; i < node->n; i++)
		gs__ledger_sample(node, node->v[i], wr, now);
	if (node->cfg->events_keep > 0)
		gs__wr_trim(wr, node->cfg->events_keep);
	gs__node_submit_detached(node, wr);
	pthread_mutex_unlock(&node->lock);
}

gs_err gs_node_slice_usage(struct gs_node *node, int64_t id,
                           struct gs_node_usage *out)
{
	struct gs__nslice *ns;
	struct gs_slice_ref ref;
	struct gs_slice_usage u;
	bool has_ref = false;

	pthread_mutex_lock(&node->lock);
	ns = gs__node_find_id(node, id);
	if (ns == NULL) {
		pthread_mutex_unlock(&node->lock);
		return GS_ERR_NOT_FOUND;
	}
	*out = ns->live;
	has_ref = node->region && ns->has_ref;
	ref = ns->ref;
	pthread_mutex_unlock(&node->lock);
	/* Off the node lock: the usage file's mutex is shared with tenants
	 * (a stale ref reads GS_ERR_NOT_FOUND and keeps the last sample). */
	if (has_ref && gs_region_slice_usage(node->region, &ref, &u) == GS_OK &&
	    books_false(node, NULL, &u, 0) == NULL) {
		out->n_procs = u.n_procs;
		out->mem_used = u.mem_used;
		out->mem_peak = u.mem_peak;
		out->busy_ns = u.busy_ns;
		out->throttled_ns = u.throttled_ns;
		/* Charged since the last tick at the share now; the slice
		 * may be gone meanwhile (then the last tick's figure stays). */
		pthread_mutex_lock(&node->lock);
		ns = gs__node_find_id(node, id);
		if (ns != NULL)
			out->sm_seconds =
			    gs__ledger_sm_seconds(node, ns, u.busy_ns);
		pthread_mutex_unlock(&node->lock);
	}
	return GS_OK;
}
