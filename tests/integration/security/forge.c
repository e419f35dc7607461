/*
 * forge.c - gs-region-forge: what a hostile tenant can do to the shared
 * region's files with its own hands, for the tests that check none of it
 * decides enforcement over anyone else.
 *
 *   gs-region-forge proc DIR SLICE PID...  add a process entry for each
 *                                        PID (any process, e.g. a
 *                                        victim's) to SLICE; prints
 *                                        "slot N" for each
 *   gs-region-forge bump DIR PID         bump the generation of PID's
 *                                        entries (the shim's reference
 *                                        to its own entry goes stale)
 *   gs-region-forge zero DIR SLICE       zero SLICE's memory books
 *   gs-region-forge drain DIR SLICE SEC  for SEC seconds, keep SLICE's
 *                                        token buckets empty (and, from
 *                                        layout 3, tell the others it
 *                                        has no tokens); SLICE "*": every
 *                                        slice not the caller's
 *   gs-region-forge refill DIR SLICE SEC for SEC seconds, keep SLICE's
 *                                        token buckets full
 *   gs-region-forge turns DIR SLICE SEC  for SEC seconds, claim the turn
 *                                        on every GPU for SLICE (the
 *                                        caller's) and tell the others
 *                                        nobody else waits or has tokens,
 *                                        in the shared file when it can
 *                                        write it, and in SLICE's own
 *                                        scheduler records (layout 5:
 *                                        the only ones a tenant can);
 *                                        prints what it could write
 *   gs-region-forge poison DIR SLICE SEC for SEC seconds, keep SLICE's
 *                                        books saying an infinity of
 *                                        memory-time and no GPU time
 *   gs-region-forge hide DIR SLICE SEC   for SEC seconds, keep SLICE's
 *                                        books (and its processes') saying
 *                                        it used no GPU time
 *   gs-region-forge turnsall DIR - SEC   for SEC seconds, claim the turn
 *                                        on every GPU in the scheduler
 *                                        records of every slice of the
 *                                        caller's (its own owner file)
 *   gs-region-forge watch DIR - SEC      for SEC seconds, read who holds
 *                                        the turn on GPU 0 every 200 us
 *                                        (the shared file is readable by
 *                                        all); print each holding as
 *                                        "hold SLOT MS"
 *   gs-region-forge peek DIR SLICE       print SLICE's processes ("pid
 *                                        N") and memory in use ("mem N")
 *   gs-region-forge slot DIR SLICE       print SLICE's slot number
 *
 * SLICE is looked up in the limits this user can read (from layout 3 a
 * tenant's view names only its own slices and uid 0's); "#N" names slot
 * N, whose owner file, when the view does not say whose it is, is
 * looked for among all of them. A uid-0 slice's books (layout 4: its
 * private file) are looked for in DIR/books/usage.0.<slot>, then, as in
 * a pod, at DIR/usage.0 - whatever file is mounted there.
 *
 * Writes without taking any region lock, as an attacker would. Builds
 * against either layout (GS_REGION_VERSION 2: one shared usage file;
 * 3: books, buckets and processes in usage.<owner uid>), so the tests
 * can be run against the code before and after the split. Exit 0 on
 * success, 1 when a file, the slice or the entry cannot be had (the
 * message says why, e.g. "Permission denied"), 2 on usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "region_int.h"

static void *map(const char *dir, const char *name, int flags)
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
	p = mmap(NULL, (size_t)st.st_size,
	         (flags & O_ACCMODE) == O_RDWR ? PROT_READ | PROT_WRITE
	                                       : PROT_READ,
	         MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* The limits as this user reads them: its own view, the public one, or
 * (root, or layout 2) the writer's file. */
static struct gs_rl_file *map_limits(const char *dir)
{
	char name[64], path[4096];

	snprintf(name, sizeof(name), "%s.%u", GS_REGION_LIMITS_FILE,
	         (unsigned)geteuid());
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (geteuid() != 0 && access(path, R_OK) == 0)
		return map(dir, name, O_RDONLY);
	snprintf(path, sizeof(path), "%s/limits.public", dir);
	if (geteuid() != 0 && access(path, R_OK) == 0)
		return map(dir, "limits.public", O_RDONLY);
	return map(dir, GS_REGION_LIMITS_FILE, O_RDONLY);
}

static int slice_index(const struct gs_rl_file *rl, const char *name)
{
	if (name[0] == '#')
		return atoi(name + 1); /* a slot, for a slice not named to us */
	for (int i = 0; i < GS_REGION_MAX_SLICES; i++)
		if (rl->slice[i].state == GS_RL_LIVE &&
		    strcmp(rl->slice[i].lim.name, name) == 0)
			return i;
	fprintf(stderr, "no slice %s\n", name);
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

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Where one slice's books, buckets and processes are, in either layout. */
struct books {
	struct gs_ru_slice *slice; /* [GS_REGION_MAX_SLICES] */
	struct gs_ru_proc *proc;   /* [GS_REGION_MAX_PROCS] */
	struct gs_ru_books (*proc_dev)[GS_REGION_MAX_DEVICES];
	int64_t *tokens[GS_REGION_MAX_DEVICES]; /* slice s's, per GPU */
};

static int books_of(const char *dir, const struct gs_rl_file *rl, int s,
                    int flags, struct books *b)
{
#if GS_REGION_VERSION >= 3
	char name[64];
	struct gs_ro_file *ro = NULL;
	uint32_t owner = rl->slice[s].lim.owner_uid;

	if (owner == GS_RL_VIEW_PUBLIC) {
		/* Not ours: its owner is not shown. Try every owner file. */
		DIR *d = opendir(dir);
		struct dirent *de;

		while (ro == NULL && d != NULL && (de = readdir(d)) != NULL)
			if (strncmp(de->d_name, "usage.", 6) == 0 &&
			    strchr(de->d_name + 6, '.') == NULL &&
			    atoi(de->d_name + 6) != 0 &&
			    (unsigned)atoi(de->d_name + 6) != geteuid())
				ro = map(dir, de->d_name, flags);
		if (d != NULL)
			closedir(d);
	} else {
#ifdef GS_REGION_BOOKS_DIR
		/* Layout 4: a uid-0 slice's private books, in root's
		 * directory on the host; in a pod, its own slice's file is
		 * mounted at usage.0 (and books/ is not there at all). */
		char path[4096];

		snprintf(name, sizeof(name), "%s/%s.0.%d", GS_REGION_BOOKS_DIR,
		         GS_REGION_USAGE_FILE, s);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (owner == 0 &&
		    (rl->slice[s].lim.flags & GS_SLICE_PRIVATE_BOOKS) &&
		    access(path, F_OK) == 0)
			ro = map(dir, name, flags);
		if (ro == NULL)
#endif
		{
			snprintf(name, sizeof(name), "%s.%u",
			         GS_REGION_USAGE_FILE, (unsigned)owner);
			ro = map(dir, name, flags);
		}
	}
	if (ro == NULL)
		return 1;
	b->slice = ro->slice;
	b->proc = ro->proc;
	b->proc_dev = ro->proc_dev;
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
		b->tokens[d] = &ro->bucket[d][s].tokens_ns;
#else
	struct gs_ru_file *ru = map(dir, GS_REGION_USAGE_FILE, flags);

	if (ru == NULL)
		return 1;
	b->slice = ru->slice;
	b->proc = ru->proc;
	b->proc_dev = ru->proc_dev;
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
		b->tokens[d] = &ru->sched[d][s].tokens_ns;
#endif
	return 0;
}

/* drain / refill: keeps slice s's tokens at `tokens` for `sec` seconds. */
static int hold_tokens(const char *dir, const struct gs_rl_file *rl, int s,
                       int64_t tokens, double sec)
{
	struct books b;

	if (s < 0) {
		/* Every slot: a drain aimed at slices whose names are not
		 * shown to us (layout 2 kept every bucket in one file). */
		int rc = 0;
		uint64_t end = mono_ns() + (uint64_t)(sec * 1e9);

		while (mono_ns() < end) {
			rc = 0;
			for (int t = 0; t < GS_REGION_MAX_SLICES; t++)
				if (rl->slice[t].state == GS_RL_LIVE &&
				    (uint64_t)rl->slice[t].lim.owner_uid !=
				        (uint64_t)geteuid())
					rc |= hold_tokens(dir, rl, t, tokens,
					                  0.05);
		}
		return rc;
	}

	uint64_t end = mono_ns() + (uint64_t)(sec * 1e9);
#if GS_REGION_VERSION >= 3
	struct gs_ru_file *ru = map(dir, GS_REGION_USAGE_FILE, O_RDWR);
#endif
	int rc = books_of(dir, rl, s, O_RDWR, &b);

#if GS_REGION_VERSION >= 3
	if (rc != 0 && tokens < 0 && ru == NULL) {
		/* Layout 5: the shared file is the daemon's too. */
		printf("bucket out of reach; shared record out of reach\n");
		return 1;
	}
	if (rc != 0 && tokens < 0 && ru != NULL) {
		/* The bucket is out of reach: lie about it where the
		 * others look instead. */
		printf("bucket out of reach; forging the shared record\n");
		fflush(stdout);
		while (mono_ns() < end) {
			struct timespec nap = {0, 200000L};

			for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
				ru->sched[d][s].broke_until_ns =
				    mono_ns() + 10000000000ULL;
				ru->sched[d][s].waiting = 0;
			}
			nanosleep(&nap, NULL);
		}
		return 1;
	}
#endif
	if (rc != 0)
		return 1;
	printf("holding tokens at %lld\n", (long long)tokens);
	fflush(stdout);
	while (mono_ns() < end) {
		struct timespec nap = {0, 200000L};

		for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
			*b.tokens[d] = tokens;
		nanosleep(&nap, NULL);
	}
	return 0;
}

/* One slice's scheduler record, claiming everything. */
static void claim(struct gs_sched_slice *S, uint64_t gen, uint64_t now)
{
	S->generation = gen;
	S->waiting = 1;
	S->seen_ns = now;
	S->last_active_ns = now;
	S->inflight = 1;
	S->busy_until_ns = now + 5000000000ULL;
	S->vtime = 0;
	S->broke_until_ns = 0;
}

/* turns: slice s (ours) takes the turns, the others are told to wait. */
static int turns(const char *dir, const struct gs_rl_file *rl, int s,
                 double sec)
{
	uint64_t end = mono_ns() + (uint64_t)(sec * 1e9);
	uint64_t gen = rl->slice[s].generation;
	struct gs_ru_file *ru = map(dir, GS_REGION_USAGE_FILE, O_RDWR);
	struct gs_sched_slice (*own)[GS_REGION_MAX_SLICES] = NULL;

#if GS_REGION_VERSION >= 5
	{
		char name[64];
		struct gs_ro_file *ro;

		snprintf(name, sizeof(name), "%s.%u", GS_REGION_USAGE_FILE,
		         (unsigned)geteuid());
		ro = map(dir, name, O_RDWR);
		if (ro != NULL)
			own = ro->ask;
	}
#endif
	printf("shared file %s; own records %s\n",
	       ru ? "written" : "out of reach", own ? "written" : "none");
	fflush(stdout);
	if (ru == NULL && own == NULL)
		return 1;
	while (mono_ns() < end) {
		/* Every millisecond: "without pause" next to 20 ms turns,
		 * without taking a core of a 2-core test machine. */
		struct timespec nap = {0, 1000000L};
		uint64_t now = mono_ns();

		for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
			if (own != NULL)
				claim(&own[d][s], gen, now);
			if (ru == NULL)
				continue;
			claim(&ru->sched[d][s], gen, now);
			ru->dev[d].sched.holder = s;
			ru->dev[d].sched.holder_gen = gen;
			ru->dev[d].sched.holder_since_ns = now;
			for (int t = 0; t < GS_REGION_MAX_SLICES; t++) {
				if (t == s)
					continue;
				ru->sched[d][t].waiting = 0;
				ru->sched[d][t].inflight = 0;
				ru->sched[d][t].broke_until_ns =
				    now + 5000000000ULL;
			}
		}
		nanosleep(&nap, NULL);
	}
	return ru != NULL ? 0 : 3;
}

/* bump: every owner file this user can write (layout 3), or usage. */
static int bump(const char *dir, int pid)
{
	int n = 0;
#if GS_REGION_VERSION >= 3
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d != NULL && (de = readdir(d)) != NULL) {
		struct gs_ro_file *ro;
		char path[4096];

		if (strncmp(de->d_name, "usage.", 6) != 0 ||
		    strchr(de->d_name + 6, '.') != NULL)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (access(path, W_OK) != 0)
			continue;
		ro = map(dir, de->d_name, O_RDWR);
		for (int i = 0; ro != NULL && i < GS_REGION_MAX_PROCS; i++)
			if (ro->proc[i].state == GS_RU_PROC_LIVE &&
			    ro->proc[i].pid == pid) {
				ro->proc[i].generation += 2;
				n++;
			}
	}
	if (d != NULL)
		closedir(d);
#else
	struct gs_ru_file *ru = map(dir, GS_REGION_USAGE_FILE, O_RDWR);

	for (int i = 0; ru != NULL && i < GS_REGION_MAX_PROCS; i++)
		if (ru->proc[i].state == GS_RU_PROC_LIVE &&
		    ru->proc[i].pid == pid) {
			ru->proc[i].generation += 2;
			n++;
		}
#endif
	printf("bumped %d\n", n);
	return n ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct gs_rl_file *rl;
	struct books b;
	int s;

	if (argc < 4) {
		fprintf(stderr,
		        "usage: gs-region-forge proc DIR SLICE PID... | bump "
		        "DIR PID | zero DIR SLICE | drain DIR SLICE SEC | "
		        "refill DIR SLICE SEC | turns DIR SLICE SEC | peek DIR "
		        "SLICE\n");
		return 2;
	}
	rl = map_limits(argv[2]);
	if (rl == NULL)
		return 1;
	if (strcmp(argv[1], "bump") == 0)
		return bump(argv[2], atoi(argv[3]));
	s = strcmp(argv[3], "*") == 0 || strcmp(argv[3], "-") == 0
	        ? 0
	        : slice_index(rl, argv[3]);
	if (s < 0)
		return 1;
	if (strcmp(argv[1], "drain") == 0 && argc >= 5 &&
	    strcmp(argv[3], "*") == 0)
		return hold_tokens(argv[2], rl, -1, -10000000000LL,
		                   atof(argv[4]));
	if (strcmp(argv[1], "drain") == 0 && argc >= 5)
		return hold_tokens(argv[2], rl, s, -10000000000LL,
		                   atof(argv[4]));
	if (strcmp(argv[1], "refill") == 0 && argc >= 5)
		return hold_tokens(argv[2], rl, s, 100000000LL, atof(argv[4]));
	if (strcmp(argv[1], "turns") == 0 && argc >= 5)
		return turns(argv[2], rl, s, atof(argv[4]));
#if GS_REGION_VERSION >= 5
	if (strcmp(argv[1], "turnsall") == 0 && argc >= 5) {
		char name[64];
		struct gs_ro_file *ro;
		uint64_t end = mono_ns() + (uint64_t)(atof(argv[4]) * 1e9);
		int mine[GS_REGION_MAX_SLICES], n = 0;

		snprintf(name, sizeof(name), "%s.%u", GS_REGION_USAGE_FILE,
		         (unsigned)geteuid());
		ro = map(argv[2], name, O_RDWR);
		if (ro == NULL)
			return 1;
		for (int t = 0; t < GS_REGION_MAX_SLICES; t++)
			if (rl->slice[t].state == GS_RL_LIVE &&
			    rl->slice[t].lim.owner_uid == geteuid())
				mine[n++] = t;
		printf("claiming for %d slices\n", n);
		fflush(stdout);
		while (mono_ns() < end) {
			struct timespec nap = {0, 1000000L};
			uint64_t now = mono_ns();

			for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
				for (int i = 0; i < n; i++)
					claim(&ro->ask[d][mine[i]],
					      rl->slice[mine[i]].generation, now);
			nanosleep(&nap, NULL);
		}
		return 0;
	}
#endif
#if GS_REGION_VERSION >= 5
	if (strcmp(argv[1], "watch") == 0 && argc >= 5) {
		const struct gs_ru_file *ru =
		    map(argv[2], GS_REGION_USAGE_FILE, O_RDONLY);
		uint64_t end = mono_ns() + (uint64_t)(atof(argv[4]) * 1e9);
		uint64_t since = mono_ns();
		int held = -2;

		if (ru == NULL)
			return 1;
		while (mono_ns() < end) {
			struct timespec nap = {0, 200000L};
			int h = __atomic_load_n(&ru->dev[0].sched.holder,
			                        __ATOMIC_ACQUIRE);
			uint64_t now = mono_ns();

			if (h != held) {
				if (held != -2)
					printf("hold %d %.3f\n", held,
					       (double)(now - since) / 1e6);
				held = h;
				since = now;
			}
			nanosleep(&nap, NULL);
		}
		printf("hold %d %.3f\n", held,
		       (double)(mono_ns() - since) / 1e6);
		return 0;
	}
#endif
	if (strcmp(argv[1], "slot") == 0) {
		printf("%d\n", s);
		return 0;
	}
	if (strcmp(argv[1], "peek") == 0) {
		uint64_t mem = 0;

		if (books_of(argv[2], rl, s, O_RDONLY, &b) != 0)
			return 1;
		for (int i = 0; i < GS_REGION_MAX_PROCS; i++)
			if (b.proc[i].state == GS_RU_PROC_LIVE &&
			    b.proc[i].slice == s)
				printf("pid %d\n", b.proc[i].pid);
		for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
			mem += b.slice[s].dev[d].mem_used;
		printf("mem %llu\n", (unsigned long long)mem);
		return 0;
	}
	if (books_of(argv[2], rl, s, O_RDWR, &b) != 0)
		return 1;
	if (strcmp(argv[1], "proc") == 0 && argc >= 5) {
		int a = 4, i = 0;

		for (; a < argc && i < GS_REGION_MAX_PROCS; i++) {
			struct gs_ru_proc *p = &b.proc[i];
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
			b.slice[s].n_procs++;
			printf("slot %d\n", i);
		}
		if (a < argc) {
			fprintf(stderr, "process table full\n");
			return 1;
		}
		return 0;
	}
	if (strcmp(argv[1], "poison") == 0 && argc >= 5) {
		uint64_t end = mono_ns() + (uint64_t)(atof(argv[4]) * 1e9);

		printf("poisoning\n");
		fflush(stdout);
		while (mono_ns() < end) {
			struct timespec nap = {0, 1000000L};

			for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
				b.slice[s].dev[d].mem_byte_s = INFINITY;
				b.slice[s].dev[d].busy_ns = 0;
			}
			nanosleep(&nap, NULL);
		}
		return 0;
	}
	if (strcmp(argv[1], "hide") == 0 && argc >= 5) {
		uint64_t end = mono_ns() + (uint64_t)(atof(argv[4]) * 1e9);

		printf("hiding\n");
		fflush(stdout);
		while (mono_ns() < end) {
			struct timespec nap = {0, 1000000L};

			for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
				b.slice[s].dev[d].busy_ns = 0;
				b.slice[s].dev[d].launches = 0;
			}
			for (int i = 0; i < GS_REGION_MAX_PROCS; i++)
				if (b.proc[i].state == GS_RU_PROC_LIVE &&
				    b.proc[i].slice == s)
					for (int d = 0; d < GS_REGION_MAX_DEVICES;
					     d++)
						b.proc_dev[i][d].busy_ns = 0;
			nanosleep(&nap, NULL);
		}
		return 0;
	}
	if (strcmp(argv[1], "zero") == 0) {
		for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
			b.slice[s].dev[d].mem_used = 0;
		for (int i = 0; i < GS_REGION_MAX_PROCS; i++)
			if (b.proc[i].state == GS_RU_PROC_LIVE &&
			    b.proc[i].slice == s)
				for (int d = 0; d < GS_REGION_MAX_DEVICES; d++)
					b.proc_dev[i][d].mem_used = 0;
		printf("zeroed\n");
		return 0;
	}
	fprintf(stderr, "unknown command %s\n", argv[1]);
	return 2;
}
