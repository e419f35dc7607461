/*
 * http.h - one API request and its response, as the transport (server.c,
 * libmicrohttpd) hands them to the handler (api/api.c) and the fuzzer builds
 * them. Nothing here knows about sockets, so the handler can be driven
 * without a server.
 */
#ifndef GS_DAEMON_HTTP_H
#define GS_DAEMON_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GS_HTTP_MAX_ARGS 16

/* Who is asking: from SO_PEERCRED on the Unix socket, or a bearer token. */
struct gs_peer {
	bool local;  /* Unix socket: uid/gid/pid are the kernel's word */
	bool admin;  /* root, the admin group, or a valid TCP token */
	bool authed; /* false: TCP without a valid token */
	uint32_t uid;
	uint32_t gid;
	int32_t pid;
	char user[32]; /* login name of uid, or "uid:N" */
};

struct gs_http_arg {
	const char *key;
	const char *value; /* "" for "?flag" */
};

struct gs_http_req {
	const char *method; /* "GET", "POST", ... */
	const char *path;   /* without the query */
	int n_args;
	struct gs_http_arg args[GS_HTTP_MAX_ARGS];
	bool too_many_args;
	const char *body; /* NUL-terminated; may be NULL */
	size_t body_len;
	struct gs_peer peer;
};

/* The handler fills it; `body` is malloc'd and freed by the transport. */
struct gs_http_resp {
	int status;
	char *body;
	size_t len;
	const char *content_type; /* static string */
};

/* Value of query argument `key`, or NULL. */
const char *gs_http_arg(const struct gs_http_req *req, const char *key);

#endif
