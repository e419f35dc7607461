/*
 * procwatch.c - pid -> uid and start time of the node's processes, taken
 * as they start (procwatch.h). NVML accounting lists a process after it
 * ended, and then /proc has nothing left to say who ran it: a 0.2 s
 * process in no slice that no watchdog scan met alive would be billed to
 * nobody. So the owner is recorded when the process starts.
 *
 * Source: the kernel's proc connector (NETLINK_CONNECTOR, CN_IDX_PROC;
 * root only), read by a thread of its own. On PROC_EVENT_FORK (a new
 * process, not a thread), _EXEC and _UID the process's real uid and start
 * time are read from /proc (the UID event carries the new uid itself),
 * a few microseconds after the event. Where the connector cannot be had
 * (not root, no CONFIG_PROC_EVENTS, a container without it), the caller
 * scans /proc instead (gs__procwatch_scan, each watchdog tick): a process
 * that lived between two scans is then not known, and the report says
 * where the owner came from.
 *
 * Records go into a ring (PW_RING, the newest over the oldest) under a
 * mutex; a lookup walks it newest first for the pid's record that started
 * at or before the time NVML gives (the driver's start may be the
 * context's, later than the process's), so a reused pid finds the process
 * that held it then.
 */
#include "procwatch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gs/log.h"
#include "gs/proc.h"

#define PW_RING 16384

struct pwrec {
	int32_t pid;
	int64_t uid;
	uint64_t start; /* clock ticks since boot (/proc) */
};

struct gs__procwatch {
	pthread_mutex_t lock;
	struct pwrec *ring; /* PW_RING, under lock */
	uint64_t n;         /* records ever added */
	int nl;             /* the connector socket; -1: scans only */
	int stop[2];
	pthread_t thread;
	bool thread_on;
	bool overrun_said;
};

static void add(struct gs__procwatch *pw, int32_t pid, int64_t uid,
                uint64_t start)
{
	pthread_mutex_lock(&pw->lock);
	pw->ring[pw->n % PW_RING] = (struct pwrec){pid, uid, start};
	pw->n++;
	pthread_mutex_unlock(&pw->lock);
}

/* Records pid from /proc; `uid` when the event carried it (else -1). */
static void note(struct gs__procwatch *pw, int32_t pid, int64_t uid)
{
	uint64_t start = 0;

	if (!gs_proc_stat(pid, NULL, NULL, &start))
		return; /* gone already */
	if (uid < 0)
		uid = gs_proc_uid(pid);
	if (uid >= 0)
		add(pw, pid, uid, start);
}

void gs__procwatch_note(struct gs__procwatch *pw, int32_t pid)
{
	if (pw != NULL && pid > 0)
		note(pw, pid, -1);
}

/* One proc connector event. */
static void on_event(struct gs__procwatch *pw, const struct proc_event *ev)
{
	switch (ev->what) {
	case PROC_EVENT_FORK:
		/* A thread's "fork" names its process as the child's tgid. */
		if (ev->event_data.fork.child_pid ==
		    ev->event_data.fork.child_tgid)
			note(pw, (int32_t)ev->event_data.fork.child_tgid, -1);
		break;
	case PROC_EVENT_EXEC:
		note(pw, (int32_t)ev->event_data.exec.process_tgid, -1);
		break;
	case PROC_EVENT_UID:
		note(pw, (int32_t)ev->event_data.id.process_tgid,
		     (int64_t)ev->event_data.id.r.ruid);
		break;
	default:
		break;
	}
}

/* Asks the connector for events (PROC_CN_MCAST_LISTEN). */
static int listen_on(int fd)
{
	struct {
		struct nlmsghdr nl;
		struct cn_msg cn;
		enum proc_cn_mcast_op op;
	} __attribute__((packed)) m;

	memset(&m, 0, sizeof(m));
	m.nl.nlmsg_len = sizeof(m);
	m.nl.nlmsg_type = NLMSG_DONE;
	m.nl.nlmsg_pid = (uint32_t)getpid();
	m.cn.id.idx = CN_IDX_PROC;
	m.cn.id.val = CN_VAL_PROC;
	m.cn.len = sizeof(m.op);
	m.op = PROC_CN_MCAST_LISTEN;
	return send(fd, &m, sizeof(m), 0) == (ssize_t)sizeof(m) ? 0 : -1;
}

static void *watch(void *arg)
{
	struct gs__procwatch *pw = arg;
	struct pollfd pf[2] = {{.fd = pw->nl, .events = POLLIN},
	                       {.fd = pw->stop[0], .events = POLLIN}};
	uint64_t buf[8192 / sizeof(uint64_t)];

	for (;;) {
		ssize_t n;

		if (poll(pf, 2, -1) < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			gs_error("procwatch", "poll: %s; owners of processes that end unseen will be unknown",
			         strerror(e));
			return NULL;
		}
		if (pf[1].revents != 0)
			return NULL;
		n = recv(pw->nl, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0) {
			int e = errno;

			if (e == ENOBUFS && !pw->overrun_said) {
				/* Events were lost: said once. */
				pw->overrun_said = true;
				gs_warn("procwatch", "proc connector overran (%s): some processes' owners were not recorded",
				        strerror(e));
			}
			continue;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf;
		     NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			struct cn_msg *cn = NLMSG_DATA(h);

			if (h->nlmsg_type == NLMSG_ERROR ||
			    h->nlmsg_type == NLMSG_NOOP)
				continue;
			if (h->nlmsg_len <
			        NLMSG_LENGTH(sizeof(*cn) +
			                     sizeof(struct proc_event)) ||
			    cn->id.idx != CN_IDX_PROC ||
			    cn->id.val != CN_VAL_PROC)
				continue;
			{
				/* The event follows the 20-byte cn_msg: copied
				 * out, it is aligned for its 64-bit fields. */
				struct proc_event ev;

				memcpy(&ev, cn->data, sizeof(ev));
				on_event(pw, &ev);
			}
		}
	}
}

/* The connector socket, listening; -1 when it cannot be had (errno). */
static int connector_open(void)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK,
	                         .nl_groups = CN_IDX_PROC};
	int rcv = 4 << 20;
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
	                NETLINK_CONNECTOR);
	int e;

	if (fd < 0)
		return -1;
	/* Room for bursts of forks (a big build) between two reads. */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen_on(fd) != 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

struct gs__procwatch *gs__procwatch_create(void)
{
	struct gs__procwatch *pw = calloc(1, sizeof(*pw));
	int e;

	if (pw == NULL)
		return NULL;
	pw->ring = calloc(PW_RING, sizeof(*pw->ring));
	if (pw->ring == NULL) {
		free(pw);
		return NULL;
	}
	pthread_mutex_init(&pw->lock, NULL);
	pw->stop[0] = pw->stop[1] = -1;
	pw->nl = connector_open();
	if (pw->nl < 0) {
		e = errno;
		gs_warn("procwatch", "proc connector unavailable (%s): owners of processes come from a /proc scan each watchdog tick, and one that lives between two is not known",
		        strerror(e));
		return pw;
	}
	if (pipe2(pw->stop, O_CLOEXEC) != 0 ||
	    (e = pthread_create(&pw->thread, NULL, watch, pw)) != 0) {
		gs_warn("procwatch", "cannot start the proc connector's reader: owners of processes come from a /proc scan each watchdog tick");
		close(pw->nl);
		pw->nl = -1;
		return pw;
	}
	pw->thread_on = true;
	gs_info("procwatch", "recording each process's owner as it starts (proc connector)");
	return pw;
}

void gs__procwatch_destroy(struct gs__procwatch *pw)
{
	if (pw == NULL)
		return;
	if (pw->thread_on) {
		char b = 1;

		while (write(pw->stop[1], &b, 1) < 0 && errno == EINTR)
			;
		pthread_join(pw->thread, NULL);
	}
	for (int i = 0; i < 2; i++)
		if (pw->stop[i] >= 0)
			close(pw->stop[i]);
	if (pw->nl >= 0)
		close(pw->nl);
	pthread_mutex_destroy(&pw->lock);
	free(pw->ring);
	free(pw);
}

bool gs__procwatch_live(const struct gs__procwatch *pw)
{
	return pw != NULL && pw->thread_on;
}

void gs__procwatch_scan(struct gs__procwatch *pw)
{
	DIR *d;
	struct dirent *de;

	if (pw == NULL || pw->thread_on)
		return;
	d = opendir("/proc");
	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		uint64_t start = 0;
		bool known = false;

		if (*end != '\0' || pid <= 0 || pid > INT32_MAX ||
		    !gs_proc_stat((int32_t)pid, NULL, NULL, &start))
			continue;
		/* Already recorded with this start: nothing new. */
		pthread_mutex_lock(&pw->lock);
		for (uint64_t k = pw->n; k > 0 && pw->n - k < PW_RING && !known;
		     k--) {
			const struct pwrec *r = &pw->ring[(k - 1) % PW_RING];

			known = r->pid == (int32_t)pid && r->start == start;
		}
		pthread_mutex_unlock(&pw->lock);
		if (!known)
			note(pw, (int32_t)pid, -1);
	}
	closedir(d);
}

/* Clock ticks since boot of a CLOCK_REALTIME time (us). */
static uint64_t ticks_of(uint64_t real_us)
{
	struct timespec real, boot;
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t r, b, boot_at;

	if (hz <= 0)
		hz = 100;
	clock_gettime(CLOCK_REALTIME, &real);
	clock_gettime(CLOCK_BOOTTIME, &boot);
	r = (uint64_t)real.tv_sec * 1000000ULL + (uint64_t)real.tv_nsec / 1000;
	b = (uint64_t)boot.tv_sec * 1000000ULL + (uint64_t)boot.tv_nsec / 1000;
	boot_at = r - b;
	if (real_us <= boot_at)
		return 0;
	return (real_us - boot_at) * (uint64_t)hz / 1000000ULL;
}

int64_t gs__procwatch_uid(struct gs__procwatch *pw, int32_t pid,
                          uint64_t start_us)
{
	/* NVML's start to the ms, /proc's to the tick: a few ticks' slack. */
	uint64_t limit = start_us ? ticks_of(start_us) + 5 : UINT64_MAX;
	int64_t uid = -1;

	if (pw == NULL)
		return -1;
	pthread_mutex_lock(&pw->lock);
	for (uint64_t k = pw->n; k > 0 && pw->n - k < PW_RING; k--) {
		const struct pwrec *r = &pw->ring[(k - 1) % PW_RING];

		if (r->pid == pid && r->start <= limit) {
			uid = r->uid;
			break;
		}
	}
	pthread_mutex_unlock(&pw->lock);
	return uid;
}
