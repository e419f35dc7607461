/*
 * test_k8s_cdi_hook.c - gpuslice-cdi-hook, run as a container runtime
 * runs a createContainer hook: the OCI state on stdin naming a bundle
 * whose config.json names the root filesystem. Roots hold an old (2.12)
 * or new (2.99) glibc's libc.so.6 (fake ones with glibc's version
 * definitions), musl's loader, or nothing; the shims are this build's.
 * The hook must accept exactly the roots where the shim loads and refuse
 * the others with the reason on stderr.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct bundle {
	char dir[64];   /* the bundle */
	char root[128]; /* its root filesystem */
	char err[2048]; /* the hook's stderr */
};

static void mkdirs(const char *path)
{
	char p[512];

	(void)snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			(void)mkdir(p, 0755);
			*s = '/';
		}
	(void)mkdir(p, 0755);
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY), out;
	ssize_t n;

	assert_true(in >= 0);
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	assert_true(out >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		assert_int_equal(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
}

/* Puts `lib` at <root>/<rel> (a copy), creating the directories. */
static void put(struct bundle *b, const char *rel, const char *lib)
{
	char path[512], dir[512];

	(void)snprintf(path, sizeof(path), "%s/%s", b->root, rel);
	(void)snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	mkdirs(dir);
	if (lib != NULL) {
		copy_file(lib, path);
	} else {
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fclose(f);
	}
}

/* A bundle with config.json naming root "rootfs" (relative) or, with
 * absolute_root, its absolute path. */
static void bundle_make(struct bundle *b, bool absolute_root)
{
	char cfg[256];
	FILE *f;

	memset(b, 0, sizeof(*b));
	(void)snprintf(b->dir, sizeof(b->dir), "/tmp/gs-hook-XXXXXX");
	assert_non_null(mkdtemp(b->dir));
	(void)snprintf(b->root, sizeof(b->root), "%s/rootfs", b->dir);
	mkdirs(b->root);
	(void)snprintf(cfg, sizeof(cfg), "%s/config.json", b->dir);
	f = fopen(cfg, "w");
	assert_non_null(f);
	fprintf(f,
	        "{\"ociVersion\": \"1.2.0\", \"process\": {\"args\": "
	        "[\"/bin/sh\"], \"cwd\": \"/\"}, \"root\": {\"path\": "
	        "\"%s\", \"readonly\": false}}\n",
	        absolute_root ? b->root : "rootfs");
	fclose(f);
}

static void bundle_remove(struct bundle *b)
{
	char cmd[128];

	(void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", b->dir);
	assert_int_equal(system(cmd), 0);
}

/*
 * Runs the hook with `shim`, the state (naming the bundle, or `state`
 * when not NULL) on stdin. Returns its exit status; its stderr goes to
 * b->err.
 */
static int run_hook(struct bundle *b, const char *shim, const char *state)
{
	char st[512];
	int in[2], errp[2], status = 0;
	ssize_t n, got = 0;
	pid_t pid;

	if (state == NULL) {
		(void)snprintf(st, sizeof(st),
		               "{\"ociVersion\": \"1.2.0\", \"id\": \"c1\", "
		               "\"status\": \"creating\", \"pid\": 4242, "
		               "\"bundle\": \"%s\", \"annotations\": {}}",
		               b->dir);
		state = st;
	}
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(errp), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(errp[1], 2);
		close(in[1]);
		close(errp[0]);
		execl(GS_HOOK_BIN, "gpuslice-cdi-hook", "check-libc", "--shim",
		      shim, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(errp[1]);
	assert_int_equal(write(in[1], state, strlen(state)),
	                 (ssize_t)strlen(state));
	close(in[1]);
	while ((n = read(errp[0], b->err + got,
	                 sizeof(b->err) - 1 - (size_t)got)) > 0)
		got += n;
	b->err[got] = '\0';
	close(errp[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void a_new_glibc_is_accepted_silently(void **state)
{
	struct bundle b;

	(void)state;
	bundle_make(&b, false);
	put(&b, "lib/x86_64-linux-gnu/libc.so.6", GS_NEW_LIBC);
	assert_int_equal(run_hook(&b, GS_SHIM, NULL), 0);
	assert_string_equal(b.err, "");
	bundle_remove(&b);
}

static void an_old_glibc_is_refused_with_both_versions(void **state)
{
	struct bundle b;

	(void)state;
	bundle_make(&b, true);
	put(&b, "usr/lib64/libc.so.6", GS_OLD_LIBC);
	assert_int_equal(run_hook(&b, GS_SHIM, NULL), 1);
	print_message("%s", b.err);
	assert_non_null(strstr(
	    b.err, "gpuslice-cdi-hook: the container's glibc is 2.12 "
	           "(usr/lib64/libc.so.6) but the gpuslice shim needs GLIBC_2."));
	assert_non_null(strstr(b.err, "would run with no GPU limits"));
	bundle_remove(&b);
}

static void musl_is_refused_for_the_glibc_shim_and_taken_by_the_musl_one(
    void **state)
{
	struct bundle b;

	(void)state;
	bundle_make(&b, false);
	put(&b, "lib/ld-musl-x86_64.so.1", NULL);
	assert_int_equal(run_hook(&b, GS_SHIM, NULL), 1);
	assert_non_null(strstr(
	    b.err, "the container uses musl (lib/ld-musl-x86_64.so.1) but the "
	           "gpuslice shim is built for glibc"));
	if (GS_MUSL_SHIM[0] != '\0') {
		assert_int_equal(run_hook(&b, GS_MUSL_SHIM, NULL), 0);
		assert_string_equal(b.err, "");
	} else {
		print_message("no musl build of the shim here (no musl-gcc): "
		              "its half of the case not run\n");
	}
	bundle_remove(&b);
}

static void absolute_links_resolve_inside_the_root(void **state)
{
	struct bundle b;
	char link[256];

	(void)state;
	/* lib64/libc.so.6 -> /opt/old/libc-2.12.so, which exists only in
	 * the root: read through the host's / it would not be found (or be
	 * the host's libc). */
	bundle_make(&b, false);
	put(&b, "opt/old/libc-2.12.so", GS_OLD_LIBC);
	(void)snprintf(link, sizeof(link), "%s/lib64", b.root);
	mkdirs(link);
	(void)snprintf(link, sizeof(link), "%s/lib64/libc.so.6", b.root);
	assert_int_equal(symlink("/opt/old/libc-2.12.so", link), 0);
	assert_int_equal(run_hook(&b, GS_SHIM, NULL), 1);
	assert_non_null(strstr(b.err, "glibc is 2.12 (lib64/libc.so.6)"));
	bundle_remove(&b);
}

static void a_root_with_no_libc_is_refused(void **state)
{
	struct bundle b;

	(void)state;
	bundle_make(&b, false);
	put(&b, "app/server", NULL);
	assert_int_equal(run_hook(&b, GS_SHIM, NULL), 1);
	assert_non_null(strstr(b.err, "holds no libc.so.6 and no musl loader"));
	assert_non_null(strstr(b.err, "the shim cannot be preloaded"));
	bundle_remove(&b);
}

static void a_bad_state_or_bundle_is_refused_not_passed(void **state)
{
	struct bundle b;

	(void)state;
	bundle_make(&b, false);
	put(&b, "lib/x86_64-linux-gnu/libc.so.6", GS_NEW_LIBC);
	assert_int_equal(run_hook(&b, GS_SHIM, "not json"), 1);
	assert_non_null(strstr(b.err, "the container state on stdin is not JSON"));
	assert_int_equal(run_hook(&b, GS_SHIM, "{\"id\": \"c1\"}"), 1);
	assert_non_null(strstr(b.err, "no absolute \"bundle\""));
	assert_int_equal(
	    run_hook(&b, GS_SHIM, "{\"bundle\": \"/nonexistent/gs-bundle\"}"),
	    1);
	assert_non_null(strstr(b.err, "/nonexistent/gs-bundle/config.json"));
	/* A shim path that is not there: refused, not waved through. */
	assert_int_equal(run_hook(&b, "/nonexistent/libgpuslice.so", NULL), 1);
	assert_non_null(strstr(b.err, "the shim /nonexistent/libgpuslice.so"));
	bundle_remove(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(a_new_glibc_is_accepted_silently),
	    cmocka_unit_test(an_old_glibc_is_refused_with_both_versions),
	    cmocka_unit_test(
	        musl_is_refused_for_the_glibc_shim_and_taken_by_the_musl_one),
	    cmocka_unit_test(absolute_links_resolve_inside_the_root),
	    cmocka_unit_test(a_root_with_no_libc_is_refused),
	    cmocka_unit_test(a_bad_state_or_bundle_is_refused_not_passed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
