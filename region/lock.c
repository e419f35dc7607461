/*
 * lock.c - the region's locks: the writers' lock (in-process mutex plus
 * flock on limits.lock) and the limits' write sequence, the robust usage
 * mutexes of owner files and of the shared file (taken with a deadline,
 * repaired after a dead holder: books recomputed from the process
 * table), following a shared file a creator replaced, and the arbiter's
 * bell.
 *
 * Lock order: a holder of an owner file's mutex and the shared one took
 * the owner's first (gs_region_lock). Calls layout.c, owner.c, view.c
 * and util.c.
 */
#include "guard.h"
#include "region_int.h"

#include <errno.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * Takes the writers' lock: the in-process mutex (flock does not exclude
 * two threads sharing one descriptor), then flock on the private lock
 * file, each within LOCK_TIMEOUT_S. Only the region's creator's uid can
 * open that file, so no tenant can make a writer wait; the deadline
 * bounds what a stuck writer of the same uid can cost.
 */
gs_err gs__wlock_take(struct gs_region *r, struct gs_errbuf *eb)
{
	struct timespec ts;
	uint64_t until = gs__mono_ns() + LOCK_TIMEOUT_S * 1000000000ull;
	int rc, e;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += LOCK_TIMEOUT_S;
	rc = pthread_mutex_timedlock(&r->wmu, &ts);
	if (rc != 0)
		return gs_fail(eb, rc == ETIMEDOUT ? GS_ERR_TIMEOUT : GS_ERR_IO,
		               "limits writer lock in %s: %s", r->dir,
		               strerror(rc));
	for (unsigned i = 0;; i++) {
		if (flock(r->kfd, LOCK_EX | LOCK_NB) == 0)
			return GS_OK;
		e = errno;
		if (e != EWOULDBLOCK && e != EINTR)
			break;
		if (gs__mono_ns() >= until) {
			e = ETIMEDOUT;
			break;
		}
		{
			struct timespec nap = {0, i < 20 ? 100000L : 2000000L};

			(void)nanosleep(&nap, NULL);
		}
	}
	(void)pthread_mutex_unlock(&r->wmu);
	return gs_fail(eb, e == ETIMEDOUT ? GS_ERR_TIMEOUT : GS_ERR_IO,
	               "lock %s/%s: %s", r->dir, GS_REGION_LOCK_FILE,
	               strerror(e));
}

void gs__wlock_drop(struct gs_region *r)
{
	(void)flock(r->kfd, LOCK_UN);
	(void)pthread_mutex_unlock(&r->wmu);
}

/* ---- the usage locks ---------------------------------------------------- */

bool gs__proc_in_slice(const struct gs_ru_proc *p, int s, uint64_t gen)
{
	return p->state == GS_RU_PROC_LIVE && p->slice == s &&
	       p->slice_gen == gen;
}

/* Owner lock held: brings slice s's books in `o` to the limits
 * generation. */
void gs__books_sync(struct gs_region *r, struct gs_own *o, int s)
{
	struct gs_ru_slice *us = &o->ro->slice[s];
	uint64_t gen =
	    __atomic_load_n(&r->rl->slice[s].generation, __ATOMIC_ACQUIRE);

	if (us->generation == gen)
		return;
	gs__mem_reset(o->ro, s, gen, r->pidns);
}

/*
 * Owner lock held, after a holder died: recompute every slice's derived
 * counters in `o` from its process table (the process slots are the
 * truth; a holder killed between updating its slot and its slice left
 * them apart). Memory is recounted while others may be allocating
 * (gs__mem_recount), within 10 ms for the whole file: a slice whose
 * updates did not drain by then owes its recount.
 */
static void own_repair(struct gs_region *r, struct gs_own *o)
{
	struct gs_ro_file *ro = o->ro;
	uint64_t until = gs__mono_ns() + 10000000ull;

	for (int s = 0; s < GS_REGION_MAX_SLICES; s++) {
		struct gs_ru_slice *us = &ro->slice[s];

		gs__books_sync(r, o, s);
		us->n_procs = 0;
		for (int i = 0; i < GS_REGION_MAX_PROCS; i++)
			if (gs__proc_in_slice(&ro->proc[i], s, us->generation))
				us->n_procs++;
		(void)gs__mem_recount(ro, s, r->pidns, until);
	}
	ro->h.lock_recoveries++;
}

/*
 * Shared lock held, after a holder died: nobody holds a turn, and the
 * in-flight and waiting counts of slices whose owner files this handle
 * maps are recomputed from their process books (others' go stale on
 * their own: gpusched ignores old work and silent waiters).
 */
static void shared_repair(struct gs_region *r)
{
	struct gs_ru_file *ru = r->ru;

	gs__own_use(r);
	for (int s = 0; s < GS_REGION_MAX_SLICES; s++) {
		struct own_key key = gs__slice_key(&r->rl->slice[s], s);
		uint64_t gen = r->rl->slice[s].generation;
		int k = gs__owner_lookup(r, &key);
		const struct gs_ro_file *ro = k >= 0 ? r->own[k].ro : NULL;

		if (ro == NULL || r->rl->slice[s].state != GS_RL_LIVE)
			continue;
		for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
			ru->sched[d][s].inflight = 0;
			ru->sched[d][s].waiting = 0;
		}
		for (int i = 0; i < GS_REGION_MAX_PROCS; i++) {
			if (!gs__proc_in_slice(&ro->proc[i], s, gen))
				continue;
			for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
				ru->sched[d][s].inflight +=
				    ro->proc_dev[i][d].inflight;
				ru->sched[d][s].waiting +=
				    ro->proc_dev[i][d].waiting;
			}
		}
	}
	gs__own_unuse(r);
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		struct gs_sched_dev *sd = &ru->dev[d].sched;

		sd->holder = -1;
		__atomic_store_n(&sd->gate,
		                 __atomic_load_n(&sd->gate, __ATOMIC_RELAXED) |
		                     GS_GATE_ALWAYS,
		                 __ATOMIC_RELEASE);
	}
	ru->h.lock_recoveries++;
}

/*
 * Takes a robust mutex within this handle's deadline. OUT: *dead when
 * its last holder died (the caller repairs, then marks it consistent).
 * `tenants`: a lock a tenant can hold (an owner file's; the shared one
 * where no arbiter keeps it), whose timeout makes a bounded handle stop
 * waiting for any such lock for a second; the arbiter's shared lock is
 * held only by the daemon's own threads (or root), and a timeout there -
 * a thread of ours preempted on a loaded host - must not fail the
 * daemon's other work.
 */
static gs_err mutex_take(struct gs_region *r, pthread_mutex_t *m, bool tenants,
                         bool *dead)
{
	struct timespec ts;
	uint64_t wait_ns = (uint64_t)LOCK_TIMEOUT_S * 1000000000ull, now = 0;
	int rc;

	*dead = false;
	/* Uncontended (nearly always): no deadline to compute. */
	rc = pthread_mutex_trylock(m);
	if (rc == 0)
		return GS_OK;
	if (rc == EOWNERDEAD) {
		*dead = true;
		return GS_OK;
	}
	if (r->wait_ms) {
		/* Bounded handle: after a timeout, only try for a while. */
		now = gs__mono_ns();
		wait_ns = tenants && now < __atomic_load_n(&r->busy_until,
		                                           __ATOMIC_RELAXED)
		              ? 0
		              : (uint64_t)r->wait_ms * 1000000ull;
	}
	(void)clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(wait_ns / 1000000000ull);
	ts.tv_nsec += (long)(wait_ns % 1000000000ull);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	rc = pthread_mutex_timedlock(m, &ts);
	if (rc == 0)
		return GS_OK;
	if (rc == EOWNERDEAD) {
		*dead = true;
		return GS_OK;
	}
	if (rc == ETIMEDOUT) {
		if (r->wait_ms && tenants)
			__atomic_store_n(&r->busy_until,
			                 gs__mono_ns() + 1000000000ull,
			                 __ATOMIC_RELAXED);
		return GS_ERR_TIMEOUT;
	}
	return GS_ERR_CORRUPT;
}

gs_err gs__own_lock(struct gs_region *r, struct gs_own *o)
{
	bool dead;
	gs_err err;

	gs__own_use(r);
	err = mutex_take(r, &o->ro->h.lock.m, true, &dead);
	if (err == GS_OK && dead) {
		own_repair(r, o);
		(void)pthread_mutex_consistent(&o->ro->h.lock.m);
	}
	if (err != GS_OK)
		gs__own_unuse(r);
	return err;
}

void gs__own_unlock(struct gs_region *r, struct gs_own *o)
{
	(void)pthread_mutex_unlock(&o->ro->h.lock.m);
	gs__own_unuse(r);
}

/*
 * A joiner whose shared usage file was cut short or wedged: when the
 * region's creator has replaced it (gs_region_rebuild_usage: a new file
 * under the same name, of the same region), maps the new one and uses it
 * from now on. The old mapping stays (another thread may be in it).
 * Whether it moved to a new file.
 */
static bool ru_follow(struct gs_region *r)
{
	char path[GS_REGION_DIR_MAX + 32];
	struct stat now, was;
	struct gs_ru_file *nu;
	bool moved = false;
	void *p;
	int fd;

	if (r->limits_writable)
		return false; /* the creator rebuilds; it never follows */
	(void)snprintf(path, sizeof(path), "%s/%s", r->dir,
	               GS_REGION_USAGE_FILE);
	pthread_mutex_lock(&r->fmu);
	if (stat(path, &now) != 0 || fstat(r->ufd, &was) != 0 ||
	    (now.st_ino == was.st_ino && now.st_dev == was.st_dev))
		goto out;
	fd = gs__file_open(path,
	                   (gs__usage_writable(r->ufd) ? O_RDWR : O_RDONLY) |
	                       O_CLOEXEC | O_NOFOLLOW,
	                   0);
	if (fd < 0)
		goto out;
	if (gs__fd_size(fd) != sizeof(*nu)) {
		(void)close(fd);
		goto out;
	}
	p = gs__file_map(sizeof(*nu),
	                 PROT_READ | (gs__usage_writable(fd) ? PROT_WRITE : 0),
	                 fd);
	if (p == MAP_FAILED) {
		(void)close(fd);
		goto out;
	}
	nu = p;
	(void)gs__guard_add(p, sizeof(*nu));
	if (gs__validate(r->rl, sizeof(*r->rl), nu, sizeof(*nu), NULL) !=
	    GS_OK) {
		gs__guard_del(p);
		(void)munmap(p, sizeof(*nu));
		(void)close(fd);
		goto out;
	}
	__atomic_store_n(&r->ru, nu, __ATOMIC_RELEASE);
	(void)close(r->ufd);
	r->ufd = fd;
	r->ru_cut = false;
	moved = true;
out:
	pthread_mutex_unlock(&r->fmu);
	return moved;
}

/* The shared file a thread locked, for its unlock (ru_follow may have
 * moved r->ru meanwhile). */
__thread struct gs_ru_file *gs__ru_locked;

gs_err gs__shared_lock(struct gs_region *r)
{
	struct gs_ru_file *ru;
	bool dead;
	gs_err err;

	if (gs__guard_caught() != 0 && gs__guard_tripped(r->ru))
		(void)ru_follow(r);
	ru = __atomic_load_n(&r->ru, __ATOMIC_ACQUIRE);
	err = mutex_take(r, &ru->h.lock.m, !gs__arbitrated(r), &dead);
	if (err == GS_ERR_TIMEOUT && ru_follow(r)) {
		ru = __atomic_load_n(&r->ru, __ATOMIC_ACQUIRE);
		err = mutex_take(r, &ru->h.lock.m, !gs__arbitrated(r), &dead);
	}
	if (err != GS_OK)
		return err;
	gs__ru_locked = ru;
	if (dead) {
		shared_repair(r);
		(void)pthread_mutex_consistent(&ru->h.lock.m);
	}
	return GS_OK;
}

void gs__shared_unlock(struct gs_region *r)
{
	struct gs_ru_file *ru = gs__ru_locked ? gs__ru_locked : r->ru;

	gs__ru_locked = NULL;
	(void)pthread_mutex_unlock(&ru->h.lock.m);
}

gs_err gs_region_lock(struct gs_region *r)
{
	int me = r->me;
	gs_err err;

	if (me >= 0) {
		err = gs__own_lock(r, &r->own[me]);
		if (err != GS_OK)
			return err;
	}
	if (r->arb_client) {
		/* Nothing shared to write: the arbiter's. One that has not
		 * passed for a second may have moved to a new file (a
		 * repaired one): follow it, looking at most every 100 ms. */
		uint64_t now = gs__mono_ns(),
		         beat = __atomic_load_n(&r->ru->h.arb_beat_ns,
		                                __ATOMIC_ACQUIRE),
		         last =
		             __atomic_load_n(&r->follow_ns, __ATOMIC_RELAXED);

		if (now > beat + 1000000000ull && now > last + 100000000ull) {
			__atomic_store_n(&r->follow_ns, now, __ATOMIC_RELAXED);
			(void)ru_follow(r);
		}
		return GS_OK;
	}
	err = gs__shared_lock(r);
	if (err != GS_OK && me >= 0)
		gs__own_unlock(r, &r->own[me]);
	return err;
}

void gs_region_set_lock_wait(struct gs_region *r, unsigned wait_ms)
{
	r->wait_ms = wait_ms;
}

void gs_region_unlock(struct gs_region *r)
{
	if (!r->arb_client)
		gs__shared_unlock(r);
	if (r->me >= 0)
		gs__own_unlock(r, &r->own[r->me]);
}

/*
 * The writers' protocol. The limits lock (wlock_take/wlock_drop) orders
 * writers; the odd sequence number (wseq_open/wseq_close) only covers the
 * stores into slots, so that readers retry. Nothing may take the usage
 * lock between wseq_open and wseq_close: shims read the limits while
 * holding the usage lock (cfg_refresh), so a writer waiting for the usage
 * lock with the sequence odd would make every one of them spin. Usage
 * work a writer does (attach, detach, reap) goes under the limits lock
 * with the sequence even.
 */
void gs__wseq_open(struct gs_region *r)
{
	/* A writer that died inside left seq odd: this keeps it odd. */
	__atomic_store_n(&r->rl->h.seq, (r->rl->h.seq | 1), __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

void gs__wseq_close(struct gs_region *r)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	r->rl->h.epoch++;
	gs__views_publish(r);
	__atomic_store_n(&r->rl->h.seq, r->rl->h.seq + 1, __ATOMIC_RELEASE);
}

/* The writers' lock, for a handle that may write limits; the sequence
 * stays even (file work - making usage files - goes here, not inside
 * wseq_open: a writer killed there would leave it odd). */
gs_err gs__wlock_even(struct gs_region *r, struct gs_errbuf *eb)
{
	if (!r->limits_writable)
		return gs_fail(eb, GS_ERR_PERM,
		               "limits in %s are read-only here%s", r->dir,
		               gs_region_is_privileged(r)
		                   ? " (the daemon owns them)"
		                   : "");
	return gs__wlock_take(r, eb);
}

gs_err gs__wlock(struct gs_region *r, struct gs_errbuf *eb)
{
	gs_err err = gs__wlock_even(r, eb);

	if (err == GS_OK)
		gs__wseq_open(r);
	return err;
}

/* ---- the arbiter (GS_RU_ARBITER regions) ------------------------------ */

bool gs__arbitrated(const struct gs_region *r)
{
	return (__atomic_load_n(&r->ru, __ATOMIC_ACQUIRE)->h.flags &
	        GS_RU_ARBITER) != 0;
}

bool gs_region_arb_client(const struct gs_region *r)
{
	return r->arb_client;
}

void gs_region_bell(struct gs_region *r)
{
	struct gs_ru_file *ru = __atomic_load_n(&r->ru, __ATOMIC_ACQUIRE);

	(void)syscall(SYS_futex, &ru->h.bell, FUTEX_WAKE, 1, NULL, NULL, 0);
}
