/*
 * paths.c - gpuslice's own files, found from the running executable first
 * and the configured install directories second (see gs/paths.h for the
 * two layouts). Owns nothing; every answer is written into the caller's
 * buffer.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gs/paths.h"
#include "gs/proc.h"
#include "gs_install_dirs.h"

/* The directory of this executable into out; false when unknown. */
static bool exe_dir(char *out, size_t n)
{
	char *slash;

	if (!gs_proc_self_exe(out, n))
		return false;
	slash = strrchr(out, '/');
	if (slash == NULL)
		return false;
	*slash = '\0';
	return true;
}

static bool is_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Writes <dir>/<rel> into out when it is a file or, with `probe`, when
 * <dir>/<rel>/<probe> is one. */
static bool try_path(char *out, size_t n, const char *dir, const char *rel,
                     const char *probe)
{
	char full[PATH_MAX + 64];
	int k;

	if (rel[0] != '\0')
		k = snprintf(full, sizeof(full), "%s/%s", dir, rel);
	else
		k = snprintf(full, sizeof(full), "%s", dir);
	if (k <= 0 || (size_t)k >= sizeof(full) || (size_t)k >= n)
		return false;
	if (probe != NULL) {
		char p[PATH_MAX + 128];

		k = snprintf(p, sizeof(p), "%s/%s", full, probe);
		if (k <= 0 || (size_t)k >= sizeof(p) || !is_file(p))
			return false;
	} else if (!is_file(full)) {
		return false;
	}
	/* "/usr/sbin/../lib/x" reads better as "/usr/lib/x" in logs */
	{
		char real[PATH_MAX];

		if (realpath(full, real) != NULL && strlen(real) < n) {
			(void)snprintf(out, n, "%s", real);
			return true;
		}
	}
	(void)snprintf(out, n, "%s", full);
	return true;
}

bool gs_paths_shim(char *out, size_t n)
{
	const char *env = getenv("GPUSLICE_SHIM");
	char dir[PATH_MAX];

	if (env != NULL && env[0] != '\0')
		return try_path(out, n, env, "", NULL);
	if (exe_dir(dir, sizeof(dir)) &&
	    (try_path(out, n, dir, "../" GS_INSTALL_LIBDIR "/libgpuslice.so",
	              NULL) ||
	     try_path(out, n, dir, "../lib/libgpuslice.so", NULL) ||
	     try_path(out, n, dir, "libgpuslice.so", NULL)))
		return true;
	return try_path(out, n, GS_INSTALL_FULL_LIBDIR, "libgpuslice.so",
	                NULL);
}

void gs_paths_shim_installed(char *out, size_t n)
{
	(void)snprintf(out, n, "%s/libgpuslice.so", GS_INSTALL_FULL_LIBDIR);
}

bool gs_paths_sim_dir(char *out, size_t n)
{
	static const char probe[] = "libnvidia-ml.so.1";
	char dir[PATH_MAX];

	if (exe_dir(dir, sizeof(dir)) &&
	    (try_path(out, n, dir, "../sim", probe) ||
	     try_path(out, n, dir, "../" GS_INSTALL_LIBDIR "/gpuslice/sim",
	              probe)))
		return true;
	return try_path(out, n, GS_INSTALL_FULL_LIBDIR, "gpuslice/sim", probe);
}

void gs_paths_config(char *out, size_t n)
{
	(void)snprintf(out, n, "%s/gpuslice/gpusliced.yaml",
	               GS_INSTALL_FULL_SYSCONFDIR);
}
