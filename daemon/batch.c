/*
 * batch.c - write batches (batch.h): the store writes of one change of
 * the node model, built under the node lock and applied by the store's
 * writer in one transaction (wr_apply). Owns the batch and its items;
 * knows nothing of the model. A batch missing an item (an append ran out
 * of memory) is not written at all.
 */
#include "batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gs/faultinj.h"
#include "gs/log.h"
#include "node.h"

int64_t gs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void gs__wr_init(struct gs__wr *wr)
{
	memset(wr, 0, sizeof(*wr));
}

void gs__wr_fini(struct gs__wr *wr)
{
	free(wr->items);
	wr->items = NULL;
	wr->n = wr->cap = 0;
}

struct gs__wr *gs__wr_new(void)
{
	struct gs__wr *wr = malloc(sizeof(*wr));

	if (wr)
		gs__wr_init(wr);
	return wr;
}

static struct gs__wr_item *wr_push(struct gs__wr *wr, enum gs__wr_kind kind)
{
	struct gs__wr_item *it;

	if (wr == NULL)
		return NULL;
	if (gs_fault_hit("alloc.write")) {
		wr->nomem = true;
		return NULL;
	}
	if (wr->n == wr->cap) {
		int cap = wr->cap ? wr->cap * 2 : 4;
		struct gs__wr_item *ni = realloc(wr->items, sizeof(*ni) * cap);

		if (ni == NULL) {
			wr->nomem = true;
			return NULL;
		}
		wr->items = ni;
		wr->cap = cap;
	}
	it = &wr->items[wr->n++];
	it->kind = kind;
	return it;
}

void gs__wr_slice_put(struct gs__wr *wr, const struct gs_slice *s)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_SLICE_PUT);

	if (it)
		it->u.slice = *s;
}

void gs__wr_slice_del(struct gs__wr *wr, int64_t id)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_SLICE_DEL);

	if (it)
		it->u.id = id;
}

void gs__wr_team_put(struct gs__wr *wr, const struct gs_team *t)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_TEAM_PUT);

	if (it)
		it->u.team = *t;
}

void gs__wr_team_del(struct gs__wr *wr, const char *name)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_TEAM_DEL);

	if (it) {
		memset(&it->u.team, 0, sizeof(it->u.team));
		snprintf(it->u.team.name, sizeof(it->u.team.name), "%s", name);
	}
}

void gs__wr_usage(struct gs__wr *wr, const struct gs_usage_row *r)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_USAGE);

	if (it)
		it->u.usage = *r;
}

void gs__wr_trim(struct gs__wr *wr, int keep)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_TRIM);

	if (it)
		it->u.keep = keep;
}

void gs__wr_demand_put(struct gs__wr *wr, const struct gs_demand_class *c)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_DEMAND_PUT);

	if (it)
		it->u.demand = *c;
}

void gs__wr_demand_del(struct gs__wr *wr, const struct gs_demand_shape *s)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_DEMAND_DEL);

	if (it) {
		memset(&it->u.demand, 0, sizeof(it->u.demand));
		it->u.demand.shape = *s;
	}
}

void gs__wr_vevent(struct gs__wr *wr, const char *type, const char *slice,
                   const char *team, int gpu, int64_t owner, const char *fmt,
                   va_list ap)
{
	struct gs__wr_item *it = wr_push(wr, GS__WR_EVENT);
	struct gs_event *e;

	if (it == NULL)
		return;
	e = &it->u.ev;
	memset(e, 0, sizeof(*e));
	e->ts_ns = gs_now_ns();
	snprintf(e->type, sizeof(e->type), "%s", type);
	snprintf(e->slice, sizeof(e->slice), "%s", slice ? slice : "");
	snprintf(e->team, sizeof(e->team), "%s", team ? team : "");
	e->gpu = gpu;
	e->owner_uid = owner;
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
}

void gs__wr_event(struct gs__wr *wr, const char *type, const struct gs_slice *s,
                  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (s)
		gs__wr_vevent(wr, type, s->name, s->team, s->gpu_index,
		              s->owner_uid, fmt, ap);
	else
		gs__wr_vevent(wr, type, "", "", -1, -1, fmt, ap);
	va_end(ap);
}

static gs_err wr_apply(struct gs_store *st, struct gs_store_op *op)
{
	struct gs__wr *wr = op->arg;
	gs_err err = GS_OK;

	/* A batch missing an item (out of memory while it was built) is not
	 * written at all: the request that made it fails, whole. */
	if (wr->nomem) {
		gs_error("node", "a write batch is incomplete (out of memory): not written");
		return GS_ERR_NOMEM;
	}
	for (int i = 0; i < wr->n && !err; i++) {
		struct gs__wr_item *it = &wr->items[i];

		switch (it->kind) {
		case GS__WR_SLICE_PUT:
			err = gs_store_slice_put(st, &it->u.slice);
			break;
		case GS__WR_SLICE_DEL:
			err = gs_store_slice_delete(st, it->u.id);
			break;
		case GS__WR_EVENT:
			err = gs_store_event_add(st, &it->u.ev);
			break;
		case GS__WR_USAGE:
			/* A row the store refuses (a figure not finite) is
			 * that slice's alone: skipped and reported, the rest
			 * of the batch is written. */
			err = gs_store_usage_add(st, &it->u.usage);
			if (err == GS_ERR_INVALID) {
				gs_error("node", "slice=%s usage row skipped",
				         it->u.usage.slice);
				err = GS_OK;
			}
			break;
		case GS__WR_TEAM_PUT:
			err = gs_store_team_put(st, &it->u.team);
			break;
		case GS__WR_TEAM_DEL:
			err = gs_store_team_delete(st, it->u.team.name);
			break;
		case GS__WR_TRIM:
			err = gs_store_events_trim(st, it->u.keep);
			break;
		case GS__WR_DEMAND_PUT:
			err = gs_store_demand_put(st, &it->u.demand);
			break;
		case GS__WR_DEMAND_DEL:
			err = gs_store_demand_delete(st, &it->u.demand.shape);
			break;
		}
	}
	return err;
}

static void wr_after_detached(struct gs_store_op *op, gs_err result)
{
	struct gs__wr *wr = op->arg;

	if (result)
		gs_error("node", "background write lost err=%s items=%d",
		         gs_err_name(result), wr->n);
	gs__wr_fini(wr);
	free(wr);
}

void gs__wr_queue(struct gs_store *st, struct gs__wr *wr)
{
	wr->op.apply = wr_apply;
	wr->op.after = NULL;
	wr->op.arg = wr;
	gs_store_submit(st, &wr->op);
}

void gs__wr_queue_detached(struct gs_store *st, struct gs__wr *wr)
{
	if (wr == NULL)
		return;
	if (wr->n == 0) {
		gs__wr_fini(wr);
		free(wr);
		return;
	}
	wr->op.apply = wr_apply;
	wr->op.after = wr_after_detached;
	wr->op.arg = wr;
	gs_store_submit_detached(st, &wr->op);
}
