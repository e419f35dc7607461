/*
 * mutex_cross.c - gs-mutex-cross (glibc) and gs-mutex-cross-musl (musl,
 * with shim/musl_mutex.c as the shim's musl build has it): one robust
 * process-shared pthread mutex in a file, as the region keeps its locks,
 * taken by processes of both C libraries.
 *
 *   gs-mutex-cross FILE init        make the file: the mutex, a counter
 *   gs-mutex-cross FILE count N     N times: lock, counter += 1 by a
 *                                   read, a yield and a write, unlock
 *   gs-mutex-cross FILE hold        lock, print "held", sleep until killed
 *   gs-mutex-cross FILE take        lock within 5 s: prints "ok",
 *                                   "ownerdead" (the holder died; made
 *                                   consistent) or "timeout"
 *   gs-mutex-cross FILE read        print the counter
 *
 * Exit 0, or 1 with a message on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct shared {
	pthread_mutex_t m;
	char pad[64 - sizeof(pthread_mutex_t)];
	volatile uint64_t counter;
};

static int lock_in(pthread_mutex_t *m, int seconds)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += seconds;
	return pthread_mutex_timedlock(m, &ts);
}

int main(int argc, char **argv)
{
	struct shared *s;
	int fd, rc;

	if (argc < 3) {
		fprintf(stderr, "usage: gs-mutex-cross FILE init|count N|hold|take|read\n");
		return 1;
	}
	fd = open(argv[1], O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, 4096) != 0) {
		fprintf(stderr, "gs-mutex-cross: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	s = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED) {
		fprintf(stderr, "gs-mutex-cross: mmap: %s\n", strerror(errno));
		return 1;
	}
	if (strcmp(argv[2], "init") == 0) {
		pthread_mutexattr_t a;

		memset(s, 0, sizeof(*s));
		if (pthread_mutexattr_init(&a) != 0 ||
		    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED) != 0 ||
		    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) != 0 ||
		    pthread_mutex_init(&s->m, &a) != 0) {
			fprintf(stderr, "gs-mutex-cross: mutex init failed\n");
			return 1;
		}
		(void)pthread_mutexattr_destroy(&a);
		return 0;
	}
	if (strcmp(argv[2], "count") == 0 && argc == 4) {
		long n = atol(argv[3]);

		for (long i = 0; i < n; i++) {
			uint64_t c;

			rc = lock_in(&s->m, 10);
			if (rc == EOWNERDEAD)
				rc = pthread_mutex_consistent(&s->m);
			if (rc != 0) {
				fprintf(stderr, "gs-mutex-cross: lock: %s\n", strerror(rc));
				return 1;
			}
			c = s->counter;
			if ((i & 63) == 0)
				(void)sched_yield();
			s->counter = c + 1;
			if (pthread_mutex_unlock(&s->m) != 0) {
				fprintf(stderr, "gs-mutex-cross: unlock failed\n");
				return 1;
			}
		}
		return 0;
	}
	if (strcmp(argv[2], "hold") == 0) {
		rc = lock_in(&s->m, 10);
		if (rc == EOWNERDEAD)
			rc = pthread_mutex_consistent(&s->m);
		if (rc != 0) {
			fprintf(stderr, "gs-mutex-cross: lock: %s\n", strerror(rc));
			return 1;
		}
		printf("held\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	if (strcmp(argv[2], "take") == 0) {
		rc = lock_in(&s->m, 5);
		if (rc == EOWNERDEAD && pthread_mutex_consistent(&s->m) == 0) {
			printf("ownerdead\n");
			rc = 0;
		} else if (rc == 0) {
			printf("ok\n");
		} else if (rc == ETIMEDOUT) {
			printf("timeout\n");
			return 0;
		}
		if (rc != 0 || pthread_mutex_unlock(&s->m) != 0) {
			fprintf(stderr, "gs-mutex-cross: take: %s\n", strerror(rc));
			return 1;
		}
		return 0;
	}
	if (strcmp(argv[2], "read") == 0) {
		printf("%llu\n", (unsigned long long)s->counter);
		return 0;
	}
	fprintf(stderr, "gs-mutex-cross: unknown mode %s\n", argv[2]);
	return 1;
}
