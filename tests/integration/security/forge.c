/*
 * forge.c - gs-region-forge: what a hostile tenant can do to the shared
 * region's usage file (mode 0666) with its own hands, for the tests that
 * check none of it decides enforcement.
 *
 *   gs-region-forge proc DIR SLICE PID...  add a process entry for each
 *                                        PID (any process, e.g. a
 *                                        victim's) to SLICE; prints
 *                                        "slot N" for each
 *   gs-region-forge bump DIR PID         bump the generation of PID's
 *                                        entries (the shim's reference
 *                                        to its own entry goes stale)
 *   gs-region-forge zero DIR SLICE       zero SLICE's memory books
 *
 * Writes without taking the region lock, as an attacker would. Exit 0 on
 * success, 1 when the region or the slice is not there, 2 on usage.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "region_int.h"

static void *map(const char *dir, const char *name, int flags, size_t *len)
{
	char path[4096];
	struct stat st;
	void *p;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, flags);
	if (fd < 0 || fstat(fd, &st) != 0) {
		perror(path);
		return NULL;
	}
	*len = (size_t)st.st_size;
	p = mmap(NULL, *len,
	         (flags & O_ACCMODE) == O_RDWR ? PROT_READ | PROT_WRITE
	                                       : PROT_READ,
	         MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static int slice_index(const struct gs_rl_file *rl, const char *name)
{
	for (int i = 0; i < GS_REGION_MAX_SLICES; i++)
		if (rl->slice[i].state == GS_RL_LIVE &&
		    strcmp(rl->slice[i].lim.name, name) == 0)
			return i;
	return -1;
}

static unsigned long long start_time(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long t = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (f == NULL || fgets(buf, sizeof(buf), f) == NULL) {
		if (f)
			fclose(f);
		return 0;
	}
	fclose(f);
	p = strrchr(buf, ')');
	for (int i = 0; p && i < 20; i++)
		p = strchr(p + 1, ' ');
	if (p)
		sscanf(p, " %llu", &t);
	return t;
}

static unsigned long long my_pidns(void)
{
	char link[64];
	ssize_t n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
	char *p;

	if (n <= 0)
		return 0;
	link[n] = '\0';
	p = strchr(link, '[');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

int main(int argc, char **argv)
{
	struct gs_rl_file *rl;
	struct gs_ru_file *ru;
	size_t ll, ul;

	if (argc < 4) {
		fprintf(stderr, "usage: gs-region-forge proc DIR SLICE PID | "
		                "bump DIR PID | zero DIR SLICE\n");
		return 2;
	}
	rl = map(argv[2], GS_REGION_LIMITS_FILE, O_RDONLY, &ll);
	ru = map(argv[2], GS_REGION_USAGE_FILE, O_RDWR, &ul);
	if (rl == NULL || ru == NULL)
		return 1;
	if (strcmp(argv[1], "proc") == 0 && argc >= 5) {
		int s = slice_index(rl, argv[3]), a = 4, i = 0;

		if (s < 0) {
			fprintf(stderr, "no slice %s\n", argv[3]);
			return 1;
		}
		for (; a < argc && i < GS_REGION_MAX_PROCS; i++) {
			struct gs_ru_proc *p = &ru->proc[i];
			int pid = atoi(argv[a]);

			if (p->state != GS_RU_PROC_FREE)
				continue;
			a++;
			p->generation++;
			p->pid = pid;
			p->start_time = start_time(pid);
			p->pidns = my_pidns();
			p->slice = s;
			p->slice_gen = rl->slice[s].generation;
			p->flags = 0;
			p->uid = (uint32_t)geteuid();
			p->state = GS_RU_PROC_LIVE;
			ru->slice[s].n_procs++;
			printf("slot %d\n", i);
		}
		if (a < argc) {
			fprintf(stderr, "process table full\n");
			return 1;
		}
		return 0;
	}
	if (strcmp(argv[1], "bump") == 0) {
		int pid = atoi(argv[3]), n = 0;

		for (int i = 0; i < GS_REGION_MAX_PROCS; i++)
			if (ru->proc[i].state == GS_RU_PROC_LIVE &&
			    ru->proc[i].pid == pid) {
				ru->proc[i].generation += 2;
				n++;
			}
		printf("bumped %d\n", n);
		return n ? 0 : 1;
	}
	if (strcmp(argv[1], "zero") == 0) {
		int s = slice_index(rl, argv[3]);

		if (s < 0)
			return 1;
		for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
			ru->slice[s].dev[d].mem_used = 0;
		for (int i = 0; i < GS_REGION_MAX_PROCS; i++)
			if (ru->proc[i].state == GS_RU_PROC_LIVE &&
			    ru->proc[i].slice == s)
				for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
					ru->proc_dev[i][d].mem_used = 0;
		printf("zeroed\n");
		return 0;
	}
	fprintf(stderr, "unknown command %s\n", argv[1]);
	return 2;
}
