/*
 * grpc.c - the gRPC server of grpc.h on nghttp2: h2c over Unix sockets, one
 * epoll loop, unary and server-streaming calls completed from any thread.
 *
 * Objects and who owns them (all on the loop thread unless marked):
 *   server -> listeners, connections, extra fds, the op queue (mutex)
 *   conn   -> its nghttp2 session and its streams (list)
 *   stream -> request bytes, pending response bytes; points to its call
 *   call   -> two references: the stream's (dropped when the stream
 *             closes) and the owner's (dropped when the owner's completion
 *             op is processed). Freed at zero. Only the loop thread touches
 *             refs and call->st, so no atomics are needed for them;
 *             call->done (set by the owner's thread) is atomic.
 *
 * Completion from any thread (gs_grpc_call_send/finish/reply) appends an op
 * to the queue and writes the eventfd; the loop drains the queue after
 * every epoll round, applies the ops to streams that still exist, then
 * flushes every connection. A response goes out as
 *   HEADERS(:status 200, content-type) DATA(message...) HEADERS(trailers)
 * through a deferred data provider (nghttp2 asks for bytes; with none
 * pending it defers until the next op resumes it), or as one
 * "Trailers-Only" HEADERS frame when the call ends without a message.
 *
 * Connections that fail or close are moved to a dead list and freed after
 * the epoll round, so a later event in the same round never sees freed
 * memory.
 */
#include "grpc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "gs/log.h"

#define TAG "grpc"
#define DEFAULT_MAX_MESSAGE (4u << 20)
#define DEFAULT_MAX_CONNECTIONS 64
/* Request bytes one connection may hold at once (all its streams), and
 * response bytes one stream may have queued that the client has not read,
 * in units of the message size cap. */
#define CONN_INPUT_CAPS 2
#define STREAM_OUTPUT_CAPS 2
#define GRPC_HDR 5 /* compressed flag + 32-bit big-endian length */

enum watch_kind { W_LISTENER, W_CONN, W_WAKE, W_EXTRA };

struct watch {
	enum watch_kind kind;
	void *ptr;
};

struct method {
	char *path;
	enum gs_grpc_kind kind;
	gs_grpc_handler fn;
	void *arg;
	struct method *next;
};

struct listener {
	struct watch w;
	int id;
	int fd;
	char *path;
	struct listener *next;
};

struct extra {
	struct watch w;
	int fd;
	void (*fn)(int fd, void *arg);
	void *arg;
	struct extra *next;
};

struct stream;

struct conn {
	struct watch w;
	struct gs_grpc_server *s;
	int fd;
	nghttp2_session *h2;
	bool want_out; /* EPOLLOUT registered */
	size_t in_bytes; /* request buffer capacity held by its streams */
	bool dead;
	struct stream *streams;
	struct conn *prev, *next; /* live list, or dead list when dead */
};

struct gs_grpc_call {
	struct gs_grpc_server *s;
	struct stream *st; /* NULL once the stream closed */
	char *path;
	int refs;
	atomic_bool done; /* the owner completed it */
	void (*on_cancel)(void *arg);
	void *cancel_arg;
};

struct stream {
	struct conn *c;
	int32_t id;
	char *path;
	uint8_t *in;
	size_t in_len, in_cap;
	enum { IN_OK, IN_OVER_MESSAGE, IN_OVER_CONN } too_big;
	bool dispatched;
	struct gs_grpc_call *call;
	/* response */
	bool headers_sent, finished, deferred;
	enum gs_grpc_status status;
	char *message;
	uint8_t *out;
	size_t out_len, out_off;
	struct stream *next;
};

enum op_kind { OP_SEND, OP_FINISH, OP_POST };

struct op {
	enum op_kind kind;
	struct gs_grpc_call *call;
	uint8_t *msg;
	size_t len;
	enum gs_grpc_status status;
	char *message;
	void (*fn)(void *arg);
	void *arg;
	struct op *next;
};

struct gs_grpc_server {
	size_t max_message;
	int max_connections;
	int epfd;
	int wakefd;
	struct watch wake_w;
	atomic_bool stop;
	struct method *methods;
	struct listener *listeners;
	int next_listener_id;
	struct extra *extras;
	struct conn *conns, *dead;
	int n_conns;
	int tick_ms;
	int64_t next_tick; /* 0: schedule from now */
	void (*tick_fn)(void *arg);
	void *tick_arg;
	pthread_mutex_t mu; /* guards ops */
	struct op *ops_head, *ops_tail;
};

/* ---- small helpers ---- */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void wake(struct gs_grpc_server *s)
{
	uint64_t one = 1;
	ssize_t n = write(s->wakefd, &one, sizeof(one));
	(void)n; /* EAGAIN: the counter is already non-zero, the loop wakes */
}

/* grpc-message is percent-encoded (gRPC over HTTP/2, "Percent-Encoded"). */
static char *percent_encode(const char *m)
{
	size_t n = strlen(m);
	char *out = malloc(n * 3 + 1);
	if (!out)
		return NULL;
	char *p = out;
	for (const unsigned char *q = (const unsigned char *)m; *q; q++) {
		if (*q >= 0x20 && *q <= 0x7e && *q != '%') {
			*p++ = (char)*q;
		} else {
			static const char hex[] = "0123456789ABCDEF";
			*p++ = '%';
			*p++ = hex[*q >> 4];
			*p++ = hex[*q & 15];
		}
	}
	*p = '\0';
	return out;
}

#define NV(n, v)                                                               \
	{                                                                      \
		(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v),      \
			NGHTTP2_NV_FLAG_NONE                                   \
	}

/* ---- calls ---- */

static void call_unref(struct gs_grpc_call *call)
{
	if (--call->refs > 0)
		return;
	free(call->path);
	free(call);
}

const char *gs_grpc_call_path(const struct gs_grpc_call *c)
{
	return c->path;
}

void gs_grpc_call_on_cancel(struct gs_grpc_call *c, void (*fn)(void *arg),
                            void *arg)
{
	c->on_cancel = fn;
	c->cancel_arg = arg;
}

static void enqueue(struct gs_grpc_server *s, struct op *op)
{
	pthread_mutex_lock(&s->mu);
	if (s->ops_tail)
		s->ops_tail->next = op;
	else
		s->ops_head = op;
	s->ops_tail = op;
	pthread_mutex_unlock(&s->mu);
	wake(s);
}

static void call_op(struct gs_grpc_call *c, enum op_kind kind,
                    const uint8_t *msg, size_t len,
                    enum gs_grpc_status status, const char *message)
{
	struct op *op = calloc(1, sizeof(*op));
	uint8_t *copy = NULL;
	char *mcopy = NULL;
	if (msg) {
		copy = malloc(len + GRPC_HDR);
		if (copy) {
			copy[0] = 0;
			copy[1] = (uint8_t)(len >> 24);
			copy[2] = (uint8_t)(len >> 16);
			copy[3] = (uint8_t)(len >> 8);
			copy[4] = (uint8_t)len;
			if (len)
				memcpy(copy + GRPC_HDR, msg, len);
		}
	}
	if (message)
		mcopy = strdup(message);
	if (!op || (msg && !copy) || (message && !mcopy)) {
		/* Out of memory: the call still has to end, or the client
		 * would wait for its deadline; an op without payload says so. */
		free(copy);
		free(mcopy);
		if (!op) {
			gs_error(TAG, "out of memory completing path=%s: call left to the client's deadline",
			         c->path);
			return;
		}
		memset(op, 0, sizeof(*op));
		kind = OP_FINISH;
		status = GS_GRPC_RESOURCE_EXHAUSTED;
		copy = NULL;
		mcopy = NULL;
	}
	op->kind = kind;
	op->call = c;
	op->msg = copy;
	op->len = copy ? len + GRPC_HDR : 0;
	op->status = status;
	op->message = mcopy;
	enqueue(c->s, op);
}

void gs_grpc_call_send(struct gs_grpc_call *c, const uint8_t *msg, size_t len)
{
	call_op(c, OP_SEND, msg ? msg : (const uint8_t *)"", len, GS_GRPC_OK,
	        NULL);
}

void gs_grpc_call_finish(struct gs_grpc_call *c, enum gs_grpc_status status,
                         const char *message)
{
	atomic_store(&c->done, true);
	call_op(c, OP_FINISH, NULL, 0, status, message);
}

void gs_grpc_call_reply(struct gs_grpc_call *c, const uint8_t *msg,
                        size_t len)
{
	gs_grpc_call_send(c, msg, len);
	gs_grpc_call_finish(c, GS_GRPC_OK, NULL);
}

/* ---- responses on a stream (loop thread) ---- */

static ssize_t data_read(nghttp2_session *h2, int32_t sid, uint8_t *buf,
                         size_t length, uint32_t *flags,
                         nghttp2_data_source *src, void *ud)
{
	struct stream *st = src->ptr;
	size_t avail = st->out_len - st->out_off;
	if (avail == 0) {
		if (!st->finished) {
			st->deferred = true;
			return NGHTTP2_ERR_DEFERRED;
		}
		char code[16];
		snprintf(code, sizeof(code), "%d", (int)st->status);
		nghttp2_nv tr[2] = {NV("grpc-status", code),
		                    NV("grpc-message",
		                       st->message ? st->message : "")};
		*flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
		int rv = nghttp2_submit_trailer(h2, sid, tr,
		                                st->message ? 2 : 1);
		if (rv != 0) {
			gs_warn(TAG, "stream=%d trailers not sent: %s", sid,
			        nghttp2_strerror(rv));
			return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		}
		return 0;
	}
	size_t n = avail < length ? avail : length;
	memcpy(buf, st->out + st->out_off, n);
	st->out_off += n;
	if (st->out_off == st->out_len)
		st->out_off = st->out_len = 0;
	return (ssize_t)n;
}

static void stream_submit_headers(struct stream *st)
{
	nghttp2_nv hd[2] = {NV(":status", "200"),
	                    NV("content-type", "application/grpc")};
	nghttp2_data_provider prd = {.source.ptr = st, .read_callback = data_read};
	int rv = nghttp2_submit_response(st->c->h2, st->id, hd, 2, &prd);
	if (rv != 0) {
		gs_warn(TAG, "stream=%d response not submitted: %s", st->id,
		        nghttp2_strerror(rv));
		(void)nghttp2_submit_rst_stream(st->c->h2, NGHTTP2_FLAG_NONE,
		                                st->id, NGHTTP2_INTERNAL_ERROR);
	}
	st->headers_sent = true;
}

static void stream_resume(struct stream *st)
{
	if (st->deferred) {
		st->deferred = false;
		(void)nghttp2_session_resume_data(st->c->h2, st->id);
	}
}

/* Ends a stream with a status: trailers-only if nothing was sent yet. */
static void stream_finish(struct stream *st, enum gs_grpc_status status,
                          const char *message)
{
	if (st->finished)
		return;
	st->finished = true;
	st->status = status;
	free(st->message);
	st->message = message && *message ? percent_encode(message) : NULL;
	if (st->headers_sent) {
		stream_resume(st);
		return;
	}
	char code[16];
	snprintf(code, sizeof(code), "%d", (int)status);
	nghttp2_nv hd[4] = {NV(":status", "200"),
	                    NV("content-type", "application/grpc"),
	                    NV("grpc-status", code),
	                    NV("grpc-message", st->message ? st->message : "")};
	st->headers_sent = true;
	int rv = nghttp2_submit_response(st->c->h2, st->id, hd,
	                                 st->message ? 4 : 3, NULL);
	if (rv != 0)
		gs_warn(TAG, "stream=%d status not submitted: %s", st->id,
		        nghttp2_strerror(rv));
}

static void stream_send(struct stream *st, uint8_t *framed, size_t len)
{
	struct gs_grpc_server *s = st->c->s;
	if (st->finished) {
		free(framed);
		return;
	}
	if (len - GRPC_HDR > s->max_message) {
		free(framed);
		stream_finish(st, GS_GRPC_RESOURCE_EXHAUSTED,
		              "response larger than the message size cap");
		return;
	}
	if (st->out_len - st->out_off + len >
	    STREAM_OUTPUT_CAPS * (s->max_message + GRPC_HDR)) {
		/* A stream whose client stopped reading: end it rather than
		 * queue without bound (the kubelet re-opens health streams). */
		free(framed);
		gs_warn(TAG, "stream=%d path=%s: the client is not reading; ending it",
		        st->id, st->path ? st->path : "?");
		stream_finish(st, GS_GRPC_RESOURCE_EXHAUSTED,
		              "the client does not read the stream");
		return;
	}
	if (st->out_len == 0) {
		free(st->out);
		st->out = framed;
		st->out_len = len;
		st->out_off = 0;
	} else {
		uint8_t *n = realloc(st->out, st->out_len + len);
		if (!n) {
			free(framed);
			stream_finish(st, GS_GRPC_RESOURCE_EXHAUSTED,
			              "out of memory queueing a message");
			return;
		}
		memcpy(n + st->out_len, framed, len);
		st->out = n;
		st->out_len += len;
		free(framed);
	}
	if (!st->headers_sent)
		stream_submit_headers(st);
	else
		stream_resume(st);
}

static void apply_op(struct op *op)
{
	struct gs_grpc_call *call = op->call;
	switch (op->kind) {
	case OP_POST:
		op->fn(op->arg);
		break;
	case OP_SEND:
		if (call->st)
			stream_send(call->st, op->msg, op->len);
		else
			free(op->msg);
		op->msg = NULL;
		break;
	case OP_FINISH:
		if (call->st)
			stream_finish(call->st, op->status, op->message);
		call_unref(call); /* the owner's reference */
		break;
	}
	free(op->msg);
	free(op->message);
	free(op);
}

static void drain_ops(struct gs_grpc_server *s)
{
	for (;;) {
		pthread_mutex_lock(&s->mu);
		struct op *list = s->ops_head;
		s->ops_head = s->ops_tail = NULL;
		pthread_mutex_unlock(&s->mu);
		if (!list)
			return;
		while (list) {
			struct op *next = list->next;
			apply_op(list);
			list = next;
		}
	}
}

/* ---- streams and requests ---- */

static void stream_detach(struct stream *st)
{
	struct gs_grpc_call *call = st->call;
	st->call = NULL;
	if (!call)
		return;
	call->st = NULL;
	if (!atomic_load(&call->done) && call->on_cancel) {
		void (*fn)(void *) = call->on_cancel;
		call->on_cancel = NULL;
		fn(call->cancel_arg);
	}
	call_unref(call); /* the stream's reference */
}

/* Frees the request buffer and gives its bytes back to the connection. */
static void stream_drop_input(struct stream *st)
{
	st->c->in_bytes -= st->in_cap;
	free(st->in);
	st->in = NULL;
	st->in_len = st->in_cap = 0;
}

static void stream_free(struct stream *st)
{
	stream_drop_input(st);
	free(st->path);
	free(st->out);
	free(st->message);
	free(st);
}

static const struct method *find_method(const struct gs_grpc_server *s,
                                        const char *path)
{
	for (const struct method *m = s->methods; m; m = m->next)
		if (path && strcmp(m->path, path) == 0)
			return m;
	return NULL;
}

static void dispatch(struct stream *st)
{
	struct gs_grpc_server *s = st->c->s;
	if (st->dispatched)
		return;
	st->dispatched = true;
	const struct method *m = find_method(s, st->path);
	if (!m) {
		char msg[300];
		snprintf(msg, sizeof(msg), "unknown method %.256s",
		         st->path ? st->path : "(no :path)");
		gs_debug(TAG, "stream=%d %s", st->id, msg);
		stream_finish(st, GS_GRPC_UNIMPLEMENTED, msg);
		return;
	}
	if (st->too_big == IN_OVER_MESSAGE) {
		stream_finish(st, GS_GRPC_RESOURCE_EXHAUSTED,
		              "request larger than the message size cap");
		return;
	}
	if (st->too_big == IN_OVER_CONN) {
		stream_finish(st, GS_GRPC_RESOURCE_EXHAUSTED,
		              "too much request data in flight on this connection");
		return;
	}
	if (st->in_len < GRPC_HDR) {
		stream_finish(st, GS_GRPC_INTERNAL,
		              st->in_len ? "truncated gRPC message header"
		                         : "no request message");
		return;
	}
	uint32_t len = (uint32_t)st->in[1] << 24 | (uint32_t)st->in[2] << 16 |
	               (uint32_t)st->in[3] << 8 | st->in[4];
	if (st->in[0] != 0) {
		stream_finish(st, GS_GRPC_UNIMPLEMENTED,
		              "compressed messages are not supported");
		return;
	}
	if ((size_t)len + GRPC_HDR != st->in_len) {
		stream_finish(st, GS_GRPC_INTERNAL,
		              "gRPC message length does not match the data (one request message expected)");
		return;
	}
	struct gs_grpc_call *call = calloc(1, sizeof(*call));
	char *path = strdup(st->path);
	if (!call || !path) {
		free(call);
		free(path);
		stream_finish(st, GS_GRPC_RESOURCE_EXHAUSTED, "out of memory");
		return;
	}
	call->s = s;
	call->st = st;
	call->path = path;
	call->refs = 2;
	atomic_init(&call->done, false);
	st->call = call;
	m->fn(call, st->in + GRPC_HDR, len, m->arg);
	stream_drop_input(st); /* the handler borrowed it for the call only */
}

static int on_begin_headers(nghttp2_session *h2, const nghttp2_frame *f,
                            void *ud)
{
	struct conn *c = ud;
	if (f->hd.type != NGHTTP2_HEADERS ||
	    f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	struct stream *st = calloc(1, sizeof(*st));
	if (!st)
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	st->c = c;
	st->id = f->hd.stream_id;
	st->next = c->streams;
	c->streams = st;
	nghttp2_session_set_stream_user_data(h2, st->id, st);
	return 0;
}

static int on_header(nghttp2_session *h2, const nghttp2_frame *f,
                     const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud)
{
	if (f->hd.type != NGHTTP2_HEADERS ||
	    f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	struct stream *st = nghttp2_session_get_stream_user_data(h2,
	                                                          f->hd.stream_id);
	if (!st)
		return 0;
	if (namelen == 5 && memcmp(name, ":path", 5) == 0 && !st->path) {
		st->path = strndup((const char *)value, valuelen);
		if (!st->path)
			return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	return 0;
}

static int on_data_chunk(nghttp2_session *h2, uint8_t flags, int32_t sid,
                         const uint8_t *data, size_t len, void *ud)
{
	struct conn *c = ud;
	struct stream *st = nghttp2_session_get_stream_user_data(h2, sid);
	if (!st || st->too_big)
		return 0;
	if (st->in_len + len > c->s->max_message + GRPC_HDR) {
		st->too_big = IN_OVER_MESSAGE;
		stream_drop_input(st);
		return 0;
	}
	if (st->in_len + len > st->in_cap) {
		size_t cap = st->in_cap ? st->in_cap * 2 : 256;
		while (cap < st->in_len + len)
			cap *= 2;
		if (c->in_bytes - st->in_cap + cap >
		    CONN_INPUT_CAPS * (c->s->max_message + GRPC_HDR)) {
			st->too_big = IN_OVER_CONN;
			stream_drop_input(st);
			return 0;
		}
		uint8_t *n = realloc(st->in, cap);
		if (!n)
			return NGHTTP2_ERR_CALLBACK_FAILURE;
		c->in_bytes += cap - st->in_cap;
		st->in = n;
		st->in_cap = cap;
	}
	memcpy(st->in + st->in_len, data, len);
	st->in_len += len;
	return 0;
}

static int on_frame_recv(nghttp2_session *h2, const nghttp2_frame *f,
                         void *ud)
{
	if ((f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) ||
	    !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	struct stream *st = nghttp2_session_get_stream_user_data(h2,
	                                                          f->hd.stream_id);
	if (st)
		dispatch(st);
	return 0;
}

static int on_stream_close(nghttp2_session *h2, int32_t sid,
                           uint32_t error_code, void *ud)
{
	struct conn *c = ud;
	struct stream *st = nghttp2_session_get_stream_user_data(h2, sid);
	if (!st)
		return 0;
	for (struct stream **pp = &c->streams; *pp; pp = &(*pp)->next) {
		if (*pp == st) {
			*pp = st->next;
			break;
		}
	}
	stream_detach(st);
	stream_free(st);
	return 0;
}

static ssize_t on_send(nghttp2_session *h2, const uint8_t *data, size_t len,
                       int flags, void *ud)
{
	struct conn *c = ud;
	ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
			return NGHTTP2_ERR_WOULDBLOCK;
		return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	return n;
}

/* ---- connections ---- */

static void conn_kill(struct conn *c)
{
	struct gs_grpc_server *s = c->s;
	if (c->dead)
		return;
	c->dead = true;
	(void)epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = NULL;
	c->next = s->dead;
	s->dead = c;
	s->n_conns--;
}

static void conn_free(struct conn *c)
{
	/* nghttp2_session_del does not call on_stream_close: detach here. */
	nghttp2_session_del(c->h2);
	struct stream *st = c->streams;
	while (st) {
		struct stream *next = st->next;
		stream_detach(st);
		stream_free(st);
		st = next;
	}
	close(c->fd);
	free(c);
}

static void reap(struct gs_grpc_server *s)
{
	while (s->dead) {
		struct conn *c = s->dead;
		s->dead = c->next;
		gs_debug(TAG, "connection fd=%d closed", c->fd);
		conn_free(c);
	}
}

/* Writes what nghttp2 has to send; kills the connection when it is done. */
static void conn_flush(struct conn *c)
{
	if (c->dead)
		return;
	int rv = nghttp2_session_send(c->h2);
	if (rv != 0) {
		gs_debug(TAG, "connection fd=%d send: %s", c->fd,
		         nghttp2_strerror(rv));
		conn_kill(c);
		return;
	}
	if (!nghttp2_session_want_read(c->h2) &&
	    !nghttp2_session_want_write(c->h2)) {
		conn_kill(c);
		return;
	}
	bool want_out = nghttp2_session_want_write(c->h2);
	if (want_out != c->want_out) {
		struct epoll_event ev = {
			.events = EPOLLIN | (want_out ? EPOLLOUT : 0),
			.data.ptr = &c->w};
		if (epoll_ctl(c->s->epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
			c->want_out = want_out;
	}
}

static void conn_read(struct conn *c)
{
	uint8_t buf[16384];
	for (;;) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
		if (n == 0) {
			conn_kill(c);
			return;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			conn_kill(c);
			return;
		}
		ssize_t rv = nghttp2_session_mem_recv(c->h2, buf, (size_t)n);
		if (rv < 0) {
			gs_debug(TAG, "connection fd=%d protocol error: %s",
			         c->fd, nghttp2_strerror((int)rv));
			conn_kill(c);
			return;
		}
	}
}

static void accept_conn(struct gs_grpc_server *s, struct listener *l)
{
	for (;;) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			int e = errno;
			if (e != EAGAIN && e != EWOULDBLOCK && e != EINTR)
				gs_warn(TAG, "accept path=%s: %s", l->path,
				        strerror(e));
			return;
		}
		if (s->n_conns >= s->max_connections) {
			gs_warn(TAG, "connection refused: %d open (the cap)",
			        s->n_conns);
			close(fd);
			continue;
		}
		struct conn *c = calloc(1, sizeof(*c));
		nghttp2_session_callbacks *cbs = NULL;
		nghttp2_option *opt = NULL;
		if (!c || nghttp2_session_callbacks_new(&cbs) != 0 ||
		    nghttp2_option_new(&opt) != 0) {
			gs_error(TAG, "out of memory accepting a connection");
			goto out_fail;
		}
		c->w.kind = W_CONN;
		c->w.ptr = c;
		c->s = s;
		c->fd = fd;
		nghttp2_session_callbacks_set_send_callback(cbs, on_send);
		nghttp2_session_callbacks_set_on_begin_headers_callback(
			cbs, on_begin_headers);
		nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
		nghttp2_session_callbacks_set_on_data_chunk_recv_callback(
			cbs, on_data_chunk);
		nghttp2_session_callbacks_set_on_frame_recv_callback(
			cbs, on_frame_recv);
		nghttp2_session_callbacks_set_on_stream_close_callback(
			cbs, on_stream_close);
		/* The kubelet sends the socket path as :authority. */
		nghttp2_option_set_no_http_messaging(opt, 1);
		if (nghttp2_session_server_new2(&c->h2, cbs, c, opt) != 0) {
			gs_error(TAG, "out of memory creating an HTTP/2 session");
			goto out_fail;
		}
		nghttp2_session_callbacks_del(cbs);
		nghttp2_option_del(opt);
		cbs = NULL;
		opt = NULL;
		nghttp2_settings_entry iv[] = {
			{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 128},
		};
		if (nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, 1) !=
		    0)
			goto out_fail;
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &c->w};
		if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
			gs_error(TAG, "epoll add fd=%d: %s", fd, strerror(errno));
			goto out_fail;
		}
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->n_conns++;
		gs_debug(TAG, "connection fd=%d on path=%s (%d open)", fd,
		         l->path, s->n_conns);
		conn_flush(c);
		continue;
	out_fail:
		if (cbs)
			nghttp2_session_callbacks_del(cbs);
		if (opt)
			nghttp2_option_del(opt);
		if (c && c->h2)
			nghttp2_session_del(c->h2);
		free(c);
		close(fd);
	}
}

/* ---- server ---- */

gs_err gs_grpc_server_create(const struct gs_grpc_limits *limits,
                             struct gs_grpc_server **out,
                             struct gs_errbuf *eb)
{
	struct gs_grpc_server *s = calloc(1, sizeof(*s));
	if (!s)
		return gs_fail(eb, GS_ERR_NOMEM, "grpc server");
	s->max_message = limits && limits->max_message ? limits->max_message
	                                               : DEFAULT_MAX_MESSAGE;
	s->max_connections = limits && limits->max_connections > 0
	                             ? limits->max_connections
	                             : DEFAULT_MAX_CONNECTIONS;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0) {
		int e = errno;
		free(s);
		return gs_fail(eb, GS_ERR_IO, "epoll_create1: %s", strerror(e));
	}
	s->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->wakefd < 0) {
		int e = errno;
		close(s->epfd);
		free(s);
		return gs_fail(eb, GS_ERR_IO, "eventfd: %s", strerror(e));
	}
	s->wake_w.kind = W_WAKE;
	s->wake_w.ptr = s;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &s->wake_w};
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wakefd, &ev) != 0) {
		int e = errno;
		close(s->wakefd);
		close(s->epfd);
		free(s);
		return gs_fail(eb, GS_ERR_IO, "epoll add eventfd: %s",
		               strerror(e));
	}
	pthread_mutex_init(&s->mu, NULL);
	atomic_init(&s->stop, false);
	s->next_listener_id = 1;
	*out = s;
	return GS_OK;
}

void gs_grpc_server_destroy(struct gs_grpc_server *s)
{
	if (!s)
		return;
	while (s->conns)
		conn_kill(s->conns);
	reap(s);
	drain_ops(s);
	while (s->listeners)
		gs_grpc_server_unlisten(s, s->listeners->id, 0);
	while (s->methods) {
		struct method *m = s->methods;
		s->methods = m->next;
		free(m->path);
		free(m);
	}
	while (s->extras) {
		struct extra *x = s->extras;
		s->extras = x->next;
		free(x);
	}
	pthread_mutex_destroy(&s->mu);
	close(s->wakefd);
	close(s->epfd);
	free(s);
}

gs_err gs_grpc_server_add_method(struct gs_grpc_server *s, const char *path,
                                 enum gs_grpc_kind kind, gs_grpc_handler fn,
                                 void *arg, struct gs_errbuf *eb)
{
	if (!path || path[0] != '/' || !fn)
		return gs_fail(eb, GS_ERR_INVALID, "grpc method path %s",
		               path ? path : "(null)");
	if (find_method(s, path))
		return gs_fail(eb, GS_ERR_EXISTS, "grpc method %s registered twice",
		               path);
	struct method *m = calloc(1, sizeof(*m));
	if (!m || !(m->path = strdup(path))) {
		free(m);
		return gs_fail(eb, GS_ERR_NOMEM, "grpc method");
	}
	m->kind = kind;
	m->fn = fn;
	m->arg = arg;
	m->next = s->methods;
	s->methods = m;
	return GS_OK;
}

gs_err gs_grpc_server_listen(struct gs_grpc_server *s, const char *path,
                             const char *tmp_path, int *id,
                             struct gs_errbuf *eb)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	const char *bind_path = tmp_path ? tmp_path : path;
	if (strlen(path) >= sizeof(sa.sun_path) ||
	    strlen(bind_path) >= sizeof(sa.sun_path))
		return gs_fail(eb, GS_ERR_INVALID,
		               "socket path %s is longer than %zu bytes", path,
		               sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, bind_path, strlen(bind_path) + 1);
	struct listener *l = calloc(1, sizeof(*l));
	if (!l || !(l->path = strdup(path))) {
		free(l);
		return gs_fail(eb, GS_ERR_NOMEM, "listener");
	}
	gs_err err = GS_OK;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = gs_fail(eb, GS_ERR_IO, "socket: %s", strerror(errno));
		goto out_free;
	}
	/* A socket file left by an earlier run refuses bind: replace it. */
	struct stat stt;
	if (lstat(bind_path, &stt) == 0 && S_ISSOCK(stt.st_mode))
		(void)unlink(bind_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		err = gs_fail(eb, GS_ERR_IO, "bind %s: %s", bind_path,
		              strerror(errno));
		goto out_close;
	}
	if (listen(fd, 64) != 0) {
		err = gs_fail(eb, GS_ERR_IO, "listen %s: %s", bind_path,
		              strerror(errno));
		goto out_unlink;
	}
	if (tmp_path && rename(tmp_path, path) != 0) {
		err = gs_fail(eb, GS_ERR_IO, "rename %s to %s: %s", tmp_path,
		              path, strerror(errno));
		goto out_unlink;
	}
	l->w.kind = W_LISTENER;
	l->w.ptr = l;
	l->fd = fd;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &l->w};
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		err = gs_fail(eb, GS_ERR_IO, "epoll add %s: %s", path,
		              strerror(errno));
		bind_path = path;
		goto out_unlink;
	}
	l->id = s->next_listener_id++;
	l->next = s->listeners;
	s->listeners = l;
	if (id)
		*id = l->id;
	return GS_OK;
out_unlink:
	(void)unlink(bind_path);
out_close:
	close(fd);
out_free:
	free(l->path);
	free(l);
	return err;
}

void gs_grpc_server_unlisten(struct gs_grpc_server *s, int id, int unlink_path)
{
	for (struct listener **pp = &s->listeners; *pp; pp = &(*pp)->next) {
		struct listener *l = *pp;
		if (l->id != id)
			continue;
		*pp = l->next;
		(void)epoll_ctl(s->epfd, EPOLL_CTL_DEL, l->fd, NULL);
		close(l->fd);
		if (unlink_path)
			(void)unlink(l->path);
		free(l->path);
		free(l);
		return;
	}
}

gs_err gs_grpc_server_watch_fd(struct gs_grpc_server *s, int fd,
                               void (*fn)(int fd, void *arg), void *arg,
                               struct gs_errbuf *eb)
{
	struct extra *x = calloc(1, sizeof(*x));
	if (!x)
		return gs_fail(eb, GS_ERR_NOMEM, "watch fd");
	x->w.kind = W_EXTRA;
	x->w.ptr = x;
	x->fd = fd;
	x->fn = fn;
	x->arg = arg;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &x->w};
	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
		int e = errno;
		free(x);
		return gs_fail(eb, GS_ERR_IO, "epoll add fd=%d: %s", fd,
		               strerror(e));
	}
	x->next = s->extras;
	s->extras = x;
	return GS_OK;
}

void gs_grpc_server_set_tick(struct gs_grpc_server *s, int ms,
                             void (*fn)(void *arg), void *arg)
{
	s->tick_ms = fn ? ms : 0;
	s->tick_fn = fn;
	s->tick_arg = arg;
	s->next_tick = 0; /* a new period counts from now */
}

gs_err gs_grpc_server_post(struct gs_grpc_server *s, void (*fn)(void *arg),
                           void *arg)
{
	struct op *op = calloc(1, sizeof(*op));
	if (!op)
		return GS_ERR_NOMEM;
	op->kind = OP_POST;
	op->fn = fn;
	op->arg = arg;
	enqueue(s, op);
	return GS_OK;
}

void gs_grpc_server_stop(struct gs_grpc_server *s)
{
	atomic_store(&s->stop, true);
	wake(s);
}

int gs_grpc_server_connections(const struct gs_grpc_server *s)
{
	return s->n_conns;
}

gs_err gs_grpc_server_run(struct gs_grpc_server *s, struct gs_errbuf *eb)
{
	while (!atomic_load(&s->stop)) {
		int timeout = -1;
		if (s->tick_ms) {
			if (!s->next_tick)
				s->next_tick = now_ms() + s->tick_ms;
			int64_t left = s->next_tick - now_ms();
			timeout = left > 0 ? (int)left : 0;
		}
		struct epoll_event evs[32];
		int n = epoll_wait(s->epfd, evs, 32, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return gs_fail(eb, GS_ERR_IO, "epoll_wait: %s",
			               strerror(errno));
		}
		for (int i = 0; i < n; i++) {
			struct watch *w = evs[i].data.ptr;
			switch (w->kind) {
			case W_LISTENER:
				accept_conn(s, w->ptr);
				break;
			case W_WAKE: {
				uint64_t v;
				ssize_t r = read(s->wakefd, &v, sizeof(v));
				(void)r; /* EAGAIN: already drained */
				break;
			}
			case W_EXTRA: {
				struct extra *x = w->ptr;
				x->fn(x->fd, x->arg);
				break;
			}
			case W_CONN: {
				struct conn *c = w->ptr;
				if (c->dead)
					break;
				if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
					conn_read(c);
				break;
			}
			}
		}
		drain_ops(s);
		if (s->tick_ms && s->next_tick && now_ms() >= s->next_tick) {
			s->next_tick = now_ms() + s->tick_ms;
			s->tick_fn(s->tick_arg);
			drain_ops(s);
		}
		for (struct conn *c = s->conns, *next; c; c = next) {
			next = c->next;
			conn_flush(c);
		}
		reap(s);
	}
	return GS_OK;
}
