/*
 * test_k8s_cdi.c - CDI specs for slices (cdi.h) and the checkpoint
 * (checkpoint.h): the spec holds the slice's env, the preload, the device
 * nodes and the mounts, at the lowest cdiVersion that fits; files are
 * written atomically and removed; the checkpoint survives a reload and a
 * corrupt one is refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cdi.h"
#include "checkpoint.h"

static char dir[256];

static int mkdir_tmp(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/gs-k8s-cdi.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int rm_tmp(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static bool has_string(const json_t *arr, const char *s)
{
	size_t i;
	const json_t *v;

	json_array_foreach(arr, i, v)
	{
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return true;
	}
	return false;
}

static bool has_path(const json_t *arr, const char *key, const char *s)
{
	size_t i;
	const json_t *v;

	json_array_foreach(arr, i, v)
	{
		const char *p = json_string_value(json_object_get(v, key));
		if (p && strcmp(p, s) == 0)
			return true;
	}
	return false;
}

static void spec_carries_the_slice_env_preload_nodes_and_mounts(void **state)
{
	json_t *env = json_pack("{s:s, s:s, s:s}", "GPUSLICE_SLICE", "k8s-abc",
	                        "GPUSLICE_RUN_DIR", "/run/gpuslice",
	                        "CUDA_VISIBLE_DEVICES", "GPU-1234");
	int minors[2] = {12, 13};
	struct gs_kcdi_input in = {.slice = "k8s-abc",
	                           .env = env,
	                           .run_dir = "/run/gpuslice",
	                           .shim_path =
	                               "/usr/lib/gpuslice/libgpuslice.so",
	                           .gpu_index = 1,
	                           .cap_minors = minors,
	                           .n_cap_minors = 2};
	struct gs_errbuf eb = {0};
	json_t *spec, *dev, *ed;
	char id[128];

	(void)state;
	assert_int_equal(gs_kcdi_build(&in, &spec, &eb), GS_OK);
	assert_string_equal(
	    json_string_value(json_object_get(spec, "cdiVersion")), "0.3.0");
	assert_string_equal(json_string_value(json_object_get(spec, "kind")),
	                    "gpuslice.io/slice");
	dev = json_array_get(json_object_get(spec, "devices"), 0);
	assert_string_equal(json_string_value(json_object_get(dev, "name")),
	                    "k8s-abc");
	ed = json_object_get(dev, "containerEdits");
	assert_true(
	    has_string(json_object_get(ed, "env"), "GPUSLICE_SLICE=k8s-abc"));
	assert_true(has_string(json_object_get(ed, "env"),
	                       "GPUSLICE_RUN_DIR=/run/gpuslice"));
	assert_true(has_string(json_object_get(ed, "env"),
	                       "CUDA_VISIBLE_DEVICES=GPU-1234"));
	assert_true(has_string(json_object_get(ed, "env"),
	                       "LD_PRELOAD=/usr/lib/gpuslice/libgpuslice.so"));
	assert_true(has_path(json_object_get(ed, "deviceNodes"), "path",
	                     "/dev/nvidia1"));
	assert_true(has_path(json_object_get(ed, "deviceNodes"), "path",
	                     "/dev/nvidiactl"));
	assert_true(has_path(json_object_get(ed, "deviceNodes"), "path",
	                     "/dev/nvidia-caps/nvidia-cap13"));
	assert_true(has_path(json_object_get(ed, "mounts"), "hostPath",
	                     "/usr/lib/gpuslice/libgpuslice.so"));
	assert_true(has_path(json_object_get(ed, "mounts"), "containerPath",
	                     "/run/gpuslice/limits"));
	assert_true(has_path(json_object_get(ed, "mounts"), "containerPath",
	                     "/run/gpuslice/usage"));
	/* The public view (any uid's limits) and the owner's books. */
	assert_true(has_path(json_object_get(ed, "mounts"), "containerPath",
	                     "/run/gpuslice/limits.public"));
	assert_true(has_path(json_object_get(ed, "mounts"), "containerPath",
	                     "/run/gpuslice/usage.0"));
	/* Never the run directory itself: it holds gpusliced's socket. */
	assert_false(has_path(json_object_get(ed, "mounts"), "hostPath",
	                      "/run/gpuslice"));
	gs_kcdi_device_id("k8s-abc", id, sizeof(id));
	assert_string_equal(id, "gpuslice.io/slice=k8s-abc");
	json_decref(spec);

	/* A relative shim path is refused, not written into a spec. */
	in.shim_path = "libgpuslice.so";
	assert_int_equal(gs_kcdi_build(&in, &spec, &eb), GS_ERR_INVALID);
	assert_null(spec);
	json_decref(env);
}

/* The mount whose containerPath is `path`, or NULL. */
static const json_t *mount_at(const json_t *mounts, const char *path)
{
	size_t i;
	const json_t *v;

	json_array_foreach(mounts, i, v)
	{
		const char *p =
		    json_string_value(json_object_get(v, "containerPath"));
		if (p && strcmp(p, path) == 0)
			return v;
	}
	return NULL;
}

static void
a_uid0_slices_private_books_are_mounted_where_the_shim_looks(void **state)
{
	json_t *env = json_pack("{s:s}", "GPUSLICE_SLICE", "k8s-abc");
	struct gs_kcdi_input in = {
	    .slice = "k8s-abc",
	    .env = env,
	    .run_dir = "/run/gpuslice",
	    .owner_uid = 0,
	    .books_path = "/run/gpuslice/books/usage.0.7",
	    .shim_path = "/usr/lib/gpuslice/libgpuslice.so",
	    .gpu_index = 0};
	struct gs_errbuf eb = {0};
	const json_t *m, *mounts;
	json_t *spec;

	(void)state;
	assert_int_equal(gs_kcdi_build(&in, &spec, &eb), GS_OK);
	mounts = json_object_get(
	    json_object_get(json_array_get(json_object_get(spec, "devices"), 0),
	                    "containerEdits"),
	    "mounts");
	m = mount_at(mounts, "/run/gpuslice/usage.0");
	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "hostPath")),
	                    "/run/gpuslice/books/usage.0.7");
	/* Never the shared usage.0 (every pod's), nor the books directory. */
	assert_false(has_path(mounts, "hostPath", "/run/gpuslice/usage.0"));
	assert_false(has_path(mounts, "hostPath", "/run/gpuslice/books"));
	assert_string_equal(
	    json_string_value(json_object_get(spec, "cdiVersion")), "0.3.0");
	json_decref(spec);
	json_decref(env);
}

static void version_is_the_lowest_that_covers_the_fields(void **state)
{
	static const struct {
		const char *json;
		const char *version;
	} rows[] = {
	    {"{\"kind\":\"a.io/"
	     "b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"env\":["
	     "\"A=1\"]}}]}",
	     "0.3.0"},
	    {"{\"kind\":\"a.io/"
	     "b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{\"mounts\":["
	     "{\"hostPath\":\"/a\",\"containerPath\":\"/"
	     "a\",\"type\":\"bind\"}]}}]}",
	     "0.4.0"},
	    {"{\"kind\":\"a.io/"
	     "b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{"
	     "\"deviceNodes\":[{\"path\":\"/dev/a\",\"hostPath\":\"/dev/"
	     "b\"}]}}]}",
	     "0.5.0"},
	    {"{\"kind\":\"a.io/"
	     "b\",\"devices\":[{\"name\":\"0x\",\"containerEdits\":{}}]}",
	     "0.5.0"},
	    {"{\"kind\":\"a.io/"
	     "b.c\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{}}]}",
	     "0.6.0"},
	    {"{\"kind\":\"a.io/"
	     "b\",\"annotations\":{\"a\":\"b\"},\"devices\":[]}",
	     "0.6.0"},
	    {"{\"kind\":\"a.io/"
	     "b\",\"containerEdits\":{\"additionalGids\":[5]},\"devices\":[]}",
	     "0.7.0"},
	    {"{\"kind\":\"a.io/"
	     "b\",\"devices\":[{\"name\":\"x\",\"containerEdits\":{"
	     "\"netDevices\":[]}}]}",
	     "1.1.0"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		json_t *j = json_loads(rows[i].json, 0, NULL);

		assert_non_null(j);
		if (strcmp(gs_kcdi_min_version(j), rows[i].version) != 0)
			fail_msg("%s: %s, want %s", rows[i].json,
			         gs_kcdi_min_version(j), rows[i].version);
		json_decref(j);
	}
}

static int count_files(void)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (dp && (e = readdir(dp)) != NULL)
		n += e->d_name[0] != '.' ||
		     strncmp(e->d_name, ".gpuslice", 9) == 0 ||
		     strncmp(e->d_name, ".checkpoint", 11) == 0;
	if (dp)
		closedir(dp);
	return n;
}

static void spec_file_is_written_whole_and_removed(void **state)
{
	char sub[300], path[400];
	json_t *spec = json_pack("{s:s}", "cdiVersion", "0.3.0"), *back;
	struct gs_errbuf eb = {0};

	(void)state;
	snprintf(sub, sizeof(sub), "%s/cdi", dir);
	assert_int_equal(gs_kcdi_write(sub, "k8s-1", spec, &eb), GS_OK);
	gs_kcdi_path(sub, "k8s-1", path, sizeof(path));
	back = json_load_file(path, 0, NULL);
	assert_non_null(back);
	assert_true(json_equal(back, spec));
	json_decref(back);
	assert_int_equal(access(path, R_OK), 0);
	assert_int_equal(gs_kcdi_remove(sub, "k8s-1", &eb), GS_OK);
	assert_int_not_equal(access(path, F_OK), 0);
	/* Removing what is gone is success. */
	assert_int_equal(gs_kcdi_remove(sub, "k8s-1", &eb), GS_OK);
	/* A directory that cannot be made is an error, with the path. */
	assert_int_equal(gs_kcdi_write("/proc/no/such", "k8s-1", spec, &eb),
	                 GS_ERR_IO);
	assert_non_null(strstr(eb.msg, "/proc/no"));
	json_decref(spec);
}

static void checkpoint_round_trips_and_corrupt_ones_are_refused(void **state)
{
	struct gs_errbuf eb = {0};
	json_t *ck, *back;
	char path[400];
	FILE *f;

	(void)state;
	assert_int_equal(gs_kckpt_load(dir, &ck, &eb), GS_OK);
	assert_int_equal(json_object_size(json_object_get(ck, "claims")), 0);
	json_object_set_new(json_object_get(ck, "claims"), "uid-1",
	                    json_pack("{s:s, s:s}", "slice", "k8s-uid-1",
	                              "state", "preparing"));
	assert_int_equal(gs_kckpt_save(dir, ck, &eb), GS_OK);
	assert_int_equal(gs_kckpt_load(dir, &back, &eb), GS_OK);
	assert_true(json_equal(ck, back));
	assert_int_equal(count_files(), 1); /* no temp file left behind */
	json_decref(back);
	json_decref(ck);

	snprintf(path, sizeof(path), "%s/%s", dir, GS_KCKPT_FILE);
	f = fopen(path, "w");
	fputs("{\"version\": 1, \"claims\": [", f);
	fclose(f);
	assert_int_equal(gs_kckpt_load(dir, &ck, &eb), GS_ERR_CORRUPT);
	assert_null(ck);
	f = fopen(path, "w");
	fputs("{\"version\": 9, \"claims\": {}}", f);
	fclose(f);
	memset(&eb, 0, sizeof(eb));
	assert_int_equal(gs_kckpt_load(dir, &ck, &eb), GS_ERR_VERSION);
	if (strstr(eb.msg, "version 9") == NULL)
		fail_msg("message: %s", eb.msg);
}

static void mig_minors_come_from_the_caps_file(void **state)
{
	char path[400];
	int m[2] = {0, 0};
	struct gs_errbuf eb = {0};
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/mig-minors", dir);
	f = fopen(path, "w");
	fputs(
	    "config 1\nmonitor 2\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n"
	    "gpu1/gi1/access 147\n",
	    f);
	fclose(f);
	assert_int_equal(gs_kcdi_mig_minors(path, 0, 1, 0, m, &eb), GS_OK);
	assert_int_equal(m[0], 12);
	assert_int_equal(m[1], 13);
	assert_int_equal(gs_kcdi_mig_minors(path, 1, 1, 0, m, &eb),
	                 GS_ERR_NOT_FOUND);
	assert_int_equal(gs_kcdi_mig_minors("/nonexistent", 0, 1, 0, m, &eb),
	                 GS_ERR_NOT_FOUND);
}

static void the_libc_check_hook_is_added_when_the_hook_is_known(void **state)
{
	json_t *env = json_pack("{s:s}", "GPUSLICE_SLICE", "k8s-h");
	struct gs_kcdi_input in = {
	    .slice = "k8s-h",
	    .env = env,
	    .run_dir = "/run/gpuslice",
	    .shim_path = "/opt/gpuslice/lib/libgpuslice.so",
	    .hook_path = "/opt/gpuslice/bin/gpuslice-cdi-hook",
	    .gpu_index = 0};
	struct gs_errbuf eb = {0};
	json_t *spec, *ed, *hooks, *h, *args;

	(void)state;
	assert_int_equal(gs_kcdi_build(&in, &spec, &eb), GS_OK);
	ed = json_object_get(json_array_get(json_object_get(spec, "devices"), 0),
	                     "containerEdits");
	hooks = json_object_get(ed, "hooks");
	assert_int_equal(json_array_size(hooks), 1);
	h = json_array_get(hooks, 0);
	assert_string_equal(json_string_value(json_object_get(h, "hookName")),
	                    "createContainer");
	assert_string_equal(json_string_value(json_object_get(h, "path")),
	                    "/opt/gpuslice/bin/gpuslice-cdi-hook");
	args = json_object_get(h, "args");
	assert_int_equal(json_array_size(args), 4);
	assert_string_equal(json_string_value(json_array_get(args, 0)),
	                    "gpuslice-cdi-hook");
	assert_string_equal(json_string_value(json_array_get(args, 1)),
	                    "check-libc");
	assert_string_equal(json_string_value(json_array_get(args, 3)),
	                    "/opt/gpuslice/lib/libgpuslice.so");
	/* Hooks are CDI 0.3.0: the version does not rise for them. */
	assert_string_equal(
	    json_string_value(json_object_get(spec, "cdiVersion")), "0.3.0");
	json_decref(spec);

	/* No hook known: none in the spec. */
	in.hook_path = NULL;
	assert_int_equal(gs_kcdi_build(&in, &spec, &eb), GS_OK);
	ed = json_object_get(json_array_get(json_object_get(spec, "devices"), 0),
	                     "containerEdits");
	assert_null(json_object_get(ed, "hooks"));
	json_decref(spec);

	/* A relative hook path would resolve nowhere useful: refused. */
	in.hook_path = "gpuslice-cdi-hook";
	assert_int_equal(gs_kcdi_build(&in, &spec, &eb), GS_ERR_INVALID);
	assert_null(spec);
	json_decref(env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(
	        spec_carries_the_slice_env_preload_nodes_and_mounts),
	    cmocka_unit_test(
	        a_uid0_slices_private_books_are_mounted_where_the_shim_looks),
	    cmocka_unit_test(version_is_the_lowest_that_covers_the_fields),
	    cmocka_unit_test(
	        the_libc_check_hook_is_added_when_the_hook_is_known),
	    cmocka_unit_test_setup_teardown(
	        spec_file_is_written_whole_and_removed, mkdir_tmp, rm_tmp),
	    cmocka_unit_test_setup_teardown(
	        checkpoint_round_trips_and_corrupt_ones_are_refused, mkdir_tmp,
	        rm_tmp),
	    cmocka_unit_test_setup_teardown(mig_minors_come_from_the_caps_file,
	                                    mkdir_tmp, rm_tmp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
