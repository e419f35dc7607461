/*
 * runtime.c - a slice's runtime contract (node.h, gs_node_slice_runtime):
 * the region directory its processes open, the file its books are in
 * (the daemon's region is privileged: uid 0's slices keep private books;
 * the Kubernetes driver mounts that file into the slice's pods), and the
 * environment `gpuslice run --slice` puts in a command's: the slice's
 * name, the region, an MPS slice's pipe directory and client limits, and
 * the device it is to use. Owns nothing; reads the node's paths.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "gs/region.h"
#include "node.h"

static void env_set(struct gs_node_runtime *rt, const char *key,
                    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void env_set(struct gs_node_runtime *rt, const char *key,
                    const char *fmt, ...)
{
	va_list ap;

	if (rt->n_env == GS_NODE_ENV_MAX)
		return;
	snprintf(rt->env[rt->n_env].key, sizeof(rt->env[0].key), "%s", key);
	va_start(ap, fmt);
	vsnprintf(rt->env[rt->n_env].value, sizeof(rt->env[0].value), fmt, ap);
	va_end(ap);
	rt->n_env++;
}

void gs_node_slice_runtime(struct gs_node *node, const struct gs_slice *s,
                           struct gs_node_runtime *out)
{
	const char *dir = gs_node_region_dir(node);

	memset(out, 0, sizeof(*out));
	snprintf(out->region_dir, sizeof(out->region_dir), "%s", dir);
	if (s->region_slot >= 0 && dir[0] &&
	    gs_region_books_path(dir, true, s->owner_uid, s->region_slot,
	                         out->books, sizeof(out->books)) != GS_OK)
		out->books[0] = '\0';

	env_set(out, "GPUSLICE_SLICE", "%s", s->name);
	if (dir[0])
		env_set(out, "GPUSLICE_RUN_DIR", "%s", dir);
	if (s->mode == GS_MODE_MPS || s->mode == GS_MODE_MIG_MPS) {
		if (s->gi_id >= 0)
			env_set(out, "CUDA_MPS_PIPE_DIRECTORY",
			        "%s/gpu%d-gi%d/pipe", gs_node_mps_dir(node),
			        s->gpu_index, s->gi_id);
		else
			env_set(out, "CUDA_MPS_PIPE_DIRECTORY", "%s/gpu%d/pipe",
			        gs_node_mps_dir(node), s->gpu_index);
		if (gs_slice_mps_atp(s) > 0)
			env_set(out, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "%d",
			        gs_slice_mps_atp(s));
		if (s->spec.memory_bytes > 0)
			env_set(out, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
			        "0=%lluM",
			        (unsigned long long)((s->spec.memory_bytes +
			                              (1 << 20) - 1) >>
			                             20));
		/* Low priority: a below-normal client of the server. */
		if (s->spec.priority == GS_PRIORITY_LOW)
			env_set(out, "CUDA_MPS_CLIENT_PRIORITY", "1");
	}
	/* An MPS client sees the server's devices, and this names the
	 * slice's among them; a process started before the reconciler has
	 * the server up still lands on the slice's GPU, not device 0. */
	env_set(out, "CUDA_VISIBLE_DEVICES", "%s",
	        s->mig_uuid[0] ? s->mig_uuid : s->gpu_uuid);
}
