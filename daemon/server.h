/*
 * server.h - the API's transport: HTTP/1.1 over a Unix socket (peer
 * identified by SO_PEERCRED) and optionally TCP (peer identified by a
 * bearer token), served by libmicrohttpd with one thread per connection so
 * that a handler may block on a group commit without stalling others.
 *
 * Bodies are bounded: a request whose Content-Length or upload exceeds
 * max_body gets 413 and never reaches the handler.
 *
 * Connections are bounded too: max_connections in all, max_per_user at
 * once for each non-admin uid on the Unix socket (more are closed as they
 * start, unread), and any connection idle for idle_timeout_s is closed.
 */
#ifndef GS_DAEMON_SERVER_H
#define GS_DAEMON_SERVER_H

#include <stdint.h>
#include <sys/types.h>

#include "gs/err.h"
#include "http.h"

struct gs_server;

typedef void (*gs_http_handler)(void *ctx, const struct gs_http_req *req,
                                struct gs_http_resp *resp);

/* The administrators' own listener, beside the socket (root's daemon). */
#define GS_SERVER_ADMIN_SOCKET "admin.sock"

struct gs_server_opts {
	const char *socket_path; /* required */
	const char *tcp;         /* "host:port" or NULL/"" */
	const char *token;       /* bearer token for TCP; NULL = TCP refused */
	gid_t admin_gid;         /* members administer; (gid_t)-1 = none */
	uint32_t max_body;
	int max_connections; /* all listeners' connections, node-wide */
	int max_per_user;    /* Unix connections per non-admin uid; 0: any */
	int idle_timeout_s;  /* a connection idle this long is closed */
	gs_http_handler handler;
	void *ctx;
};

/*
 * Binds and starts serving. The socket's directory is created (0755) and a
 * stale socket file is replaced; the socket is 0666 (who may do what is
 * decided per request from the peer's credentials). OUT: *out.
 */
gs_err gs_server_start(const struct gs_server_opts *opts,
                       struct gs_server **out, struct gs_errbuf *eb);
/* Stops accepting, waits for handlers in flight, removes the socket. */
void gs_server_stop(struct gs_server *srv);

/* Fills a peer from a connected Unix socket (SO_PEERCRED). */
gs_err gs_peer_from_fd(int fd, gid_t admin_gid, struct gs_peer *peer);

#endif
