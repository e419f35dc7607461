/*
 * driverfiles.c - the driver files a container needs (driverfiles.h).
 * The list of libraries is nvidia-ctk's compute set: what CUDA and NVML
 * programs open (libcuda and its JIT and debugger helpers, NVML, OpenCL's
 * ICD, the config library). Graphics, video and display libraries are left
 * out: a gpuslice claim is for compute.
 */
#include "driverfiles.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const LIBS[] = {
    "libcuda",           "libcudadebugger", "libnvidia-ml",
    "libnvidia-ptxjitcompiler", "libnvidia-nvvm", "libnvidia-gpucomp",
    "libnvidia-opencl",  "libnvidia-cfg",   NULL};
static const char *const BINS[] = {"nvidia-smi", "nvidia-debugdump",
                                   "nvidia-cuda-mps-control",
                                   "nvidia-cuda-mps-server", NULL};
static const char *const BIN_DIRS = "/usr/bin:/usr/local/bin:/usr/local/nvidia/bin:/bin";

/* Whether `name` is <lib>.so.<something> for a wanted lib. */
static bool wanted_lib(const char *name)
{
	for (int i = 0; LIBS[i]; i++) {
		size_t n = strlen(LIBS[i]);
		if (strncmp(name, LIBS[i], n) == 0 &&
		    strncmp(name + n, ".so.", 4) == 0 && name[n + 4])
			return true;
	}
	return false;
}

static gs_err add(char **arr, size_t *n, const char *path,
                  struct gs_errbuf *eb)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp(arr[i], path) == 0)
			return GS_OK;
	if (*n >= GS_KDRV_MAX)
		return gs_fail(eb, GS_ERR_RANGE,
		               "more than %d driver files (at %s)", GS_KDRV_MAX,
		               path);
	arr[*n] = strdup(path);
	if (arr[*n] == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	(*n)++;
	return GS_OK;
}

gs_err gs_kdrv_from_ldcache(const char *text, struct gs_kdrv_files *out,
                            struct gs_errbuf *eb)
{
	const char *line = text;

	/* "\tlibcuda.so.1 (libc6,x86-64) => /usr/lib/.../libcuda.so.1" */
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[1024], name[256], flags[128], path[768];

		if (len < sizeof(buf)) {
			memcpy(buf, line, len);
			buf[len] = '\0';
			if (sscanf(buf, " %255s (%127[^)]) => %767s", name,
			           flags, path) == 3 &&
			    strstr(flags, "64") && wanted_lib(name) &&
			    path[0] == '/') {
				gs_err err = add(out->libs, &out->n_libs, path, eb);
				if (err)
					return err;
			}
		}
		line = end ? end + 1 : NULL;
	}
	return GS_OK;
}

static bool is_file(const char *path, bool exec)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	       (!exec || access(path, X_OK) == 0);
}

/* "" for this filesystem, else the root without a trailing '/'. */
static const char *root_of(const char *root)
{
	return root && strcmp(root, "/") != 0 ? root : "";
}

/* Every wanted library and binary in one (host) directory. */
static gs_err scan_dir(const char *root, const char *dir,
                       struct gs_kdrv_files *out, bool libs,
                       struct gs_errbuf *eb)
{
	char here[2048], path[2560], host[2560];
	DIR *dp;
	struct dirent *e;
	gs_err err = GS_OK;

	snprintf(here, sizeof(here), "%s%s", root, dir);
	dp = opendir(here);
	if (dp == NULL)
		return GS_OK; /* an absent directory holds nothing */
	while (err == GS_OK && (e = readdir(dp)) != NULL) {
		snprintf(path, sizeof(path), "%s/%s", here, e->d_name);
		snprintf(host, sizeof(host), "%s/%s", dir, e->d_name);
		if (libs && wanted_lib(e->d_name) && is_file(path, false)) {
			err = add(out->libs, &out->n_libs, host, eb);
			continue;
		}
		for (int i = 0; BINS[i] && err == GS_OK; i++)
			if (strcmp(e->d_name, BINS[i]) == 0 &&
			    is_file(path, true))
				err = add(out->bins, &out->n_bins, host, eb);
	}
	closedir(dp);
	return err;
}

static gs_err scan_list(const char *root, const char *list,
                        struct gs_kdrv_files *out, bool libs,
                        struct gs_errbuf *eb)
{
	char *copy = strdup(list), *save = NULL, *d;
	gs_err err = GS_OK;

	if (copy == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
	for (d = strtok_r(copy, ":", &save); d && err == GS_OK;
	     d = strtok_r(NULL, ":", &save))
		if (d[0] == '/')
			err = scan_dir(root, d, out, libs, eb);
	free(copy);
	return err;
}

static gs_err read_ldcache(const char *root, struct gs_kdrv_files *out,
                           struct gs_errbuf *eb)
{
	const char *cands[] = {"/sbin/ldconfig", "/usr/sbin/ldconfig",
	                       "/sbin/ldconfig.real", NULL};
	char cmd[4200], *text = NULL;
	size_t cap = 0, len = 0, n;
	char chunk[4096];
	FILE *p = NULL;
	gs_err err;

	/* The root goes into a shell command: plain path characters only. */
	for (const char *c = root; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("/_.-", *c))
			return gs_fail(eb, GS_ERR_INVALID,
			               "driver root '%s' has characters outside [A-Za-z0-9/_.-]",
			               root);
	for (int i = 0; cands[i] && p == NULL; i++) {
		if (access(cands[i], X_OK) != 0)
			continue;
		if (root[0])
			snprintf(cmd, sizeof(cmd),
			         "%s -p -C %s/etc/ld.so.cache 2>/dev/null", cands[i],
			         root);
		else
			snprintf(cmd, sizeof(cmd), "%s -p 2>/dev/null", cands[i]);
		p = popen(cmd, "r");
	}
	if (p == NULL)
		return gs_fail(eb, GS_ERR_NOT_FOUND,
		               "no ldconfig to read the library cache with");
	while ((n = fread(chunk, 1, sizeof(chunk), p)) > 0) {
		if (len + n + 1 > cap) {
			size_t nc = cap ? cap * 2 : 65536;
			while (nc < len + n + 1)
				nc *= 2;
			if (nc > (16u << 20)) {
				free(text);
				pclose(p);
				return gs_fail(eb, GS_ERR_RANGE,
				               "ldconfig -p wrote more than 16 MiB");
			}
			char *t = realloc(text, nc);
			if (t == NULL) {
				free(text);
				pclose(p);
				return gs_fail(eb, GS_ERR_NOMEM, "out of memory");
			}
			text = t;
			cap = nc;
		}
		memcpy(text + len, chunk, n);
		len += n;
	}
	pclose(p);
	if (text == NULL)
		return GS_OK;
	text[len] = '\0';
	err = gs_kdrv_from_ldcache(text, out, eb);
	free(text);
	return err;
}

gs_err gs_kdrv_find(const char *dirs, const char *root,
                    struct gs_kdrv_files *out, struct gs_errbuf *eb)
{
	const char *r = root_of(root);
	gs_err err;

	memset(out, 0, sizeof(*out));
	if (dirs && dirs[0])
		err = scan_list(r, dirs, out, true, eb);
	else
		err = read_ldcache(r, out, eb);
	if (err == GS_OK && r[0]) {
		/* The cache names host paths: keep those present under root. */
		size_t k = 0;
		for (size_t i = 0; i < out->n_libs; i++) {
			char path[4096];
			snprintf(path, sizeof(path), "%s%s", r, out->libs[i]);
			if (is_file(path, false))
				out->libs[k++] = out->libs[i];
			else
				free(out->libs[i]);
		}
		out->n_libs = k;
	}
	if (err == GS_OK && !(dirs && dirs[0]))
		err = scan_list(r, BIN_DIRS, out, false, eb);
	if (err == GS_OK) {
		bool cuda = false;
		for (size_t i = 0; i < out->n_libs; i++)
			cuda |= strstr(out->libs[i], "/libcuda.so.") != NULL;
		if (!cuda)
			err = gs_fail(eb, GS_ERR_NOT_FOUND,
			              "no libcuda.so.* in %s",
			              dirs && dirs[0] ? dirs
			                              : "the ldconfig cache");
	}
	if (err)
		gs_kdrv_files_fini(out);
	return err;
}

void gs_kdrv_files_fini(struct gs_kdrv_files *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < f->n_libs; i++)
		free(f->libs[i]);
	for (size_t i = 0; i < f->n_bins; i++)
		free(f->bins[i]);
	memset(f, 0, sizeof(*f));
}

/* Whether the file at `path` (at most 4 MiB read) holds both strings. */
static bool file_has(const char *path, const char *a, const char *b)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;
	bool r;

	if (f == NULL)
		return false;
	buf = malloc((4u << 20) + 1);
	if (buf == NULL) {
		fclose(f);
		return false;
	}
	n = fread(buf, 1, 4u << 20, f);
	fclose(f);
	buf[n] = '\0';
	r = strstr(buf, a) && strstr(buf, b);
	free(buf);
	return r;
}

bool gs_kdrv_nvidia_cdi(const char *cdi_dirs, const char *uuid, char *buf,
                        size_t len)
{
	char *copy, *save = NULL, *d;
	bool found = false;

	if (cdi_dirs == NULL || uuid == NULL || !uuid[0])
		return false;
	copy = strdup(cdi_dirs);
	if (copy == NULL)
		return false;
	for (d = strtok_r(copy, ":", &save); d && !found;
	     d = strtok_r(NULL, ":", &save)) {
		DIR *dp = opendir(d);
		struct dirent *e;
		char path[4096];

		if (dp == NULL)
			continue;
		while (!found && (e = readdir(dp)) != NULL) {
			if (strncmp(e->d_name, "nvidia", 6) != 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", d, e->d_name);
			found = file_has(path, "nvidia.com/gpu", uuid);
		}
		closedir(dp);
	}
	free(copy);
	if (found)
		snprintf(buf, len, "nvidia.com/gpu=%s", uuid);
	return found;
}
