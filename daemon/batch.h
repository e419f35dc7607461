/*
 * batch.h - write batches: the store writes of one change of the node
 * model, built under the node lock and committed together.
 */
#ifndef GS_DAEMON_BATCH_H
#define GS_DAEMON_BATCH_H

#include <stdarg.h>

#include "gs/demand.h"
#include "slice.h"
#include "store.h"

/*
 * A list of store writes that commit together (one gs_store_op). Build it
 * under the node lock and submit it in the same critical section
 * (gs__node_submit, node_int.h); then either wait (gs__node_wait, outside
 * the lock) or hand it over detached (gs__node_submit_detached).
 */
enum gs__wr_kind {
	GS__WR_SLICE_PUT,
	GS__WR_SLICE_DEL,
	GS__WR_EVENT,
	GS__WR_USAGE,
	GS__WR_TEAM_PUT,
	GS__WR_TEAM_DEL,
	GS__WR_TRIM,
	GS__WR_DEMAND_PUT,
	GS__WR_DEMAND_DEL,
};

struct gs__wr_item {
	enum gs__wr_kind kind;
	union {
		struct gs_slice slice;
		int64_t id;
		struct gs_event ev;
		struct gs_usage_row usage;
		struct gs_team team;
		int keep;
		struct gs_demand_class demand; /* DEL: only the shape */
	} u;
};

struct gs__wr {
	struct gs_store_op op;
	int n, cap;
	struct gs__wr_item *items;
	bool nomem; /* an append failed: the batch is incomplete */
};

/* Heap-allocated, for detached submission (freed after its commit). */
struct gs__wr *gs__wr_new(void);
void gs__wr_init(struct gs__wr *wr);
void gs__wr_fini(struct gs__wr *wr);
void gs__wr_slice_put(struct gs__wr *wr, const struct gs_slice *s);
void gs__wr_slice_del(struct gs__wr *wr, int64_t id);
void gs__wr_team_put(struct gs__wr *wr, const struct gs_team *t);
void gs__wr_team_del(struct gs__wr *wr, const char *name);
void gs__wr_usage(struct gs__wr *wr, const struct gs_usage_row *r);
void gs__wr_trim(struct gs__wr *wr, int keep);
void gs__wr_demand_put(struct gs__wr *wr, const struct gs_demand_class *c);
void gs__wr_demand_del(struct gs__wr *wr, const struct gs_demand_shape *s);
/* An event about slice `s` (NULL: about the node). */
void gs__wr_event(struct gs__wr *wr, const char *type, const struct gs_slice *s,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void gs__wr_vevent(struct gs__wr *wr, const char *type, const char *slice,
                   const char *team, int gpu, int64_t owner, const char *fmt,
                   va_list ap) __attribute__((format(printf, 7, 0)));

/*
 * Queues `wr` to store `st`, to be waited for (gs_store_wait on wr->op),
 * or detached: a gs__wr_new() batch, freed after its commit (NULL-safe;
 * an empty one is freed at once).
 */
void gs__wr_queue(struct gs_store *st, struct gs__wr *wr);
void gs__wr_queue_detached(struct gs_store *st, struct gs__wr *wr);

#endif
