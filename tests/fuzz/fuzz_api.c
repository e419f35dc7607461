/*
 * fuzz_api.c - libFuzzer target for gpusliced's request handling: the
 * input is an HTTP request line ("METHOD /path?query"), then the body. It
 * goes through gs_api_handle against a real node model (store in a scratch
 * SQLite file, two simulated H100s without a driver, no region), as an
 * administrator or an ordinary user by the input's last byte, so whatever
 * a client sends reaches routing, JSON parsing, spec parsing, placement,
 * quotas and the store. An input starting with "#yaml" is fed to the
 * configuration parser instead.
 *
 * Checked on every input: the daemon answers (a status in 200..599 with a
 * body), an error body is JSON with "error" and "message", and the model
 * stays within its bounds.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../daemon/api.h"
#include "../../daemon/config.h"
#include "../../daemon/gpu.h"
#include "../../daemon/node.h"
#include "../../daemon/store.h"
#include "gs/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gs_config cfg;
static struct gs_gpus gpus;
static struct gs_store *store;
static struct gs_node *node;
static struct gs_api api;

static char scratch[] = "/tmp/gs-fuzz-api-XXXXXX";

/* At exit: the scratch database goes (libFuzzer exits through exit()). */
static void remove_scratch(void)
{
	static const char *const files[] = {"state.db", "state.db-wal",
					    "state.db-shm"};
	char path[96];

	gs_store_close(store);
	store = NULL;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", scratch, files[i]);
		(void)unlink(path);
	}
	(void)rmdir(scratch);
}

static void setup(void)
{
	char *dir = scratch;
	char path[64];
	struct gs_errbuf eb = {0};
	struct gs_node_opts no = {0};

	gs_log_silence();
	if (mkdtemp(dir) == NULL)
		abort();
	atexit(remove_scratch);
	snprintf(path, sizeof(path), "%s/state.db", dir);
	gs_config_defaults(&cfg, true, NULL, NULL);
	cfg.max_slices = 64;
	if (gs_gpus_fake(&gpus, "H100-SXM5-80GB", 2, &eb) != GS_OK ||
	    gs_store_open(path, GS_STORE_SYNC_OFF, &store, &eb) != GS_OK)
		abort();
	no.cfg = &cfg;
	no.store = store;
	no.gpus = &gpus;
	no.region_dir = dir;
	no.mps_dir = dir;
	if (gs_node_create(&no, &node, &eb) != GS_OK)
		abort();
	api.node = node;
}

/* Percent-decoding in place, as the transport hands values over. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s == '%' && s[1] && s[2]) {
			char hex[3] = {s[1], s[2], 0};

			*o++ = (char)strtol(hex, NULL, 16);
			s += 2;
		} else {
			*o++ = *s == '+' ? ' ' : *s;
		}
	}
	*o = '\0';
}

static void fuzz_config(const uint8_t *data, size_t size)
{
	struct gs_config c;
	struct gs_errbuf eb = {0};

	gs_config_defaults(&c, false, "/run/user/1", "/home/x");
	(void)gs_config_load_text(&c, "fuzz.yaml", (const char *)data, size,
	                          &eb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gs_http_req req;
	struct gs_http_resp resp;
	char *buf, *line, *nl, *sp, *q;

	if (size >= 5 && memcmp(data, "#yaml", 5) == 0) {
		fuzz_config(data, size);
		return 0;
	}
	if (node == NULL)
		setup();
	buf = malloc(size + 1);
	if (buf == NULL)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	memset(&req, 0, sizeof(req));
	line = buf;
	nl = memchr(buf, '\n', size);
	if (nl) {
		*nl = '\0';
		req.body = nl + 1;
		req.body_len = size - (size_t)(nl + 1 - buf);
	}
	sp = strchr(line, ' ');
	req.method = line;
	req.path = "/";
	if (sp) {
		*sp = '\0';
		req.path = sp + 1;
	}
	q = strchr(req.path, '?');
	if (q) {
		*q++ = '\0';
		while (q && *q) {
			char *amp = strchr(q, '&'), *eq;

			if (amp)
				*amp++ = '\0';
			if (req.n_args == GS_HTTP_MAX_ARGS) {
				req.too_many_args = true;
				break;
			}
			eq = strchr(q, '=');
			if (eq)
				*eq++ = '\0';
			unescape(q);
			if (eq)
				unescape(eq);
			req.args[req.n_args].key = q;
			req.args[req.n_args].value = eq ? eq : "";
			req.n_args++;
			q = amp;
		}
	}
	req.peer.local = true;
	req.peer.authed = size == 0 || data[size - 1] != '!';
	req.peer.admin = size > 0 && (data[size - 1] & 1);
	req.peer.uid = req.peer.admin ? 0 : 1000 + (size ? data[0] % 3 : 0);
	req.peer.pid = (int32_t)getpid();
	snprintf(req.peer.user, sizeof(req.peer.user), "u%u", req.peer.uid);

	memset(&resp, 0, sizeof(resp));
	gs_api_handle(&api, &req, &resp);
	if (resp.status < 200 || resp.status > 599)
		abort();
	if (resp.status >= 400) {
		json_t *o = json_loadb(resp.body, resp.len, 0, NULL);

		if (o == NULL || !json_is_string(json_object_get(o, "error")) ||
		    !json_is_string(json_object_get(o, "message")))
			abort();
		json_decref(o);
	}
	free(resp.body);
	free(buf);
	/* Keep the model small so long runs stay fast. */
	(void)gs_store_flush(store);
	return 0;
}
