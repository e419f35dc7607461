/*
 * cdi.c - CDI specs for slices (cdi.h). Building is pure; writing goes
 * through gs_kfile_write_atomic (checkpoint.h) so a runtime never reads a
 * half-written spec.
 */
#include "cdi.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "gs/region.h"

void gs_kcdi_device_id(const char *slice, char *buf, size_t len)
{
	snprintf(buf, len, "%s=%s", GS_KCDI_KIND, slice);
}

void gs_kcdi_path(const char *dir, const char *slice, char *buf, size_t len)
{
	snprintf(buf, len, "%s/gpuslice.io-slice_%s.json", dir, slice);
}

static void add_env(json_t *env, const char *k, const char *v)
{
	char buf[4096];

	snprintf(buf, sizeof(buf), "%s=%s", k, v);
	json_array_append_new(env, json_string(buf));
}

static void add_node(json_t *nodes, const char *path)
{
	json_array_append_new(nodes, json_pack("{s:s}", "path", path));
}

static void add_mount_at(json_t *mounts, const char *host,
                         const char *container, bool ro)
{
	json_array_append_new(
	    mounts, json_pack("{s:s, s:s, s:[s,s,s,s]}", "hostPath", host,
	                      "containerPath", container, "options",
	                      ro ? "ro" : "rw", "nosuid", "nodev", "bind"));
}

static void add_mount(json_t *mounts, const char *path, bool ro)
{
	add_mount_at(mounts, path, path, ro);
}

gs_err gs_kcdi_build(const struct gs_kcdi_input *in, json_t **out,
                     struct gs_errbuf *eb)
{
	json_t *spec, *edits, *env, *nodes, *mounts;
	const char *k, *pipe = NULL;
	json_t *v;
	char buf[64], path[4096];

	*out = NULL;
	if (in->slice == NULL || in->run_dir == NULL || in->shim_path == NULL ||
	    in->run_dir[0] != '/' || in->shim_path[0] != '/' ||
	    (in->hook_path != NULL && in->hook_path[0] != '/'))
		return gs_fail(eb, GS_ERR_INVALID,
		               "CDI spec needs the slice, an absolute run directory, an absolute shim path and an absolute hook path or none");
	env = json_array();
	nodes = json_array();
	mounts = json_array();
	json_object_foreach((json_t *)in->env, k, v)
	{
		if (!json_is_string(v))
			continue;
		add_env(env, k, json_string_value(v));
		if (strcmp(k, "CUDA_MPS_PIPE_DIRECTORY") == 0)
			pipe = json_string_value(v);
	}
	if (json_object_get(in->env, "GPUSLICE_SLICE") == NULL)
		add_env(env, "GPUSLICE_SLICE", in->slice);
	if (json_object_get(in->env, "GPUSLICE_RUN_DIR") == NULL)
		add_env(env, "GPUSLICE_RUN_DIR", in->run_dir);
	add_env(env, "LD_PRELOAD", in->shim_path);
	/* The claim's edits carry the driver; an NVIDIA runtime must add
	 * nothing (with "all", as CUDA images set, every GPU's nodes). */
	add_env(env, "NVIDIA_VISIBLE_DEVICES", "void");
	if (in->n_driver_libs > 0) {
		char dirs[2048] = "";
		size_t o = 0;
		for (size_t i = 0; i < in->n_driver_libs; i++) {
			const char *l = in->driver_libs[i];
			const char *slash = strrchr(l, '/');
			size_t dl = slash ? (size_t)(slash - l) : 0;
			char dir[1024];
			if (dl == 0 || dl >= sizeof(dir))
				continue;
			memcpy(dir, l, dl);
			dir[dl] = '\0';
			/* Each directory once, in the order found. */
			bool seen = false;
			for (const char *p = dirs; *p && !seen;) {
				const char *c = strchr(p, ':');
				size_t pl = c ? (size_t)(c - p) : strlen(p);
				seen = pl == dl && strncmp(p, dir, dl) == 0;
				p = c ? c + 1 : p + pl;
			}
			if (!seen && o + dl + 2 < sizeof(dirs))
				o += (size_t)snprintf(dirs + o, sizeof(dirs) - o,
				                      "%s%s", o ? ":" : "", dir);
		}
		char ld[sizeof(dirs) + 48];
		snprintf(ld, sizeof(ld),
		         "%s:/usr/local/nvidia/lib:/usr/local/nvidia/lib64", dirs);
		add_env(env, "LD_LIBRARY_PATH", ld);
	}

	add_node(nodes, "/dev/nvidiactl");
	add_node(nodes, "/dev/nvidia-uvm");
	add_node(nodes, "/dev/nvidia-uvm-tools");
	snprintf(buf, sizeof(buf), "/dev/nvidia%d", in->gpu_index);
	add_node(nodes, buf);
	for (int i = 0; i < in->n_cap_minors; i++) {
		snprintf(buf, sizeof(buf), "/dev/nvidia-caps/nvidia-cap%d",
		         in->cap_minors[i]);
		add_node(nodes, buf);
	}

	/*
	 * The region's two files, not the run directory: that also holds
	 * gpusliced's API socket, which a container (root by SO_PEERCRED)
	 * must not reach. The shim reads limits and writes usage.
	 */
	add_mount(mounts, in->shim_path, true);
	/* Limits: root in the container reads `limits`, any other uid the
	 * public view (where uid 0's slices, as the driver's are, stand
	 * whole). Books: the shared scheduler records and the slice's
	 * books where the shim looks, usage.<owner>: for a uid-0 slice its
	 * own file (books/usage.0.<slot>), so that no pod reaches another
	 * pod's books (region/README.md). */
	snprintf(path, sizeof(path), "%s/%s", in->run_dir,
	         GS_REGION_LIMITS_FILE);
	add_mount(mounts, path, true);
	snprintf(path, sizeof(path), "%s/%s.public", in->run_dir,
	         GS_REGION_LIMITS_FILE);
	add_mount(mounts, path, true);
	snprintf(path, sizeof(path), "%s/%s", in->run_dir,
	         GS_REGION_USAGE_FILE);
	add_mount(mounts, path, false);
	snprintf(path, sizeof(path), "%s/%s.%u", in->run_dir,
	         GS_REGION_USAGE_FILE, in->owner_uid);
	if (in->books_path != NULL && in->books_path[0] == '/')
		add_mount_at(mounts, in->books_path, path, false);
	else
		add_mount(mounts, path, false);
	if (pipe && pipe[0] == '/' && strcmp(pipe, in->run_dir) != 0)
		add_mount(mounts, pipe, false);
	for (size_t i = 0; i < in->n_driver_libs; i++)
		if (in->driver_libs[i][0] == '/')
			add_mount(mounts, in->driver_libs[i], true);
	for (size_t i = 0; i < in->n_driver_bins; i++) {
		const char *b = in->driver_bins[i];
		const char *slash = strrchr(b, '/');
		if (b[0] != '/' || slash == NULL)
			continue;
		snprintf(path, sizeof(path), "/usr/bin/%s", slash + 1);
		add_mount_at(mounts, b, path, true);
	}

	edits = json_pack("{s:o, s:o, s:o}", "env", env, "deviceNodes", nodes,
	                  "mounts", mounts);
	if (edits != NULL && in->hook_path != NULL) {
		json_t *hooks = json_pack(
		    "[{s:s, s:s, s:[s,s,s,s]}]", "hookName", "createContainer",
		    "path", in->hook_path, "args", "gpuslice-cdi-hook",
		    "check-libc", "--shim", in->shim_path);

		if (hooks == NULL ||
		    json_object_set_new(edits, "hooks", hooks) != 0) {
			json_decref(edits);
			return gs_fail(eb, GS_ERR_NOMEM,
			               "out of memory building the CDI spec");
		}
	}
	spec = json_pack("{s:s, s:s, s:[{s:s, s:o}]}", "cdiVersion", "0.3.0",
	                 "kind", GS_KCDI_KIND, "devices", "name", in->slice,
	                 "containerEdits", edits);
	if (spec == NULL)
		return gs_fail(eb, GS_ERR_NOMEM,
		               "out of memory building the CDI spec");
	json_object_set_new(spec, "cdiVersion",
	                    json_string(gs_kcdi_min_version(spec)));
	*out = spec;
	return GS_OK;
}

/* The version an edits object needs (the table in reference/cdi.md). */
static int edits_version(const json_t *e)
{
	int v = 30;
	size_t i;
	const json_t *x;

	if (json_object_get(e, "netDevices"))
		v = 110;
	if (json_object_get(e, "intelRdt") ||
	    json_object_get(e, "additionalGids"))
		v = v > 70 ? v : 70;
	json_array_foreach(json_object_get(e, "deviceNodes"), i, x)
	{
		if (json_object_get(x, "hostPath"))
			v = v > 50 ? v : 50;
	}
	json_array_foreach(json_object_get(e, "mounts"), i, x)
	{
		if (json_object_get(x, "type"))
			v = v > 40 ? v : 40;
	}
	return v;
}

const char *gs_kcdi_min_version(const json_t *spec)
{
	int v = edits_version(json_object_get(spec, "containerEdits"));
	const char *kind = json_string_value(json_object_get(spec, "kind"));
	const char *slash = kind ? strchr(kind, '/') : NULL;
	size_t i;
	const json_t *d;

	if (json_object_get(spec, "annotations"))
		v = v > 60 ? v : 60;
	if (slash && strchr(slash, '.'))
		v = v > 60 ? v : 60;
	json_array_foreach(json_object_get(spec, "devices"), i, d)
	{
		const char *n = json_string_value(json_object_get(d, "name"));
		int dv = edits_version(json_object_get(d, "containerEdits"));

		v = v > dv ? v : dv;
		if (json_object_get(d, "annotations"))
			v = v > 60 ? v : 60;
		if (n && n[0] >= '0' && n[0] <= '9')
			v = v > 50 ? v : 50;
	}
	switch (v) {
	case 30:
		return "0.3.0";
	case 40:
		return "0.4.0";
	case 50:
		return "0.5.0";
	case 60:
		return "0.6.0";
	case 70:
		return "0.7.0";
	default:
		return "1.1.0";
	}
}

gs_err gs_kcdi_write(const char *dir, const char *slice, const json_t *spec,
                     struct gs_errbuf *eb)
{
	char name[256], *text;
	gs_err err;

	snprintf(name, sizeof(name), "gpuslice.io-slice_%s.json", slice);
	text = json_dumps(spec, JSON_INDENT(2));
	if (text == NULL)
		return gs_fail(eb, GS_ERR_NOMEM,
		               "out of memory writing the CDI spec");
	err = gs_kfile_write_atomic(dir, name, text, strlen(text), eb);
	free(text);
	return err;
}

gs_err gs_kcdi_remove(const char *dir, const char *slice, struct gs_errbuf *eb)
{
	char path[4096];
	int e;

	gs_kcdi_path(dir, slice, path, sizeof(path));
	if (unlink(path) != 0) {
		e = errno;
		if (e != ENOENT)
			return gs_fail(eb, GS_ERR_IO, "cannot remove %s: %s",
			               path, strerror(e));
	}
	return GS_OK;
}

gs_err gs_kcdi_mig_minors(const char *path, int gpu, int gi, int ci,
                          int minors[2], struct gs_errbuf *eb)
{
	char want_gi[64], want_ci[64], key[128];
	FILE *f = fopen(path, "r");
	int m, found = 0;

	if (f == NULL)
		return gs_fail(eb, GS_ERR_NOT_FOUND, "no %s (no NVIDIA driver)",
		               path);
	snprintf(want_gi, sizeof(want_gi), "gpu%d/gi%d/access", gpu, gi);
	snprintf(want_ci, sizeof(want_ci), "gpu%d/gi%d/ci%d/access", gpu, gi,
	         ci);
	while (fscanf(f, "%127s %d", key, &m) == 2) {
		if (strcmp(key, want_gi) == 0) {
			minors[0] = m;
			found |= 1;
		} else if (strcmp(key, want_ci) == 0) {
			minors[1] = m;
			found |= 2;
		}
	}
	fclose(f);
	if (found != 3)
		return gs_fail(eb, GS_ERR_NOT_FOUND,
		               "%s has no access minors for gpu%d/gi%d/ci%d",
		               path, gpu, gi, ci);
	return GS_OK;
}
