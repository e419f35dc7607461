/*
 * task.c - the fragmentation types' model-name table (gs_trace_models_find,
 * gs_trace_models_intern) and the rule for a well-formed task
 * (gs_trace_pod_is_valid): no GPU, whole GPUs, or a share of one GPU.
 * Shared by the fragmentation measure (workload.c), the Kubernetes
 * scheduler extender and the trace replay (bench/).
 */
#include "gs/frag.h"

#include <string.h>

int gs_trace_models_find(const struct gs_trace_models *m, const char *name,
                         size_t len)
{
	for (unsigned i = 0; i < m->count; i++) {
		if (strlen(m->name[i]) == len &&
		    memcmp(m->name[i], name, len) == 0)
			return (int)i;
	}
	return -1;
}

int gs_trace_models_intern(struct gs_trace_models *m, const char *name,
                           size_t len)
{
	int id;

	if (len == 0 || len >= GS_TRACE_MODEL_NAME_MAX || memchr(name, 0, len))
		return -1;
	id = gs_trace_models_find(m, name, len);
	if (id >= 0)
		return id;
	if (m->count >= GS_TRACE_MAX_MODELS)
		return -1;
	memcpy(m->name[m->count], name, len);
	m->name[m->count][len] = '\0';
	return (int)m->count++;
}

bool gs_trace_pod_is_valid(const struct gs_trace_pod *pod)
{
	if (pod->num_gpu == 0)
		return pod->gpu_milli == 0;
	if (pod->num_gpu > GS_TRACE_MAX_DEVS || pod->gpu_milli == 0 ||
	    pod->gpu_milli > GS_TRACE_MILLI)
		return false;
	return pod->gpu_milli == GS_TRACE_MILLI || pod->num_gpu == 1;
}
