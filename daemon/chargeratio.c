/*
 * chargeratio.c - each limited slice's charge ratio (chargeratio.h): how
 * much of the GPU time its books say NVML accounting measured for it.
 * Owned by the accounting poll (acct.c), under the node lock.
 *
 * Why. The shim times a batch of kernels by the events around it. On a
 * time-sliced GPU the span between them also covers whatever another
 * context ran meanwhile (a neighbour's kernel still on the GPU when the
 * batch starts, the driver's time slices of a neighbour with work
 * queued), so honest books run above NVML (a 40 % high-priority slice
 * beside a 30 % burn: +42 %), and a slice charged its books gets less
 * than its share. NVML accounting is the driver's own count; the ratio
 * NVML / books over a recent window, published for the shim, scales what
 * the shim charges the slice's bucket so that its share holds in GPU time
 * as the driver counts it. The books keep the raw figure (the ledger's
 * cross-check reads them).
 *
 * The estimate, per slice:
 *   - the polls' figures are summed into buckets of at least BUCKET_NS;
 *     the window is the newest ones (the open bucket first) going back
 *     until it holds at least MIN_SPAN_NS of wall time, MIN_BOOKS_NS of
 *     books, and NVML time RES_TIMES times what NVML's figures may be off
 *     now (a running process's figure is a whole percent of its life,
 *     so a window is only as good as the lives it spans: a long-lived
 *     process needs a long window), never past MAX_SPAN_NS;
 *   - the window's NVML / books, bounded to [1/4, 1]: never above 1, so
 *     books that say less than NVML (a tenant lying low, work its shim
 *     never saw) gain nothing; never below 1/4, so a slice is charged at
 *     least a quarter of what it measured;
 *   - smoothed (an average over about TAU_NS of polls) and published
 *     only when it moved by PUBLISH_STEP or more, or reached a bound; at
 *     SNAP or above it is 1 (an honest slice alone: unchanged);
 *   - no window for STALE_NS (the slice idle, its books refused, NVML
 *     accounting off): back to 1.
 *
 * Stability: the ratio changes what the slice runs, which changes what
 * falls inside its spans. Charged less, the slice runs more, its
 * neighbours less, and less of their time falls inside its spans: the
 * measured ratio moves up, against the change. That is a fixed point
 * reached by damped steps (the smoothing is a step of at most dt / TAU_NS
 * toward the window's figure, the window itself seconds long), which
 * converges for any such negative slope of magnitude below 1. The unit
 * test drives it with a model of the loop (test_daemon_chargeratio.c).
 */
#include "chargeratio.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BUCKET_NS    1000000000LL
#define RING         128
#define MIN_SPAN_NS  4000000000LL
#define MAX_SPAN_NS  60000000000LL
#define MIN_BOOKS_NS 1000000000ULL
#define RES_TIMES    10
#define TAU_NS       4000000000LL
#define STALE_NS     30000000000LL
#define RATIO_MIN    0.25
#define SNAP         0.97
#define PUBLISH_STEP 0.01
#define Q16          65536.0

struct bucket {
	int64_t span_ns;
	uint64_t books_ns, nvml_ns;
};

struct slice {
	int64_t id;
	bool swept; /* stepped since the last sweep */
	/* this poll's NVML figures, from gs__cratio_add */
	uint64_t add_nvml_ns, add_res_ns;
	/* the books at the last valid poll */
	bool have_base;
	uint64_t base_books_ns;
	int64_t base_t_ns;
	/* the open bucket and the closed ones, newest at ring[(head - 1)] */
	struct bucket open;
	struct bucket ring[RING];
	int head, n;
	double ratio;
	int64_t last_est_ns; /* the last step that had a window */
	int64_t last_step_ns;
	uint32_t published; /* 0: nothing yet */
};

struct gs__cratio {
	struct slice **v;
	int n, cap;
};

struct gs__cratio *gs__cratio_create(void)
{
	return calloc(1, sizeof(struct gs__cratio));
}

void gs__cratio_destroy(struct gs__cratio *cr)
{
	if (cr == NULL)
		return;
	for (int i = 0; i < cr->n; i++)
		free(cr->v[i]);
	free(cr->v);
	free(cr);
}

static struct slice *find(struct gs__cratio *cr, int64_t id)
{
	for (int i = 0; i < cr->n; i++)
		if (cr->v[i]->id == id)
			return cr->v[i];
	return NULL;
}

/* Slice `id`'s state, made when it had none (NULL: out of memory, and
 * the slice is charged its books until there is). */
static struct slice *get(struct gs__cratio *cr, int64_t id)
{
	struct slice *s = find(cr, id);

	if (s != NULL)
		return s;
	if (cr->n == cr->cap) {
		int cap = cr->cap ? cr->cap * 2 : 16;
		struct slice **nv = realloc(cr->v, sizeof(*nv) * (size_t)cap);

		if (nv == NULL)
			return NULL;
		cr->v = nv;
		cr->cap = cap;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return NULL;
	s->id = id;
	s->ratio = 1.0;
	cr->v[cr->n++] = s;
	return s;
}

void gs__cratio_add(struct gs__cratio *cr, int64_t id, uint64_t nvml_ns,
                    uint64_t res_ns)
{
	struct slice *s = cr ? get(cr, id) : NULL;

	if (s == NULL)
		return;
	s->add_nvml_ns += nvml_ns;
	s->add_res_ns += res_ns;
}

static void restart(struct slice *s)
{
	s->have_base = false;
	memset(&s->open, 0, sizeof(s->open));
	s->head = s->n = 0;
}

/* Adds one valid poll's figures to the open bucket, closing it when it
 * is long enough. */
static void take(struct slice *s, int64_t now, uint64_t books_ns)
{
	if (!s->have_base || books_ns < s->base_books_ns ||
	    now <= s->base_t_ns) {
		/* The first poll, or books that went back (new books): the
		 * figures since are a new start. */
		if (s->have_base && books_ns < s->base_books_ns)
			restart(s);
		s->have_base = true;
		s->base_books_ns = books_ns;
		s->base_t_ns = now;
		return;
	}
	s->open.span_ns += now - s->base_t_ns;
	s->open.books_ns += books_ns - s->base_books_ns;
	s->open.nvml_ns += s->add_nvml_ns;
	s->base_books_ns = books_ns;
	s->base_t_ns = now;
	if (s->open.span_ns < BUCKET_NS)
		return;
	s->ring[s->head] = s->open;
	s->head = (s->head + 1) % RING;
	if (s->n < RING)
		s->n++;
	memset(&s->open, 0, sizeof(s->open));
}

/* The newest window with enough data: true and *w when there is one. */
static bool window(const struct slice *s, uint64_t res_ns, struct bucket *w)
{
	*w = s->open;
	for (int k = 0;; k++) {
		if (w->span_ns >= MIN_SPAN_NS && w->books_ns >= MIN_BOOKS_NS &&
		    w->nvml_ns >= RES_TIMES * res_ns)
			return true;
		if (k == s->n)
			return false;
		{
			const struct bucket *b =
			    &s->ring[(s->head - 1 - k + RING) % RING];

			if (w->span_ns + b->span_ns > MAX_SPAN_NS)
				return false;
			w->span_ns += b->span_ns;
			w->books_ns += b->books_ns;
			w->nvml_ns += b->nvml_ns;
		}
	}
}

static uint32_t q16_of(double r)
{
	if (r >= SNAP)
		return (uint32_t)Q16;
	if (r < RATIO_MIN)
		r = RATIO_MIN;
	return (uint32_t)lround(r * Q16);
}

uint32_t gs__cratio_step(struct gs__cratio *cr, int64_t id, int64_t now_ns,
                         bool valid, uint64_t books_ns, bool *publish,
                         struct gs__cratio_fig *fig)
{
	struct slice *s = cr ? get(cr, id) : NULL;
	struct gs__cratio_fig f = {.ratio = 1.0, .raw = -1};
	struct bucket w;
	uint32_t q;

	*publish = false;
	if (s == NULL) {
		if (fig != NULL)
			*fig = f;
		return (uint32_t)Q16;
	}
	s->swept = true;
	if (!valid)
		restart(s);
	else
		take(s, now_ns, books_ns);
	if (s->last_est_ns == 0)
		s->last_est_ns = now_ns;
	if (valid && window(s, s->add_res_ns, &w)) {
		double raw = (double)w.nvml_ns / (double)w.books_ns;
		double target = raw > 1 ? 1 : raw < RATIO_MIN ? RATIO_MIN : raw;
		double a = s->last_step_ns && now_ns > s->last_step_ns
		               ? (double)(now_ns - s->last_step_ns) / TAU_NS
		               : 1;

		s->ratio += (a > 1 ? 1 : a) * (target - s->ratio);
		s->last_est_ns = now_ns;
		f.raw = raw;
		f.books_s = (double)w.books_ns / 1e9;
		f.nvml_s = (double)w.nvml_ns / 1e9;
		f.window_s = (double)w.span_ns / 1e9;
	} else if (now_ns - s->last_est_ns > STALE_NS) {
		s->ratio = 1.0;
	}
	s->last_step_ns = now_ns;
	s->add_nvml_ns = s->add_res_ns = 0;
	q = q16_of(s->ratio);
	/* Within a step of what stands it stays, except at the bounds
	 * (an honest slice alone gets exactly 1). */
	if (s->published == 0 || q == (uint32_t)Q16 ||
	    q == (uint32_t)(RATIO_MIN * Q16) ||
	    fabs((double)q - (double)s->published) >= PUBLISH_STEP * Q16)
		*publish = q != s->published;
	if (*publish)
		s->published = q;
	f.ratio = (double)s->published / Q16;
	if (fig != NULL)
		*fig = f;
	return s->published;
}

void gs__cratio_forget(struct gs__cratio *cr, int64_t id)
{
	if (cr == NULL)
		return;
	for (int i = 0; i < cr->n; i++)
		if (cr->v[i]->id == id) {
			free(cr->v[i]);
			cr->v[i] = cr->v[--cr->n];
			return;
		}
}

void gs__cratio_sweep(struct gs__cratio *cr)
{
	int k = 0;

	if (cr == NULL)
		return;
	for (int i = 0; i < cr->n; i++) {
		if (cr->v[i]->swept) {
			cr->v[i]->swept = false;
			cr->v[k++] = cr->v[i];
		} else {
			free(cr->v[i]);
		}
	}
	cr->n = k;
}
