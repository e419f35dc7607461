/*
 * inventory.c - the placement inventory: nodes, GPUs and MIG instances in
 * three flat arrays, their usage, the node summaries and the tournament
 * tree over them (place_int.h describes the layout), and the read-only
 * accessors of gs/placement.h.
 */
#include "place_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- inventory ------------------------------------------------------ */

static int model_index(const struct gs_gpu_model *m)
{
	for (int i = 0; m != NULL && i < gs_catalog_count(); i++)
		if (gs_catalog_get(i) == m)
			return i;
	return -1;
}

int gs__place_profile_key(int model_idx, const struct gs_gpu_model *m,
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
	gs__place_summarise(inv, *node);
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
	gs__place_summarise(inv, g->node);
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
	in->key = gs__place_profile_key(g->model_idx, g->model, p);
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
	gs__place_summarise(inv, g->node);
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

void gs__place_dev_name(const struct gs_place_inv *inv, int gi, int ii,
                        char *buf, size_t size)
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

/* ---- usage bookkeeping ---------------------------------------------- */

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

void gs__place_summarise(struct gs_place_inv *inv, int n)
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
