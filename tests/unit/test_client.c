/*
 * test_client.c - the client library (gs/client.h) against a fake
 * gpusliced: a thread on a Unix socket in a scratch directory that reads
 * HTTP requests, remembers the last one, and answers each with the bytes
 * the test scripted (an HTTP answer, a truncated one, or nothing). It
 * serves one connection at a time, several requests per connection. The
 * same fake listens on TCP (127.0.0.1) for the bearer-token calls.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "gs/client.h"

struct fake {
	char dir[64];
	char sock[96];
	int lfd;
	pthread_t thr;
	/* what to answer: one HTTP answer per request */
	char answer[4096];
	/* the last request seen */
	pthread_mutex_t mu;
	char method[16], path[256], body[4096];
	char auth[256]; /* the Authorization header's value, "" if none */
	int requests;
	int port; /* TCP fakes (setup_tcp) */
};

/* Reads one request from fd into f; false on EOF. */
static bool read_request(struct fake *f, int fd, char *buf, size_t cap,
                         size_t *len)
{
	char *end;
	size_t hlen, clen = 0;

	while ((end = memmem(buf, *len, "\r\n\r\n", 4)) == NULL) {
		ssize_t k = recv(fd, buf + *len, cap - *len - 1, 0);

		if (k <= 0)
			return false;
		*len += (size_t)k;
	}
	hlen = (size_t)(end - buf) + 4;
	for (char *p = buf; p < end; p++)
		if (strncasecmp(p, "\nContent-Length:", 16) == 0)
			clen = strtoull(p + 16, NULL, 10);
	while (*len < hlen + clen) {
		ssize_t k = recv(fd, buf + *len, cap - *len - 1, 0);

		if (k <= 0)
			return false;
		*len += (size_t)k;
	}
	pthread_mutex_lock(&f->mu);
	f->auth[0] = '\0';
	for (char *p = buf; p < end; p++)
		if (strncasecmp(p, "\nAuthorization: ", 16) == 0)
			(void)sscanf(p + 16, "%255[^\r\n]", f->auth);
	(void)sscanf(buf, "%15s %255s", f->method, f->path);
	memcpy(f->body, buf + hlen, clen);
	f->body[clen] = '\0';
	f->requests++;
	pthread_mutex_unlock(&f->mu);
	memmove(buf, buf + hlen + clen, *len - hlen - clen);
	*len -= hlen + clen;
	return true;
}

static void *serve(void *arg)
{
	struct fake *f = arg;
	static char buf[16384];
	int fd;

	while ((fd = accept(f->lfd, NULL, NULL)) >= 0) {
		size_t len = 0;

		while (read_request(f, fd, buf, sizeof(buf), &len)) {
			size_t n = strlen(f->answer);

			if (send(fd, f->answer, n, MSG_NOSIGNAL) != (ssize_t)n)
				break;
			if (strstr(f->answer, "Connection: close"))
				break;
		}
		close(fd);
	}
	return NULL;
}

static int setup(void **state)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	assert_non_null(f);
	(void)snprintf(f->dir, sizeof(f->dir), "/tmp/gs-client-test.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	(void)snprintf(f->sock, sizeof(f->sock), "%s/api.sock", f->dir);
	(void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", f->sock);
	f->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->lfd, 8), 0);
	pthread_mutex_init(&f->mu, NULL);
	assert_int_equal(pthread_create(&f->thr, NULL, serve, f), 0);
	*state = f;
	return 0;
}

/* The fake on a TCP port of 127.0.0.1 instead of a Unix socket. */
static int setup_tcp(void **state)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);

	assert_non_null(f);
	(void)snprintf(f->dir, sizeof(f->dir), "/tmp/gs-client-test.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	f->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(f->lfd >= 0);
	assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(f->lfd, (struct sockaddr *)&sa, &sl), 0);
	f->port = ntohs(sa.sin_port);
	assert_int_equal(listen(f->lfd, 8), 0);
	pthread_mutex_init(&f->mu, NULL);
	assert_int_equal(pthread_create(&f->thr, NULL, serve, f), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fake *f = *state;

	shutdown(f->lfd, SHUT_RDWR);
	close(f->lfd);
	pthread_join(f->thr, NULL);
	unlink(f->sock);
	rmdir(f->dir);
	pthread_mutex_destroy(&f->mu);
	free(f);
	return 0;
}

/* Scripts the answer: status line, JSON body, Content-Length. */
static void answer(struct fake *f, const char *status, const char *body)
{
	(void)snprintf(f->answer, sizeof(f->answer),
	               "HTTP/1.1 %s\r\nContent-Type: application/json\r\n"
	               "Content-Length: %zu\r\n\r\n%s",
	               status, strlen(body), body);
}

static void call_returns_the_json_of_a_2xx_answer(void **state)
{
	struct fake *f = *state;
	struct gs_errbuf eb = {0};
	json_t *out = NULL;

	answer(f, "200 OK", "{\"slices\":[{\"name\":\"web\"}]}");
	assert_int_equal(
	    gs_client_call(f->sock, "GET", "/v1/slices", NULL, &out, &eb),
	    GS_OK);
	assert_string_equal(
	    gs_client_str(json_array_get(json_object_get(out, "slices"), 0),
	                  "name"),
	    "web");
	assert_string_equal(f->method, "GET");
	assert_string_equal(f->path, "/v1/slices");
	json_decref(out);
}

static void call_sends_the_body_as_compact_json(void **state)
{
	struct fake *f = *state;
	json_t *spec = json_pack("{s:s, s:i}", "name", "web", "compute", 25);
	json_t *slice = NULL;

	answer(f, "201 Created", "{\"name\":\"web\",\"compute\":25}");
	assert_int_equal(gs_client_slice_create(f->sock, spec, &slice, NULL),
	                 GS_OK);
	assert_string_equal(f->method, "POST");
	assert_string_equal(f->path, "/v1/slices");
	assert_non_null(strstr(f->body, "\"name\":\"web\""));
	assert_int_equal(gs_client_int(slice, "compute"), 25);
	json_decref(spec);
	json_decref(slice);
}

static void api_error_becomes_its_gs_err_with_the_daemons_message(void **state)
{
	struct fake *f = *state;
	struct gs_errbuf eb = {0};
	json_t *out = NULL;

	answer(f, "409 Conflict",
	       "{\"error\":\"NO_FIT\",\"message\":\"no GPU has 90GiB free\"}");
	assert_int_equal(gs_client_slice_get(f->sock, "web", &out, &eb),
	                 GS_ERR_NO_FIT);
	assert_null(out);
	assert_string_equal(gs_errbuf_msg(&eb, GS_ERR_NO_FIT),
	                    "no GPU has 90GiB free");
}

static void error_without_a_name_is_read_from_the_status(void **state)
{
	static const struct {
		const char *status;
		gs_err err;
	} cases[] = {
	    {"404 Not Found", GS_ERR_NOT_FOUND},
	    {"403 Forbidden", GS_ERR_PERM},
	    {"401 Unauthorized", GS_ERR_PERM},
	    {"500 Internal Server Error", GS_ERR_INTERNAL},
	    {"400 Bad Request", GS_ERR_INVALID},
	};
	struct fake *f = *state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_errbuf eb = {0};

		answer(f, cases[i].status, "not json");
		assert_int_equal(gs_client_slice_delete(f->sock, "web", &eb),
		                 cases[i].err);
		assert_string_equal(gs_errbuf_msg(&eb, cases[i].err),
		                    "gpusliced refused the request");
	}
	assert_string_equal(f->method, "DELETE");
	assert_string_equal(f->path, "/v1/slices/web");
}

static void exchange_hands_back_status_and_body_unjudged(void **state)
{
	struct fake *f = *state;
	json_t *a = NULL;
	int status = 0;

	answer(f, "422 Unprocessable Entity",
	       "{\"error\":\"QUOTA\",\"message\":\"team ml is over\"}");
	assert_int_equal(gs_client_exchange(f->sock, "POST", "/v1/slices", NULL,
	                                    &status, &a, NULL),
	                 GS_OK);
	assert_int_equal(status, 422);
	assert_int_equal(gs_client_answer_err(status, a), GS_ERR_QUOTA);
	assert_string_equal(gs_client_answer_message(a), "team ml is over");
	json_decref(a);

	answer(f, "200 OK", "");
	assert_int_equal(gs_client_exchange(f->sock, "GET", "/healthz", NULL,
	                                    &status, &a, NULL),
	                 GS_OK);
	assert_int_equal(status, 200);
	assert_null(a);
}

static void get_text_returns_the_body_as_it_came(void **state)
{
	struct fake *f = *state;
	char *text = NULL;

	answer(f, "200 OK", "gpuslice_slices 2\n");
	assert_int_equal(gs_client_get_text(f->sock, "/metrics", &text, NULL),
	                 GS_OK);
	assert_string_equal(text, "gpuslice_slices 2\n");
	free(text);
}

static void one_connection_carries_several_requests(void **state)
{
	struct fake *f = *state;
	struct gs_client_conn c;
	char *resp = NULL;
	size_t len = 0;
	int status = 0;

	answer(f, "200 OK", "{}");
	assert_int_equal(gs_client_connect(&c, f->sock, NULL), GS_OK);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(gs_client_roundtrip(&c, "GET", "/v1/node",
		                                     NULL, 0, &status, &resp,
		                                     &len, NULL),
		                 GS_OK);
		assert_int_equal(status, 200);
		assert_string_equal(resp, "{}");
		free(resp);
	}
	gs_client_close(&c);
	gs_client_close(&c);
	assert_int_equal(f->requests, 3);
}

static void bad_json_in_a_2xx_answer_is_a_parse_error(void **state)
{
	struct fake *f = *state;
	json_t *out = NULL;

	answer(f, "200 OK", "{\"name\":");
	assert_int_equal(
	    gs_client_call(f->sock, "GET", "/v1/slices/web", NULL, &out, NULL),
	    GS_ERR_PARSE);
	assert_null(out);
	/* not asked for, not read */
	assert_int_equal(
	    gs_client_call(f->sock, "GET", "/v1/slices/web", NULL, NULL, NULL),
	    GS_OK);
}

static void daemon_hanging_up_mid_answer_is_unavailable(void **state)
{
	struct fake *f = *state;
	struct gs_errbuf eb = {0};

	(void)snprintf(f->answer, sizeof(f->answer),
	               "HTTP/1.1 200 OK\r\nConnection: close\r\n"
	               "Content-Length: 100\r\n\r\n{\"a\":");
	assert_int_equal(
	    gs_client_call(f->sock, "GET", "/v1/slices", NULL, NULL, &eb),
	    GS_ERR_UNAVAILABLE);
	assert_non_null(strstr(eb.msg, "closed the connection"));
}

static void answer_over_the_cap_is_refused_before_reading_it(void **state)
{
	struct fake *f = *state;

	(void)snprintf(f->answer, sizeof(f->answer),
	               "HTTP/1.1 200 OK\r\nContent-Length: %llu\r\n\r\n",
	               1ull << 40);
	assert_int_equal(
	    gs_client_call(f->sock, "GET", "/v1/slices", NULL, NULL, NULL),
	    GS_ERR_RANGE);
}

static void connection_limits_bound_the_wait_and_the_answer(void **state)
{
	struct fake *f = *state;
	struct gs_client_conn c;
	struct gs_errbuf eb = {0};
	char *resp = NULL;
	size_t len = 0;
	int status = 0;

	f->answer[0] = '\0'; /* a daemon that never answers */
	assert_int_equal(gs_client_connect(&c, f->sock, NULL), GS_OK);
	assert_int_equal(c.timeout_ms, GS_CLIENT_TIMEOUT_MS);
	c.timeout_ms = 100;
	assert_int_equal(gs_client_roundtrip(&c, "GET", "/healthz", NULL, 0,
	                                     &status, &resp, &len, &eb),
	                 GS_ERR_TIMEOUT);
	assert_null(resp);
	assert_non_null(strstr(eb.msg, "did not answer"));
	gs_client_close(&c);

	answer(f, "200 OK", "{\"a\": \"more than 16 bytes\"}");
	assert_int_equal(gs_client_connect(&c, f->sock, NULL), GS_OK);
	c.max_response = 16;
	assert_int_equal(gs_client_roundtrip(&c, "GET", "/v1/gpus", NULL, 0,
	                                     &status, &resp, &len, NULL),
	                 GS_ERR_RANGE);
	gs_client_close(&c);
}

static void missing_daemon_is_unavailable_and_says_where(void **state)
{
	struct fake *f = *state;
	struct gs_errbuf eb = {0};
	char path[160];

	(void)snprintf(path, sizeof(path), "%s/nobody.sock", f->dir);
	assert_int_equal(gs_client_slice_get(path, "web", NULL, &eb),
	                 GS_ERR_UNAVAILABLE);
	assert_non_null(strstr(eb.msg, path));
	assert_int_equal(gs_err_exit_code(GS_ERR_UNAVAILABLE), 6);
}

static void null_socket_means_the_default_from_the_environment(void **state)
{
	struct fake *f = *state;

	answer(f, "200 OK", "{\"pids\":[]}");
	assert_int_equal(setenv("GPUSLICE_SOCKET", f->sock, 1), 0);
	assert_string_equal(gs_client_default_socket(), f->sock);
	assert_int_equal(gs_client_slice_attach(NULL, "web", 42, NULL, NULL),
	                 GS_OK);
	assert_string_equal(f->path, "/v1/slices/web/attach");
	assert_string_equal(f->body, "{\"pid\":42}");
	assert_int_equal(unsetenv("GPUSLICE_SOCKET"), 0);
}

static void tcp_connection_carries_the_bearer_token(void **state)
{
	struct fake *f = *state;
	struct gs_client_conn c;
	char url[64], *resp = NULL;
	size_t len = 0;
	int status = 0;

	answer(f, "200 OK", "{\"gpus\":[]}");
	(void)snprintf(url, sizeof(url), "http://127.0.0.1:%d/", f->port);
	assert_int_equal(gs_client_connect_url(&c, url, "tok-1", NULL), GS_OK);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(gs_client_roundtrip(&c, "GET", "/v1/gpus",
		                                     NULL, 0, &status, &resp,
		                                     &len, NULL),
		                 GS_OK);
		assert_int_equal(status, 200);
		assert_string_equal(resp, "{\"gpus\":[]}");
		free(resp);
	}
	gs_client_close(&c);
	assert_string_equal(f->path, "/v1/gpus");
	assert_string_equal(f->auth, "Bearer tok-1");
	assert_int_equal(f->requests, 2);
}

static void tcp_daemon_not_listening_is_unavailable(void **state)
{
	struct fake *f = *state;
	struct gs_client_conn c;
	struct gs_errbuf eb = {0};
	char url[64];

	(void)snprintf(url, sizeof(url), "http://127.0.0.1:%d", f->port);
	shutdown(f->lfd, SHUT_RDWR); /* nobody listens any more */
	assert_int_equal(gs_client_connect_url(&c, url, NULL, &eb),
	                 GS_ERR_UNAVAILABLE);
	assert_non_null(strstr(eb.msg, url));
	gs_client_close(&c);
}

static void urlencode_escapes_all_but_unreserved_characters(void **state)
{
	char out[64] = "/v1/slices/";
	char small[8] = "";

	(void)state;
	gs_client_urlencode("a b/c%d~e", out, sizeof(out));
	assert_string_equal(out, "/v1/slices/a%20b%2Fc%25d~e");
	/* never past the buffer */
	gs_client_urlencode("//////////", small, sizeof(small));
	assert_true(strlen(small) < sizeof(small));
}

static void readers_give_zero_values_for_missing_keys(void **state)
{
	json_t *o =
	    json_pack("{s:s, s:f, s:i}", "name", "web", "gpu", 1.75, "n", 3);

	(void)state;
	assert_string_equal(gs_client_str(o, "name"), "web");
	assert_string_equal(gs_client_str(o, "team"), "");
	assert_int_equal(gs_client_int(o, "gpu"), 1);
	assert_int_equal(gs_client_int(o, "n"), 3);
	assert_int_equal(gs_client_int(o, "none"), 0);
	assert_true(gs_client_num(o, "gpu") == 1.75);
	assert_true(gs_client_num(NULL, "gpu") == 0.0);
	assert_int_equal(gs_client_err_from_name("NOT_A_CODE"),
	                 GS_ERR_INTERNAL);
	json_decref(o);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
	    T(call_returns_the_json_of_a_2xx_answer),
	    T(call_sends_the_body_as_compact_json),
	    T(api_error_becomes_its_gs_err_with_the_daemons_message),
	    T(error_without_a_name_is_read_from_the_status),
	    T(exchange_hands_back_status_and_body_unjudged),
	    T(get_text_returns_the_body_as_it_came),
	    T(one_connection_carries_several_requests),
	    T(bad_json_in_a_2xx_answer_is_a_parse_error),
	    T(daemon_hanging_up_mid_answer_is_unavailable),
	    T(answer_over_the_cap_is_refused_before_reading_it),
	    T(connection_limits_bound_the_wait_and_the_answer),
	    T(missing_daemon_is_unavailable_and_says_where),
	    T(null_socket_means_the_default_from_the_environment),
	    cmocka_unit_test_setup_teardown(
	        tcp_connection_carries_the_bearer_token, setup_tcp, teardown),
	    cmocka_unit_test_setup_teardown(
	        tcp_daemon_not_listening_is_unavailable, setup_tcp, teardown),
	    cmocka_unit_test(urlencode_escapes_all_but_unreserved_characters),
	    cmocka_unit_test(readers_give_zero_values_for_missing_keys),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
