/*
 * server.c - HTTP transport for the API (see server.h).
 *
 * One libmicrohttpd daemon per listener. The Unix listener is a socket we
 * bind ourselves (so we control its mode) and hand to MHD. A connection's
 * peer is looked up once, when it starts (SO_PEERCRED and SO_PEERGROUPS:
 * the credentials the kernel recorded at connect(), never /proc after the
 * fact), and kept as the socket context. Each request's
 * state (its body so far) lives in the request context and is freed by
 * the completion callback, whatever way the request ended.
 *
 * No one user can take the API away from the others: MHD's connection
 * limit is node-wide, so each non-admin uid may hold at most
 * max_per_user of the Unix listener's connections at once (`users`
 * counts them; a connection past the limit is shut down as it starts,
 * before it is read), and a connection idle for idle_timeout_s is closed.
 * Administrators (root, the admin group) are not counted: the node's
 * operators must always get in. And since a tenant reconnecting in a
 * loop can fill the listen backlog that every connect shares, before any
 * count applies, they have a listener of their own: `admin.sock` beside
 * the socket (GS_SERVER_ADMIN_SOCKET), 0600 root's (0660 with the admin
 * group), whose connections from anyone else are closed unread. No tenant
 * can reach its backlog.
 *
 * Admission on the shared socket comes before libmicrohttpd: a thread of
 * our own (accept_loop) drains a large backlog, reads the peer's uid
 * (SO_PEERCRED, one syscall) and closes at once the connection of a uid
 * over its churn budget or holding its connection limit: no thread, no
 * user lookup, no MHD bookkeeping for it. The rest are counted against
 * their uid there and handed to MHD (MHD_add_connection), whose
 * connection callback looks the peer up and claims the count (`pending`,
 * by descriptor) until the connection closes. So one tenant's reconnect loop costs the others the
 * time of an accept and a close per connection, not a thread each.
 */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gs/log.h"
#include "gs/safepath.h"

/* The shared socket's backlog (the kernel caps it at net.core.somaxconn). */
#define GS_SERVER_BACKLOG 4096
/* Connections accept_loop takes before it polls again (and sees a stop). */
#define GS_SERVER_ACCEPT_BATCH 256
/* The acceptor thread's nice value (root only; see accept_loop). */
#define GS_SERVER_ACCEPT_NICE (-10)

/* New connections of one uid in the current second (churn_ok). */
#define GS_SERVER_CHURN_MAX  256
#define GS_SERVER_CHURN_UIDS 64
struct churn {
	uint32_t uid;
	int64_t window_s; /* CLOCK_MONOTONIC second; 0: free */
	int n;
	bool warned;
};

/* Open Unix connections of one uid (only uids with at least one). */
struct user_conns {
	uint32_t uid;
	int n;
	bool warned; /* refused one since n was last 0 */
};

/* A connection accept_loop counted against its uid and handed to MHD,
 * until on_connection claims the count (by its descriptor). */
#define GS_SERVER_PENDING 1024
struct pending {
	int fd; /* -1: free */
	uint32_t uid;
};

/* The socket context of a Unix connection. */
struct conn_ctx {
	struct gs_peer peer;
	bool counted; /* holds one of users[]'s counts for peer.uid */
};

struct gs_server {
	struct MHD_Daemon *unix_d;
	struct MHD_Daemon *admin_d;
	int admin_fd;
	char admin_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct MHD_Daemon *tcp_d;
	int unix_fd;
	pthread_t acceptor;
	bool acceptor_on;
	int stop_fd[2]; /* a byte on [1] stops accept_loop */
	char socket_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *token;
	gid_t admin_gid;
	uint32_t max_body;
	gs_http_handler handler;
	void *ctx;
	int max_per_user; /* 0 = no per-user limit */
	pthread_mutex_t ulock;
	struct churn churn[GS_SERVER_CHURN_UIDS]; /* under ulock */
	struct user_conns *users; /* max_connections entries */
	int n_users, cap_users;
	struct pending pending[GS_SERVER_PENDING]; /* under ulock */
};

struct req_state {
	char *body;
	size_t len;
	bool too_big;
	bool answered;
};

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59 /* Linux 4.13+; asm-generic/socket.h */
#endif
#define PEER_GROUPS_MAX 65536 /* NGROUPS_MAX */

/*
 * Whether the peer on `fd` holds `gid` as a supplementary group, in the
 * kernel's own record of the credentials it connected with
 * (SO_PEERGROUPS): nothing read later from /proc, where the pid may
 * already belong to another process. A kernel without SO_PEERGROUPS
 * (before 4.13) answers ENOPROTOOPT; then the group database's list for
 * the peer's uid is used (getgrouplist), which is what a login would give
 * it. Any other failure: not a member.
 */
static bool peer_has_group(int fd, const struct ucred *cred, gid_t gid)
{
	gid_t small[64], *g = small;
	socklen_t len = sizeof(small);
	bool yes = false;
	int n;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) != 0) {
		int e = errno;

		if (e == ERANGE && len > sizeof(small) &&
		    len <= PEER_GROUPS_MAX * sizeof(gid_t)) {
			g = malloc(len);
			if (g == NULL)
				return false;
			if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g,
			               &len) != 0)
				len = 0;
		} else if (e == ENOPROTOOPT || e == EINVAL) {
			struct passwd pw, *res = NULL;
			char buf[1024];

			n = (int)(sizeof(small) / sizeof(small[0]));
			if (getpwuid_r(cred->uid, &pw, buf, sizeof(buf),
			               &res) != 0 ||
			    res == NULL ||
			    getgrouplist(pw.pw_name, cred->gid, small, &n) < 0)
				return false;
			len = (socklen_t)((size_t)n * sizeof(gid_t));
		} else {
			gs_warn("server",
			        "pid=%d uid=%u SO_PEERGROUPS: %s; not an admin",
			        (int)cred->pid, (unsigned)cred->uid,
			        strerror(e));
			return false;
		}
	}
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (g[i] == gid)
			yes = true;
	if (g != small)
		free(g);
	return yes;
}

gs_err gs_peer_from_fd(int fd, gid_t admin_gid, struct gs_peer *peer)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct passwd pw, *res = NULL;
	char buf[1024];

	memset(peer, 0, sizeof(*peer));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return GS_ERR_IO;
	peer->local = true;
	peer->authed = true;
	peer->uid = cred.uid;
	peer->gid = cred.gid;
	peer->pid = cred.pid;
	peer->admin =
	    cred.uid == 0 ||
	    (admin_gid != (gid_t)-1 &&
	     (cred.gid == admin_gid || peer_has_group(fd, &cred, admin_gid)));
	if (getpwuid_r(cred.uid, &pw, buf, sizeof(buf), &res) == 0 && res)
		snprintf(peer->user, sizeof(peer->user), "%s", pw.pw_name);
	else
		snprintf(peer->user, sizeof(peer->user), "uid:%u",
		         (unsigned)cred.uid);
	return GS_OK;
}

/*
 * Counts a connection against its uid. False when the uid already holds
 * its limit (nothing counted then); *warn is set the first time that
 * happens since the uid last held none, so the log says it once.
 */
static bool user_take(struct gs_server *srv, uint32_t uid, bool *warn)
{
	struct user_conns *u = NULL;
	bool ok = true;

	*warn = false;
	pthread_mutex_lock(&srv->ulock);
	for (int i = 0; i < srv->n_users; i++)
		if (srv->users[i].uid == uid)
			u = &srv->users[i];
	if (u == NULL && srv->n_users < srv->cap_users) {
		u = &srv->users[srv->n_users++];
		memset(u, 0, sizeof(*u));
		u->uid = uid;
	}
	if (u == NULL || u->n >= srv->max_per_user) {
		/* u == NULL: more uids than MHD lets connect; cannot be. */
		ok = false;
		if (u && !u->warned) {
			u->warned = true;
			*warn = true;
		}
	} else {
		u->n++;
	}
	pthread_mutex_unlock(&srv->ulock);
	return ok;
}

/*
 * Churn: a non-admin uid may open at most GS_SERVER_CHURN_MAX connections
 * per second on the Unix listener (held or not: connecting and closing
 * in a loop costs the daemon an accept and a thread each). Past that a
 * connection is closed as it starts; the log says so once a second.
 * ulock held; a table of the uids seen lately, the oldest window
 * overwritten when it is full.
 */
static bool churn_ok(struct gs_server *srv, uint32_t uid, int64_t now_s,
                     bool *warn)
{
	struct churn *c = NULL, *oldest = &srv->churn[0];

	*warn = false;
	for (int i = 0; i < GS_SERVER_CHURN_UIDS && c == NULL; i++) {
		if (srv->churn[i].uid == uid && srv->churn[i].window_s != 0)
			c = &srv->churn[i];
		else if (srv->churn[i].window_s < oldest->window_s)
			oldest = &srv->churn[i];
	}
	if (c == NULL) {
		c = oldest;
		*c = (struct churn){.uid = uid, .window_s = now_s};
	}
	if (c->window_s != now_s) {
		c->window_s = now_s;
		c->n = 0;
		c->warned = false;
	}
	if (++c->n <= GS_SERVER_CHURN_MAX)
		return true;
	if (!c->warned) {
		c->warned = true;
		*warn = true;
	}
	return false;
}

static void user_drop(struct gs_server *srv, uint32_t uid)
{
	pthread_mutex_lock(&srv->ulock);
	for (int i = 0; i < srv->n_users; i++) {
		if (srv->users[i].uid != uid)
			continue;
		if (--srv->users[i].n <= 0)
			srv->users[i] = srv->users[--srv->n_users];
		break;
	}
	pthread_mutex_unlock(&srv->ulock);
}

/* Whether uid may open one more connection this second (logs once). */
static bool churn_admit(struct gs_server *srv, uint32_t uid)
{
	struct timespec ts;
	bool ok, warn;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	pthread_mutex_lock(&srv->ulock);
	ok = churn_ok(srv, uid, (int64_t)ts.tv_sec + 1, &warn);
	pthread_mutex_unlock(&srv->ulock);
	if (warn)
		gs_warn("server", "uid=%u opens more than %d API connections a second; closing the rest",
		        (unsigned)uid, GS_SERVER_CHURN_MAX);
	return ok;
}

/*
 * The count accept_loop took for the connection on `fd`, handed over:
 * true and *uid when there was one (ulock not held). A stale entry of a
 * descriptor MHD closed without telling (and the kernel gave out again)
 * is dropped when the descriptor comes back (pending_put).
 */
static bool pending_take(struct gs_server *srv, int fd, uint32_t *uid)
{
	bool found = false;

	pthread_mutex_lock(&srv->ulock);
	for (int i = 0; i < GS_SERVER_PENDING && !found; i++) {
		if (srv->pending[i].fd != fd)
			continue;
		*uid = srv->pending[i].uid;
		srv->pending[i].fd = -1;
		found = true;
	}
	pthread_mutex_unlock(&srv->ulock);
	return found;
}

/* Records the count taken for `fd` (false: the table is full). */
static bool pending_put(struct gs_server *srv, int fd, uint32_t uid)
{
	struct pending *free_slot = NULL;
	uint32_t stale;
	bool had = false;

	pthread_mutex_lock(&srv->ulock);
	for (int i = 0; i < GS_SERVER_PENDING; i++) {
		if (srv->pending[i].fd == fd) {
			had = true;
			stale = srv->pending[i].uid;
			free_slot = &srv->pending[i];
			break;
		}
		if (srv->pending[i].fd < 0 && free_slot == NULL)
			free_slot = &srv->pending[i];
	}
	if (free_slot != NULL)
		*free_slot = (struct pending){.fd = fd, .uid = uid};
	pthread_mutex_unlock(&srv->ulock);
	if (had)
		user_drop(srv, stale);
	return free_slot != NULL;
}

/*
 * One connection accept_loop took: handed to MHD, or closed unread when
 * its uid is over its churn budget or holds its limit (administrators
 * never are). The cheap checks first: root by its uid, the budget by a
 * table; the admin group (SO_PEERGROUPS) only for a uid over either. The
 * limit's count is taken here, before MHD sees the connection, so a
 * tenant's connections in transit count too: however slow MHD is to
 * start them, it never holds more than the limit of one uid's.
 */
static void admit(struct gs_server *srv, int fd)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct ucred cred;
	socklen_t len = sizeof(cred);
	bool admin, counted = false, warn = false;
	uint32_t uid;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
		close(fd);
		return;
	}
	admin = cred.uid == 0;
	if (!admin && churn_admit(srv, cred.uid) &&
	    (srv->max_per_user <= 0 || user_take(srv, cred.uid, &warn))) {
		counted = srv->max_per_user > 0;
	} else if (!admin) {
		admin = srv->admin_gid != (gid_t)-1 &&
		        (cred.gid == srv->admin_gid ||
		         peer_has_group(fd, &cred, srv->admin_gid));
		if (!admin) {
			if (warn)
				gs_warn("server",
				        "uid=%u pid=%d holds its limit of %d API connections; closing new ones (api.max_connections_per_user)",
				        (unsigned)cred.uid, (int)cred.pid,
				        srv->max_per_user);
			close(fd);
			return;
		}
	}
	if (counted && !pending_put(srv, fd, cred.uid)) {
		user_drop(srv, cred.uid);
		close(fd);
		return;
	}
	/* MHD closes fd when it cannot take it. */
	if (MHD_add_connection(srv->unix_d, fd, (struct sockaddr *)&sa,
	                       sizeof(sa)) != MHD_YES) {
		if (counted && pending_take(srv, fd, &uid))
			user_drop(srv, uid);
		gs_warn("server", "uid=%u pid=%d connection dropped: the API server could not take it",
		        (unsigned)cred.uid, (int)cred.pid);
	}
}

/* The shared socket's admission thread: see the header comment. */
static void *accept_loop(void *arg)
{
	struct gs_server *srv = arg;
	struct pollfd pf[2] = {{.fd = srv->unix_fd, .events = POLLIN},
	                       {.fd = srv->stop_fd[0], .events = POLLIN}};
	bool full_warned = false;

	/* Ahead of tenants' processes for the CPU (a root daemon may): a
	 * reconnect loop on a busy node then cannot outrun the drain and
	 * keep the backlog full, where others' connects fail (EAGAIN). */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid),
	                GS_SERVER_ACCEPT_NICE) != 0) {
		int e = errno;

		/* A user's own daemon may not; root should. */
		if (geteuid() == 0)
			gs_warn("server", "acceptor priority not raised: %s",
			        strerror(e));
	}
	for (;;) {
		if (poll(pf, 2, -1) < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			gs_error("server", "poll on %s: %s; no new API connections",
			         srv->socket_path, strerror(e));
			return NULL;
		}
		if (pf[1].revents != 0)
			return NULL;
		for (int k = 0; k < GS_SERVER_ACCEPT_BATCH; k++) {
			int fd = accept4(srv->unix_fd, NULL, NULL, SOCK_CLOEXEC);
			int e = errno;

			if (fd >= 0) {
				full_warned = false;
				admit(srv, fd);
				continue;
			}
			if (e == EINTR || e == ECONNABORTED)
				continue;
			if (e == EMFILE || e == ENFILE || e == ENOBUFS ||
			    e == ENOMEM) {
				/* Out of descriptors: wait for some to close. */
				if (!full_warned)
					gs_warn("server", "accept on %s: %s; new API connections wait",
					        srv->socket_path, strerror(e));
				full_warned = true;
				(void)poll(NULL, 0, 10);
			} else if (e != EAGAIN && e != EWOULDBLOCK) {
				gs_warn("server", "accept on %s: %s",
				        srv->socket_path, strerror(e));
			}
			break;
		}
	}
}

/* Stops accept_loop (if it runs) and waits for it. */
static void acceptor_stop(struct gs_server *srv)
{
	if (srv->acceptor_on) {
		char b = 1;

		while (write(srv->stop_fd[1], &b, 1) < 0 && errno == EINTR)
			;
		pthread_join(srv->acceptor, NULL);
		srv->acceptor_on = false;
	}
	for (int i = 0; i < 2; i++)
		if (srv->stop_fd[i] >= 0)
			close(srv->stop_fd[i]);
	srv->stop_fd[0] = srv->stop_fd[1] = -1;
}

static void on_connection(void *cls, struct MHD_Connection *conn,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
	struct gs_server *srv = cls;
	const union MHD_ConnectionInfo *ci;
	struct conn_ctx *cc;
	uint32_t held_uid = 0;
	bool warn, held;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		cc = *socket_context;
		if (cc && cc->counted)
			user_drop(srv, cc->peer.uid);
		free(cc);
		*socket_context = NULL;
		return;
	}
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	/* The count accept_loop took for it, if any, is this one's now. */
	held = ci != NULL && pending_take(srv, ci->connect_fd, &held_uid);
	cc = calloc(1, sizeof(*cc));
	if (cc == NULL) {
		/* No context: every request would be 401; close it now. */
		if (held)
			user_drop(srv, held_uid);
		if (ci)
			(void)shutdown(ci->connect_fd, SHUT_RDWR);
		return;
	}
	if (ci == NULL || gs_peer_from_fd(ci->connect_fd, srv->admin_gid,
	                                  &cc->peer) != GS_OK) {
		/* Unknown peer: authed stays false, every request is 401. */
		memset(&cc->peer, 0, sizeof(cc->peer));
		if (held)
			user_drop(srv, held_uid);
	} else if (held) {
		/* An administrator by group is never counted. */
		if (cc->peer.admin || held_uid != cc->peer.uid)
			user_drop(srv, held_uid);
		else
			cc->counted = true;
	} else if (!cc->peer.admin && srv->max_per_user > 0) {
		if (user_take(srv, cc->peer.uid, &warn)) {
			cc->counted = true;
		} else {
			if (warn)
				gs_warn("server",
				        "uid=%u pid=%d holds its limit of %d API connections; closing new ones (api.max_connections_per_user)",
				        (unsigned)cc->peer.uid,
				        (int)cc->peer.pid, srv->max_per_user);
			/* Closed before anything is read: MHD sees EOF. */
			cc->peer.authed = false;
			(void)shutdown(ci->connect_fd, SHUT_RDWR);
		}
	}
	*socket_context = cc;
}

/* The admin listener: administrators only, never counted. */
static void on_admin_connection(void *cls, struct MHD_Connection *conn,
                                void **socket_context,
                                enum MHD_ConnectionNotificationCode toe)
{
	struct gs_server *srv = cls;
	const union MHD_ConnectionInfo *ci;
	struct conn_ctx *cc;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		free(*socket_context);
		*socket_context = NULL;
		return;
	}
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	cc = calloc(1, sizeof(*cc));
	if (cc == NULL || ci == NULL ||
	    gs_peer_from_fd(ci->connect_fd, srv->admin_gid, &cc->peer) !=
	        GS_OK ||
	    !cc->peer.admin) {
		if (cc != NULL && ci != NULL)
			gs_warn("server", "uid=%u pid=%d refused on the admin socket",
			        (unsigned)cc->peer.uid, (int)cc->peer.pid);
		if (cc != NULL)
			memset(&cc->peer, 0, sizeof(cc->peer));
		if (ci != NULL)
			(void)shutdown(ci->connect_fd, SHUT_RDWR);
	}
	*socket_context = cc;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
	struct req_state *rs = *req_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (rs) {
		free(rs->body);
		free(rs);
		*req_cls = NULL;
	}
}

static enum MHD_Result queue(struct MHD_Connection *conn, int status,
                             char *body, size_t len, const char *type)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(body);
		return MHD_NO;
	}
	(void)MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ret = MHD_queue_response(conn, (unsigned int)status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result queue_error(struct MHD_Connection *conn, int status,
                                   const char *code, const char *msg)
{
	char *body = NULL;
	int n = asprintf(&body, "{\"error\":\"%s\",\"message\":\"%s\"}\n", code,
	                 msg);

	if (n < 0)
		return MHD_NO;
	return queue(conn, status, body, (size_t)n, "application/json");
}

struct arg_ctx {
	struct gs_http_req *req;
};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind,
                                   const char *key, const char *value)
{
	struct gs_http_req *req = cls;

	(void)kind;
	if (req->n_args == GS_HTTP_MAX_ARGS) {
		req->too_many_args = true;
		return MHD_NO;
	}
	req->args[req->n_args].key = key;
	req->args[req->n_args].value = value ? value : "";
	req->n_args++;
	return MHD_YES;
}

static bool token_ok(struct gs_server *srv, struct MHD_Connection *conn)
{
	const char *h =
	    MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
	size_t n, tn;
	unsigned char diff = 0;

	if (srv->token == NULL || h == NULL || strncmp(h, "Bearer ", 7) != 0)
		return false;
	h += 7;
	n = strlen(h);
	tn = strlen(srv->token);
	/* Constant time in the token's length. */
	for (size_t i = 0; i < tn; i++)
		diff |= (unsigned char)(srv->token[i] ^ (i < n ? h[i] : 0));
	return diff == 0 && n == tn;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
	struct gs_server *srv = cls;
	struct req_state *rs = *req_cls;
	struct gs_http_req req;
	struct gs_http_resp resp;
	const union MHD_ConnectionInfo *ci;
	bool tcp;

	(void)version;
	if (rs == NULL) {
		const char *cl;

		rs = calloc(1, sizeof(*rs));
		if (rs == NULL)
			return MHD_NO;
		*req_cls = rs;
		cl = MHD_lookup_connection_value(
		    conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (cl && strtoull(cl, NULL, 10) > srv->max_body) {
			rs->answered = true;
			return queue_error(conn, 413, "RANGE",
			                   "request body too large");
		}
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		*upload_data_size = 0;
		if (rs->answered)
			return MHD_YES;
		if (rs->len + n > srv->max_body) {
			free(rs->body);
			rs->body = NULL;
			rs->answered = true;
			return queue_error(conn, 413, "RANGE",
			                   "request body too large");
		}
		{
			char *nb = realloc(rs->body, rs->len + n + 1);

			if (nb == NULL)
				return MHD_NO;
			rs->body = nb;
		}
		memcpy(rs->body + rs->len, upload_data, n);
		rs->len += n;
		rs->body[rs->len] = '\0';
		return MHD_YES;
	}
	if (rs->answered)
		return MHD_YES;

	memset(&req, 0, sizeof(req));
	req.method = method;
	req.path = url;
	req.body = rs->body;
	req.body_len = rs->len;
	(void)MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND,
	                                collect_arg, &req);
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_DAEMON);
	tcp = ci && ci->daemon == srv->tcp_d && srv->tcp_d != NULL;
	if (tcp) {
		bool ok = token_ok(srv, conn);

		req.peer.local = false;
		req.peer.authed = ok;
		req.peer.admin = ok;
		req.peer.uid = (uint32_t)-1;
		req.peer.gid = (uint32_t)-1;
		snprintf(req.peer.user, sizeof(req.peer.user), "%s",
		         ok ? "token" : "anonymous");
	} else {
		ci = MHD_get_connection_info(
		    conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		if (ci && ci->socket_context)
			req.peer =
			    ((struct conn_ctx *)ci->socket_context)->peer;
	}
	memset(&resp, 0, sizeof(resp));
	srv->handler(srv->ctx, &req, &resp);
	rs->answered = true;
	if (resp.body == NULL) {
		resp.body = strdup("");
		resp.len = 0;
	}
	return queue(conn, resp.status ? resp.status : 500, resp.body, resp.len,
	             resp.content_type ? resp.content_type
	                               : "application/json");
}

static gs_err bind_unix(struct gs_server *srv, const char *path,
                        struct gs_errbuf *eb)
{
	struct sockaddr_un sa;
	char dir[sizeof(sa.sun_path)];
	char *slash;
	int fd, e;

	if (strlen(path) >= sizeof(sa.sun_path))
		return gs_fail(eb, GS_ERR_RANGE, "socket path too long: %s",
		               path);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		gs_err err;

		*slash = '\0';
		/* Ours and no one else's to write: nobody can swap the
		 * socket for a link between its bind and its chmod. */
		err = gs_safe_mkdir(dir, 0755, false, eb);
		if (err)
			return err;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path) + 1);

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "socket: %s", strerror(e));
	}
	/* A live daemon answers on the path: refuse to steal it. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		return gs_fail(eb, GS_ERR_BUSY, "another daemon is serving %s",
		               path);
	}
	close(fd);
	(void)unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "socket: %s", strerror(e));
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		e = errno;
		close(fd);
		return gs_fail(eb, GS_ERR_IO, "bind %s: %s", path, strerror(e));
	}
	(void)chmod(path, 0666);
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0 ||
	    listen(fd, GS_SERVER_BACKLOG) != 0) {
		e = errno;
		close(fd);
		(void)unlink(path);
		return gs_fail(eb, GS_ERR_IO, "listen %s: %s", path,
		               strerror(e));
	}
	srv->unix_fd = fd;
	snprintf(srv->socket_path, sizeof(srv->socket_path), "%s", path);
	return GS_OK;
}

/*
 * The admin listener beside the socket: root's, 0600, or 0660 and the
 * admin group's. Not made when the daemon is not root (a user's own
 * daemon: its one user is its administrator already).
 */
static gs_err bind_admin(struct gs_server *srv, const char *path,
                         struct gs_errbuf *eb)
{
	struct sockaddr_un sa;
	const char *slash = strrchr(path, '/');
	int fd, e, n;

	if (geteuid() != 0)
		return GS_OK;
	n = snprintf(srv->admin_path, sizeof(srv->admin_path), "%.*s%s",
	             slash ? (int)(slash - path + 1) : 0, path,
	             GS_SERVER_ADMIN_SOCKET);
	if (n < 0 || (size_t)n >= sizeof(srv->admin_path))
		return gs_fail(eb, GS_ERR_RANGE, "admin socket path too long: %s",
		               path);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, srv->admin_path, (size_t)n + 1);
	(void)unlink(srv->admin_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		return gs_fail(eb, GS_ERR_IO, "socket: %s", strerror(e));
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    fchmod(fd, 0600) != 0 ||
	    chmod(srv->admin_path,
	          srv->admin_gid != (gid_t)-1 ? 0660 : 0600) != 0 ||
	    (srv->admin_gid != (gid_t)-1 &&
	     lchown(srv->admin_path, 0, srv->admin_gid) != 0) ||
	    listen(fd, 64) != 0) {
		e = errno;
		close(fd);
		(void)unlink(srv->admin_path);
		return gs_fail(eb, GS_ERR_IO, "admin socket %s: %s",
		               srv->admin_path, strerror(e));
	}
	srv->admin_fd = fd;
	return GS_OK;
}

static gs_err start_tcp(struct gs_server *srv, const char *spec,
                        unsigned int flags, int max_conn, int idle_s,
                        struct gs_errbuf *eb)
{
	char host[64];
	const char *colon = strrchr(spec, ':');
	struct addrinfo hints, *ai = NULL;
	int rc;

	if (colon == NULL || (size_t)(colon - spec) >= sizeof(host))
		return gs_fail(eb, GS_ERR_INVALID, "tcp: '%s' is not host:port",
		               spec);
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
	rc = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &ai);
	if (rc != 0)
		return gs_fail(eb, GS_ERR_INVALID, "tcp: %s: %s", spec,
		               gai_strerror(rc));
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	srv->tcp_d = MHD_start_daemon(
	    flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_SOCK_ADDR,
	    ai->ai_addr, MHD_OPTION_CONNECTION_LIMIT, (unsigned int)max_conn,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)idle_s,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_END);
	freeaddrinfo(ai);
	if (srv->tcp_d == NULL)
		return gs_fail(eb, GS_ERR_IO, "tcp: cannot listen on %s", spec);
	return GS_OK;
}

gs_err gs_server_start(const struct gs_server_opts *opts,
                       struct gs_server **out, struct gs_errbuf *eb)
{
	struct gs_server *srv;
	unsigned int flags = MHD_USE_THREAD_PER_CONNECTION |
	                     MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO |
	                     MHD_USE_ITC;
	gs_err err;

	srv = calloc(1, sizeof(*srv));
	if (srv == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "server: out of memory");
	srv->unix_fd = -1;
	srv->admin_fd = -1;
	srv->stop_fd[0] = srv->stop_fd[1] = -1;
	for (int i = 0; i < GS_SERVER_PENDING; i++)
		srv->pending[i].fd = -1;
	pthread_mutex_init(&srv->ulock, NULL);
	srv->max_per_user = opts->max_per_user;
	srv->cap_users = opts->max_connections;
	srv->users = calloc((size_t)srv->cap_users + 1, sizeof(*srv->users));
	if (srv->users == NULL) {
		err = gs_fail(eb, GS_ERR_NOMEM, "server: out of memory");
		goto out_free;
	}
	srv->admin_gid = opts->admin_gid;
	srv->max_body = opts->max_body;
	srv->handler = opts->handler;
	srv->ctx = opts->ctx;
	if (opts->token && opts->token[0]) {
		srv->token = strdup(opts->token);
		if (srv->token == NULL) {
			err = gs_fail(eb, GS_ERR_NOMEM, "out of memory");
			goto out_free;
		}
	}
	err = bind_unix(srv, opts->socket_path, eb);
	if (err)
		goto out_free;
	srv->unix_d = MHD_start_daemon(
	    flags | MHD_USE_NO_LISTEN_SOCKET, 0, NULL, NULL, on_request, srv,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)opts->max_connections,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)opts->idle_timeout_s,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_END);
	if (srv->unix_d == NULL) {
		err = gs_fail(eb, GS_ERR_IO, "cannot serve %s",
		              opts->socket_path);
		goto out_close;
	}
	if (pipe2(srv->stop_fd, O_CLOEXEC) != 0) {
		int e = errno;

		err = gs_fail(eb, GS_ERR_IO, "pipe: %s", strerror(e));
		goto out_stop;
	}
	{
		int rc = pthread_create(&srv->acceptor, NULL, accept_loop, srv);

		if (rc != 0) {
			err = gs_fail(eb, GS_ERR_IO, "cannot start the API acceptor: %s",
			              strerror(rc));
			goto out_stop;
		}
		srv->acceptor_on = true;
	}
	err = bind_admin(srv, opts->socket_path, eb);
	if (err)
		goto out_stop;
	if (srv->admin_fd >= 0) {
		srv->admin_d = MHD_start_daemon(
		    flags, 0, NULL, NULL, on_request, srv,
		    MHD_OPTION_LISTEN_SOCKET, srv->admin_fd,
		    MHD_OPTION_CONNECTION_LIMIT, 64u,
		    MHD_OPTION_CONNECTION_TIMEOUT,
		    (unsigned int)opts->idle_timeout_s,
		    MHD_OPTION_NOTIFY_CONNECTION, on_admin_connection, srv,
		    MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
		    MHD_OPTION_END);
		if (srv->admin_d == NULL) {
			err = gs_fail(eb, GS_ERR_IO, "cannot serve %s",
			              srv->admin_path);
			goto out_stop;
		}
	}
	if (opts->tcp && opts->tcp[0]) {
		if (srv->token == NULL) {
			err = gs_fail(eb, GS_ERR_INVALID,
			              "tcp listener needs a token (api.token_file)");
			goto out_stop;
		}
		err = start_tcp(srv, opts->tcp, flags, opts->max_connections,
		                opts->idle_timeout_s, eb);
		if (err)
			goto out_stop;
	}
	*out = srv;
	return GS_OK;

out_stop:
	acceptor_stop(srv);
	MHD_stop_daemon(srv->unix_d);
	if (srv->admin_fd >= 0) {
		close(srv->admin_fd);
		(void)unlink(srv->admin_path);
	}
out_close:
	close(srv->unix_fd);
	(void)unlink(srv->socket_path);
out_free:
	free(srv->token);
	free(srv->users);
	pthread_mutex_destroy(&srv->ulock);
	free(srv);
	return err;
}

void gs_server_stop(struct gs_server *srv)
{
	if (srv == NULL)
		return;
	if (srv->tcp_d)
		MHD_stop_daemon(srv->tcp_d);
	if (srv->admin_d)
		MHD_stop_daemon(srv->admin_d);
	acceptor_stop(srv);
	if (srv->unix_d)
		MHD_stop_daemon(srv->unix_d);
	if (srv->unix_fd >= 0)
		close(srv->unix_fd);
	if (srv->admin_fd >= 0) {
		close(srv->admin_fd);
		(void)unlink(srv->admin_path);
	}
	(void)unlink(srv->socket_path);
	free(srv->token);
	free(srv->users);
	pthread_mutex_destroy(&srv->ulock);
	free(srv);
}
