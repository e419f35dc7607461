/*
 * quota.h - hierarchical team quotas: admission, borrowing and reclaim.
 *
 * Teams form a forest (org -> team -> sub-team, any depth). Each team has
 * a guaranteed share and a maximum in three resources (enum gs_qres): GPU
 * memory in bytes, compute in percent of one GPU summed over slices (two
 * 50% slices on two GPUs are 100), and MIG compute slices (a 3g.40gb
 * instance counts 3). A team's usage is its own slices plus all of its
 * descendants', so a child's usage counts against every ancestor's max.
 *
 * Everything here is pure: the caller passes the tree, the cluster's
 * capacity and the list of running slices, and gets a decision back.
 * Nothing is remembered between calls.
 *
 * Admission (gs_quota_admit) of a request by team T:
 *
 *   1. Max: for T and then each ancestor A, usage(A) + request must stay
 *      within max(A) in every resource, else REJECT
 *      ("team ml would use 140% compute, max 120%").
 *   2. Idle capacity: if the cluster's free capacity covers the request,
 *      ADMIT. Whatever T then uses above its guarantee is borrowed: it
 *      was some other team's idle guarantee (decision.borrowed says how
 *      much of the request is borrowed).
 *   3. Reclaim: otherwise T may take capacity back only for the resources
 *      that are short, and only while usage(T) + request stays within T's
 *      guarantee (else REJECT: borrowing needs idle capacity). Victims are
 *      chosen among borrowed slices, see below; if they free enough the
 *      answer is ADMIT_RECLAIM with the victims in preemption order, else
 *      REJECT saying how much is short.
 *
 * Which slices are borrowed, seen from requester T: for a slice of team X
 * (X != T), let L be the lowest common ancestor of X and T (a virtual root
 * above all top-level teams when they share none). The slice is borrowed
 * when X's branch just below L uses more than that branch's guarantee in a
 * short resource that the slice holds. When X is itself an ancestor of T
 * (L == X), the branch is X's own slices, whose guarantee is what X keeps
 * beyond its children's guarantees. So a team never loses capacity to a
 * cousin while its own branch stays within its guarantee, and siblings
 * borrowing from each other inside one org are reclaimed first by that
 * org's own teams.
 *
 * Reclaim order: lowest priority first, then the most recently created,
 * then the highest id. Each candidate is re-checked against the usage left
 * after the victims already picked (a branch that falls back within its
 * guarantee stops giving up slices), and picking stops as soon as every
 * short resource is covered.
 *
 * Tree validation (gs_quota_tree_create) rejects: empty, too long or
 * duplicate names (GS_ERR_INVALID / GS_ERR_EXISTS), a parent that is not
 * defined (GS_ERR_NOT_FOUND), parent links that form a cycle
 * (GS_ERR_INVALID, "teams form a cycle: a -> b -> a"), negative amounts or
 * a guarantee above the max (GS_ERR_RANGE), and children whose guarantees
 * add up to more than their parent's (GS_ERR_RANGE): a guarantee nobody
 * can honour is not a guarantee.
 */
#ifndef GS_QUOTA_H
#define GS_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/err.h"

#define GS_QUOTA_NAME_MAX  64 /* NUL included */
#define GS_QUOTA_UNLIMITED INT64_MAX

enum gs_qres {
	GS_QRES_MEMORY = 0, /* bytes of GPU memory */
	GS_QRES_COMPUTE,    /* percent of one GPU, summed */
	GS_QRES_MIG,        /* MIG compute slices ("3g" = 3) */
	GS_QRES__COUNT
};

/* An amount of every resource; all values >= 0. */
struct gs_qvec {
	int64_t v[GS_QRES__COUNT];
};

/* "memory", "compute", "MIG slices". */
const char *gs_qres_name(enum gs_qres r);
/*
 * Writes an amount of one resource for people, to be followed by the
 * resource's name: "48.0 GiB", "512 MiB", "140%", "3" (MIG slices),
 * "unlimited". Returns snprintf's result.
 */
int gs_qres_format(enum gs_qres r, int64_t amount, char *buf, size_t size);

/* One team as the caller describes it; strings are copied. */
struct gs_quota_team_def {
	const char *name;
	const char *parent; /* NULL or "" for a top-level team */
	struct gs_qvec guarantee;
	struct gs_qvec max; /* GS_QUOTA_UNLIMITED for no max */
};

/* A validated team forest (opaque). */
struct gs_quota_tree;

/*
 * Builds and validates a tree from `n` definitions, in any order. OUT:
 * *tree, which the caller frees with gs_quota_tree_destroy(). On error
 * *tree is NULL and eb says which team and why. Team indices used below
 * are positions in `defs`.
 */
gs_err gs_quota_tree_create(const struct gs_quota_team_def *defs, int n,
                            struct gs_quota_tree **tree, struct gs_errbuf *eb);
void gs_quota_tree_destroy(struct gs_quota_tree *tree);

int gs_quota_tree_count(const struct gs_quota_tree *tree);
/* Index of the team called `name`, or -1. */
int gs_quota_tree_find(const struct gs_quota_tree *tree, const char *name);
/* Name of team i (lent; lives as long as the tree). */
const char *gs_quota_tree_name(const struct gs_quota_tree *tree, int i);
/* Parent index of team i, or -1 for a top-level team. */
int gs_quota_tree_parent(const struct gs_quota_tree *tree, int i);
/* Depth of team i: 0 for a top-level team. */
int gs_quota_tree_depth(const struct gs_quota_tree *tree, int i);
const struct gs_qvec *gs_quota_tree_guarantee(const struct gs_quota_tree *t,
                                              int i);
const struct gs_qvec *gs_quota_tree_max(const struct gs_quota_tree *t, int i);

/*
 * GS_ERR_RANGE when the top-level guarantees add up to more than
 * `capacity` in some resource (the cluster cannot honour them all).
 */
gs_err gs_quota_tree_check_capacity(const struct gs_quota_tree *tree,
                                    const struct gs_qvec *capacity,
                                    struct gs_errbuf *eb);

/* A running slice as far as quotas care. */
struct gs_quota_slice {
	uint64_t id;
	int team;        /* index in the tree */
	int priority;    /* larger is more important (enum gs_priority) */
	int64_t created; /* the caller's clock; larger is more recent */
	struct gs_qvec use;
};

/*
 * Usage of every team: its own slices plus its descendants'. OUT: usage,
 * an array of gs_quota_tree_count() vectors the caller provides.
 * GS_ERR_INVALID when a slice names a team that does not exist.
 */
gs_err gs_quota_usage(const struct gs_quota_tree *tree,
                      const struct gs_quota_slice *slices, size_t n_slices,
                      struct gs_qvec *usage, struct gs_errbuf *eb);

struct gs_quota_request {
	int team;
	int priority;
	struct gs_qvec use;
};

enum gs_quota_verdict {
	GS_QUOTA_ADMIT = 0,     /* fits now */
	GS_QUOTA_ADMIT_RECLAIM, /* fits once the victims are preempted */
	GS_QUOTA_REJECT,
};

struct gs_quota_decision {
	enum gs_quota_verdict verdict;
	/* The part of the request above the team's guarantee. */
	struct gs_qvec borrowed;
	/* Indices into the caller's slices[], in preemption order. Owned by
	 * the decision: free with gs_quota_decision_fini(). */
	size_t *victims;
	size_t n_victims;
	/* One line: why it was rejected, or what admission means. */
	char why[GS_ERRBUF_SIZE];
};

/*
 * Decides on `req` as described at the top of this file. OUT: *out
 * (initialised by this call; always fini it, also after an error).
 * Returns GS_OK for ADMIT and ADMIT_RECLAIM, GS_ERR_QUOTA for REJECT (the
 * reason in eb and out->why), GS_ERR_INVALID for a request or slice that
 * names no team or holds a negative amount, GS_ERR_NOMEM.
 */
gs_err gs_quota_admit(const struct gs_quota_tree *tree,
                      const struct gs_qvec *capacity,
                      const struct gs_quota_slice *slices, size_t n_slices,
                      const struct gs_quota_request *req,
                      struct gs_quota_decision *out, struct gs_errbuf *eb);
void gs_quota_decision_fini(struct gs_quota_decision *d);

#endif
