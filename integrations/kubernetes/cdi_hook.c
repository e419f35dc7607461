/*
 * cdi_hook.c - gpuslice-cdi-hook: the OCI createContainer hook that every
 * claim's CDI spec adds (cdi.h), so that a container whose C library
 * cannot load the shim is refused before it starts instead of running
 * with no GPU limits (issue #28 item 5).
 *
 *   gpuslice-cdi-hook check-libc --shim PATH
 *
 * The runtime runs it in the runtime's namespaces (OCI runtime spec,
 * config.md "createContainer hooks": the path resolves on the host) with
 * the container's state on stdin: {"ociVersion", "id", "status", "pid",
 * "bundle", "annotations"}. The bundle's config.json names the root
 * filesystem (root.path, relative to the bundle when not absolute). The
 * hook compares the libc found there (gs/rootlibc.h: glibc's version or
 * musl) with what PATH (the shim the CDI spec preloads, a host path)
 * needs, read from PATH itself (gs/elflibc.h). Exit 0 when it loads; 1
 * with one line on stderr ("gpuslice-cdi-hook: <why>") when it cannot or
 * when the state, the bundle or the shim cannot be read: the runtime
 * then fails the container and the kubelet shows the line in the pod's
 * events. Nothing else is written anywhere.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "gs/elflibc.h"
#include "gs/err.h"
#include "gs/rootlibc.h"


static const char usage[] =
    "usage: gpuslice-cdi-hook check-libc --shim PATH\n"
    "An OCI createContainer hook (added by the gpuslice DRA driver's CDI\n"
    "specs): reads the container state on stdin, finds the container's C\n"
    "library in its root filesystem and fails (exit 1, the reason on\n"
    "stderr) when the shim PATH could not be preloaded there.\n";

static int refuse(const char *msg)
{
	fprintf(stderr, "gpuslice-cdi-hook: %s\n", msg);
	return 1;
}

/* The root filesystem's host path, from the state on stdin. */
static gs_err container_root(char *root, size_t n, struct gs_errbuf *eb)
{
	json_error_t je;
	json_t *state, *cfg;
	const char *bundle, *rp;
	char path[4096];
	int k;

	state = json_loadf(stdin, JSON_DISABLE_EOF_CHECK, &je);
	if (state == NULL)
		return gs_fail(eb, GS_ERR_PARSE,
		               "the container state on stdin is not JSON: %s",
		               je.text);
	bundle = json_string_value(json_object_get(state, "bundle"));
	if (bundle == NULL || bundle[0] != '/') {
		json_decref(state);
		return gs_fail(eb, GS_ERR_PARSE,
		               "the container state has no absolute \"bundle\"");
	}
	k = snprintf(path, sizeof(path), "%s/config.json", bundle);
	if (k < 0 || (size_t)k >= sizeof(path)) {
		json_decref(state);
		return gs_fail(eb, GS_ERR_RANGE, "bundle path too long");
	}
	json_decref(state);
	cfg = json_load_file(path, 0, &je);
	if (cfg == NULL)
		return gs_fail(eb, GS_ERR_PARSE, "%s: %s", path, je.text);
	rp = json_string_value(
	    json_object_get(json_object_get(cfg, "root"), "path"));
	if (rp == NULL || rp[0] == '\0') {
		json_decref(cfg);
		return gs_fail(eb, GS_ERR_PARSE, "%s has no root.path", path);
	}
	if (rp[0] == '/')
		k = snprintf(root, n, "%s", rp);
	else
		k = snprintf(root, n, "%.*s/%s",
		             (int)(strlen(path) - strlen("/config.json")), path,
		             rp);
	json_decref(cfg);
	if (k < 0 || (size_t)k >= n)
		return gs_fail(eb, GS_ERR_RANGE, "root path too long");
	return GS_OK;
}

int main(int argc, char **argv)
{
	struct gs_errbuf eb = {0};
	struct gs_root_libc lc;
	struct gs_elf_libc shim;
	const char *shim_path = NULL;
	char root[4096];
	gs_err err;

	if (argc == 2 && (strcmp(argv[1], "--help") == 0 ||
	                  strcmp(argv[1], "-h") == 0)) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc != 4 || strcmp(argv[1], "check-libc") != 0 ||
	    strcmp(argv[2], "--shim") != 0) {
		fputs(usage, stderr);
		return 2;
	}
	shim_path = argv[3];
	if (shim_path[0] != '/')
		return refuse("--shim must be an absolute host path");
	err = gs_elf_libc_read(shim_path, &shim, &eb);
	if (err != GS_OK) {
		char msg[sizeof(eb.msg) + 64];

		(void)snprintf(msg, sizeof(msg), "the shim %s: %s", shim_path,
		               gs_errbuf_msg(&eb, err));
		return refuse(msg);
	}
	err = container_root(root, sizeof(root), &eb);
	if (err != GS_OK)
		return refuse(gs_errbuf_msg(&eb, err));
	err = gs_root_libc_find(root, &lc, &eb);
	if (err != GS_OK) {
		char msg[sizeof(eb.msg) + 128];

		(void)snprintf(msg, sizeof(msg),
		               "%s: the shim cannot be preloaded, the container would run with no GPU limits",
		               gs_errbuf_msg(&eb, err));
		return refuse(msg);
	}
	err = gs_root_libc_can_load(&lc, gs_shim_is_musl(shim_path),
	                            shim.need_major, shim.need_minor, &eb);
	if (err != GS_OK)
		return refuse(gs_errbuf_msg(&eb, err));
	return 0;
}
