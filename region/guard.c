/*
 * guard.c - the SIGBUS guard over region mappings (see guard.h).
 *
 * The handler is (re)installed by gs__guard_add whenever SIGBUS's
 * disposition is not ours, chaining to what was there. The table is
 * written by gs__guard_add/del (under a mutex, rare: a mapping made or
 * dropped) and read by the signal handler without a lock:
 * each slot's start is published last (release) and cleared first, so the
 * handler sees either a whole range or none. The handler only loads
 * atomics, calls mmap (a system call; it touches no libc state) and stores
 * atomics.
 */
#include "guard.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define GUARD_MAX 1024

struct guard_range {
	uintptr_t start; /* 0: free (atomic) */
	size_t len;
	int tripped; /* atomic */
};

static struct guard_range ranges[GUARD_MAX];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction prev;
static bool installed;
static uintptr_t page_mask;
static uint64_t caught;

static void on_bus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;

	for (int i = 0; i < GUARD_MAX; i++) {
		uintptr_t s =
		    __atomic_load_n(&ranges[i].start, __ATOMIC_ACQUIRE);
		size_t n;

		if (s == 0 || a < s)
			continue;
		n = __atomic_load_n(&ranges[i].len, __ATOMIC_RELAXED);
		if (a - s >= n)
			continue;
		if (mmap((void *)(a & page_mask), ~page_mask + 1,
		         PROT_READ | PROT_WRITE,
		         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
		         0) == MAP_FAILED)
			break;
		__atomic_store_n(&ranges[i].tripped, 1, __ATOMIC_RELEASE);
		__atomic_add_fetch(&caught, 1, __ATOMIC_RELAXED);
		return; /* the access is retried and reads zeros */
	}
	/* Not ours: whatever handled SIGBUS before us does. */
	if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction != NULL) {
		prev.sa_sigaction(sig, si, uc);
		return;
	}
	if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
		prev.sa_handler(sig);
		return;
	}
	/* The default action: the faulting access runs again and the
	 * kernel's SIGBUS finds no handler. */
	{
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		(void)sigaction(SIGBUS, &dfl, NULL);
	}
}

static void install(void)
{
	struct sigaction sa;

	page_mask = ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_bus;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &prev) == 0)
		installed = true;
}

bool gs__guard_add(void *p, size_t len)
{
	bool ok = false;

	if (p == NULL || len == 0)
		return false;
	pthread_mutex_lock(&mu);
	/* Installed, and still first: a handler set after ours (a runtime,
	 * a test harness) would get our faults; ours goes first again and
	 * passes the others' on to it. */
	if (installed) {
		struct sigaction cur;

		if (sigaction(SIGBUS, NULL, &cur) != 0 ||
		    !(cur.sa_flags & SA_SIGINFO) || cur.sa_sigaction != on_bus)
			installed = false;
	}
	if (!installed)
		install();
	for (int i = 0; i < GUARD_MAX && installed; i++) {
		if (__atomic_load_n(&ranges[i].start, __ATOMIC_RELAXED) != 0)
			continue;
		__atomic_store_n(&ranges[i].len, len, __ATOMIC_RELAXED);
		__atomic_store_n(&ranges[i].tripped, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&ranges[i].start, (uintptr_t)p,
		                 __ATOMIC_RELEASE);
		ok = true;
		break;
	}
	pthread_mutex_unlock(&mu);
	return ok;
}

void gs__guard_del(void *p)
{
	pthread_mutex_lock(&mu);
	for (int i = 0; i < GUARD_MAX; i++)
		if (__atomic_load_n(&ranges[i].start, __ATOMIC_RELAXED) ==
		    (uintptr_t)p) {
			__atomic_store_n(&ranges[i].start, 0, __ATOMIC_RELEASE);
			break;
		}
	pthread_mutex_unlock(&mu);
}

bool gs__guard_tripped(const void *p)
{
	for (int i = 0; i < GUARD_MAX; i++)
		if (__atomic_load_n(&ranges[i].start, __ATOMIC_ACQUIRE) ==
		    (uintptr_t)p)
			return __atomic_load_n(&ranges[i].tripped,
			                       __ATOMIC_ACQUIRE) != 0;
	return false;
}

uint64_t gs__guard_caught(void)
{
	return __atomic_load_n(&caught, __ATOMIC_RELAXED);
}
