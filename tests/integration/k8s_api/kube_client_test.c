/*
 * kube_client_test.c - gs-kube-client-test: the API server client
 * (kube.c) against apiserver_standin.py. Run by kube_client.sh, which
 * starts the stand-ins and passes them in the environment:
 *   GS_STANDIN_URL    http://127.0.0.1:P (token GS_STANDIN_TOKEN)
 *   GS_STANDIN_TLS    https port of a TLS stand-in, same token
 *   GS_CA_FILE        its CA certificate
 *   GS_WORK           a scratch folder
 *   GS_DEAD_URL       a URL where nothing listens
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "kube.h"

#define RS "/apis/resource.k8s.io/v1/resourceslices"

static const char *env(const char *k)
{
	const char *v = getenv(k);
	if (v == NULL)
		fail_msg("%s is not set (run through kube_client.sh)", k);
	return v;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* A client with the stand-in's token in a file. */
static struct gs_kube *client(long timeout_ms)
{
	char tok[512];
	struct gs_kube *k = NULL;
	struct gs_errbuf eb = {0};
	snprintf(tok, sizeof(tok), "%s/token", env("GS_WORK"));
	write_file(tok, env("GS_STANDIN_TOKEN"));
	struct gs_kube_config cfg = {.server = env("GS_STANDIN_URL"),
	                             .token_file = tok,
	                             .timeout_ms = timeout_ms};
	gs_err err = gs_kube_create(&cfg, &k, &eb);
	if (err)
		fail_msg("create: %s", gs_errbuf_msg(&eb, err));
	return k;
}

static json_t *slice(const char *name, int gen)
{
	return json_pack(
	    "{s:s,s:s,s:{s:s},s:{s:s,s:s,s:{s:s,s:i,s:i},s:[{s:s}]}}",
	    "apiVersion", "resource.k8s.io/v1", "kind", "ResourceSlice",
	    "metadata", "name", name, "spec", "driver", "gpuslice.io",
	    "nodeName", "node-t", "pool", "name", "node-t", "generation", gen,
	    "resourceSliceCount", 1, "devices", "name", "gpu-0");
}

static void control(struct gs_kube *k, const char *what, json_t *body)
{
	long st;
	char path[64];
	snprintf(path, sizeof(path), "/standin/%s", what);
	assert_int_equal(
	    gs_kube_request(k, "POST", path, body, NULL, &st, NULL, NULL),
	    GS_OK);
	assert_int_equal(st, 200);
	json_decref(body);
}

static void get_post_put_delete_round_trip(void **state)
{
	struct gs_kube *k = client(5000);
	json_t *out = NULL, *s = slice("rt-0", 1);
	long st;
	(void)state;

	assert_int_equal(
	    gs_kube_request(k, "POST", RS, s, NULL, &st, &out, NULL), GS_OK);
	assert_int_equal(st, 201);
	const char *rv = json_string_value(json_object_get(
	    json_object_get(out, "metadata"), "resourceVersion"));
	assert_non_null(rv);
	/* PUT with the current resourceVersion. */
	json_object_set_new(json_object_get(s, "metadata"), "resourceVersion",
	                    json_string(rv));
	json_object_set_new(json_object_get(json_object_get(s, "spec"), "pool"),
	                    "generation", json_integer(2));
	json_decref(out);
	assert_int_equal(
	    gs_kube_request(k, "PUT", RS "/rt-0", s, NULL, &st, &out, NULL),
	    GS_OK);
	assert_int_equal(st, 200);
	json_decref(out);
	assert_int_equal(
	    gs_kube_request(k, "GET", RS "/rt-0", NULL, NULL, &st, &out, NULL),
	    GS_OK);
	assert_int_equal(st, 200);
	assert_int_equal(
	    json_integer_value(json_object_get(
	        json_object_get(json_object_get(out, "spec"), "pool"),
	        "generation")),
	    2);
	json_decref(out);
	assert_int_equal(gs_kube_request(k, "DELETE", RS "/rt-0", NULL, NULL,
	                                 &st, NULL, NULL),
	                 GS_OK);
	assert_int_equal(st, 200);
	json_decref(s);
	gs_kube_destroy(k);
}

static void error_answers_map_to_clear_errors(void **state)
{
	struct gs_kube *k = client(5000);
	struct gs_errbuf eb = {0};
	json_t *s = slice("err-0", 1), *out = NULL;
	long st;
	(void)state;

	/* 404 */
	assert_int_equal(
	    gs_kube_request(k, "GET", RS "/nope", NULL, NULL, &st, NULL, &eb),
	    GS_OK);
	assert_int_equal(st, 404);
	assert_int_equal(gs_kube_status_err(st), GS_ERR_NOT_FOUND);
	assert_non_null(strstr(eb.msg, "404 NotFound"));
	assert_non_null(strstr(eb.msg, "\"nope\" not found"));
	/* 409 AlreadyExists */
	assert_int_equal(
	    gs_kube_request(k, "POST", RS, s, NULL, &st, NULL, NULL), GS_OK);
	assert_int_equal(st, 201);
	gs_errbuf_init(&eb);
	assert_int_equal(
	    gs_kube_request(k, "POST", RS, s, NULL, &st, NULL, &eb), GS_OK);
	assert_int_equal(st, 409);
	assert_int_equal(gs_kube_status_err(st), GS_ERR_EXISTS);
	assert_non_null(strstr(eb.msg, "AlreadyExists"));
	/* 409 Conflict: a stale resourceVersion */
	json_object_set_new(json_object_get(s, "metadata"), "resourceVersion",
	                    json_string("1"));
	gs_errbuf_init(&eb);
	assert_int_equal(
	    gs_kube_request(k, "PUT", RS "/err-0", s, NULL, &st, NULL, &eb),
	    GS_OK);
	assert_int_equal(st, 409);
	assert_non_null(strstr(eb.msg, "Conflict"));
	/* 422: the stand-in's schema refuses a bad object */
	json_t *bad = slice("Bad_Name", 1);
	gs_errbuf_init(&eb);
	assert_int_equal(
	    gs_kube_request(k, "POST", RS, bad, NULL, &st, &out, &eb), GS_OK);
	assert_int_equal(st, 422);
	assert_int_equal(gs_kube_status_err(st), GS_ERR_INVALID);
	json_decref(out);
	json_decref(bad);
	/* 500 that lasts past the deadline: the last answer, with a reason */
	control(k, "fail", json_pack("{s:i,s:i}", "status", 500, "count", 20));
	gs_kube_destroy(k);
	k = client(700);
	gs_errbuf_init(&eb);
	assert_int_equal(
	    gs_kube_request(k, "GET", RS, NULL, NULL, &st, NULL, &eb), GS_OK);
	assert_int_equal(st, 500);
	assert_int_equal(gs_kube_status_err(st), GS_ERR_UNAVAILABLE);
	assert_non_null(strstr(eb.msg, "HTTP 500"));
	/* Drain the rest of the injected failures. */
	for (int i = 0; i < 60; i++) {
		gs_kube_request(k, "GET", RS, NULL, NULL, &st, NULL, NULL);
		if (st == 200)
			break;
	}
	assert_int_equal(st, 200);
	gs_kube_destroy(k);
	/* A transient 500 is retried away. */
	k = client(5000);
	control(k, "fail", json_pack("{s:i,s:i}", "status", 503, "count", 2));
	assert_int_equal(
	    gs_kube_request(k, "GET", RS "/err-0", NULL, NULL, &st, NULL, NULL),
	    GS_OK);
	assert_int_equal(st, 200);
	assert_int_equal(gs_kube_request(k, "DELETE", RS "/err-0", NULL, NULL,
	                                 &st, NULL, NULL),
	                 GS_OK);
	json_decref(s);
	gs_kube_destroy(k);
}

static void a_server_that_does_not_answer_times_out(void **state)
{
	struct gs_kube *k = client(800);
	struct gs_errbuf eb = {0};
	long st = -1;
	(void)state;

	control(k, "hang", json_pack("{s:i,s:i}", "count", 1, "seconds", 3));
	int64_t t0 = now_ms();
	assert_int_equal(
	    gs_kube_request(k, "GET", RS, NULL, NULL, &st, NULL, &eb),
	    GS_ERR_TIMEOUT);
	int64_t took = now_ms() - t0;
	assert_int_equal(st, 0);
	assert_non_null(strstr(eb.msg, "no answer within 800 ms"));
	/* Generous: the deadline holds within a few times itself. */
	assert_true(took < 4 * 800);
	gs_kube_destroy(k);
}

static void an_unreachable_server_is_unavailable(void **state)
{
	struct gs_kube *k = NULL;
	struct gs_errbuf eb = {0};
	struct gs_kube_config cfg = {.server = env("GS_DEAD_URL"),
	                             .token_file = "/dev/null",
	                             .timeout_ms = 600};
	long st;
	(void)state;
	assert_int_equal(gs_kube_create(&cfg, &k, NULL), GS_OK);
	assert_int_equal(
	    gs_kube_request(k, "GET", RS, NULL, NULL, &st, NULL, &eb),
	    GS_ERR_UNAVAILABLE);
	assert_non_null(strstr(eb.msg, "unreachable"));
	gs_kube_destroy(k);
}

/* ---- watch ---- */

struct seen {
	int added, modified, deleted, bookmarks, errors;
	long error_code;
	int stop_after_bookmarks;
};

static bool on_event(void *arg, const char *type, json_t *obj)
{
	struct seen *s = arg;
	if (strcmp(type, "ADDED") == 0)
		s->added++;
	else if (strcmp(type, "MODIFIED") == 0)
		s->modified++;
	else if (strcmp(type, "DELETED") == 0)
		s->deleted++;
	else if (strcmp(type, "BOOKMARK") == 0)
		s->bookmarks++;
	else if (strcmp(type, "ERROR") == 0) {
		s->errors++;
		s->error_code =
		    (long)json_integer_value(json_object_get(obj, "code"));
		return false;
	}
	return !(s->stop_after_bookmarks &&
	         s->bookmarks >= s->stop_after_bookmarks);
}

static void watch_from_a_resource_version_sees_every_later_change(void **state)
{
	struct gs_kube *k = client(5000);
	json_t *list = NULL, *s = slice("w-0", 1);
	long st;
	char path[256];
	struct seen seen = {.stop_after_bookmarks = 1};
	(void)state;

	assert_int_equal(
	    gs_kube_request(k, "GET", RS, NULL, NULL, &st, &list, NULL), GS_OK);
	const char *rv = json_string_value(json_object_get(
	    json_object_get(list, "metadata"), "resourceVersion"));
	snprintf(path, sizeof(path),
	         RS "?watch=1&resourceVersion=%s&allowWatchBookmarks=true", rv);
	json_decref(list);
	/* Changes after the list: add, modify, delete. */
	assert_int_equal(
	    gs_kube_request(k, "POST", RS, s, NULL, &st, NULL, NULL), GS_OK);
	assert_int_equal(
	    gs_kube_request(k, "PUT", RS "/w-0", s, NULL, &st, NULL, NULL),
	    GS_OK);
	assert_int_equal(gs_kube_request(k, "DELETE", RS "/w-0", NULL, NULL,
	                                 &st, NULL, NULL),
	                 GS_OK);
	assert_int_equal(gs_kube_watch(k, path, on_event, &seen, NULL, NULL),
	                 GS_OK);
	assert_int_equal(seen.added, 1);
	assert_int_equal(seen.modified, 1);
	assert_int_equal(seen.deleted, 1);
	assert_int_equal(seen.bookmarks, 1);
	json_decref(s);
	gs_kube_destroy(k);
}

static void watch_ends_when_the_server_closes_and_resumes_after_it(void **state)
{
	struct gs_kube *k = client(5000);
	struct seen seen = {0};
	json_t *s = slice("w-1", 1), *list = NULL;
	char path[256];
	long st;
	(void)state;
	/* The server closes after 1 s; the caller reconnects from its rv. */
	assert_int_equal(gs_kube_watch(k, RS "?watch=1&timeoutSeconds=1",
	                               on_event, &seen, NULL, NULL),
	                 GS_OK);
	assert_int_equal(
	    gs_kube_request(k, "GET", RS, NULL, NULL, &st, &list, NULL), GS_OK);
	snprintf(path, sizeof(path),
	         RS "?watch=1&timeoutSeconds=1&resourceVersion=%s",
	         json_string_value(json_object_get(
	             json_object_get(list, "metadata"), "resourceVersion")));
	json_decref(list);
	assert_int_equal(
	    gs_kube_request(k, "POST", RS, s, NULL, &st, NULL, NULL), GS_OK);
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(gs_kube_watch(k, path, on_event, &seen, NULL, NULL),
	                 GS_OK);
	assert_int_equal(seen.added, 1);
	/* Too old a resourceVersion: 410 as an ERROR event. */
	control(k, "compact", json_object());
	memset(&seen, 0, sizeof(seen));
	assert_int_equal(gs_kube_watch(k, RS "?watch=1&resourceVersion=2",
	                               on_event, &seen, NULL, NULL),
	                 GS_OK);
	assert_int_equal(seen.errors, 1);
	assert_int_equal(seen.error_code, 410);
	assert_int_equal(gs_kube_request(k, "DELETE", RS "/w-1", NULL, NULL,
	                                 &st, NULL, NULL),
	                 GS_OK);
	json_decref(s);
	gs_kube_destroy(k);
}

struct stopper {
	volatile bool *stop;
};

static void *stop_later(void *arg)
{
	struct stopper *s = arg;
	usleep(300000);
	*s->stop = true;
	return NULL;
}

static void watch_stops_soon_after_the_stop_flag(void **state)
{
	struct gs_kube *k = client(5000);
	struct seen seen = {0};
	volatile bool stop = false;
	struct stopper sp = {&stop};
	pthread_t t;
	(void)state;
	pthread_create(&t, NULL, stop_later, &sp);
	int64_t t0 = now_ms();
	assert_int_equal(
	    gs_kube_watch(k, RS "?watch=1", on_event, &seen, &stop, NULL),
	    GS_OK);
	int64_t took = now_ms() - t0;
	pthread_join(t, NULL);
	assert_true(took >= 250);
	assert_true(took < 3000);
	gs_kube_destroy(k);
}

static void *post_later(void *arg)
{
	struct gs_kube *k = arg;
	json_t *s = slice("w-live", 1);
	long st;
	usleep(300000);
	gs_kube_request(k, "POST", RS, s, NULL, &st, NULL, NULL);
	json_decref(s);
	return NULL;
}

static bool stop_on_added(void *arg, const char *type, json_t *obj)
{
	struct seen *s = arg;
	(void)obj;
	if (strcmp(type, "ADDED") == 0)
		s->added++;
	return s->added == 0;
}

static void watch_sees_a_change_made_while_it_waits(void **state)
{
	struct gs_kube *k = client(5000);
	struct seen seen = {0};
	pthread_t t;
	long st;
	(void)state;
	pthread_create(&t, NULL, post_later, k);
	assert_int_equal(gs_kube_watch(k, RS "?watch=1&timeoutSeconds=10",
	                               stop_on_added, &seen, NULL, NULL),
	                 GS_OK);
	pthread_join(t, NULL);
	assert_int_equal(seen.added, 1);
	assert_int_equal(gs_kube_request(k, "DELETE", RS "/w-live", NULL, NULL,
	                                 &st, NULL, NULL),
	                 GS_OK);
	assert_int_equal(st, 200);
	gs_kube_destroy(k);
}

static void watch_error_answer_is_a_clear_error(void **state)
{
	struct gs_kube *k = NULL;
	struct gs_errbuf eb = {0};
	struct seen seen = {0};
	struct gs_kube_config cfg = {.server = env("GS_STANDIN_URL"),
	                             .token_file = "/dev/null",
	                             .timeout_ms = 2000};
	(void)state;
	/* No token: 401. */
	assert_int_equal(gs_kube_create(&cfg, &k, NULL), GS_OK);
	assert_int_equal(
	    gs_kube_watch(k, RS "?watch=1", on_event, &seen, NULL, &eb),
	    GS_ERR_PERM);
	assert_non_null(strstr(eb.msg, "401"));
	gs_kube_destroy(k);
}

/* ---- credentials ---- */

static void in_cluster_token_and_ca_from_the_service_account_dir(void **state)
{
	char dir[512], p[600];
	struct gs_kube *k = NULL;
	struct gs_errbuf eb = {0};
	long st;
	(void)state;

	snprintf(dir, sizeof(dir), "%s/sa", env("GS_WORK"));
	mkdir(dir, 0700);
	snprintf(p, sizeof(p), "%s/token", dir);
	write_file(p, env("GS_STANDIN_TOKEN"));
	snprintf(p, sizeof(p), "cp '%s' '%s/ca.crt'", env("GS_CA_FILE"), dir);
	assert_int_equal(system(p), 0);
	setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", env("GS_STANDIN_TLS"), 1);
	struct gs_kube_config cfg = {.sa_dir = dir, .timeout_ms = 5000};
	gs_err err = gs_kube_create(&cfg, &k, &eb);
	if (err)
		fail_msg("%s", gs_errbuf_msg(&eb, err));
	assert_non_null(strstr(gs_kube_server(k), "https://127.0.0.1:"));
	assert_int_equal(
	    gs_kube_request(k, "GET", RS, NULL, NULL, &st, NULL, &eb), GS_OK);
	assert_int_equal(st, 200);
	gs_kube_destroy(k);
	/* Without the CA the server's certificate is refused. */
	snprintf(p, sizeof(p), "%s/ca.crt", dir);
	unlink(p);
	gs_errbuf_init(&eb);
	cfg.timeout_ms = 600;
	assert_int_equal(gs_kube_create(&cfg, &k, &eb), GS_OK);
	assert_int_not_equal(
	    gs_kube_request(k, "GET", RS, NULL, NULL, &st, NULL, &eb), GS_OK);
	assert_true(eb.set);
	gs_kube_destroy(k);
	/* Outside a cluster with nothing configured: a clear error. */
	unsetenv("KUBERNETES_SERVICE_HOST");
	gs_errbuf_init(&eb);
	assert_int_equal(gs_kube_create(&cfg, &k, &eb), GS_ERR_INVALID);
	assert_non_null(strstr(eb.msg, "KUBERNETES_SERVICE_HOST"));
}

static void kubeconfig_gives_server_token_and_ca(void **state)
{
	char path[512], text[4096];
	struct gs_kube *k = NULL;
	struct gs_errbuf eb = {0};
	long st;
	(void)state;

	snprintf(path, sizeof(path), "%s/ca-copy.crt", env("GS_WORK"));
	snprintf(text, sizeof(text), "cp '%s' '%s'", env("GS_CA_FILE"), path);
	assert_int_equal(system(text), 0);
	snprintf(text, sizeof(text),
	         "apiVersion: v1\n"
	         "kind: Config\n"
	         "current-context: test\n"
	         "clusters:\n"
	         "- name: other\n"
	         "  cluster: {server: 'https://192.0.2.1:6443'}\n"
	         "- name: standin\n"
	         "  cluster:\n"
	         "    server: https://127.0.0.1:%s/\n"
	         "    certificate-authority: ca-copy.crt\n"
	         "contexts:\n"
	         "- name: test\n"
	         "  context: {cluster: standin, user: plugin}\n"
	         "users:\n"
	         "- name: plugin\n"
	         "  user:\n"
	         "    token: \"%s\"\n",
	         env("GS_STANDIN_TLS"), env("GS_STANDIN_TOKEN"));
	snprintf(path, sizeof(path), "%s/kubeconfig", env("GS_WORK"));
	write_file(path, text);
	struct gs_kube_config cfg = {.kubeconfig = path, .timeout_ms = 5000};
	gs_err err = gs_kube_create(&cfg, &k, &eb);
	if (err)
		fail_msg("%s", gs_errbuf_msg(&eb, err));
	assert_int_equal(
	    gs_kube_request(k, "GET", RS, NULL, NULL, &st, NULL, &eb), GS_OK);
	assert_int_equal(st, 200);
	gs_kube_destroy(k);

	/* Bad kubeconfigs: each error names what is wrong. */
	static const struct {
		const char *text, *want;
		gs_err err;
	} bad[] = {
	    {"current-context: x\ncontexts: []\n", "'x' is not in contexts",
	     GS_ERR_INVALID},
	    {"clusters: []\n", "no current-context", GS_ERR_INVALID},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: "
	     "k, user: u}\nclusters:\n- name: k\n  cluster: {server: "
	     "'https://h'}\nusers:\n- name: u\n  user:\n    exec: {command: "
	     "x}\n",
	     "exec", GS_ERR_UNSUPPORTED},
	    {"current-context: c\ncontexts:\n- name: c\n  context: {cluster: "
	     "k}\nclusters:\n- name: k\n  cluster: {insecure-skip-tls-verify: "
	     "true}\n",
	     "has no server", GS_ERR_INVALID},
	    {"current-context: [\n", "kubeconfig", GS_ERR_PARSE},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_file(path, bad[i].text);
		gs_errbuf_init(&eb);
		err = gs_kube_create(&cfg, &k, &eb);
		if (err != bad[i].err || !strstr(eb.msg, bad[i].want))
			fail_msg("kubeconfig %zu: got %s '%s', want %s '%s'", i,
			         gs_err_name(err), eb.msg,
			         gs_err_name(bad[i].err), bad[i].want);
	}
	cfg.kubeconfig = "/nonexistent/kubeconfig";
	gs_errbuf_init(&eb);
	assert_int_equal(gs_kube_create(&cfg, &k, &eb), GS_ERR_NOT_FOUND);
	assert_non_null(strstr(eb.msg, "/nonexistent/kubeconfig"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(get_post_put_delete_round_trip),
	    cmocka_unit_test(error_answers_map_to_clear_errors),
	    cmocka_unit_test(a_server_that_does_not_answer_times_out),
	    cmocka_unit_test(an_unreachable_server_is_unavailable),
	    cmocka_unit_test(
	        watch_from_a_resource_version_sees_every_later_change),
	    cmocka_unit_test(
	        watch_ends_when_the_server_closes_and_resumes_after_it),
	    cmocka_unit_test(watch_stops_soon_after_the_stop_flag),
	    cmocka_unit_test(watch_sees_a_change_made_while_it_waits),
	    cmocka_unit_test(watch_error_answer_is_a_clear_error),
	    cmocka_unit_test(
	        in_cluster_token_and_ca_from_the_service_account_dir),
	    cmocka_unit_test(kubeconfig_gives_server_token_and_ca),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
