/*
 * musl_mutex.c - pthread mutexes in glibc's layout and protocol, for the
 * musl build of the shim (libgpuslice-musl.so) only.
 *
 * Why: the region's locks are robust process-shared pthread mutexes in
 * the region's files, made and taken by glibc processes (`gpuslice run`,
 * gpusliced, glibc workloads). musl's pthread_mutex_t has the same size
 * but another layout (its type word sits where glibc keeps the lock
 * word), so a musl process taking them with musl's functions would
 * neither exclude the glibc processes nor be excluded by them, and would
 * write its list pointers over glibc's. So the musl build's every
 * pthread_mutex_* and pthread_mutexattr_* call (libc_compat.h renames
 * them, force-included) comes here, and all of the shim's mutexes, the
 * shared ones and its private ones, follow glibc's x86_64 ABI:
 *
 *   lock word (offset 0): 0 free; the owner's TID, | FUTEX_WAITERS when
 *     someone sleeps on it; FUTEX_OWNER_DIED set (TID cleared) by the
 *     kernel when a robust owner died holding it
 *   __owner (8): the TID; PTHREAD_MUTEX_INCONSISTENT after EOWNERDEAD
 *     until pthread_mutex_consistent; NOTRECOVERABLE when unlocked
 *     without it
 *   __kind (16): 16 robust, 128 process-shared (futex calls without
 *     FUTEX_PRIVATE_FLAG)
 *   __list.__next (32): the link of the owning thread's robust list
 *
 * Robustness: a glibc owner's death is the kernel's to mark (its glibc
 * robust list); a musl process's is marked the same way when this file
 * registered the thread's robust list (set_robust_list, with glibc's
 * offset) because the thread had none. A thread where musl registered its
 * own first (the program uses robust mutexes itself) keeps musl's: this
 * thread's deaths while holding a region lock are then not marked, and
 * the other processes wait for the lock until their deadline (the region
 * reports GS_ERR_TIMEOUT), never take it unsafely.
 */
#include "libc_compat.h"

#ifndef __GLIBC__

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* glibc's struct __pthread_mutex_s on x86_64 / LP64. */
struct glibc_mutex {
	int lock;
	unsigned int count;
	int owner;
	unsigned int nusers;
	int kind;
	short spins, elision;
	void *prev;
	struct robust_list next; /* the robust-list link */
};
_Static_assert(sizeof(struct glibc_mutex) <= sizeof(pthread_mutex_t),
               "a glibc mutex fits musl's pthread_mutex_t");
_Static_assert(offsetof(struct glibc_mutex, kind) == 16 &&
                   offsetof(struct glibc_mutex, next) == 32,
               "glibc's x86_64 mutex layout");

#define KIND_ROBUST        16
#define KIND_PSHARED       128
#define OWNER_INCONSISTENT INT_MAX
#define OWNER_NOTRECOVER   (INT_MAX - 1)

/* This thread's TID and robust list; reset in a fork's child. */
static __thread int my_tid;
static __thread bool list_ours, list_checked;
static __thread struct robust_list_head my_list;

static struct glibc_mutex *gm(pthread_mutex_t *m)
{
	return (struct glibc_mutex *)(void *)m;
}

static int tid(void)
{
	if (my_tid == 0)
		my_tid = (int)syscall(SYS_gettid);
	return my_tid;
}

static void forked(void)
{
	my_tid = 0;
	list_ours = list_checked = false;
}

__attribute__((constructor)) static void at_load(void)
{
	(void)pthread_atfork(NULL, NULL, forked);
}

/* Registers this thread's robust list (glibc's offset) when it has none. */
static bool robust_list(void)
{
	struct robust_list_head *cur = NULL;
	size_t len = 0;

	if (list_checked)
		return list_ours;
	list_checked = true;
	if (syscall(SYS_get_robust_list, 0, &cur, &len) != 0 || cur != NULL)
		return false;
	my_list.list.next = &my_list.list;
	my_list.futex_offset = -(long)offsetof(struct glibc_mutex, next);
	my_list.list_op_pending = NULL;
	list_ours = syscall(SYS_set_robust_list, &my_list, sizeof(my_list)) == 0;
	return list_ours;
}

static long futex(int *w, int op, int val, const struct timespec *at,
                  bool shared)
{
	return syscall(SYS_futex, w, op | (shared ? 0 : FUTEX_PRIVATE_FLAG),
	               val, at, NULL, FUTEX_BITSET_MATCH_ANY);
}

/*
 * Takes m: without waiting (at == NULL, forever false), until the
 * CLOCK_REALTIME deadline `at`, or forever. 0, EOWNERDEAD (taken from a
 * dead owner), EBUSY, ETIMEDOUT or ENOTRECOVERABLE.
 */
static int take(struct glibc_mutex *m, bool wait, const struct timespec *at)
{
	bool robust = m->kind & KIND_ROBUST, shared = m->kind & KIND_PSHARED;
	bool listed = robust && robust_list(), waited = false;
	int me = tid(), old, rc = 0;

	if (robust && m->owner == OWNER_NOTRECOVER)
		return ENOTRECOVERABLE;
	if (listed)
		my_list.list_op_pending = &m->next;
	for (;;) {
		old = __atomic_load_n(&m->lock, __ATOMIC_RELAXED);
		if ((old & FUTEX_TID_MASK) == 0) {
			/*
			 * Free (a dead owner's word keeps FUTEX_WAITERS, with
			 * FUTEX_OWNER_DIED). Sleepers may remain once one
			 * slept: keep the bit then, as glibc does.
			 */
			int want = me | (waited || (old & FUTEX_WAITERS)
			                     ? (int)FUTEX_WAITERS : 0);

			if (!__atomic_compare_exchange_n(&m->lock, &old, want, false,
			                                 __ATOMIC_ACQUIRE,
			                                 __ATOMIC_RELAXED))
				continue;
			rc = robust && (old & FUTEX_OWNER_DIED) ? EOWNERDEAD : 0;
			break;
		}
		if (!wait) {
			rc = EBUSY;
			break;
		}
		if (!(old & FUTEX_WAITERS) &&
		    !__atomic_compare_exchange_n(&m->lock, &old,
		                                 old | (int)FUTEX_WAITERS, false,
		                                 __ATOMIC_RELAXED,
		                                 __ATOMIC_RELAXED))
			continue;
		waited = true;
		if (futex(&m->lock,
		          at ? FUTEX_WAIT_BITSET | FUTEX_CLOCK_REALTIME : FUTEX_WAIT,
		          old | (int)FUTEX_WAITERS, at, shared) != 0 &&
		    errno == ETIMEDOUT) {
			rc = ETIMEDOUT;
			break;
		}
	}
	if (rc == 0 || rc == EOWNERDEAD) {
		m->count = 1;
		m->owner = rc == EOWNERDEAD ? OWNER_INCONSISTENT : me;
		m->nusers++;
		if (listed) {
			m->next.next = my_list.list.next;
			my_list.list.next = &m->next;
		}
	}
	if (listed)
		my_list.list_op_pending = NULL;
	return rc;
}

int gs__gm_lock(pthread_mutex_t *m)
{
	return take(gm(m), true, NULL);
}

int gs__gm_trylock(pthread_mutex_t *m)
{
	return take(gm(m), false, NULL);
}

int gs__gm_timedlock(pthread_mutex_t *restrict m,
                     const struct timespec *restrict at)
{
	if (at == NULL || at->tv_nsec < 0 || at->tv_nsec >= 1000000000L)
		return EINVAL;
	return take(gm(m), true, at);
}

int gs__gm_unlock(pthread_mutex_t *mm)
{
	struct glibc_mutex *m = gm(mm);
	bool robust = m->kind & KIND_ROBUST;
	bool listed = robust && list_ours;
	int old;

	if ((__atomic_load_n(&m->lock, __ATOMIC_RELAXED) & FUTEX_TID_MASK) !=
	    tid())
		return EPERM;
	if (listed) {
		struct robust_list **p = &my_list.list.next;

		my_list.list_op_pending = &m->next;
		while (*p != &my_list.list && *p != &m->next)
			p = &(*p)->next;
		if (*p == &m->next)
			*p = m->next.next;
	}
	if (robust && m->owner == OWNER_INCONSISTENT)
		m->owner = OWNER_NOTRECOVER;
	else
		m->owner = 0;
	m->count = 0;
	m->nusers--;
	old = __atomic_exchange_n(&m->lock, 0, __ATOMIC_RELEASE);
	if (old & FUTEX_WAITERS)
		(void)futex(&m->lock, FUTEX_WAKE, 1, NULL, m->kind & KIND_PSHARED);
	if (listed)
		my_list.list_op_pending = NULL;
	return 0;
}

int gs__gm_consistent(pthread_mutex_t *mm)
{
	struct glibc_mutex *m = gm(mm);

	if (!(m->kind & KIND_ROBUST) || m->owner != OWNER_INCONSISTENT)
		return EINVAL;
	m->owner = tid();
	return 0;
}

int gs__gm_init(pthread_mutex_t *restrict mm,
                const pthread_mutexattr_t *restrict a)
{
	struct glibc_mutex *m = gm(mm);

	memset(mm, 0, sizeof(*mm));
	m->kind = a != NULL ? (int)a->__attr : 0;
	return 0;
}

int gs__gm_destroy(pthread_mutex_t *m)
{
	return gm(m)->lock & FUTEX_TID_MASK ? EBUSY : 0;
}

int gs__gm_attr_init(pthread_mutexattr_t *a)
{
	a->__attr = 0;
	return 0;
}

int gs__gm_attr_destroy(pthread_mutexattr_t *a)
{
	(void)a;
	return 0;
}

int gs__gm_attr_setpshared(pthread_mutexattr_t *a, int shared)
{
	if (shared != PTHREAD_PROCESS_SHARED && shared != PTHREAD_PROCESS_PRIVATE)
		return EINVAL;
	a->__attr = (a->__attr & ~(unsigned)KIND_PSHARED) |
	            (shared == PTHREAD_PROCESS_SHARED ? KIND_PSHARED : 0);
	return 0;
}

int gs__gm_attr_setrobust(pthread_mutexattr_t *a, int robust)
{
	if (robust != PTHREAD_MUTEX_ROBUST && robust != PTHREAD_MUTEX_STALLED)
		return EINVAL;
	a->__attr = (a->__attr & ~(unsigned)KIND_ROBUST) |
	            (robust == PTHREAD_MUTEX_ROBUST ? KIND_ROBUST : 0);
	return 0;
}

#endif
