/*
 * lock_holder.c - gs-daemon-lock-holder MODE PATH: what a hostile tenant
 * can do to the locks of a region it can open, for the freeze test.
 *
 *   flock PATH   takes flock(LOCK_EX) on PATH (the region's limits file,
 *                readable by every tenant, as the shim once did with
 *                LOCK_SH) and keeps it.
 *   mutex PATH   maps the usage file PATH (writable by every tenant) and
 *                takes its process-shared mutex, then keeps it.
 *
 * Prints "held" on stdout once it holds the lock, then sleeps until it is
 * killed (the test also SIGSTOPs it: a stopped holder never lets go).
 * Exit 1 when the lock cannot be taken at all.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include "region_int.h"

int main(int argc, char **argv)
{
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: gs-daemon-lock-holder flock|mutex PATH\n");
		return 2;
	}
	if (strcmp(argv[1], "flock") == 0) {
		fd = open(argv[2], O_RDONLY);
		if (fd < 0 || flock(fd, LOCK_EX) != 0) {
			perror(argv[2]);
			return 1;
		}
	} else if (strcmp(argv[1], "mutex") == 0) {
		struct gs_ru_file *ru;

		fd = open(argv[2], O_RDWR);
		if (fd < 0) {
			perror(argv[2]);
			return 1;
		}
		ru = mmap(NULL, sizeof(*ru), PROT_READ | PROT_WRITE,
		          MAP_SHARED, fd, 0);
		if (ru == MAP_FAILED ||
		    pthread_mutex_lock(&ru->h.lock.m) != 0) {
			perror("usage mutex");
			return 1;
		}
	} else {
		fprintf(stderr, "gs-daemon-lock-holder: unknown mode %s\n",
		        argv[1]);
		return 2;
	}
	printf("held\n");
	fflush(stdout);
	for (;;)
		pause();
}
