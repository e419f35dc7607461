/*
 * placement.c - devices for slices (see placement.h for the contract).
 *
 * Layout. Nodes, GPUs and MIG instances live in three flat arrays; a
 * node's GPUs are contiguous, and so are the instances of a GPU and of a
 * node (everything is added in order). Each GPU and instance keeps its
 * own usage (memory, compute, slice count, sharing mode, held whole); a
 * GPU also keeps what it adds to its node's load (memory used, compute
 * used in basis points of the GPU, 10000 = all of it).
 *
 * Summaries. After every change to a node, summarise() recomputes the
 * node's load and bounds (struct nsum, one cache line: largest and total
 * free memory and compute per sharing class, empty GPUs, shareable
 * instances; free instances per MIG profile key in a byte array, a key
 * being catalog model index x GS_CATALOG_MAX_PROFILES + profile index) and
 * the node's leaf in a tournament tree, then the path up to the root
 * (stopping where nothing changed). A tree node holds the largest of each
 * bound over its subtree, the profile keys with free instances (a
 * bitmask), the (memory, compute) staircase of struct qmap, and per
 * "edge" (a kind of room a request may need) the range of loads of the
 * nodes that have it.
 *
 * Search. gs_place() prepares the request (resolved profile keys, the
 * bounds it implies, its edge), then tree_search() takes subtrees from a
 * priority queue best edge load first, pushing only children whose
 * bounds could fit. The first leaf whose node really fits (node_may_fit,
 * then solve_node: a scan for one slice, a depth-first search for a
 * gang) is the answer, because every node that beats it on load or index
 * came out of the queue before it. The search never copies state: a
 * partial assignment is a short list of deltas, and a device's state is
 * its stored usage plus the deltas on it.
 *
 * Why. When nothing fits, explain_*() walks the inventory once more and
 * applies the filters one at a time (selector, device type, sharing mode,
 * memory, compute), reporting the first filter that leaves no candidate
 * and the best candidate before it; node summaries let it skip nodes that
 * cannot hold a better candidate.
 *
 * Invariants: every bound in a summary or the tree is a necessary
 * condition (free amounts round up, request amounts round down), so
 * pruning never loses a fit; tests/unit/test_placement.c checks results
 * against an exhaustive search.
 */
#include "gs/placement.h"
#include "gs/trace.h"

#include "gs/migplan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

/* ---- names ------------------------------------------------------------ */

static const char *const policy_names[] = {"binpack", "spread", "frag"};
static const char *const gang_names[] = {"same-node", "same-gpu",
                                         "same-parent"};

const char *gs_place_policy_name(enum gs_place_policy p)
{
	return (unsigned)p < 3 ? policy_names[p] : "?";
}

gs_err gs_place_parse_policy(const char *text, enum gs_place_policy *p,
                             struct gs_errbuf *eb)
{
	for (int i = 0; i < 3; i++)
		if (text != NULL && strcasecmp(text, policy_names[i]) == 0) {
			*p = (enum gs_place_policy)i;
			return GS_OK;
		}
	return gs_fail(
	    eb, GS_ERR_PARSE,
	    "unknown placement policy '%s' (expected binpack|spread|frag)",
	    text ? text : "");
}

const char *gs_place_gang_name(enum gs_place_gang g)
{
	return (unsigned)g < 3 ? gang_names[g] : "?";
}

gs_err gs_place_parse_gang(const char *text, enum gs_place_gang *g,
                           struct gs_errbuf *eb)
{
	for (int i = 0; i < 3; i++)
		if (text != NULL && strcasecmp(text, gang_names[i]) == 0) {
			*g = (enum gs_place_gang)i;
			return GS_OK;
		}
	return gs_fail(eb, GS_ERR_PARSE,
	               "unknown gang constraint '%s' (expected same-node|"
	               "same-gpu|same-parent)",
	               text ? text : "");
}

/* ---- inventory ------------------------------------------------------ */

static int model_index(const struct gs_gpu_model *m)
{
	for (int i = 0; m != NULL && i < gs_catalog_count(); i++)
		if (gs_catalog_get(i) == m)
			return i;
	return -1;
}

static int profile_key(int model_idx, const struct gs_gpu_model *m,
                       const struct gs_mig_profile *p)
{
	return model_idx * GS_CATALOG_MAX_PROFILES + (int)(p - m->profiles);
}

struct gs_place_inv *gs_place_inv_create(void)
{
	struct gs_place_inv *inv = calloc(1, sizeof(*inv));

	if (inv == NULL)
		return NULL;
	inv->n_keys = gs_catalog_count() * GS_CATALOG_MAX_PROFILES;
	if (inv->n_keys == 0)
		inv->n_keys = 1;
	if (inv->n_keys > KEY_WORDS_MAX * 64) {
		/* a catalog this large needs KEY_WORDS_MAX raised */
		free(inv);
		return NULL;
	}
	return inv;
}

void gs_place_inv_destroy(struct gs_place_inv *inv)
{
	if (inv == NULL)
		return;
	free(inv->node);
	free(inv->sum);
	free(inv->tree);
	free(inv->tkeys);
	free(inv->tq);
	free(inv->gpu);
	free(inv->inst);
	free(inv->free_inst);
	free(inv);
}

/* Grows an array to hold one more element; false on ENOMEM. */
static bool grow(void **arr, int *cap, int n, size_t elem)
{
	void *p;
	int ncap;

	if (n < *cap)
		return true;
	ncap = *cap ? *cap * 2 : 16;
	p = realloc(*arr, (size_t)ncap * elem);
	if (p == NULL)
		return false;
	*arr = p;
	*cap = ncap;
	return true;
}

static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = src ? strlen(src) : 0;

	if (n >= size)
		n = size - 1;
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

static void summarise(struct gs_place_inv *inv, int n);

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
static int q_level_mem(uint64_t bytes)
{
	int i = QLEVELS - 1;

	while (i > 0 && (uint64_t)q_mem[i] * MIB > bytes)
		i--;
	return i;
}

static int q_level_c(int pct)
{
	int j = QLEVELS - 1;

	while (j > 0 && q_c[j] > pct)
		j--;
	return j;
}

static void q_add(struct qmap *q, int m, uint64_t free_mem, int free_c)
{
	int i = q_level_mem(free_mem);
	uint16_t bits = (uint16_t)((2u << q_level_c(free_c)) - 1);

	for (int r = 0; r <= i; r++)
		q->row[m][r] |= bits;
}

static int q_map_of(int mode)
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

static int e_cell(int map, uint64_t mem, int c)
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

static int node_cats(const struct gs_place_inv *inv, int n)
{
	const struct pnode *nd = &inv->node[n];

	return (nd->n_plain > nd->n_whole ? CAT_PLAIN : 0) |
	       (inv->sum[n].n_layered > 0 ? CAT_MIG : 0);
}

#define MAX(a, b) ((a) > (b) ? (a) : (b))

/*
 * Recomputes subtree t from its children. Returns whether anything
 * changed: when nothing did, nothing above t changes either.
 */
static bool tree_pull(struct gs_place_inv *inv, int t)
{
	const struct tnode *l = &inv->tree[2 * t], *r = &inv->tree[2 * t + 1];
	struct tnode d;
	struct qmap q;
	uint64_t k[KEY_WORDS_MAX];

	memset(&d, 0, sizeof(d)); /* padding too: compared with memcmp */
	int kw = inv->kwords;
	uint64_t *kt = inv->tkeys + (size_t)t * (size_t)kw;
	const uint64_t *kl = inv->tkeys + (size_t)(2 * t) * (size_t)kw;
	const uint64_t *kr = kl + kw;

	if (!l->any || !r->any) {
		d = l->any ? *l : *r;
		q = l->any ? inv->tq[2 * t] : inv->tq[2 * t + 1];
		memcpy(k, l->any ? kl : kr, (size_t)kw * sizeof(*k));
	} else {
		for (int m = 0; m < QM__COUNT; m++)
			for (int i = 0; i < QLEVELS; i++)
				q.row[m][i] = inv->tq[2 * t].row[m][i] |
				              inv->tq[2 * t + 1].row[m][i];
		d.any = true;
		for (int m = 0; m < E__COUNT; m++) {
			d.max_load[m] = MAX(l->max_load[m], r->max_load[m]);
			d.min_load[m] = l->min_load[m] < r->min_load[m]
			                    ? l->min_load[m]
			                    : r->min_load[m];
		}
		for (int c = 0; c < CLS__COUNT; c++) {
			d.max_free_mib[c] =
			    MAX(l->max_free_mib[c], r->max_free_mib[c]);
			d.max_sum_mib[c] =
			    MAX(l->max_sum_mib[c], r->max_sum_mib[c]);
			d.max_free_c[c] =
			    MAX(l->max_free_c[c], r->max_free_c[c]);
			d.max_sum_c[c] = MAX(l->max_sum_c[c], r->max_sum_c[c]);
		}
		d.max_layered = MAX(l->max_layered, r->max_layered);
		d.max_empty = MAX(l->max_empty, r->max_empty);
		for (int w = 0; w < kw; w++)
			k[w] = kl[w] | kr[w];
	}
	if (memcmp(&d, &inv->tree[t], sizeof(d)) == 0 &&
	    memcmp(&q, &inv->tq[t], sizeof(q)) == 0 &&
	    memcmp(k, kt, (size_t)kw * sizeof(*k)) == 0)
		return false;
	inv->tree[t] = d;
	inv->tq[t] = q;
	memcpy(kt, k, (size_t)kw * sizeof(*k));
	return true;
}

static void leaf_qmap(const struct gs_place_inv *inv, int n, struct qmap *q)
{
	const struct pnode *nd = &inv->node[n];

	memset(q, 0, sizeof(*q));
	for (int gi = nd->first_gpu; gi < nd->first_gpu + nd->n_gpus; gi++) {
		const struct pgpu *g = &inv->gpu[gi];

		if (g->mig) {
			for (int i = g->first_inst;
			     i < g->first_inst + g->n_inst; i++) {
				const struct pinst *in = &inv->inst[i];
				uint64_t fm = in->mem_total - in->mem_used;

				if (in->exclusive)
					continue;
				if (in->n_slices == 0 ||
				    in->mode == GS_MODE_MIG_TIMESLICE)
					q_add(q, QM_MIG_TS, fm,
					      100 - in->c_used);
				if (in->n_slices == 0 ||
				    in->mode == GS_MODE_MIG_MPS)
					q_add(q, QM_MIG_MPS, fm,
					      100 - in->c_used);
			}
			continue;
		}
		if (g->whole)
			continue;
		if (g->n_slices == 0 || g->mode == GS_MODE_TIMESLICE)
			q_add(q, QM_TS, g->mem_total - g->mem_used,
			      100 - g->c_used);
		if (g->n_slices == 0 || g->mode == GS_MODE_MPS)
			q_add(q, QM_MPS, g->mem_total - g->mem_used,
			      100 - g->c_used);
	}
}

/* Which kinds of room node n has (see the edges above). */
static void leaf_edges(const struct gs_place_inv *inv, int n, bool *has)
{
	const struct pnode *nd = &inv->node[n];
	int cats = node_cats(inv, n);

	memset(has, 0, E__COUNT * sizeof(*has));
	for (int m = 1; m <= 3; m++)
		has[E_CAT + m - 1] = (cats & m) == m;
	has[E_WHOLE] = inv->sum[n].n_empty > 0;
	for (int gi = nd->first_gpu; gi < nd->first_gpu + nd->n_gpus; gi++) {
		const struct pgpu *g = &inv->gpu[gi];
		uint64_t fm = g->mem_total - g->mem_used;
		int fc = 100 - g->c_used;

		if (g->mig || g->whole)
			continue;
		for (int map = QM_TS; map <= QM_MPS; map++) {
			int want =
			    map == QM_TS ? GS_MODE_TIMESLICE : GS_MODE_MPS;

			if (g->n_slices > 0 && g->mode != want)
				continue;
			for (int i = 0; i < E_GRID; i++)
				for (int j = 0; j < E_GRID; j++)
					if (fm >= (uint64_t)e_mem[i] * MIB &&
					    fc >= e_c[j])
						has[E_CELL +
						    map * E_GRID * E_GRID +
						    i * E_GRID + j] = true;
		}
	}
}

/* Copies node n's summary into its leaf and updates the path up. */
static void tree_update(struct gs_place_inv *inv, int n)
{
	const struct pnode *nd = &inv->node[n];
	const struct nsum *sm = &inv->sum[n];
	const uint8_t *fi = inv->free_inst + (size_t)n * (size_t)inv->n_keys;
	int t = inv->tsize + n;
	struct tnode *d = &inv->tree[t];
	uint64_t *k = inv->tkeys + (size_t)t * (size_t)inv->kwords;
	bool has[E__COUNT];

	d->any = true;
	leaf_edges(inv, n, has);
	for (int m = 0; m < E__COUNT; m++) {
		d->max_load[m] = has[m] ? (int32_t)sm->load : NO_LOAD_MAX;
		d->min_load[m] = has[m] ? (int32_t)sm->load : NO_LOAD_MIN;
	}
	for (int c = 0; c < CLS__COUNT; c++) {
		d->max_free_mib[c] = sm->max_free_mib[c];
		d->max_sum_mib[c] = sm->sum_free_mib[c];
		d->max_free_c[c] = sm->max_free_c[c];
		d->max_sum_c[c] = sm->sum_free_c[c];
	}
	d->max_layered = sm->n_layered;
	d->max_empty = sm->n_empty;
	memset(k, 0, (size_t)inv->kwords * sizeof(*k));
	for (int i = nd->first_inst; i < nd->first_inst + nd->n_inst; i++) {
		int key = inv->inst[i].key;

		if (fi[key])
			k[key / 64] |= 1ULL << (key % 64);
	}
	leaf_qmap(inv, n, &inv->tq[t]);
	for (t /= 2; t >= 1; t /= 2)
		if (!tree_pull(inv, t))
			break;
}

/* Makes room for cap_nodes leaves and rebuilds from the summaries. */
static bool tree_resize(struct gs_place_inv *inv)
{
	int size = 1;
	struct tnode *tree;
	uint64_t *keys;
	struct qmap *tq;

	while (size < inv->cap_nodes)
		size *= 2;
	if (size == inv->tsize)
		return true;
	inv->kwords = (inv->n_keys + 63) / 64;
	tree = calloc(2 * (size_t)size, sizeof(*tree));
	keys = calloc(2 * (size_t)size * (size_t)inv->kwords, sizeof(*keys));
	tq = calloc(2 * (size_t)size, sizeof(*tq));
	if (tree == NULL || keys == NULL || tq == NULL) {
		free(tree);
		free(keys);
		free(tq);
		return false;
	}
	free(inv->tree);
	free(inv->tkeys);
	free(inv->tq);
	inv->tree = tree;
	inv->tkeys = keys;
	inv->tq = tq;
	inv->tsize = size;
	for (int n = 0; n < inv->n_nodes; n++)
		tree_update(inv, n);
	return true;
}

gs_err gs_place_inv_add_node(struct gs_place_inv *inv, const char *name,
                             int *node, struct gs_errbuf *eb)
{
	struct pnode *nd;
	int cap = inv->cap_nodes;

	if (!grow((void **)&inv->node, &inv->cap_nodes, inv->n_nodes,
	          sizeof(*inv->node)))
		return gs_fail(eb, GS_ERR_NOMEM, "no memory for the inventory");
	if (inv->cap_nodes != cap || inv->free_inst == NULL ||
	    inv->sum == NULL) {
		uint8_t *fi = realloc(inv->free_inst, (size_t)inv->cap_nodes *
		                                          (size_t)inv->n_keys);
		struct nsum *sm;

		if (fi == NULL)
			return gs_fail(eb, GS_ERR_NOMEM,
			               "no memory for the inventory");
		inv->free_inst = fi;
		sm = realloc(inv->sum, (size_t)inv->cap_nodes * sizeof(*sm));
		if (sm == NULL)
			return gs_fail(eb, GS_ERR_NOMEM,
			               "no memory for the inventory");
		inv->sum = sm;
		if (!tree_resize(inv))
			return gs_fail(eb, GS_ERR_NOMEM,
			               "no memory for the inventory");
	}
	nd = &inv->node[inv->n_nodes];
	memset(nd, 0, sizeof(*nd));
	memset(&inv->sum[inv->n_nodes], 0, sizeof(inv->sum[0]));
	if (name != NULL && name[0] != '\0')
		copy_str(nd->name, sizeof(nd->name), name);
	else
		snprintf(nd->name, sizeof(nd->name), "node%d", inv->n_nodes);
	nd->first_gpu = inv->n_gpus;
	nd->first_inst = inv->n_inst;
	nd->min_slices = -1;
	memset(inv->free_inst + (size_t)inv->n_nodes * (size_t)inv->n_keys, 0,
	       (size_t)inv->n_keys);
	*node = inv->n_nodes++;
	summarise(inv, *node);
	return GS_OK;
}

gs_err gs_place_inv_add_gpu(struct gs_place_inv *inv,
                            const struct gs_place_gpu_desc *desc, int *gpu,
                            struct gs_errbuf *eb)
{
	struct pnode *nd;
	struct pgpu *g;
	uint64_t mem = desc->memory_bytes;

	if (inv->n_nodes == 0)
		return gs_fail(eb, GS_ERR_INVALID,
		               "add a node before its GPUs");
	nd = &inv->node[inv->n_nodes - 1];
	if (nd->n_gpus >= MAX_NODE_GPUS)
		return gs_fail(eb, GS_ERR_RANGE,
		               "node %s has more than %d GPUs", nd->name,
		               MAX_NODE_GPUS);
	if (desc->model == NULL &&
	    (desc->model_name == NULL || desc->model_name[0] == '\0'))
		return gs_fail(eb, GS_ERR_INVALID, "a GPU needs a model");
	if (mem == 0 && desc->model != NULL)
		mem = desc->model->memory_mib * MIB;
	if (mem == 0)
		return gs_fail(eb, GS_ERR_INVALID,
		               "GPU %d of node %s: memory size unknown",
		               nd->n_gpus, nd->name);
	if (desc->mig_enabled && desc->model == NULL)
		return gs_fail(eb, GS_ERR_INVALID,
		               "GPU %d of node %s: MIG needs a catalog model",
		               nd->n_gpus, nd->name);
	if (!grow((void **)&inv->gpu, &inv->cap_gpus, inv->n_gpus,
	          sizeof(*inv->gpu)))
		return gs_fail(eb, GS_ERR_NOMEM, "no memory for the inventory");
	g = &inv->gpu[inv->n_gpus];
	memset(g, 0, sizeof(*g));
	g->mem_total = mem;
	g->mig = desc->mig_enabled;
	g->index = (uint8_t)nd->n_gpus;
	g->node = inv->n_nodes - 1;
	g->first_inst = inv->n_inst;
	g->model = desc->model;
	g->model_idx = model_index(desc->model);
	copy_str(g->model_name, sizeof(g->model_name),
	         desc->model ? desc->model->name : desc->model_name);
	if (desc->uuid != NULL)
		copy_str(g->uuid, sizeof(g->uuid), desc->uuid);
	else
		snprintf(g->uuid, sizeof(g->uuid), "GPU-%s-%d", nd->name,
		         nd->n_gpus);
	if (nd->n_gpus == 0)
		inv->sum[g->node].model = desc->model;
	else if (inv->sum[g->node].model != desc->model)
		inv->sum[g->node].model = NULL;
	nd->n_gpus++;
	nd->mem_total += mem;
	*gpu = inv->n_gpus++;
	summarise(inv, g->node);
	return GS_OK;
}

gs_err gs_place_inv_add_mig(struct gs_place_inv *inv,
                            const struct gs_place_mig_desc *desc, int *inst,
                            struct gs_errbuf *eb)
{
	struct pgpu *g;
	struct pinst *in;
	const struct gs_mig_profile *p = desc->profile;
	int size;

	if (inv->n_gpus == 0)
		return gs_fail(eb, GS_ERR_INVALID,
		               "add a GPU before its MIG instances");
	g = &inv->gpu[inv->n_gpus - 1];
	if (!g->mig)
		return gs_fail(eb, GS_ERR_INVALID, "GPU %s is not in MIG mode",
		               g->uuid);
	if (p == NULL || p < g->model->profiles ||
	    p >= g->model->profiles + g->model->n_profiles)
		return gs_fail(eb, GS_ERR_UNKNOWN_PROFILE,
		               "GPU %s: the profile is not one of %s's",
		               g->uuid, g->model->name);
	if (!gs_catalog_placement_valid(p, desc->start))
		return gs_fail(eb, GS_ERR_INVALID,
		               "GPU %s: %s cannot start at memory slice %d",
		               g->uuid, p->name, desc->start);
	size = p->memory_slices;
	for (int i = g->first_inst; i < g->first_inst + g->n_inst; i++) {
		const struct pinst *o = &inv->inst[i];

		if (desc->start < o->start + o->profile->memory_slices &&
		    o->start < desc->start + size)
			return gs_fail(eb, GS_ERR_INVALID,
			               "GPU %s: %s@%d overlaps %s@%d", g->uuid,
			               p->name, desc->start, o->profile->name,
			               o->start);
	}
	if (!grow((void **)&inv->inst, &inv->cap_inst, inv->n_inst,
	          sizeof(*inv->inst)))
		return gs_fail(eb, GS_ERR_NOMEM, "no memory for the inventory");
	in = &inv->inst[inv->n_inst];
	memset(in, 0, sizeof(*in));
	in->gpu = inv->n_gpus - 1;
	in->profile = p;
	in->start = desc->start;
	in->key = profile_key(g->model_idx, g->model, p);
	in->mem_total = desc->memory_bytes ? desc->memory_bytes
	                : p->memory_mib    ? p->memory_mib * MIB
	                                   : p->memory_mib_nominal * MIB;
	in->bp_share = p->compute_slices * BP_WHOLE / g->model->compute_slices;
	if (desc->uuid != NULL)
		copy_str(in->uuid, sizeof(in->uuid), desc->uuid);
	else
		snprintf(in->uuid, sizeof(in->uuid), "MIG-%.80s-%d", g->uuid,
		         g->n_inst);
	g->n_inst++;
	inv->node[g->node].n_inst++;
	*inst = inv->n_inst++;
	summarise(inv, g->node);
	return GS_OK;
}

int gs_place_inv_node_count(const struct gs_place_inv *inv)
{
	return inv->n_nodes;
}

int gs_place_inv_gpu_count(const struct gs_place_inv *inv)
{
	return inv->n_gpus;
}

int gs_place_inv_mig_count(const struct gs_place_inv *inv)
{
	return inv->n_inst;
}

const char *gs_place_inv_node_name(const struct gs_place_inv *inv, int node)
{
	return inv->node[node].name;
}

int gs_place_inv_gpu_node(const struct gs_place_inv *inv, int gpu)
{
	return inv->gpu[gpu].node;
}

int gs_place_inv_gpu_index(const struct gs_place_inv *inv, int gpu)
{
	return inv->gpu[gpu].index;
}

const char *gs_place_inv_gpu_uuid(const struct gs_place_inv *inv, int gpu)
{
	return inv->gpu[gpu].uuid;
}

int gs_place_inv_mig_gpu(const struct gs_place_inv *inv, int inst)
{
	return inv->inst[inst].gpu;
}

const char *gs_place_inv_mig_uuid(const struct gs_place_inv *inv, int inst)
{
	return inv->inst[inst].uuid;
}

gs_err gs_place_inv_free(const struct gs_place_inv *inv, int gpu, int inst,
                         struct gs_place_free *out, struct gs_errbuf *eb)
{
	memset(out, 0, sizeof(*out));
	if (inst >= 0) {
		const struct pinst *in;

		if (inst >= inv->n_inst)
			return gs_fail(eb, GS_ERR_NOT_FOUND,
			               "no MIG instance %d", inst);
		in = &inv->inst[inst];
		out->exclusive = in->exclusive;
		out->memory_bytes =
		    in->exclusive ? 0 : in->mem_total - in->mem_used;
		out->compute_pct = in->exclusive ? 0 : 100 - in->c_used;
		out->n_slices = in->n_slices + (in->exclusive ? 1 : 0);
		out->mode =
		    in->exclusive ? GS_MODE_MIG : (enum gs_slice_mode)in->mode;
		return GS_OK;
	}
	if (gpu < 0 || gpu >= inv->n_gpus)
		return gs_fail(eb, GS_ERR_NOT_FOUND, "no GPU %d", gpu);
	if (inv->gpu[gpu].mig)
		return gs_fail(eb, GS_ERR_INVALID,
		               "GPU %d is in MIG mode: ask about its instances",
		               gpu);
	out->exclusive = inv->gpu[gpu].whole;
	out->memory_bytes = inv->gpu[gpu].mem_total - inv->gpu[gpu].mem_used;
	out->compute_pct = 100 - inv->gpu[gpu].c_used;
	out->n_slices = inv->gpu[gpu].n_slices;
	out->mode = (enum gs_slice_mode)inv->gpu[gpu].mode;
	return GS_OK;
}

/* ---- usage bookkeeping ---------------------------------------------- */

static bool is_layered_mode(int mode)
{
	return mode == GS_MODE_MIG_TIMESLICE || mode == GS_MODE_MIG_MPS;
}

static int cls_of(int mode)
{
	return (mode == GS_MODE_MPS || mode == GS_MODE_MIG_MPS) ? CLS_MPS
	                                                        : CLS_TS;
}

/* What GPU g passes up to its node's load. */
static void gpu_load(struct gs_place_inv *inv, struct pgpu *g)
{
	if (!g->mig) {
		g->load_mem = g->mem_used;
		g->load_bp = g->c_used * (BP_WHOLE / 100);
		return;
	}
	g->load_mem = 0;
	g->load_bp = 0;
	for (int i = g->first_inst; i < g->first_inst + g->n_inst; i++) {
		const struct pinst *in = &inv->inst[i];

		if (in->exclusive) {
			g->load_mem += in->mem_total;
			g->load_bp += in->bp_share;
		} else {
			g->load_mem += in->mem_used;
			g->load_bp += in->c_used * in->bp_share / 100;
		}
	}
}

static uint32_t mib_up(uint64_t b)
{
	uint64_t m = (b + MIB - 1) / MIB;

	return m > UINT32_MAX ? UINT32_MAX : (uint32_t)m;
}

static void summarise(struct gs_place_inv *inv, int n)
{
	struct pnode *nd = &inv->node[n];
	struct nsum *sm = &inv->sum[n];
	uint8_t *fi = inv->free_inst + (size_t)n * (size_t)inv->n_keys;
	uint64_t sum_mem[CLS__COUNT] = {0};
	uint64_t min_empty = UINT64_MAX;
	int n_layered = 0;

	memset(sm->max_free_mib, 0, sizeof(sm->max_free_mib));
	memset(sm->max_free_c, 0, sizeof(sm->max_free_c));
	memset(sm->sum_free_c, 0, sizeof(sm->sum_free_c));
	memset(nd->n_cls, 0, sizeof(nd->n_cls));
	memset(fi, 0, (size_t)inv->n_keys);
	sm->n_empty = 0;
	sm->n_gpus = (uint8_t)nd->n_gpus;
	nd->n_plain = nd->n_whole = 0;
	nd->min_slices = -1;
	nd->mem_used = 0;
	nd->bp_used = 0;
	for (int k = nd->first_gpu; k < nd->first_gpu + nd->n_gpus; k++) {
		struct pgpu *g = &inv->gpu[k];
		uint64_t free_mem;
		int c = CLS_EMPTY;

		gpu_load(inv, g);
		nd->mem_used += g->load_mem;
		nd->bp_used += g->load_bp;
		if (g->mig) {
			for (int i = g->first_inst;
			     i < g->first_inst + g->n_inst; i++) {
				const struct pinst *in = &inv->inst[i];

				if (in->exclusive)
					continue;
				n_layered++;
				if (in->n_slices == 0 && fi[in->key] < 255)
					fi[in->key]++;
			}
			continue;
		}
		nd->n_plain++;
		if (nd->min_slices < 0 || g->n_slices < nd->min_slices)
			nd->min_slices = g->n_slices;
		if (g->whole) {
			nd->n_whole++;
			continue;
		}
		if (g->n_slices == 0) {
			sm->n_empty++;
			if (g->mem_total < min_empty)
				min_empty = g->mem_total;
		} else {
			c = cls_of(g->mode);
		}
		nd->n_cls[c]++;
		free_mem = g->mem_total - g->mem_used;
		sum_mem[c] += free_mem;
		if (mib_up(free_mem) > sm->max_free_mib[c])
			sm->max_free_mib[c] = mib_up(free_mem);
		if (100 - g->c_used > sm->max_free_c[c])
			sm->max_free_c[c] = (uint16_t)(100 - g->c_used);
		sm->sum_free_c[c] += (uint16_t)(100 - g->c_used);
	}
	for (int c = 0; c < CLS__COUNT; c++)
		sm->sum_free_mib[c] = mib_up(sum_mem[c]);
	sm->min_empty_mib =
	    min_empty == UINT64_MAX ? 0 : (uint32_t)(min_empty / MIB);
	sm->n_layered =
	    n_layered > UINT16_MAX ? UINT16_MAX : (uint16_t)n_layered;
	sm->load = 0;
	if (nd->mem_total > 0)
		sm->load += (int64_t)(nd->mem_used * PPM / nd->mem_total);
	if (nd->n_gpus > 0)
		sm->load +=
		    nd->bp_used * PPM / ((int64_t)BP_WHOLE * nd->n_gpus);
	tree_update(inv, n);
}

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

/* Fills the bounds of p from its items (p->n of them). */
static void prep_bounds(struct prep *p)
{
	memset(p->n_frac, 0, sizeof(p->n_frac));
	memset(p->max_mib, 0, sizeof(p->max_mib));
	memset(p->max_c, 0, sizeof(p->max_c));
	memset(p->sum_mib, 0, sizeof(p->sum_mib));
	memset(p->sum_c, 0, sizeof(p->sum_c));
	p->n_layered = 0;
	p->n_whole = 0;
	p->cats = 0;
	p->n_qcheck = 0;
	memset(p->group_mask, 0, sizeof(p->group_mask));
	for (int k = 0; k < p->n; k++) {
		const struct pitem *it = &p->it[k];
		uint64_t mib = it->mem / MIB;
		int c;

		p->cats |= (it->kind == GS_PLACE_MIG || it->layered)
		               ? CAT_MIG
		               : CAT_PLAIN;
		if (it->kind == GS_PLACE_FRACTION) {
			int m = q_map_of(it->mode), i = q_level_mem(it->mem);
			int j = q_level_c(it->c), dup = 0;

			for (int q = 0; q < p->n_qcheck; q++)
				dup |= p->qcheck[q].m == m &&
				       p->qcheck[q].i == i &&
				       p->qcheck[q].j == j;
			if (!dup) {
				p->qcheck[p->n_qcheck].m = (uint8_t)m;
				p->qcheck[p->n_qcheck].i = (uint8_t)i;
				p->qcheck[p->n_qcheck].j = (uint8_t)j;
				p->n_qcheck++;
			}
		}
		for (int q = 0; it->kind == GS_PLACE_MIG && q < it->n_keys;
		     q++) {
			if (it->keys[q] >= 256) /* past the mask: never prune */
				memset(p->group_mask[it->group], 0xff,
				       sizeof(p->group_mask[0]));
			else
				p->group_mask[it->group][it->keys[q] / 64] |=
				    1ULL << (it->keys[q] % 64);
		}
		if (it->kind == GS_PLACE_WHOLE)
			p->n_whole++;
		if (it->kind != GS_PLACE_FRACTION)
			continue;
		if (it->layered) {
			p->n_layered++;
			continue;
		}
		c = cls_of(it->mode);
		p->n_frac[c]++;
		if (mib > p->max_mib[c])
			p->max_mib[c] =
			    mib > UINT32_MAX ? UINT32_MAX : (uint32_t)mib;
		if (it->c > p->max_c[c])
			p->max_c[c] = it->c;
		p->sum_mib[c] += mib;
		p->sum_c[c] += it->c;
	}
	p->edge = E_CAT + p->cats - 1;
	if (p->n_whole > 0 && p->cats == CAT_PLAIN)
		p->edge = E_WHOLE;
	if (p->n == 1 && p->it[0].kind == GS_PLACE_FRACTION &&
	    !p->it[0].layered)
		p->edge =
		    e_cell(q_map_of(p->it[0].mode), p->it[0].mem, p->it[0].c);
}

static gs_err resolve_keys(struct pitem *it, const char *name,
                           struct gs_errbuf *eb)
{
	it->n_keys = 0;
	for (int i = 0; i < gs_catalog_count(); i++) {
		const struct gs_gpu_model *m = gs_catalog_get(i);
		const struct gs_mig_profile *p = gs_catalog_profile(m, name);

		if (p != NULL && it->n_keys < 16)
			it->keys[it->n_keys++] = profile_key(i, m, p);
	}
	if (it->n_keys == 0)
		return gs_fail(
		    eb, GS_ERR_UNKNOWN_PROFILE,
		    "unknown MIG profile '%s' (no catalog GPU has it)", name);
	return GS_OK;
}

static gs_err prepare(const struct gs_place_request *req, struct prep *p,
                      struct gs_errbuf *eb)
{
	memset(p, 0, sizeof(*p));
	if (req->n < 1 || req->n > GS_PLACE_MAX_GANG)
		return gs_fail(eb, GS_ERR_INVALID,
		               "a request holds 1..%d slices, not %d",
		               GS_PLACE_MAX_GANG, req->n);
	if ((unsigned)req->policy > GS_PLACE_FRAG ||
	    (unsigned)req->gang > GS_GANG_SAME_PARENT)
		return gs_fail(eb, GS_ERR_INVALID,
		               "unknown placement policy or gang constraint");
	p->n = p->n_orig = req->n;
	p->gang = req->n == 1 ? GS_GANG_SAME_NODE : req->gang;
	p->policy = req->policy;
	if (req->gpu != NULL && req->gpu->kind != GS_GPU_ANY) {
		p->sel = req->gpu;
		if (req->gpu->kind == GS_GPU_MODEL)
			p->sel_model = gs_catalog_find(req->gpu->model);
	}
	for (int k = 0; k < req->n; k++) {
		const struct gs_place_item *in = &req->item[k];
		struct pitem *it = &p->it[k];
		gs_err err;

		it->kind = in->kind;
		it->mode = in->mode;
		it->profile = in->mig_profile;
		switch (in->kind) {
		case GS_PLACE_WHOLE:
			break;
		case GS_PLACE_FRACTION:
			if (in->mode != GS_MODE_TIMESLICE &&
			    in->mode != GS_MODE_MPS &&
			    !is_layered_mode(in->mode))
				return gs_fail(
				    eb, GS_ERR_INVALID,
				    "slice %d: a fractional slice "
				    "needs mode timeslice, mps, "
				    "mig+timeslice or mig+mps, not %s",
				    k + 1, gs_mode_name(in->mode));
			if (in->compute_pct < 0 || in->compute_pct > 100)
				return gs_fail(eb, GS_ERR_INVALID,
				               "slice %d: compute must be "
				               "0..100, got %d",
				               k + 1, in->compute_pct);
			it->layered = is_layered_mode(in->mode);
			it->mem = in->memory_bytes;
			it->c = in->compute_pct;
			if (!it->layered && in->mig_profile[0] != '\0')
				return gs_fail(
				    eb, GS_ERR_INVALID,
				    "slice %d: a MIG profile needs a "
				    "MIG mode, not %s",
				    k + 1, gs_mode_name(in->mode));
			if (it->layered && in->mig_profile[0] != '\0') {
				err = resolve_keys(it, in->mig_profile, eb);
				if (err != GS_OK)
					return err;
			}
			break;
		case GS_PLACE_MIG:
			if (in->mig_profile[0] == '\0')
				return gs_fail(eb, GS_ERR_INVALID,
				               "slice %d: a MIG slice needs a "
				               "profile",
				               k + 1);
			err = resolve_keys(it, in->mig_profile, eb);
			if (err != GS_OK)
				return err;
			it->group = -1;
			for (int g = 0; g < p->n_groups; g++)
				if (strcmp(p->group_name[g], in->mig_profile) ==
				    0)
					it->group = g;
			if (it->group < 0) {
				it->group = p->n_groups++;
				p->group_name[it->group] = in->mig_profile;
			}
			p->group_count[it->group]++;
			break;
		default:
			return gs_fail(eb, GS_ERR_INVALID,
			               "slice %d: unknown kind %d", k + 1,
			               (int)in->kind);
		}
	}
	if (req->n > 1 && p->gang == GS_GANG_SAME_GPU) {
		struct pitem sum = p->it[0];

		for (int k = 0; k < req->n; k++) {
			if (p->it[k].kind != GS_PLACE_FRACTION)
				return gs_fail(eb, GS_ERR_INVALID,
				               "a same-gpu gang shares one "
				               "device: whole-GPU and MIG "
				               "slices cannot be in it");
			if (p->it[k].mode != sum.mode ||
			    strcmp(p->it[k].profile, sum.profile) != 0)
				return gs_fail(eb, GS_ERR_INVALID,
				               "a same-gpu gang shares one "
				               "device: its slices need one "
				               "mode (and MIG profile)");
			if (k > 0) {
				sum.mem += p->it[k].mem;
				sum.c += p->it[k].c;
			}
		}
		p->it[0] = sum;
		p->n = 1;
	}
	if (req->n > 1 && p->gang == GS_GANG_SAME_PARENT)
		for (int k = 0; k < req->n; k++)
			if (p->it[k].kind != GS_PLACE_MIG)
				return gs_fail(eb, GS_ERR_INVALID,
				               "a same-parent gang takes MIG "
				               "slices only (slice %d is not)",
				               k + 1);
	prep_bounds(p);
	return GS_OK;
}

static bool key_match(const struct pitem *it, int key)
{
	for (int i = 0; i < it->n_keys; i++)
		if (it->keys[i] == key)
			return true;
	return false;
}

static bool gpu_selected(const struct prep *p, const struct pgpu *g)
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

static bool uuid_selected(const struct prep *p, const struct pgpu *g,
                          const struct pinst *in)
{
	if (p->sel == NULL || p->sel->kind != GS_GPU_UUID)
		return true;
	if (strcmp(g->uuid, p->sel->uuid) == 0)
		return true;
	return in != NULL && strcmp(in->uuid, p->sel->uuid) == 0;
}

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

static void gpu_state(const struct search *s, int gi, struct dstate *st)
{
	const struct pgpu *g = &s->inv->gpu[gi];

	st->total = g->mem_total;
	st->used = g->mem_used;
	st->c_used = g->c_used;
	st->n_slices = g->n_slices;
	st->mode = g->mode;
	st->excl = g->whole;
	st->touched = false;
	for (int k = 0; k < s->n_d; k++) {
		const struct delta *d = &s->d[k];

		if (d->gpu != gi || d->inst >= 0)
			continue;
		st->touched = true;
		st->used += d->mem;
		st->c_used += d->c;
		st->n_slices++;
		st->mode = d->mode;
		st->excl |= d->excl;
	}
}

static void inst_state(const struct search *s, int ii, struct dstate *st)
{
	const struct pinst *in = &s->inv->inst[ii];

	st->total = in->mem_total;
	st->used = in->mem_used;
	st->c_used = in->c_used;
	st->n_slices = in->n_slices;
	st->mode = in->mode;
	st->excl = in->exclusive;
	st->touched = false;
	for (int k = 0; k < s->n_d; k++) {
		const struct delta *d = &s->d[k];

		if (d->inst != ii)
			continue;
		st->touched = true;
		st->used += d->mem;
		st->c_used += d->c;
		st->n_slices++;
		st->mode = d->mode;
		st->excl |= d->excl;
	}
}

static bool fraction_fits(const struct dstate *st, const struct pitem *it)
{
	return !st->excl && (st->n_slices == 0 || st->mode == it->mode) &&
	       st->total - st->used >= it->mem && 100 - st->c_used >= it->c;
}

static bool gpu_fits(const struct search *s, int gi, const struct pitem *it,
                     struct dstate *st)
{
	const struct pgpu *g = &s->inv->gpu[gi];

	if (g->mig || !gpu_selected(s->p, g) || !uuid_selected(s->p, g, NULL))
		return false;
	gpu_state(s, gi, st);
	if (it->kind == GS_PLACE_WHOLE)
		return !st->excl && st->n_slices == 0;
	return fraction_fits(st, it);
}

static bool inst_fits(const struct search *s, int ii, const struct pitem *it,
                      struct dstate *st)
{
	const struct pinst *in = &s->inv->inst[ii];
	const struct pgpu *g = &s->inv->gpu[in->gpu];

	if (!gpu_selected(s->p, g) || !uuid_selected(s->p, g, in))
		return false;
	if (it->n_keys > 0 && !key_match(it, in->key))
		return false;
	inst_state(s, ii, st);
	if (it->kind == GS_PLACE_MIG)
		return !st->excl && st->n_slices == 0;
	return fraction_fits(st, it);
}

static int64_t leftover(uint64_t total, uint64_t used, int c_used)
{
	return (int64_t)((total - used) * PPM / total) +
	       (int64_t)(100 - c_used) * (PPM / 100);
}

/*
 * Leftover of a MIG GPU (the unit of instances taken whole), from its
 * instances as the deltas leave them, each rounded as gpu_load() does.
 */
static int64_t parent_leftover(const struct search *s, int gi)
{
	const struct pgpu *g = &s->inv->gpu[gi];
	uint64_t mem = 0;
	int64_t bp = 0;

	for (int i = g->first_inst; i < g->first_inst + g->n_inst; i++) {
		const struct pinst *in = &s->inv->inst[i];
		struct dstate st;

		inst_state(s, i, &st);
		if (st.excl) {
			mem += in->mem_total;
			bp += in->bp_share;
		} else {
			mem += st.used;
			bp += st.c_used * in->bp_share / 100;
		}
	}
	return (int64_t)((g->mem_total - mem) * PPM / g->mem_total) +
	       (BP_WHOLE - bp) * (PPM / BP_WHOLE);
}

/*
 * Sum of leftovers over the scoring units the deltas touch: a non-MIG
 * GPU, a shared instance, or the parent of an instance taken whole.
 */
static int64_t score_deltas(const struct search *s)
{
	int64_t sum = 0;

	for (int k = 0; k < s->n_d; k++) {
		const struct delta *d = &s->d[k];
		bool seen = false;
		struct dstate st;

		for (int j = 0; j < k && !seen; j++) {
			const struct delta *e = &s->d[j];

			if (d->inst >= 0 && d->excl)
				seen =
				    e->gpu == d->gpu && e->inst >= 0 && e->excl;
			else if (d->inst >= 0)
				seen = e->inst == d->inst;
			else
				seen = e->gpu == d->gpu && e->inst < 0;
		}
		if (seen)
			continue;
		if (d->inst >= 0 && d->excl) {
			sum += parent_leftover(s, d->gpu);
		} else if (d->inst >= 0) {
			inst_state(s, d->inst, &st);
			sum += leftover(st.total, st.used, st.c_used);
		} else {
			gpu_state(s, d->gpu, &st);
			sum += leftover(st.total, st.used, st.c_used);
		}
	}
	return sum;
}

static bool better(const struct search *s, int64_t score)
{
	if (!s->found)
		return true;
	return s->p->policy != GS_PLACE_SPREAD ? score < s->best_score
	                                       : score > s->best_score;
}

static void push(struct search *s, int k, int gi, int ii)
{
	const struct pitem *it = &s->p->it[k];
	struct delta *d = &s->d[s->n_d++];

	d->gpu = gi;
	d->inst = ii;
	d->mem = it->mem;
	d->c = it->c;
	d->mode = it->mode;
	d->excl = it->kind != GS_PLACE_FRACTION;
	if (it->kind == GS_PLACE_WHOLE) {
		d->mem = s->inv->gpu[gi].mem_total;
		d->c = 100;
	}
	s->cur[k][0] = gi;
	s->cur[k][1] = ii;
}

/*
 * FRAG: the node's cost after the deltas, in thousandths of a milli-GPU.
 * A GPU taken whole has nothing free; otherwise its free share is the
 * smaller of its free memory and free compute, in milli-GPU.
 */
static int64_t score_frag(const struct search *s)
{
	const struct pnode *nd = &s->inv->node[s->node];
	uint16_t g[GS_TRACE_MAX_DEVS];
	unsigned n = 0;

	for (int gi = nd->first_gpu;
	     gi < nd->first_gpu + nd->n_gpus && n < GS_TRACE_MAX_DEVS; gi++) {
		struct dstate st;
		int64_t mem, c;

		gpu_state(s, gi, &st);
		if (st.excl || st.total == 0) {
			g[n++] = 0;
			continue;
		}
		mem = (int64_t)((st.total -
		                 (st.used < st.total ? st.used : st.total)) *
		                GS_TRACE_MILLI / st.total);
		c = (int64_t)(100 - st.c_used) * GS_TRACE_MILLI / 100;
		if (c < 0)
			c = 0;
		g[n++] = (uint16_t)(mem < c ? mem : c);
	}
	/* Costs are non-negative: adding a half rounds. */
	return (int64_t)(1000.0 * gs_trace_scorer_cost(s->p->scorer,
	                                               INT64_MAX / 4, g, n, 0) +
	                 0.5);
}

/* FRAG's cost is the first key; equal costs (several assignments leave
 * everything the demand needs placeable, say) go to binpack's leftover,
 * which is below FRAG_TIE (16 devices x 2,000,000 at most). */
#define FRAG_TIE 33000000LL

static void leaf(struct search *s)
{
	int64_t score = s->p->scorer != NULL && !s->p->has_mig
	                    ? score_frag(s) * FRAG_TIE + score_deltas(s)
	                    : score_deltas(s);

	if (!better(s, score))
		return;
	s->found = true;
	s->best_score = score;
	memcpy(s->best, s->cur, sizeof(s->best));
}

/* Whether two untouched devices are interchangeable for the search. */
static bool same_gpu_state(const struct pgpu *a, const struct pgpu *b)
{
	return a->model == b->model && a->mem_total == b->mem_total &&
	       a->mem_used == b->mem_used && a->c_used == b->c_used &&
	       a->n_slices == b->n_slices && a->mode == b->mode &&
	       a->whole == b->whole &&
	       strcmp(a->model_name, b->model_name) == 0;
}

static bool same_inst_state(const struct pinst *a, const struct pinst *b)
{
	return a->gpu == b->gpu && a->key == b->key &&
	       a->mem_total == b->mem_total && a->mem_used == b->mem_used &&
	       a->c_used == b->c_used && a->n_slices == b->n_slices &&
	       a->mode == b->mode && a->exclusive == b->exclusive &&
	       a->bp_share == b->bp_share;
}

/*
 * Whether GPU g has a free instance for every MIG slice of a same-parent
 * gang (counted per profile name); checked before the search commits the
 * gang's first slice to one of g's instances.
 */
static bool gpu_hosts_gang(const struct search *s, int gi)
{
	const struct pgpu *g = &s->inv->gpu[gi];
	const struct prep *p = s->p;
	int have[GS_PLACE_MAX_GANG] = {0};

	for (int i = g->first_inst; i < g->first_inst + g->n_inst; i++) {
		const struct pinst *in = &s->inv->inst[i];

		if (in->exclusive || in->n_slices > 0)
			continue;
		for (int grp = 0; grp < p->n_groups; grp++) {
			const struct pitem *it = NULL;

			for (int k = 0; k < p->n && it == NULL; k++)
				if (p->it[k].group == grp)
					it = &p->it[k];
			if (it != NULL && key_match(it, in->key)) {
				have[grp]++;
				break;
			}
		}
	}
	for (int grp = 0; grp < p->n_groups; grp++)
		if (have[grp] < p->group_count[grp])
			return false;
	return true;
}

/*
 * Forward check for the search: can the slices from k on still fit on the
 * node's GPUs as the partial assignment leaves them? The same aggregate
 * bounds as node_may_fit(), on exact amounts.
 */
static bool rest_may_fit(const struct search *s, int node, int k)
{
	const struct pnode *nd = &s->inv->node[node];
	uint64_t need_mem[CLS__COUNT] = {0}, have_mem[CLS__COUNT] = {0};
	int need_c[CLS__COUNT] = {0}, have_c[CLS__COUNT] = {0};
	int need_whole = 0, n_empty = 0, n_frac = 0;
	uint64_t min_empty = UINT64_MAX, empty_mem;
	int empty_c;

	for (int j = k; j < s->p->n; j++) {
		const struct pitem *it = &s->p->it[j];

		if (it->kind == GS_PLACE_WHOLE) {
			need_whole++;
		} else if (it->kind == GS_PLACE_FRACTION && !it->layered) {
			need_mem[cls_of(it->mode)] += it->mem;
			need_c[cls_of(it->mode)] += it->c;
			n_frac++;
		}
	}
	if (need_whole == 0 && n_frac == 0)
		return true;
	for (int g = nd->first_gpu; g < nd->first_gpu + nd->n_gpus; g++) {
		struct dstate st;
		int c;

		if (s->inv->gpu[g].mig)
			continue;
		gpu_state(s, g, &st);
		if (st.excl)
			continue;
		c = st.n_slices == 0 ? CLS_EMPTY : cls_of(st.mode);
		if (c == CLS_EMPTY) {
			n_empty++;
			if (st.total < min_empty)
				min_empty = st.total;
		}
		have_mem[c] += st.total - st.used;
		have_c[c] += 100 - st.c_used;
	}
	if (need_whole > n_empty)
		return false;
	if (n_frac == 0)
		return true;
	empty_mem = have_mem[CLS_EMPTY] - (uint64_t)need_whole * min_empty;
	empty_c = have_c[CLS_EMPTY] - 100 * need_whole;
	for (int c = CLS_TS; c <= CLS_MPS; c++)
		if (need_mem[c] > have_mem[c] + empty_mem ||
		    need_c[c] > have_c[c] + empty_c)
			return false;
	return need_mem[CLS_TS] + need_mem[CLS_MPS] <=
	           have_mem[CLS_TS] + have_mem[CLS_MPS] + empty_mem &&
	       need_c[CLS_TS] + need_c[CLS_MPS] <=
	           have_c[CLS_TS] + have_c[CLS_MPS] + empty_c;
}

static void dfs(struct search *s, int node, int k)
{
	const struct pnode *nd = &s->inv->node[node];
	const struct pitem *it;
	int tried[64], n_tried = 0;
	struct dstate st;

	if (k > s->deepest)
		s->deepest = k;
	if (k == s->p->n) {
		leaf(s);
		return;
	}
	if (--*s->budget < 0) {
		s->exhausted = true;
		return;
	}
	if (!rest_may_fit(s, node, k))
		return;
	it = &s->p->it[k];
	if (it->kind == GS_PLACE_MIG || it->layered) {
		bool parent = s->p->gang == GS_GANG_SAME_PARENT && s->p->n > 1;
		int first = nd->first_inst, last = first + nd->n_inst;
		int host = -1; /* GPU last checked as a parent */
		bool host_ok = false;

		if (parent && k > 0) {
			/* later slices go on the first one's GPU */
			first = s->inv->gpu[s->cur[0][0]].first_inst;
			last = first + s->inv->gpu[s->cur[0][0]].n_inst;
		}
		for (int i = first; i < last; i++) {
			bool dup = false;

			if (parent && k == 0 && s->inv->inst[i].gpu != host) {
				host = s->inv->inst[i].gpu;
				host_ok = gpu_hosts_gang(s, host);
			}
			if (parent && k == 0 && !host_ok)
				continue;
			if (!inst_fits(s, i, it, &st))
				continue;
			for (int t = 0; !st.touched && t < n_tried && !dup; t++)
				dup = same_inst_state(&s->inv->inst[tried[t]],
				                      &s->inv->inst[i]);
			if (dup)
				continue;
			if (!st.touched && n_tried < 64)
				tried[n_tried++] = i;
			push(s, k, s->inv->inst[i].gpu, i);
			dfs(s, node, k + 1);
			s->n_d--;
			if (s->exhausted)
				return;
		}
		return;
	}
	for (int g = nd->first_gpu; g < nd->first_gpu + nd->n_gpus; g++) {
		bool dup = false;

		if (!gpu_fits(s, g, it, &st))
			continue;
		for (int t = 0; !st.touched && t < n_tried && !dup; t++)
			dup = same_gpu_state(&s->inv->gpu[tried[t]],
			                     &s->inv->gpu[g]);
		if (dup)
			continue;
		if (!st.touched && n_tried < 64)
			tried[n_tried++] = g;
		push(s, k, g, -1);
		dfs(s, node, k + 1);
		s->n_d--;
		if (s->exhausted)
			return;
	}
}

/* One slice: a scan of the node's devices. */
static void scan_one(struct search *s, int node)
{
	const struct pnode *nd = &s->inv->node[node];
	const struct pitem *it = &s->p->it[0];
	struct dstate st;

	if (it->kind == GS_PLACE_MIG || it->layered) {
		for (int i = nd->first_inst; i < nd->first_inst + nd->n_inst;
		     i++) {
			if (!inst_fits(s, i, it, &st))
				continue;
			push(s, 0, s->inv->inst[i].gpu, i);
			leaf(s);
			s->n_d--;
		}
		return;
	}
	for (int g = nd->first_gpu; g < nd->first_gpu + nd->n_gpus; g++) {
		if (!gpu_fits(s, g, it, &st))
			continue;
		push(s, 0, g, -1);
		leaf(s);
		s->n_d--;
	}
}

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

/* Only what the search reads before it writes (the struct is large). */
static void search_init(struct search *s, const struct gs_place_inv *inv,
                        const struct prep *p, long *budget)
{
	s->inv = inv;
	s->p = p;
	s->n_d = 0;
	s->found = false;
	s->best_score = 0;
	s->budget = budget;
	s->exhausted = false;
	s->deepest = 0;
}

static void solve_node(struct search *s, int node)
{
	s->n_d = 0;
	s->node = node;
	if (s->p->n == 1)
		scan_one(s, node);
	else
		dfs(s, node, 0);
}

/* ---- the answer -------------------------------------------------------- */

static void fill_result(const struct prep *p, const struct search *s, int node,
                        struct gs_place_result *out)
{
	out->n = p->n_orig;
	for (int k = 0; k < p->n_orig; k++) {
		int src = p->n == 1 ? 0 : k;

		out->target[k].node = node;
		out->target[k].gpu = s->best[src][0];
		out->target[k].inst = s->best[src][1];
	}
}

static gs_err explain(const struct gs_place_inv *inv, const struct prep *p,
                      struct gs_place_result *out, struct gs_errbuf *eb);

/*
 * The tree's version of node_may_fit(): bounds over a whole subtree,
 * using what prep_tree_checks() prepared.
 */
static bool tree_may_fit(const struct gs_place_inv *inv, const struct prep *p,
                         int t)
{
	const struct tnode *d = &inv->tree[t];

	if (p->n_whole > d->max_empty ||
	    (p->n_layered > 0 && d->max_layered == 0))
		return false;
	for (int k = 0; k < p->n_qcheck; k++)
		if (!(inv->tq[t].row[p->qcheck[k].m][p->qcheck[k].i] >>
		          p->qcheck[k].j &
		      1))
			return false;
	if (p->n_groups > 0) {
		const uint64_t *keys =
		    inv->tkeys + (size_t)t * (size_t)inv->kwords;

		for (int g = 0; g < p->n_groups; g++) {
			uint64_t any = 0;

			for (int w = 0; w < inv->kwords && w < 4; w++)
				any |= keys[w] & p->group_mask[g][w];
			if (any == 0)
				return false;
		}
	}
	for (int c = CLS_TS; c <= CLS_MPS; c++) {
		if (p->n_frac[c] == 0)
			continue;
		if (p->max_mib[c] > d->max_free_mib[CLS_EMPTY] &&
		    p->max_mib[c] > d->max_free_mib[c])
			return false;
		if (p->max_c[c] > d->max_free_c[CLS_EMPTY] &&
		    p->max_c[c] > d->max_free_c[c])
			return false;
		if (p->n > 1 &&
		    (p->sum_mib[c] > (uint64_t)d->max_sum_mib[c] +
		                         d->max_sum_mib[CLS_EMPTY] ||
		     p->sum_c[c] > d->max_sum_c[c] + d->max_sum_c[CLS_EMPTY]))
			return false;
	}
	return true;
}

struct tquery {
	const struct gs_place_inv *inv;
	const struct prep *p;
	int best; /* node, -1 until one fits */
	int64_t best_load;
	long *budget;
	bool gave_up;
	bool nomem;
	struct gs_place_result *out;
};

static void fill_result(const struct prep *p, const struct search *s, int node,
                        struct gs_place_result *out);

/* An entry of the best-first search: a subtree, its best load, its start. */
struct tentry {
	int64_t edge;
	int lo;
	int t;
};

/* Whether a comes out of the queue before b. */
static bool tentry_before(const struct tentry *a, const struct tentry *b,
                          bool binpack)
{
	if (a->edge != b->edge)
		return binpack ? a->edge > b->edge : a->edge < b->edge;
	return a->lo < b->lo;
}

/* A queue that starts on the stack and moves to the heap if it grows. */
#define TQ_STACK 256

struct tqueue {
	struct tentry *h;
	int n, cap;
	bool failed; /* out of host memory */
	struct tentry first[TQ_STACK];
};

static void tq_push(struct tqueue *q, struct tentry e, bool binpack)
{
	struct tentry *h;
	int i;

	if (q->n == q->cap) {
		h = malloc(2 * (size_t)q->cap * sizeof(*h));
		if (h == NULL) {
			q->failed = true;
			return;
		}
		memcpy(h, q->h, (size_t)q->n * sizeof(*h));
		if (q->h != q->first)
			free(q->h);
		q->h = h;
		q->cap *= 2;
	}
	h = q->h;
	i = q->n++;
	while (i > 0 && tentry_before(&e, &h[(i - 1) / 2], binpack)) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = e;
}

static struct tentry tq_pop(struct tqueue *q, bool binpack)
{
	struct tentry *h = q->h, top = h[0], last = h[--q->n];
	int *n = &q->n, i = 0;

	for (;;) {
		int c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && tentry_before(&h[c + 1], &h[c], binpack))
			c++;
		if (!tentry_before(&h[c], &last, binpack))
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n > 0)
		h[i] = last;
	return top;
}

/*
 * Best-first search over the tree: subtrees come out of a priority queue
 * best load first (binpack: highest, spread: lowest; equal loads: lowest
 * start index), so the first node that fits is the answer: every node
 * with a better load, or an equal load and a lower index, sits in a
 * subtree that came out earlier. Subtrees whose bounds rule every node
 * out are dropped.
 */
static void tree_search(struct tquery *q)
{
	const struct gs_place_inv *inv = q->inv;
	bool binpack = q->p->policy != GS_PLACE_SPREAD;
	int m = q->p->edge;
	struct tentry e = {.t = 1, .lo = 0};
	struct tqueue tq;

	tq.h = tq.first;
	tq.n = 0;
	tq.cap = TQ_STACK;
	tq.failed = false;
	e.edge = binpack ? inv->tree[1].max_load[m] : inv->tree[1].min_load[m];
	if (inv->tree[1].any && inv->tree[1].max_load[m] != NO_LOAD_MAX &&
	    tree_may_fit(inv, q->p, 1))
		tq_push(&tq, e, binpack);
	while (tq.n > 0 && !tq.failed) {
		int t, width = inv->tsize;

		e = tq_pop(&tq, binpack);
		t = e.t;
		if (t >= inv->tsize) {
			int node = t - inv->tsize;
			struct search s;

			if (node >= inv->n_nodes ||
			    !node_may_fit(inv, q->p, node))
				continue;
			search_init(&s, inv, q->p, q->budget);
			solve_node(&s, node);
			q->gave_up |= s.exhausted;
			if (!s.found)
				continue;
			q->best = node;
			q->best_load = inv->sum[node].load;
			fill_result(q->p, &s, node, q->out);
			break;
		}
		for (int u = t; u > 1; u /= 2)
			width /= 2;
		for (int c = 0; c < 2; c++) {
			const struct tnode *d = &inv->tree[2 * t + c];
			struct tentry ch = {.t = 2 * t + c,
			                    .lo = e.lo + c * width / 2};

			if (!d->any || d->max_load[m] == NO_LOAD_MAX ||
			    !tree_may_fit(inv, q->p, ch.t))
				continue;
			ch.edge = binpack ? d->max_load[m] : d->min_load[m];
			tq_push(&tq, ch, binpack);
		}
	}
	q->nomem = tq.failed;
	if (tq.h != tq.first)
		free(tq.h);
}

static gs_err no_fit_gave_up(const struct prep *p, struct gs_errbuf *eb)
{
	return gs_fail(eb, GS_ERR_NO_FIT,
	               "no placement found for the %d slices within the "
	               "search budget (%d steps); the gang may fit in a way "
	               "the search did not reach",
	               p->n_orig, GS_PLACE_SEARCH_BUDGET);
}

int gs_place_item_milli(const struct gs_place_item *it,
                        uint64_t gpu_memory_bytes)
{
	int64_t milli = 0;

	switch (it->kind) {
	case GS_PLACE_WHOLE:
		return GS_TRACE_MILLI;
	case GS_PLACE_MIG:
		return -1;
	case GS_PLACE_FRACTION:
		break;
	}
	if (it->compute_pct > 0)
		milli = (int64_t)it->compute_pct * 10;
	if (gpu_memory_bytes > 0) {
		/* Rounded down, as score_frag rounds a GPU's free share:
		 * whatever fits in bytes fits in milli-GPU. */
		uint64_t m = it->memory_bytes > gpu_memory_bytes
		                 ? gpu_memory_bytes
		                 : it->memory_bytes;
		int64_t mem = (int64_t)(m * GS_TRACE_MILLI / gpu_memory_bytes);

		if (mem > milli)
			milli = mem;
	}
	if (milli < 1)
		milli = 1;
	if (milli > GS_TRACE_MILLI)
		milli = GS_TRACE_MILLI;
	return (int)milli;
}

/*
 * FRAG: the scorer of the request, or one built from the request's own
 * slices (*own, the caller frees it) when it names none, each counted by
 * gs_place_item_milli on the inventory's first GPU.
 */
static gs_err frag_scorer(const struct gs_place_inv *inv,
                          const struct gs_place_request *req, struct prep *p,
                          struct gs_trace_scorer **own, struct gs_errbuf *eb)
{
	struct gs_trace_pod pods[GS_PLACE_MAX_GANG];

	for (int k = 0; k < req->n; k++) {
		const struct gs_place_item *it = &req->item[k];
		int milli = gs_place_item_milli(
		    it, inv->n_gpus > 0 ? inv->gpu[0].mem_total : 0);

		if (it->kind == GS_PLACE_MIG)
			p->has_mig = true;
		pods[k] = (struct gs_trace_pod){
		    .gpu_milli = (uint16_t)(milli > 0 ? milli : GS_TRACE_MILLI),
		    .num_gpu = 1};
	}
	p->scorer = req->scorer;
	if (p->scorer != NULL || p->has_mig)
		return GS_OK;
	{
		gs_err err =
		    gs_trace_scorer_new(pods, (size_t)req->n, NULL, 0, own, eb);
		p->scorer = *own;
		return err;
	}
}

gs_err gs_place(const struct gs_place_inv *inv,
                const struct gs_place_request *req, struct gs_place_result *out,
                struct gs_errbuf *eb)
{
	struct gs_trace_scorer *own = NULL; /* FRAG's default scorer */
	struct prep p;
	int best_node = -1;
	long budget = GS_PLACE_SEARCH_BUDGET;
	bool gave_up = false;
	gs_err err;

	memset(out, 0, sizeof(*out));
	out->repartition_gpu = -1;
	err = prepare(req, &p, eb);
	if (err != GS_OK)
		return err;
	if (p.policy == GS_PLACE_FRAG) {
		err = frag_scorer(inv, req, &p, &own, eb);
		if (err != GS_OK)
			return err;
	}
	{
		struct tquery q = {.inv = inv,
		                   .p = &p,
		                   .best = -1,
		                   .budget = &budget,
		                   .out = out};
		tree_search(&q);
		gs_trace_scorer_free(own);
		p.scorer = NULL; /* explain() scores as binpack */
		if (q.nomem && q.best < 0)
			return gs_fail(eb, GS_ERR_NOMEM,
			               "no memory for the placement search");
		best_node = q.best;
		gave_up = q.gave_up;
	}
	if (best_node >= 0) {
		out->exhausted = gave_up;
		return GS_OK;
	}
	out->exhausted = gave_up;
	if (gave_up)
		return no_fit_gave_up(&p, eb);
	return explain(inv, &p, out, eb);
}

/* ---- why nothing fits ------------------------------------------------- */

static void fmt_mem(uint64_t b, char *buf, size_t size)
{
	if (b >= GIB)
		snprintf(buf, size, "%.1f GiB", (double)b / (double)GIB);
	else if (b % MIB == 0)
		snprintf(buf, size, "%llu MiB", (unsigned long long)(b / MIB));
	else
		snprintf(buf, size, "%.1f MiB", (double)b / (double)MIB);
}

static void dev_name(const struct gs_place_inv *inv, int gi, int ii, char *buf,
                     size_t size)
{
	const struct pgpu *g = &inv->gpu[gi];
	char node[GS_PLACE_NAME_MAX + 8] = "";

	if (inv->n_nodes > 1)
		snprintf(node, sizeof(node), "node %s ",
		         inv->node[g->node].name);
	if (ii < 0)
		snprintf(buf, size, "%sGPU %d", node, g->index);
	else
		snprintf(buf, size, "%sGPU %d MIG %s@%d", node, g->index,
		         inv->inst[ii].profile->name, inv->inst[ii].start);
}

static gs_err no_fit(struct gs_errbuf *eb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static gs_err no_fit(struct gs_errbuf *eb, const char *fmt, ...)
{
	char msg[GS_ERRBUF_SIZE];
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return gs_fail(eb, GS_ERR_NO_FIT, "%s", msg);
}

static gs_err no_gpu_selected(const struct gs_place_inv *inv,
                              const struct prep *p, const char *what,
                              struct gs_errbuf *eb)
{
	char sel[GS_SPEC_UUID_MAX + 16];

	if (p->sel == NULL)
		return no_fit(eb, "there is no %s here", what);
	gs_format_gpu_selector(p->sel, sel, sizeof(sel));
	return no_fit(eb, "no %s matches gpu=%s", what, sel);
}

static const char *other_mode(int mode)
{
	switch (mode) {
	case GS_MODE_TIMESLICE:
		return "mps";
	case GS_MODE_MPS:
		return "timeslice";
	case GS_MODE_MIG_TIMESLICE:
		return "mig+mps";
	default:
		return "mig+timeslice";
	}
}

/* What explain_fraction() learns while it walks the devices. */
struct fstats {
	int n_sel, n_dev, n_excl, n_other, n_ok;
	int best_mem_g, best_mem_i, best_c_g, best_c_i;
	uint64_t best_mem;
	int best_c;
};

/* The exact walk over the devices of one node. */
static void fraction_node(const struct gs_place_inv *inv, const struct prep *p,
                          const struct pitem *it, int node, bool count,
                          struct fstats *f)
{
	const struct pnode *nd = &inv->node[node];

	for (int gi = nd->first_gpu; gi < nd->first_gpu + nd->n_gpus; gi++) {
		const struct pgpu *g = &inv->gpu[gi];
		int first = it->layered ? g->first_inst : -1;
		int last = it->layered ? g->first_inst + g->n_inst : 0;

		if (!gpu_selected(p, g))
			continue;
		if (!it->layered) {
			if (!uuid_selected(p, g, NULL))
				continue;
			f->n_sel += count;
			if (g->mig)
				continue;
		}
		for (int ii = first; ii < last; ii++) {
			uint64_t total, used, free_mem;
			int c_used, n_slices, mode;
			bool excl;

			if (ii >= 0) {
				const struct pinst *in = &inv->inst[ii];

				if (!uuid_selected(p, g, in) ||
				    (it->n_keys > 0 && !key_match(it, in->key)))
					continue;
				f->n_sel += count;
				total = in->mem_total;
				used = in->mem_used;
				c_used = in->c_used;
				n_slices = in->n_slices;
				mode = in->mode;
				excl = in->exclusive;
			} else {
				total = g->mem_total;
				used = g->mem_used;
				c_used = g->c_used;
				n_slices = g->n_slices;
				mode = g->mode;
				excl = g->whole;
			}
			f->n_dev += count;
			if (excl) {
				f->n_excl += count;
				continue;
			}
			if (n_slices > 0 && mode != it->mode) {
				f->n_other += count;
				continue;
			}
			f->n_ok += count;
			free_mem = total - used;
			if (f->best_mem_g < 0 || free_mem > f->best_mem) {
				f->best_mem = free_mem;
				f->best_mem_g = gi;
				f->best_mem_i = ii;
			}
			if (free_mem >= it->mem &&
			    (f->best_c_g < 0 || 100 - c_used > f->best_c)) {
				f->best_c = 100 - c_used;
				f->best_c_g = gi;
				f->best_c_i = ii;
			}
		}
	}
}

/*
 * Walks every node; with no selector and a slice for whole GPUs, the
 * counts come from the node summaries and only nodes whose summary could
 * beat the best candidate so far are walked (the result is the same as
 * walking them all: a later device replaces the best only when strictly
 * better).
 */
static void fraction_stats(const struct gs_place_inv *inv, const struct prep *p,
                           const struct pitem *it, struct fstats *f)
{
	bool fast = p->sel == NULL && !it->layered;
	int cls = it->layered ? CLS_TS : cls_of(it->mode);

	memset(f, 0, sizeof(*f));
	f->best_mem_g = f->best_c_g = -1;
	f->best_mem_i = f->best_c_i = -1;
	f->best_c = -1;
	for (int n = 0; n < inv->n_nodes; n++) {
		const struct nsum *sm = &inv->sum[n];
		uint64_t max_mem;
		int max_c;

		if (!fast) {
			fraction_node(inv, p, it, n, true, f);
			continue;
		}
		f->n_sel += inv->node[n].n_gpus;
		f->n_dev += inv->node[n].n_plain;
		f->n_excl += inv->node[n].n_whole;
		f->n_other +=
		    inv->node[n].n_cls[cls == CLS_TS ? CLS_MPS : CLS_TS];
		f->n_ok +=
		    inv->node[n].n_cls[CLS_EMPTY] + inv->node[n].n_cls[cls];
		max_mem = (uint64_t)(sm->max_free_mib[CLS_EMPTY] >
		                             sm->max_free_mib[cls]
		                         ? sm->max_free_mib[CLS_EMPTY]
		                         : sm->max_free_mib[cls]) *
		          MIB;
		max_c = sm->max_free_c[CLS_EMPTY] > sm->max_free_c[cls]
		            ? sm->max_free_c[CLS_EMPTY]
		            : sm->max_free_c[cls];
		if (sm->n_empty == 0 && inv->node[n].n_cls[cls] == 0)
			continue;
		if (f->best_mem_g >= 0 && max_mem <= f->best_mem &&
		    (max_mem < it->mem || max_c <= f->best_c))
			continue;
		fraction_node(inv, p, it, n, false, f);
	}
}

/*
 * A fractional slice (or a same-gpu gang's sum) on GPUs, or a layered one
 * on instances: the filters in order, the first that leaves nothing is
 * the reason.
 */
static gs_err explain_fraction(const struct gs_place_inv *inv,
                               const struct prep *p, const struct pitem *it,
                               const char *subject, struct gs_errbuf *eb)
{
	const char *noun = it->layered ? "MIG instance" : "GPU";
	char a[48], b[48], dev[GS_PLACE_NAME_MAX + 64];
	struct fstats f;

	fraction_stats(inv, p, it, &f);
	if (it->layered && f.n_sel == 0 && it->profile[0] != '\0')
		return no_fit(eb, "no MIG instance of profile %s exists%s",
		              it->profile,
		              p->sel ? " on the selected GPUs" : "");
	if (f.n_sel == 0)
		return no_gpu_selected(inv, p, noun, eb);
	if (f.n_dev == 0)
		return no_fit(eb,
		              "every GPU%s is in MIG mode: a %s slice needs a "
		              "GPU without MIG (or mode mig+%s)",
		              p->sel ? " selected" : "", gs_mode_name(it->mode),
		              gs_mode_name(it->mode));
	if (f.n_ok == 0)
		return no_fit(eb,
		              "no %s can take a %s slice: %d %s, %d running %s "
		              "slices",
		              noun, gs_mode_name(it->mode), f.n_excl,
		              it->layered ? "held by MIG slices" : "held whole",
		              f.n_other, other_mode(it->mode));
	if (f.best_mem < it->mem) {
		fmt_mem(it->mem, a, sizeof(a));
		fmt_mem(f.best_mem, b, sizeof(b));
		dev_name(inv, f.best_mem_g, f.best_mem_i, dev, sizeof(dev));
		return no_fit(eb,
		              "no %s has %s free memory%s (best: %s with %s)",
		              noun, a, subject, dev, b);
	}
	if (f.best_c < it->c) {
		dev_name(inv, f.best_c_g, f.best_c_i, dev, sizeof(dev));
		if (it->mem == 0)
			return no_fit(eb,
			              "no %s has %d%% free compute%s (best: "
			              "%s with %d%%)",
			              noun, it->c, subject, dev, f.best_c);
		fmt_mem(it->mem, a, sizeof(a));
		return no_fit(eb,
		              "no %s with %s free memory has %d%% free "
		              "compute%s (best: %s with %d%%)",
		              noun, a, it->c, subject, dev, f.best_c);
	}
	return gs_fail(eb, GS_ERR_INTERNAL,
	               "no %s fits, yet every filter passes", noun);
}

static gs_err explain_whole(const struct gs_place_inv *inv,
                            const struct prep *p, struct gs_errbuf *eb)
{
	int n_sel = 0, n_plain = 0, least = -1;
	char dev[GS_PLACE_NAME_MAX + 64];

	for (int n = 0; n < inv->n_nodes; n++) {
		const struct pnode *nd = &inv->node[n];

		if (p->sel == NULL) {
			/* Only a node whose least used GPU beats the best
			 * so far can hold a better one. */
			n_sel += nd->n_gpus;
			n_plain += nd->n_plain;
			if (nd->min_slices < 0 ||
			    (least >= 0 &&
			     nd->min_slices >= inv->gpu[least].n_slices))
				continue;
		}
		for (int gi = nd->first_gpu; gi < nd->first_gpu + nd->n_gpus;
		     gi++) {
			const struct pgpu *g = &inv->gpu[gi];

			if (p->sel != NULL &&
			    (!gpu_selected(p, g) || !uuid_selected(p, g, NULL)))
				continue;
			n_sel += p->sel != NULL;
			if (g->mig)
				continue;
			n_plain += p->sel != NULL;
			if (least < 0 || g->n_slices < inv->gpu[least].n_slices)
				least = gi;
		}
	}
	if (n_sel == 0)
		return no_gpu_selected(inv, p, "GPU", eb);
	if (n_plain == 0)
		return no_fit(eb,
		              "every GPU%s is in MIG mode: a whole-GPU slice "
		              "needs a GPU without MIG",
		              p->sel ? " selected" : "");
	dev_name(inv, least, -1, dev, sizeof(dev));
	return no_fit(eb,
	              "no GPU is free for a whole-GPU slice (all %d are in "
	              "use; least used: %s with %d slice%s)",
	              n_plain, dev, inv->gpu[least].n_slices,
	              inv->gpu[least].n_slices == 1 ? "" : "s");
}

/* "1g.5gb x2 + 3g.20gb" for the MIG slices a request asks for. */
static void fmt_groups(const struct prep *p, const int *count, char *buf,
                       size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int g = 0; g < p->n_groups && len < size; g++) {
		int n = count ? count[g] : p->group_count[g];
		int w;

		if (n <= 0)
			continue;
		w = snprintf(buf + len, size - len, "%s%s", len ? " + " : "",
		             p->group_name[g]);
		if (w > 0)
			len += (size_t)w;
		if (n > 1 && len < size) {
			w = snprintf(buf + len, size - len, " x%d", n);
			if (w > 0)
				len += (size_t)w;
		}
	}
}

/*
 * Could re-partitioning one GPU make every MIG slice of the request? Asks
 * the MIG planner about up to HINT_PLANNER_CALLS GPUs that have enough
 * free memory slices, in index order. Writes a clause for the message.
 */
static void repartition_hint(const struct gs_place_inv *inv,
                             const struct prep *p, struct gs_place_result *out,
                             char *buf, size_t size)
{
	const char *what = p->n_orig > 1 ? "them" : "one";
	int calls = 0;
	bool capped = false;

	buf[0] = '\0';
	for (int gi = 0; gi < inv->n_gpus; gi++) {
		const struct pgpu *g = &inv->gpu[gi];
		struct gs_mig_instance cur[GS_MIGPLAN_MAX_INSTANCES];
		struct gs_mig_demand dem[GS_PLACE_MAX_GANG];
		struct gs_mig_plan plan;
		int n_cur = 0, need = 0, busy = 0;
		bool ok = true;
		char dev[GS_PLACE_NAME_MAX + 64];

		if (g->model == NULL || !gpu_selected(p, g) ||
		    !uuid_selected(p, g, NULL))
			continue;
		if (!g->mig && (g->n_slices > 0 || g->whole))
			continue;
		for (int k = 0; k < p->n_groups && ok; k++) {
			dem[k].profile =
			    gs_catalog_profile(g->model, p->group_name[k]);
			dem[k].count = p->group_count[k];
			ok = dem[k].profile != NULL;
			if (ok)
				need += dem[k].profile->memory_slices *
				        dem[k].count;
		}
		if (!ok)
			continue;
		for (int i = g->first_inst;
		     g->mig && i < g->first_inst + g->n_inst &&
		     n_cur < GS_MIGPLAN_MAX_INSTANCES;
		     i++) {
			const struct pinst *in = &inv->inst[i];

			cur[n_cur].profile = in->profile;
			cur[n_cur].start = in->start;
			cur[n_cur].in_use = in->exclusive || in->n_slices > 0;
			if (cur[n_cur].in_use)
				busy += in->profile->memory_slices;
			n_cur++;
		}
		if (g->model->memory_slices - busy < need)
			continue;
		if (calls++ >= HINT_PLANNER_CALLS) {
			capped = true;
			break;
		}
		if (gs_migplan_solve(g->model, cur, n_cur, dem, p->n_groups,
		                     &plan, NULL) != GS_OK ||
		    plan.n_unmet > 0)
			continue;
		out->repartition_gpu = gi;
		dev_name(inv, gi, -1, dev, sizeof(dev));
		if (g->mig)
			snprintf(buf, size,
			         "; a re-partition of %s could make %s "
			         "(gpuslice plan)",
			         dev, what);
		else
			snprintf(buf, size,
			         "; putting %s in MIG mode could make %s", dev,
			         what);
		return;
	}
	if (capped)
		snprintf(buf, size,
		         "; none of the first %d GPUs checked could make %s by "
		         "re-partitioning",
		         HINT_PLANNER_CALLS, what);
	else
		snprintf(buf, size,
		         "; no GPU could make %s by re-partitioning either",
		         what);
}

static const char *model_with_profile(const char *profile)
{
	for (int i = 0; i < gs_catalog_count(); i++)
		if (gs_catalog_profile(gs_catalog_get(i), profile) != NULL)
			return gs_catalog_get(i)->name;
	return "?";
}

/* MIG slices: one alone, or a same-parent gang. */
static gs_err explain_mig(const struct gs_place_inv *inv, const struct prep *p,
                          struct gs_place_result *out, struct gs_errbuf *eb)
{
	int n_models = 0, n_exist = 0, best = -1, best_missing = 0;
	int best_have[GS_PLACE_MAX_GANG] = {0};
	char want[160], hint[256], miss[160], dev[GS_PLACE_NAME_MAX + 64];

	for (int gi = 0; gi < inv->n_gpus; gi++) {
		const struct pgpu *g = &inv->gpu[gi];
		int have[GS_PLACE_MAX_GANG] = {0}, missing = 0;
		bool all = g->model != NULL;

		if (!gpu_selected(p, g))
			continue;
		for (int k = 0; k < p->n_groups && all; k++)
			all = gs_catalog_profile(g->model, p->group_name[k]) !=
			      NULL;
		if (!all)
			continue;
		n_models++;
		for (int i = g->first_inst; i < g->first_inst + g->n_inst;
		     i++) {
			const struct pinst *in = &inv->inst[i];

			if (!uuid_selected(p, g, in))
				continue;
			for (int k = 0; k < p->n; k++) {
				const struct pitem *it = &p->it[k];

				if (!key_match(it, in->key))
					continue;
				n_exist++;
				if (!in->exclusive && in->n_slices == 0)
					have[it->group]++;
				break;
			}
		}
		if (!g->mig)
			continue;
		for (int k = 0; k < p->n_groups; k++)
			if (have[k] < p->group_count[k])
				missing += p->group_count[k] - have[k];
		if (best < 0 || missing < best_missing) {
			best = gi;
			best_missing = missing;
			memcpy(best_have, have, sizeof(have));
		}
	}
	fmt_groups(p, NULL, want, sizeof(want));
	if (n_models == 0) {
		if (p->n_groups == 1)
			return no_fit(eb,
			              "no GPU%s has MIG profile %s (it is a "
			              "profile of %s)",
			              p->sel ? " selected" : " here",
			              p->group_name[0],
			              model_with_profile(p->group_name[0]));
		return no_fit(eb, "no GPU%s supports all of %s",
		              p->sel ? " selected" : " here", want);
	}
	repartition_hint(inv, p, out, hint, sizeof(hint));
	if (p->n_orig == 1)
		return no_fit(eb, "no free %s MIG instance (%s)%s", want,
		              n_exist == 0 ? "none exists" : "all are in use",
		              hint);
	if (best < 0)
		return no_fit(eb, "no GPU in MIG mode has %s%s", want, hint);
	for (int k = 0; k < p->n_groups; k++)
		best_have[k] = p->group_count[k] - best_have[k];
	fmt_groups(p, best_have, miss, sizeof(miss));
	dev_name(inv, best, -1, dev, sizeof(dev));
	return no_fit(eb,
	              "no GPU has free MIG instances for %s (best: %s, missing "
	              "%s)%s",
	              want, dev, miss, hint);
}

/* Whether one slice of the request fits anywhere on its own. */
static bool fits_alone(const struct gs_place_inv *inv, const struct prep *p1)
{
	long budget = GS_PLACE_SEARCH_BUDGET;
	struct search s;

	for (int n = 0; n < inv->n_nodes; n++) {
		if (!node_may_fit(inv, p1, n))
			continue;
		search_init(&s, inv, p1, &budget);
		solve_node(&s, n);
		if (s.found)
			return true;
	}
	return false;
}

static void single_of(const struct prep *p, int k, struct prep *p1)
{
	*p1 = *p;
	p1->n = p1->n_orig = 1;
	p1->gang = GS_GANG_SAME_NODE;
	p1->it[0] = p->it[k];
	p1->n_whole = p->it[k].kind == GS_PLACE_WHOLE;
	p1->n_groups = 0;
	if (p->it[k].kind == GS_PLACE_MIG) {
		p1->n_groups = 1;
		p1->group_count[0] = 1;
		p1->group_name[0] = p->it[k].profile;
		p1->it[0].group = 0;
	}
	prep_bounds(p1);
}

static gs_err explain_one(const struct gs_place_inv *inv, const struct prep *p,
                          struct gs_place_result *out, struct gs_errbuf *eb)
{
	const struct pitem *it = &p->it[0];
	char subject[48] = "";

	if (p->n_orig > 1)
		snprintf(subject, sizeof(subject),
		         " for the %d slices together", p->n_orig);
	switch (it->kind) {
	case GS_PLACE_WHOLE:
		return explain_whole(inv, p, eb);
	case GS_PLACE_MIG:
		return explain_mig(inv, p, out, eb);
	default:
		return explain_fraction(inv, p, it, subject, eb);
	}
}

/*
 * A same-node gang whose slices each fit alone: the first of the totals
 * (free GPUs, free instances per profile, memory, compute) that no node
 * has, with the node that comes closest; when every total is met
 * somewhere, the slices just do not pack (each must fit on one device).
 */
static gs_err explain_gang(const struct gs_place_inv *inv, const struct prep *p,
                           struct gs_place_result *out, struct gs_errbuf *eb)
{
	uint64_t need_mem = 0;
	int need_c = 0, n_frac = 0;
	int best_whole = -1, best_mem = -1, best_c = -1, roomy = -1;
	uint64_t best_mem_v = 0;
	int best_whole_v = -1, best_c_v = -1;
	char a[48], b[48], node[GS_PLACE_NAME_MAX + 16], besides[64] = "";

	for (int k = 0; k < p->n; k++) {
		struct prep p1;
		struct gs_errbuf one = {0};
		gs_err err;

		single_of(p, k, &p1);
		if (fits_alone(inv, &p1))
			continue;
		err = explain_one(inv, &p1, out, &one);
		return gs_fail(eb, err, "slice %d of %d: %s", k + 1, p->n,
		               gs_errbuf_msg(&one, err));
	}
	for (int k = 0; k < p->n; k++)
		if (p->it[k].kind == GS_PLACE_FRACTION && !p->it[k].layered) {
			need_mem += p->it[k].mem;
			need_c += p->it[k].c;
			n_frac++;
		}
	for (int n = 0; n < inv->n_nodes; n++) {
		const struct nsum *sm = &inv->sum[n];
		uint64_t mem;
		int c, spare = sm->n_empty - p->n_whole;

		if (sm->n_empty > best_whole_v) {
			best_whole_v = sm->n_empty;
			best_whole = n;
		}
		if (spare < 0)
			continue;
		mem = ((uint64_t)sm->sum_free_mib[CLS_TS] +
		       sm->sum_free_mib[CLS_MPS] + sm->sum_free_mib[CLS_EMPTY] -
		       (uint64_t)p->n_whole * sm->min_empty_mib) *
		      MIB;
		c = sm->sum_free_c[CLS_TS] + sm->sum_free_c[CLS_MPS] +
		    sm->sum_free_c[CLS_EMPTY] - 100 * p->n_whole;
		if (best_mem < 0 || mem > best_mem_v) {
			best_mem_v = mem;
			best_mem = n;
		}
		if (mem >= need_mem && (best_c < 0 || c > best_c_v)) {
			best_c_v = c;
			best_c = n;
		}
		if (mem >= need_mem && c >= need_c && roomy < 0 &&
		    node_may_fit(inv, p, n))
			roomy = n;
	}
	if (p->n_whole > 0)
		snprintf(besides, sizeof(besides),
		         ", besides the GPUs for the whole-GPU slices");
	if (best_mem < 0) {
		snprintf(node, sizeof(node), "node %s",
		         inv->node[best_whole].name);
		return no_fit(eb,
		              "no node has %d free GPUs for the whole-GPU "
		              "slices (best: %s with %d)",
		              p->n_whole, node, best_whole_v);
	}
	if (n_frac > 0 && best_mem_v < need_mem) {
		fmt_mem(need_mem, a, sizeof(a));
		fmt_mem(best_mem_v, b, sizeof(b));
		snprintf(node, sizeof(node), "node %s",
		         inv->node[best_mem].name);
		return no_fit(eb,
		              "no node has %s free memory for the %d "
		              "fractional slices together (best: %s with "
		              "%s%s)",
		              a, n_frac, node, b, besides);
	}
	if (n_frac > 0 && best_c_v < need_c) {
		snprintf(node, sizeof(node), "node %s", inv->node[best_c].name);
		return no_fit(eb,
		              "no node has %d%% free compute for the %d "
		              "fractional slices together (best: %s with "
		              "%d%%%s)",
		              need_c, n_frac, node, best_c_v, besides);
	}
	if (roomy < 0)
		return no_fit(eb,
		              "no node has free MIG instances and room for "
		              "all %d slices together",
		              p->n);
	snprintf(node, sizeof(node), "node %s", inv->node[roomy].name);
	return no_fit(eb,
	              "the %d slices do not pack onto any node, although %s "
	              "has enough free GPUs, memory and compute in total "
	              "(each slice must fit on one device)",
	              p->n, node);
}

static gs_err explain(const struct gs_place_inv *inv, const struct prep *p,
                      struct gs_place_result *out, struct gs_errbuf *eb)
{
	if (inv->n_gpus == 0)
		return no_fit(eb, "there are no GPUs in the inventory");
	if (p->n == 1)
		return explain_one(inv, p, out, eb);
	if (p->gang == GS_GANG_SAME_PARENT)
		return explain_mig(inv, p, out, eb);
	return explain_gang(inv, p, out, eb);
}

/* ---- changing the inventory ------------------------------------------- */

static gs_err check_target(const struct gs_place_inv *inv,
                           const struct gs_place_target *t,
                           struct gs_errbuf *eb)
{
	if (t->gpu < 0 || t->gpu >= inv->n_gpus)
		return gs_fail(eb, GS_ERR_INVALID, "no GPU %d", t->gpu);
	if (t->inst >= inv->n_inst ||
	    (t->inst >= 0 && inv->inst[t->inst].gpu != t->gpu))
		return gs_fail(eb, GS_ERR_INVALID,
		               "no MIG instance %d on GPU %d", t->inst, t->gpu);
	return GS_OK;
}

gs_err gs_place_occupy(struct gs_place_inv *inv,
                       const struct gs_place_target *target,
                       const struct gs_place_item *item, struct gs_errbuf *eb)
{
	struct gs_place_request req = {.n = 1};
	struct prep p;
	struct search s;
	struct dstate st;
	char dev[GS_PLACE_NAME_MAX + 64];
	gs_err err;
	bool fits;

	err = check_target(inv, target, eb);
	if (err != GS_OK)
		return err;
	req.item[0] = *item;
	err = prepare(&req, &p, eb);
	if (err != GS_OK)
		return err;
	memset(&s, 0, sizeof(s));
	s.inv = inv;
	s.p = &p;
	dev_name(inv, target->gpu, target->inst, dev, sizeof(dev));
	if (target->inst >= 0) {
		if (p.it[0].kind == GS_PLACE_WHOLE ||
		    (p.it[0].kind == GS_PLACE_FRACTION && !p.it[0].layered))
			return gs_fail(eb, GS_ERR_INVALID,
			               "%s: only MIG and mig+* slices go in a "
			               "MIG instance",
			               dev);
		fits = inst_fits(&s, target->inst, &p.it[0], &st);
	} else {
		if (inv->gpu[target->gpu].mig)
			return gs_fail(eb, GS_ERR_INVALID,
			               "%s is in MIG mode: name an instance",
			               dev);
		if (p.it[0].kind == GS_PLACE_MIG || p.it[0].layered)
			return gs_fail(eb, GS_ERR_INVALID,
			               "%s: a %s slice needs a MIG instance",
			               dev,
			               p.it[0].kind == GS_PLACE_MIG
			                   ? "MIG"
			                   : gs_mode_name(p.it[0].mode));
		fits = gpu_fits(&s, target->gpu, &p.it[0], &st);
	}
	if (!fits)
		return gs_fail(eb, GS_ERR_NO_FIT,
		               "the slice does not fit on %s", dev);
	if (target->inst >= 0) {
		struct pinst *in = &inv->inst[target->inst];

		if (p.it[0].kind == GS_PLACE_MIG) {
			in->exclusive = true;
		} else {
			in->mem_used += p.it[0].mem;
			in->c_used += p.it[0].c;
			in->n_slices++;
			in->mode = (uint8_t)p.it[0].mode;
		}
	} else {
		struct pgpu *g = &inv->gpu[target->gpu];

		if (p.it[0].kind == GS_PLACE_WHOLE) {
			g->whole = true;
			g->mem_used = g->mem_total;
			g->c_used = 100;
		} else {
			g->mem_used += p.it[0].mem;
			g->c_used += p.it[0].c;
			g->mode = (uint8_t)p.it[0].mode;
		}
		g->n_slices++;
	}
	summarise(inv, inv->gpu[target->gpu].node);
	return GS_OK;
}

gs_err gs_place_release(struct gs_place_inv *inv,
                        const struct gs_place_target *target,
                        const struct gs_place_item *item, struct gs_errbuf *eb)
{
	char dev[GS_PLACE_NAME_MAX + 64];
	gs_err err;

	err = check_target(inv, target, eb);
	if (err != GS_OK)
		return err;
	dev_name(inv, target->gpu, target->inst, dev, sizeof(dev));
	if (target->inst >= 0) {
		struct pinst *in = &inv->inst[target->inst];

		if (item->kind == GS_PLACE_MIG) {
			if (!in->exclusive)
				return gs_fail(eb, GS_ERR_INVALID,
				               "%s is not held by a MIG slice",
				               dev);
			in->exclusive = false;
		} else {
			if (item->kind != GS_PLACE_FRACTION ||
			    in->n_slices == 0 || in->mode != item->mode ||
			    in->mem_used < item->memory_bytes ||
			    in->c_used < item->compute_pct)
				return gs_fail(eb, GS_ERR_INVALID,
				               "%s holds no such slice", dev);
			in->mem_used -= item->memory_bytes;
			in->c_used -= item->compute_pct;
			in->n_slices--;
		}
	} else {
		struct pgpu *g = &inv->gpu[target->gpu];

		if (item->kind == GS_PLACE_WHOLE) {
			if (!g->whole)
				return gs_fail(eb, GS_ERR_INVALID,
				               "%s is not held whole", dev);
			g->whole = false;
			g->mem_used = 0;
			g->c_used = 0;
		} else {
			if (item->kind != GS_PLACE_FRACTION || g->whole ||
			    g->n_slices == 0 || g->mode != item->mode ||
			    g->mem_used < item->memory_bytes ||
			    g->c_used < item->compute_pct)
				return gs_fail(eb, GS_ERR_INVALID,
				               "%s holds no such slice", dev);
			g->mem_used -= item->memory_bytes;
			g->c_used -= item->compute_pct;
		}
		g->n_slices--;
	}
	summarise(inv, inv->gpu[target->gpu].node);
	return GS_OK;
}

gs_err gs_place_commit(struct gs_place_inv *inv,
                       const struct gs_place_request *req,
                       const struct gs_place_result *res, struct gs_errbuf *eb)
{
	int k;
	gs_err err = GS_OK;

	if (res->n != req->n)
		return gs_fail(eb, GS_ERR_INVALID,
		               "the result has %d slices, the request %d",
		               res->n, req->n);
	for (k = 0; k < req->n; k++) {
		err = gs_place_occupy(inv, &res->target[k], &req->item[k], eb);
		if (err != GS_OK)
			break;
	}
	if (err == GS_OK)
		return GS_OK;
	while (k-- > 0)
		(void)gs_place_release(inv, &res->target[k], &req->item[k],
		                       NULL);
	return err;
}
