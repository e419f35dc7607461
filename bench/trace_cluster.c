/*
 * trace_cluster.c - the state of a replayed cluster: what is free on each
 * node and each of its GPU devices, and the rule for whether a task fits.
 *
 * Invariants per node (gs_trace_nstate): 0 <= gpu_free[d] <= 1000;
 * gpu_free_total, full_free and max_free agree with gpu_free[]; cpu_free
 * and mem_free never go below 0 because gs_trace_cluster_bind() is only
 * called for a task that fits; `gen` changes on every bind so that score
 * caches keyed by it go stale exactly when the node changes.
 *
 * The model table and the task validity rule that the product uses too
 * (gs_trace_models_*, gs_trace_pod_is_valid) are in core/trace_pod.c.
 */
#include "trace_int.h"

#include <stdlib.h>
#include <string.h>

unsigned gs_trace_pod_tag(const struct gs_trace_pod *pod)
{
	if (pod->num_gpu == 0)
		return 0;
	if (pod->gpu_milli < GS_TRACE_MILLI)
		return GS_TRACE_TAG_SHARE;
	switch (pod->num_gpu) {
	case 1:
		return GS_TRACE_TAG_1GPU;
	case 2:
		return GS_TRACE_TAG_2GPU;
	case 4:
		return GS_TRACE_TAG_4GPU;
	case 8:
		return GS_TRACE_TAG_8GPU;
	default:
		return GS_TRACE_TAG_OTHER;
	}
}

static void node_summarise(struct gs_trace_nstate *s)
{
	uint32_t total = 0;
	uint16_t mx = 0;
	uint8_t full = 0;

	for (unsigned d = 0; d < s->gpus; d++) {
		uint16_t v = s->gpu_free[d];
		total += v;
		if (v > mx)
			mx = v;
		if (v == GS_TRACE_MILLI)
			full++;
	}
	s->gpu_free_total = total;
	s->max_free = mx;
	s->full_free = full;
}

void gs_trace_cluster_reset(struct gs_trace_cluster *c)
{
	c->allocated = 0;
	for (size_t i = 0; i < c->n; i++) {
		struct gs_trace_nstate *s = &c->node[i];
		const struct gs_trace_node *cap = &c->nodes[i];

		memset(s, 0, sizeof(*s));
		s->cpu_free = cap->cpu_milli;
		s->mem_free = (int64_t)cap->memory_mib;
		s->gpus = cap->gpus;
		s->model = cap->model;
		for (unsigned d = 0; d < s->gpus; d++)
			s->gpu_free[d] = GS_TRACE_MILLI;
		node_summarise(s);
		s->gen = 1;
	}
}

gs_err gs_trace_cluster_init(struct gs_trace_cluster *c,
                             const struct gs_trace_node *nodes, size_t n,
                             struct gs_errbuf *eb)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < n; i++) {
		if (nodes[i].gpus > GS_TRACE_MAX_DEVS)
			return gs_fail(
			    eb, GS_ERR_RANGE,
			    "node %zu: %u GPUs, at most %d supported", i,
			    nodes[i].gpus, GS_TRACE_MAX_DEVS);
		if (nodes[i].gpus > 0 && nodes[i].model >= GS_TRACE_MAX_MODELS)
			return gs_fail(eb, GS_ERR_RANGE,
			               "node %zu: model id %u out of range", i,
			               nodes[i].model);
		c->gpu_capacity += (int64_t)nodes[i].gpus * GS_TRACE_MILLI;
	}
	c->node = calloc(n ? n : 1, sizeof(*c->node));
	if (c->node == NULL)
		return gs_fail(eb, GS_ERR_NOMEM,
		               "cluster: out of memory for %zu nodes", n);
	c->n = n;
	c->nodes = nodes;
	gs_trace_cluster_reset(c);
	return GS_OK;
}

void gs_trace_cluster_fini(struct gs_trace_cluster *c)
{
	if (c == NULL)
		return;
	free(c->node);
	memset(c, 0, sizeof(*c));
}

bool gs_trace_cluster_fits(const struct gs_trace_cluster *c, size_t i,
                           const struct gs_trace_pod *pod)
{
	const struct gs_trace_nstate *s = &c->node[i];

	if (s->cpu_free < (int64_t)pod->cpu_milli ||
	    s->mem_free < (int64_t)pod->memory_mib)
		return false;
	if (pod->num_gpu == 0)
		return true;
	if (s->gpus == 0)
		return false;
	if (pod->spec != 0 && !((pod->spec >> s->model) & 1u))
		return false;
	if (pod->gpu_milli < GS_TRACE_MILLI)
		return s->max_free >= pod->gpu_milli;
	return s->full_free >= pod->num_gpu;
}

void gs_trace_cluster_bind(struct gs_trace_cluster *c, size_t i,
                           const struct gs_trace_pod *pod, const uint8_t *devs)
{
	struct gs_trace_nstate *s = &c->node[i];

	s->cpu_free -= pod->cpu_milli;
	s->mem_free -= (int64_t)pod->memory_mib;
	if (pod->num_gpu > 0) {
		for (unsigned k = 0; k < pod->num_gpu; k++)
			s->gpu_free[devs[k]] -= pod->gpu_milli;
		c->allocated += (int64_t)pod->num_gpu * pod->gpu_milli;
		s->tags |= (uint8_t)gs_trace_pod_tag(pod);
		node_summarise(s);
	}
	if (++s->gen == 0)
		s->gen = 1;
}
