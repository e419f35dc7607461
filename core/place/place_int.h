/*
 * place_int.h - the placement engine's shared model (see placement.h for
 * the contract): the inventory's arrays, node summaries and tree, a
 * prepared request and a search over one node. Private to core/place/.
 *
 * Files: inventory.c (the inventory, usage, summaries and tree),
 * occupy.c (changing it), prepare.c (names and requests), search.c (one
 * node), place.c (the best-first search over the tree: gs_place),
 * explain.c (why nothing fits). Calls go one way: place.c -> explain.c
 * -> search.c, and occupy.c -> search.c; each of these -> prepare.c ->
 * inventory.c. Nothing calls back up.
 *
 * Layout. Nodes, GPUs and MIG instances live in three flat arrays; a
 * node's GPUs are contiguous, and so are the instances of a GPU and of a
 * node (everything is added in order). Each GPU and instance keeps its
 * own usage (memory, compute, slice count, sharing mode, held whole); a
 * GPU also keeps what it adds to its node's load (memory used, compute
 * used in basis points of the GPU, 10000 = all of it).
 *
 * Summaries (inventory.c). After every change to a node,
 * gs__place_summarise() recomputes the node's load and bounds (struct nsum,
 * one cache line: largest and total free memory and compute per sharing
 * class, empty GPUs, shareable instances; free instances per MIG profile key
 * in a byte array, a key being catalog model index x GS_CATALOG_MAX_PROFILES
 * + profile index) and the node's leaf in a tournament tree, then the path
 * up to the root (stopping where nothing changed). A tree node holds the
 * largest of each bound over its subtree, the profile keys with free
 * instances (a bitmask), the (memory, compute) staircase of struct qmap, and
 * per "edge" (a kind of room a request may need) the range of loads of the
 * nodes that have it.
 *
 * Search (place.c, search.c). gs_place() prepares the request (prepare.c:
 * resolved profile keys, the bounds it implies, its edge), then
 * tree_search() takes subtrees from a priority queue best edge load first,
 * pushing only children whose bounds could fit. The first leaf whose node
 * really fits (node_may_fit, then gs__place_solve_node: a scan for one
 * slice, a depth-first search for a gang) is the answer, because every node
 * that beats it on load or index came out of the queue before it. The search
 * never copies state: a partial assignment is a short list of deltas, and a
 * device's state is its stored usage plus the deltas on it.
 *
 * Why (explain.c). When nothing fits, explain_*() walks the inventory once
 * more and applies the filters one at a time (selector, device type, sharing
 * mode, memory, compute), reporting the first filter that leaves no
 * candidate and the best candidate before it; node summaries let it skip
 * nodes that cannot hold a better candidate.
 *
 * Invariants: every bound in a summary or the tree is a necessary
 * condition (free amounts round up, request amounts round down), so
 * pruning never loses a fit; tests/unit/test_placement.c checks results
 * against an exhaustive search.
 */
#ifndef GS_PLACE_INT_H
#define GS_PLACE_INT_H

#include "gs/placement.h"
#include "gs/frag.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#define UUID_MAX      GS_SPEC_UUID_MAX
#define MAX_NODE_GPUS 255
#define PPM           1000000LL
#define BP_WHOLE      10000
#define MIB           (1024ULL * 1024)
#define GIB           (1024ULL * 1024 * 1024)
/* Profile keys (catalog models x GS_CATALOG_MAX_PROFILES) / 64, at most. */
#define KEY_WORDS_MAX 16
/* Planner calls one failed MIG request may spend on its hint. */
#define HINT_PLANNER_CALLS 32

enum cls { CLS_EMPTY = 0, CLS_TS, CLS_MPS, CLS__COUNT };

struct pgpu {
	uint64_t mem_total;
	uint64_t mem_used; /* fractional slices (non-MIG) */
	int c_used;        /* percent (non-MIG) */
	int n_slices;      /* fractional or whole slices (non-MIG) */
	uint8_t mode;      /* enum gs_slice_mode of its slices */
	bool whole;        /* held by a whole-GPU slice */
	bool mig;
	uint8_t index; /* within its node */
	int node;
	int first_inst, n_inst;
	/* What this GPU adds to its node's load. */
	uint64_t load_mem;
	int load_bp;
	int model_idx; /* catalog index, -1 if unknown */
	const struct gs_gpu_model *model;
	char model_name[GS_SPEC_MODEL_MAX];
	char uuid[UUID_MAX];
};

struct pinst {
	uint64_t mem_total;
	uint64_t mem_used; /* layered slices */
	int c_used;        /* percent of the instance */
	int n_slices;      /* layered slices */
	uint8_t mode;
	bool exclusive; /* held by a MIG slice */
	int gpu;
	int key;      /* profile key */
	int bp_share; /* of the parent GPU */
	int start;
	const struct gs_mig_profile *profile;
	char uuid[UUID_MAX];
};

/*
 * The part of a node's summary that every request reads: one cache line
 * per node. Memory is in MiB, rounded up (free) so that the bounds stay
 * necessary conditions when compared with requests rounded down.
 */
struct nsum {
	int64_t load;                     /* ppm, see placement.h */
	const struct gs_gpu_model *model; /* when all GPUs share one */
	uint32_t max_free_mib[CLS__COUNT];
	uint32_t sum_free_mib[CLS__COUNT];
	uint32_t min_empty_mib; /* smallest empty GPU */
	uint16_t max_free_c[CLS__COUNT];
	uint16_t sum_free_c[CLS__COUNT];
	uint16_t n_layered; /* instances not held whole */
	uint8_t n_empty;
	uint8_t n_gpus;
};

struct pnode {
	int first_gpu, n_gpus;
	int first_inst, n_inst;
	uint64_t mem_total, mem_used;
	int64_t bp_used;
	/* counts for the explanations */
	int n_plain, n_whole, n_cls[CLS__COUNT];
	int min_slices; /* over non-MIG GPUs, -1 if none */
	char name[GS_PLACE_NAME_MAX];
};

struct gs_place_inv {
	int n_nodes, cap_nodes;
	struct pnode *node;
	struct nsum *sum; /* n_nodes, parallel to node[] */
	/* A tournament tree over node indices (leaves tsize..2 tsize-1)
	 * holding, per subtree, the largest of each summary bound and the
	 * range of loads; free MIG profile keys as a bitmask per subtree. */
	int tsize, kwords;
	struct tnode *tree;
	uint64_t *tkeys;
	struct qmap *tq; /* 2 tsize, see struct qmap */
	int n_gpus, cap_gpus;
	struct pgpu *gpu;
	int n_inst, cap_inst;
	struct pinst *inst;
	int n_keys;
	uint8_t *free_inst; /* n_nodes x n_keys */
};

/*
 * Free room as a staircase: in map m, bit j of row i is set when some
 * device of the subtree has at least q_mem[i] MiB and q_c[j] percent free
 * at once. Maps: fractional timeslice and mps slices on GPUs (empty GPUs
 * count for both), mig+timeslice and mig+mps slices in instances. A
 * request whose cell (its amounts rounded down to the grid) is clear
 * cannot fit anywhere in the subtree. This catches what separate maxima
 * of memory and compute miss: the room being on different devices.
 */
#define QLEVELS 16
enum { QM_TS = 0, QM_MPS, QM_MIG_TS, QM_MIG_MPS, QM__COUNT };

struct qmap {
	uint16_t row[QM__COUNT][QLEVELS];
};

static const uint32_t q_mem[QLEVELS] = {
    0,     1024,  2048,  4096,  6144,  8192,  12288, 16384,
    20480, 24576, 32768, 40960, 49152, 65536, 81920, 122880};
static const uint8_t q_c[QLEVELS] = {0,  5,  10, 15, 20, 25, 30, 35,
                                     40, 50, 60, 70, 75, 80, 90, 100};

/* The highest grid level at or below an amount. */
static inline int q_level_mem(uint64_t bytes)
{
	int i = QLEVELS - 1;

	while (i > 0 && (uint64_t)q_mem[i] * MIB > bytes)
		i--;
	return i;
}

static inline int q_level_c(int pct)
{
	int j = QLEVELS - 1;

	while (j > 0 && q_c[j] > pct)
		j--;
	return j;
}

static inline void q_add(struct qmap *q, int m, uint64_t free_mem, int free_c)
{
	int i = q_level_mem(free_mem);
	uint16_t bits = (uint16_t)((2u << q_level_c(free_c)) - 1);

	for (int r = 0; r <= i; r++)
		q->row[m][r] |= bits;
}

static inline int q_map_of(int mode)
{
	switch (mode) {
	case GS_MODE_MPS:
		return QM_MPS;
	case GS_MODE_MIG_TIMESLICE:
		return QM_MIG_TS;
	case GS_MODE_MIG_MPS:
		return QM_MIG_MPS;
	default:
		return QM_TS;
	}
}

/*
 * Edges. Best-first search orders subtrees by the best load among their
 * nodes that could take the request, so the tree keeps, per subtree, the
 * load range of the nodes that have each kind of room:
 *
 *   E_CAT + mask - 1   categories: PLAIN = a GPU without MIG not held
 *                      whole, MIG = an instance not held by a MIG slice
 *                      (mask 1 plain, 2 mig, 3 both)
 *   E_WHOLE            an empty GPU
 *   E_CELL + ...       a GPU (timeslice or mps, empty ones count for both)
 *                      with at least e_mem[i] MiB and e_c[j]% free at once
 *
 * A request uses the narrowest edge it implies (one fractional slice: its
 * amounts rounded down to the e_* grid), so a heavily loaded node without
 * that room never steers the search. Loads fit in int32 (at most 2e6).
 */
#define CAT_PLAIN   1
#define CAT_MIG     2
#define E_CAT       0
#define E_WHOLE     3
#define E_CELL      4
#define E_GRID      4
#define E__COUNT    (E_CELL + 2 * E_GRID * E_GRID)
#define NO_LOAD_MAX INT32_MIN
#define NO_LOAD_MIN INT32_MAX

static const uint32_t e_mem[E_GRID] = {0, 4096, 12288, 24576};
static const uint8_t e_c[E_GRID] = {0, 20, 40, 70};

static inline int e_cell(int map, uint64_t mem, int c)
{
	int i = E_GRID - 1, j = E_GRID - 1;

	while (i > 0 && (uint64_t)e_mem[i] * MIB > mem)
		i--;
	while (j > 0 && e_c[j] > c)
		j--;
	return E_CELL + (map == QM_MPS) * E_GRID * E_GRID + i * E_GRID + j;
}

struct tnode {
	int32_t max_load[E__COUNT], min_load[E__COUNT];
	uint32_t max_free_mib[CLS__COUNT];
	uint32_t max_sum_mib[CLS__COUNT];
	uint16_t max_free_c[CLS__COUNT];
	uint16_t max_sum_c[CLS__COUNT];
	uint16_t max_layered;
	uint8_t max_empty;
	bool any; /* the subtree holds a node */
};

static inline int node_cats(const struct gs_place_inv *inv, int n)
{
	const struct pnode *nd = &inv->node[n];

	return (nd->n_plain > nd->n_whole ? CAT_PLAIN : 0) |
	       (inv->sum[n].n_layered > 0 ? CAT_MIG : 0);
}

#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---- requests, prepared --------------------------------------------- */

struct pitem {
	enum gs_place_kind kind;
	int mode;
	bool layered;
	uint64_t mem;
	int c;
	int n_keys; /* MIG, layered with a profile */
	int keys[16];
	const char *profile; /* "" for any */
	int group;           /* MIG: index of its profile name group */
};

struct prep {
	int n;      /* items searched (1 for SAME_GPU) */
	int n_orig; /* items asked for */
	struct pitem it[GS_PLACE_MAX_GANG];
	enum gs_place_gang gang;
	enum gs_place_policy policy;
	const struct gs_trace_scorer *scorer; /* FRAG without MIG; borrowed */
	bool has_mig;
	const struct gs_gpu_selector *sel;
	const struct gs_gpu_model *sel_model;
	int n_whole;
	int n_groups; /* distinct MIG profile names */
	int group_count[GS_PLACE_MAX_GANG];
	const char *group_name[GS_PLACE_MAX_GANG];
	/* Bounds for node_may_fit(), per sharing class of the fractional
	 * slices on GPUs (memory in MiB rounded down). */
	int n_frac[CLS__COUNT];
	uint32_t max_mib[CLS__COUNT];
	int max_c[CLS__COUNT];
	uint64_t sum_mib[CLS__COUNT];
	int sum_c[CLS__COUNT];
	int n_layered;
	int cats; /* categories a node needs (CAT_*) */
	int edge; /* the tree edge the search orders by */
	/* For tree_may_fit(): the distinct qmap cells of the fractional
	 * slices, and per MIG profile group the bitmask of its keys (the
	 * catalog has at most 4 x 64 profile keys, see gs_place_inv_create). */
	int n_qcheck;
	struct {
		uint8_t m, i, j;
	} qcheck[GS_PLACE_MAX_GANG];
	uint64_t group_mask[GS_PLACE_MAX_GANG][4];
};

/* ---- device checks over a partial assignment ------------------------- */

/* One slice placed by the search so far. */
struct delta {
	int gpu;
	int inst; /* -1: on the GPU itself */
	uint64_t mem;
	int c;
	int mode;
	bool excl; /* whole GPU or whole instance */
};

struct search {
	const struct gs_place_inv *inv;
	const struct prep *p;
	int n_d;
	struct delta d[GS_PLACE_MAX_GANG];
	int cur[GS_PLACE_MAX_GANG][2]; /* (gpu, inst) per item */
	/* best so far within the node being solved */
	bool found;
	int64_t best_score;
	int best[GS_PLACE_MAX_GANG][2];
	long *budget; /* steps left for the whole request */
	bool exhausted;
	int deepest; /* items placed at the deepest point */
	int node;    /* the node being solved */
	struct gs_trace_cost frag_before; /* FRAG: the node before the request */
	struct gs_trace_pick frag_pick;   /* FRAG: the guard's choice so far */
};

/* A device's state: what is stored plus the deltas on it. */
struct dstate {
	uint64_t total;
	uint64_t used;
	int c_used;
	int n_slices;
	int mode;
	bool excl;
	bool touched;
};

/*
 * Necessary conditions from the node's summary: enough empty GPUs for the
 * whole-GPU slices, free instances for the MIG slices, and for each
 * sharing class a GPU big enough for its largest slice and enough free
 * memory and compute in total (empty GPUs count for every class, less
 * those the whole-GPU slices need).
 */
static inline bool node_may_fit(const struct gs_place_inv *inv,
                                const struct prep *p, int node)
{
	const struct nsum *sm = &inv->sum[node];
	uint64_t empty_mib, all_mib = 0;
	int empty_c, all_c = 0;

	if (p->sel_model != NULL && sm->model != NULL &&
	    sm->model != p->sel_model)
		return false;
	if (p->sel != NULL && p->sel->kind == GS_GPU_INDEX &&
	    p->sel->index >= sm->n_gpus)
		return false;
	if (p->n_whole > sm->n_empty)
		return false;
	if (p->n_layered > 0 && sm->n_layered == 0)
		return false;
	if (p->n_groups > 0) {
		const uint8_t *fi =
		    inv->free_inst + (size_t)node * (size_t)inv->n_keys;

		for (int g = 0; g < p->n_groups; g++) {
			const struct pitem *it = NULL;
			int have = 0;

			for (int k = 0; k < p->n && it == NULL; k++)
				if (p->it[k].kind == GS_PLACE_MIG &&
				    p->it[k].group == g)
					it = &p->it[k];
			for (int i = 0; it != NULL && i < it->n_keys; i++)
				have += fi[it->keys[i]];
			if (have < p->group_count[g])
				return false;
		}
	}
	if (p->n_frac[CLS_TS] == 0 && p->n_frac[CLS_MPS] == 0)
		return true;
	empty_mib = (uint64_t)sm->sum_free_mib[CLS_EMPTY];
	if (empty_mib < (uint64_t)p->n_whole * sm->min_empty_mib)
		empty_mib = 0;
	else
		empty_mib -= (uint64_t)p->n_whole * sm->min_empty_mib;
	empty_c = sm->sum_free_c[CLS_EMPTY] - 100 * p->n_whole;
	for (int c = CLS_TS; c <= CLS_MPS; c++) {
		if (p->n_frac[c] == 0)
			continue;
		bool on_empty = p->max_mib[c] <= sm->max_free_mib[CLS_EMPTY] &&
		                p->max_c[c] <= sm->max_free_c[CLS_EMPTY];
		bool on_shared = p->max_mib[c] <= sm->max_free_mib[c] &&
		                 p->max_c[c] <= sm->max_free_c[c];

		if (p->n_frac[c] == 1 && !on_empty && !on_shared)
			return false;
		if (p->max_mib[c] > sm->max_free_mib[CLS_EMPTY] &&
		    p->max_mib[c] > sm->max_free_mib[c])
			return false;
		if (p->max_c[c] > sm->max_free_c[CLS_EMPTY] &&
		    p->max_c[c] > sm->max_free_c[c])
			return false;
		if (p->n == 1)
			continue;
		if (p->sum_mib[c] > sm->sum_free_mib[c] + empty_mib ||
		    p->sum_c[c] > sm->sum_free_c[c] + empty_c)
			return false;
		all_mib += p->sum_mib[c];
		all_c += p->sum_c[c];
	}
	return all_mib <= (uint64_t)sm->sum_free_mib[CLS_TS] +
	                      sm->sum_free_mib[CLS_MPS] + empty_mib &&
	       all_c <=
	           sm->sum_free_c[CLS_TS] + sm->sum_free_c[CLS_MPS] + empty_c;
}

static inline bool is_layered_mode(int mode)
{
	return mode == GS_MODE_MIG_TIMESLICE || mode == GS_MODE_MIG_MPS;
}

static inline int cls_of(int mode)
{
	return (mode == GS_MODE_MPS || mode == GS_MODE_MIG_MPS) ? CLS_MPS
	                                                        : CLS_TS;
}

static inline bool key_match(const struct pitem *it, int key)
{
	for (int i = 0; i < it->n_keys; i++)
		if (it->keys[i] == key)
			return true;
	return false;
}

static inline bool gpu_selected(const struct prep *p, const struct pgpu *g)
{
	if (p->sel == NULL)
		return true;
	switch (p->sel->kind) {
	case GS_GPU_INDEX:
		return g->index == p->sel->index;
	case GS_GPU_UUID:
		return true; /* decided per device: GPU or instance UUID */
	case GS_GPU_MODEL:
		if (p->sel_model != NULL)
			return g->model == p->sel_model;
		return strcasecmp(g->model_name, p->sel->model) == 0;
	default:
		return true;
	}
}

static inline bool uuid_selected(const struct prep *p, const struct pgpu *g,
                                 const struct pinst *in)
{
	if (p->sel == NULL || p->sel->kind != GS_GPU_UUID)
		return true;
	if (strcmp(g->uuid, p->sel->uuid) == 0)
		return true;
	return in != NULL && strcmp(in->uuid, p->sel->uuid) == 0;
}

/*
 * Shared between the files of core/place/ (see the top of this header for
 * which way calls go).
 */

/* inventory.c: recompute node n's summary and its path up the tree; a
 * device's name for messages; a MIG profile's key. */
void gs__place_summarise(struct gs_place_inv *inv, int n);
void gs__place_dev_name(const struct gs_place_inv *inv, int gi, int ii,
                        char *buf, size_t size);
int gs__place_profile_key(int model_idx, const struct gs_gpu_model *m,
                          const struct gs_mig_profile *p);

/* prepare.c: a request resolved and bounded; the bounds again after the
 * items changed. */
gs_err gs__place_prepare(const struct gs_place_request *req, struct prep *p,
                         struct gs_errbuf *eb);
void gs__place_prep_bounds(struct prep *p);

/* search.c: the best assignment on one node (init, then solve per node;
 * s->found says whether it fits), and the single-device checks. */
void gs__place_search_init(struct search *s, const struct gs_place_inv *inv,
                           const struct prep *p, long *budget);
void gs__place_solve_node(struct search *s, int node);
bool gs__place_gpu_fits(const struct search *s, int gi, const struct pitem *it,
                        struct dstate *st);
bool gs__place_inst_fits(const struct search *s, int ii, const struct pitem *it,
                         struct dstate *st);

/* explain.c: the GS_ERR_NO_FIT message for a request nothing fits. */
gs_err gs__place_explain(const struct gs_place_inv *inv, const struct prep *p,
                         struct gs_place_result *out, struct gs_errbuf *eb);

#endif
