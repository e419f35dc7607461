/*
 * grpc.h - a small gRPC server for the kubelet plugin: HTTP/2 cleartext
 * (h2c, prior knowledge) over Unix sockets on nghttp2, one epoll event
 * loop, unary and server-streaming methods. Messages are opaque bytes
 * here; the caller (plugin.c) decodes them with protobuf-c.
 *
 * Model: every request that reaches a registered method is handed to its
 * handler on the loop thread as a struct gs_grpc_call. The handler's side
 * owns that call until it completes it, exactly once, with
 * gs_grpc_call_reply (unary), gs_grpc_call_fail or gs_grpc_call_finish
 * (streaming) - from the loop thread or any other thread, immediately or
 * later (worker threads completing slow driver calls; an eventfd wakes the
 * loop). gs_grpc_call_send adds a message to a stream without completing
 * it. If the client goes away first (RST_STREAM, disconnect), completion
 * still has to happen and only releases the call; the optional cancel
 * callback tells the owner early (streams that would otherwise live on).
 *
 * Protocol: :authority is not checked (kubelets send the socket path);
 * responses carry grpc-status/grpc-message trailers; an unknown method is
 * answered UNIMPLEMENTED, a message over the size cap RESOURCE_EXHAUSTED,
 * a compressed message UNIMPLEMENTED, broken framing INTERNAL. Connections
 * beyond the cap are closed at accept.
 *
 * Memory is bounded: one connection buffers at most twice the message cap
 * of request data over all its streams (a stream beyond that is answered
 * RESOURCE_EXHAUSTED), and a stream whose client stops reading is ended
 * RESOURCE_EXHAUSTED once twice the message cap of responses is queued.
 *
 * Threads: everything except the functions marked "any thread" must be
 * called on the loop thread (the one in gs_grpc_server_run).
 */
#ifndef GS_KUBE_GRPC_H
#define GS_KUBE_GRPC_H

#include <stddef.h>
#include <stdint.h>

#include "gs/err.h"

/* gRPC status codes used here (grpc's codes.h numbering). */
enum gs_grpc_status {
	GS_GRPC_OK = 0,
	GS_GRPC_CANCELLED = 1,
	GS_GRPC_UNKNOWN = 2,
	GS_GRPC_INVALID_ARGUMENT = 3,
	GS_GRPC_DEADLINE_EXCEEDED = 4,
	GS_GRPC_NOT_FOUND = 5,
	GS_GRPC_RESOURCE_EXHAUSTED = 8,
	GS_GRPC_FAILED_PRECONDITION = 9,
	GS_GRPC_UNIMPLEMENTED = 12,
	GS_GRPC_INTERNAL = 13,
	GS_GRPC_UNAVAILABLE = 14,
};

enum gs_grpc_kind { GS_GRPC_UNARY, GS_GRPC_SERVER_STREAM };

struct gs_grpc_server;
struct gs_grpc_call;

/*
 * A method handler, on the loop thread. `req`/`len` is the request message
 * (borrowed for the duration of the call only). The handler's side owns
 * `call` from here until it completes it.
 */
typedef void (*gs_grpc_handler)(struct gs_grpc_call *call, const uint8_t *req,
                                size_t len, void *arg);

struct gs_grpc_limits {
	size_t max_message;  /* request and response bytes; 0: 4 MiB */
	int max_connections; /* open at once; 0: 64 */
};

/* OUT: *out. `limits` may be NULL (defaults). */
gs_err gs_grpc_server_create(const struct gs_grpc_limits *limits,
                             struct gs_grpc_server **out,
                             struct gs_errbuf *eb);
/*
 * Frees the server: closes every connection and listener (without
 * unlinking their paths). Calls not yet completed stay valid until their
 * owners complete them (then they are freed). NULL is a no-op.
 */
void gs_grpc_server_destroy(struct gs_grpc_server *s);

/* Registers `path` ("/pkg.Service/Method"); the string is copied. */
gs_err gs_grpc_server_add_method(struct gs_grpc_server *s, const char *path,
                                 enum gs_grpc_kind kind, gs_grpc_handler fn,
                                 void *arg, struct gs_errbuf *eb);

/*
 * Listens on a Unix socket at `path` (file mode from the process umask),
 * replacing a stale socket file there. When
 * `tmp_path` is set the socket is bound there first and then renamed to
 * `path`, so a directory watcher never sees a socket that does not accept
 * yet. OUT: *id, the listener's id for gs_grpc_server_unlisten.
 */
gs_err gs_grpc_server_listen(struct gs_grpc_server *s, const char *path,
                             const char *tmp_path, int *id,
                             struct gs_errbuf *eb);
/* Stops listening on `id` (connections stay); unlinks its path if asked. */
void gs_grpc_server_unlisten(struct gs_grpc_server *s, int id, int unlink_path);

/* An extra fd for the loop (signalfd, inotify): fn(fd, arg) when readable. */
gs_err gs_grpc_server_watch_fd(struct gs_grpc_server *s, int fd,
                               void (*fn)(int fd, void *arg), void *arg,
                               struct gs_errbuf *eb);
/* fn(arg) on the loop every `ms` milliseconds (0 clears). */
void gs_grpc_server_set_tick(struct gs_grpc_server *s, int ms,
                             void (*fn)(void *arg), void *arg);
/* Any thread: runs fn(arg) on the loop thread soon. */
gs_err gs_grpc_server_post(struct gs_grpc_server *s, void (*fn)(void *arg),
                           void *arg);

/* Runs the loop until gs_grpc_server_stop. */
gs_err gs_grpc_server_run(struct gs_grpc_server *s, struct gs_errbuf *eb);
/* Any thread (async-signal-safe): makes gs_grpc_server_run return. */
void gs_grpc_server_stop(struct gs_grpc_server *s);

/* Open connections (loop thread; for tests and logs). */
int gs_grpc_server_connections(const struct gs_grpc_server *s);

/* ---- calls ---- */

/* The method path of the call (valid until the call is completed). */
const char *gs_grpc_call_path(const struct gs_grpc_call *c);
/*
 * Loop thread: fn(arg) is called on the loop thread if the client goes
 * away before the call is completed (not after completion).
 */
void gs_grpc_call_on_cancel(struct gs_grpc_call *c, void (*fn)(void *arg),
                            void *arg);

/* Any thread. Unary: the response message, status OK; completes. */
void gs_grpc_call_reply(struct gs_grpc_call *c, const uint8_t *msg,
                        size_t len);
/* Any thread. Streaming: one more message; the call stays open. */
void gs_grpc_call_send(struct gs_grpc_call *c, const uint8_t *msg, size_t len);
/* Any thread. Ends the call with `status` and message (NULL: none). */
void gs_grpc_call_finish(struct gs_grpc_call *c, enum gs_grpc_status status,
                         const char *message);
/* Same as finish with a non-OK status: the error form of reply. */
#define gs_grpc_call_fail gs_grpc_call_finish

#endif
