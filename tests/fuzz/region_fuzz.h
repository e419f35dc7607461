/*
 * region_fuzz.h - the harness the region's libFuzzer targets share
 * (fuzz_region_owner, fuzz_region_books, fuzz_region_usage): one region
 * file a tenant can write is given the fuzzer's bytes, and then goes
 * through what the daemon and the shim do with it.
 *
 * Set up once per process, in a fresh temporary directory: a daemon's
 * region (OWNER, arbiter) with a slice of uid 1000, or of the caller
 * when it is not root (its owner file usage.<uid>), and a slice of uid 0
 * (its private books, books/usage.0.<slot>), and a region `gpuslice run`
 * made (RUNNER, no arbiter: its shared `usage` is written by every
 * tenant) with one slice;
 * a GPU in each, and this process attached to every slice (so the
 * process tables hold a live entry). The target file's bytes are then
 * kept as its pristine image.
 *
 * Each input is applied to the target file: first byte odd, the rest
 * overwrites the file from its start (bytes in as the file's contents);
 * even, the rest is a list of patches, each a 3-byte offset (modulo the
 * file's size), a length byte and that many bytes. The 64 bytes of the
 * file's robust mutex are left as they were: a tenant's hold of that
 * lock is the integration tests' (daemon_answers_while_a_tenant_holds_
 * region_locks, a_wedged_region_lock_*), and glibc's mutex itself is not
 * under test. Cutting files short is cutting_region_files_short_*.
 *
 * Then, as the daemon would: reap, every slice's usage and process count,
 * the process list, an arbiter pass, the cut-short report; and as a
 * tenant's shim would: open the region (validation), find its slice,
 * attach, reserve, view and release memory, one admission and settlement
 * on the launch path (gs/region_launch.h, gs/region_sched.h), detach.
 * Any crash or sanitizer report is a finding; errors are expected. (A
 * shared usage file that does not validate costs each tenant's open the
 * retries of join_files, about 0.1 s: fuzz_region_usage runs some 20
 * inputs a second, the owner-file targets about a thousand.)
 * Afterwards every file of the region the input touched is written back
 * from its pristine image, so inputs do not depend on each other.
 */
#ifndef GS_TESTS_REGION_FUZZ_H
#define GS_TESTS_REGION_FUZZ_H

#include "gs/region.h"
#include "gs/region_launch.h"
#include "gs/region_sched.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum region_fuzz_file {
	REGION_FUZZ_OWNER, /* usage.<uid> in the daemon's region */
	REGION_FUZZ_BOOKS, /* books/usage.0.<slot> in the daemon's region */
	REGION_FUZZ_USAGE, /* usage in the runner's region */
};

#define REGION_FUZZ_MUTEX_AT  128 /* gs_ro_header.lock, gs_ru_header.lock */
#define REGION_FUZZ_MUTEX_LEN 64

/* A file and its pristine image. */
struct region_fuzz_image {
	char path[512];
	uint8_t *bytes;
	size_t size;
};

struct region_fuzz {
	bool ready;
	char dir[2][256]; /* the daemon's, the runner's */
	struct gs_region *owner[2];
	const char *slice;              /* the target's slice */
	int region;                     /* which dir[] it is in */
	struct region_fuzz_image file;  /* the target */
	struct region_fuzz_image other; /* its region's shared usage file */
};

static void region_fuzz_die(const char *what)
{
	fprintf(stderr, "region fuzz setup: %s\n", what);
	abort();
}

static char region_fuzz_tmp[64];

static int region_fuzz_rm(const char *path, const struct stat *st, int type,
                          struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	(void)remove(path);
	return 0;
}

/* At exit: the temporary directory goes. */
static void region_fuzz_cleanup(void)
{
	if (region_fuzz_tmp[0] != '\0')
		(void)nftw(region_fuzz_tmp, region_fuzz_rm, 16,
		           FTW_DEPTH | FTW_PHYS);
}

static void region_fuzz_load(struct region_fuzz_image *im)
{
	struct stat st;
	int fd = open(im->path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) != 0)
		region_fuzz_die(im->path);
	im->size = (size_t)st.st_size;
	im->bytes = malloc(im->size);
	if (im->bytes == NULL ||
	    pread(fd, im->bytes, im->size, 0) != (ssize_t)im->size)
		region_fuzz_die(im->path);
	(void)close(fd);
}

/* Writes the pristine image back (by path: a replaced file included). */
static void region_fuzz_restore(const struct region_fuzz_image *im)
{
	int fd = open(im->path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return;
	(void)ftruncate(fd, (off_t)im->size);
	(void)pwrite(fd, im->bytes, im->size, 0);
	(void)close(fd);
}

/* Creates slice `name` of `uid` in `dir` (through its creator `r`) and
 * attaches this process to it as a tenant would. */
static void region_fuzz_slice(struct gs_region *r, const char *dir,
                              const char *name, uint32_t uid)
{
	struct gs_slice_limits lim;
	struct gs_slice_ref ref;
	struct gs_proc_ref p;
	struct gs_region *t;

	gs_slice_limits_init(&lim, name);
	lim.owner_uid = uid;
	lim.mem_limit = 1ull << 30;
	lim.compute_pct = 50;
	if (gs_region_slice_create(r, &lim, &ref, NULL) != GS_OK)
		region_fuzz_die(name);
	if (gs_region_open(dir, GS_REGION_TENANT, &t, NULL) != GS_OK ||
	    gs_region_proc_attach(t, &ref, 0, &p, NULL) != GS_OK)
		region_fuzz_die("attach");
	gs_region_close(t);
}

static void region_fuzz_setup(struct region_fuzz *f, enum region_fuzz_file w)
{
	static const char *const names[] = {"t", "p", "r"};
	struct gs_slice_ref ref;
	char tmp[] = "/tmp/gs-fuzz-region-XXXXXX";
	/* Another user's owner file when root can make one for it. */
	uint32_t uid = getuid() == 0 ? 1000 : (uint32_t)getuid();

	if (mkdtemp(tmp) == NULL)
		region_fuzz_die("mkdtemp");
	(void)snprintf(region_fuzz_tmp, sizeof(region_fuzz_tmp), "%s", tmp);
	(void)atexit(region_fuzz_cleanup);
	for (int i = 0; i < 2; i++) {
		(void)snprintf(f->dir[i], sizeof(f->dir[i]), "%s/%s", tmp,
		               i == 0 ? "daemon" : "run");
		if (mkdir(f->dir[i], 0755) != 0)
			region_fuzz_die(f->dir[i]);
	}
	if (gs_region_open_owner(f->dir[0], true, &f->owner[0], NULL) !=
	        GS_OK ||
	    gs_region_open(f->dir[1], GS_REGION_RUNNER, &f->owner[1], NULL) !=
	        GS_OK)
		region_fuzz_die("open");
	for (int i = 0; i < 2; i++) {
		gs_region_set_lock_wait(f->owner[i], 5);
		if (gs_region_device(f->owner[i], "GPU-fuzz", 80ull << 30) < 0)
			region_fuzz_die("device");
	}
	region_fuzz_slice(f->owner[0], f->dir[0], "t", uid);
	region_fuzz_slice(f->owner[0], f->dir[0], "p", 0);
	region_fuzz_slice(f->owner[1], f->dir[1], "r", (uint32_t)getuid());
	f->slice = names[w];
	f->region = w == REGION_FUZZ_USAGE;
	if (gs_region_slice_find(f->owner[f->region], f->slice, &ref) != GS_OK)
		region_fuzz_die("find");
	if (w == REGION_FUZZ_USAGE)
		(void)snprintf(f->file.path, sizeof(f->file.path), "%s/%s",
		               f->dir[1], GS_REGION_USAGE_FILE);
	else if (gs_region_books_path(
	             f->dir[0], true, w == REGION_FUZZ_OWNER ? uid : 0,
	             ref.slot, f->file.path, sizeof(f->file.path)) != GS_OK)
		region_fuzz_die("path");
	(void)snprintf(f->other.path, sizeof(f->other.path), "%s/%s",
	               f->dir[f->region], GS_REGION_USAGE_FILE);
	region_fuzz_load(&f->file);
	region_fuzz_load(&f->other);
	f->ready = true;
}

/* Applies one input to the target file (see the top of this file). */
static void region_fuzz_apply(const struct region_fuzz *f, const uint8_t *data,
                              size_t size)
{
	const struct region_fuzz_image *im = &f->file;
	int fd;

	if (size == 0)
		return;
	fd = open(im->path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	if (data[0] & 1) {
		size_t n = size - 1 < im->size ? size - 1 : im->size;

		(void)pwrite(fd, data + 1, n, 0);
	} else {
		for (size_t i = 1; i + 4 <= size;) {
			size_t at = ((size_t)data[i] << 16 |
			             (size_t)data[i + 1] << 8 | data[i + 2]) %
			            im->size;
			size_t n = data[i + 3];

			i += 4;
			if (n > size - i)
				n = size - i;
			if (n > im->size - at)
				n = im->size - at;
			(void)pwrite(fd, data + i, n, (off_t)at);
			i += n;
		}
	}
	(void)pwrite(fd, im->bytes + REGION_FUZZ_MUTEX_AT,
	             REGION_FUZZ_MUTEX_LEN, REGION_FUZZ_MUTEX_AT);
	(void)close(fd);
}

/* What the daemon does with the region's files. */
static void region_fuzz_daemon(struct gs_region *r)
{
	struct gs_slice_ref s = {.slot = -1};
	struct gs_proc_ref it = {.slot = -1};
	struct gs_proc_info info;
	struct gs_region_cut cut[8];
	uint64_t next = 0;
	bool shared = false;
	int guard = 0;

	(void)gs_region_reap(r);
	while (gs_region_slice_next(r, &s)) {
		static struct gs_slice_usage u;

		(void)gs_region_slice_usage(r, &s, &u);
		(void)gs_region_slice_nprocs(r, &s);
	}
	while (gs_region_proc_next(r, &it, &info) && ++guard < 4096)
		;
	(void)gs_region_arbitrate(r, &next);
	(void)gs_region_truncated(r, &shared, cut, 8);
}

/* What a tenant's shim does: open, attach, memory, one launch, detach. */
static void region_fuzz_tenant(const struct region_fuzz *f)
{
	static struct gs_sched_cfg cfg[GS_REGION_MAX_SLICES];
	struct gs_sched_params par;
	struct gs_sched_view v;
	struct gs_region_entry e;
	struct gs_region *r = NULL;
	struct gs_slice_ref ref;
	struct gs_proc_ref p;
	uint64_t epoch = 0, used, limit, retry, now;
	enum gs_sched_why why;
	bool bell = false;

	if (gs_region_open(f->dir[f->region], GS_REGION_TENANT, &r, NULL) !=
	    GS_OK)
		return;
	gs_region_set_lock_wait(r, 5);
	if (gs_region_slice_find(r, f->slice, &ref) != GS_OK ||
	    gs_region_proc_attach(r, &ref, 0, &p, NULL) != GS_OK)
		goto out_close;
	if (gs_region_mem_reserve(r, &p, 0, 1 << 20) == GS_OK)
		gs_region_mem_release(r, &p, 0, 1 << 20);
	(void)gs_region_mem_view(r, &p, 0, &used, &limit);
	(void)gs_region_limits_epoch(r);
	if (gs_region_attached(r) && gs_region_lock(r) == GS_OK) {
		(void)gs_region_sched_cfg(r, cfg, &epoch);
		if (gs_region_proc_entry(r, &p, &e) && e.slice >= 0 &&
		    e.slice < GS_REGION_MAX_SLICES) {
			gs_sched_params_default(&par);
			gs_region_sched_view(r, 0, e.slice, &v);
			v.cfg = cfg;
			v.n = GS_REGION_MAX_SLICES;
			v.par = &par;
			v.self = e.slice;
			v.bell = &bell;
			now = 1000000000ull;
			if (gs_sched_admit(&v, e.slice, 1000, now, &retry,
			                   &why) == GS_SCHED_GO) {
				gs_region_books_admitted(r, &e, 0, false, 0,
				                         true);
				(void)gs_sched_complete(&v, e.slice, 900, 1000,
				                        now + 1000);
				gs_region_books_settled(r, &e, 0, 1, 900, true);
			}
			gs_sched_gate_refresh(&v, now);
		}
		gs_region_unlock(r);
	}
	(void)gs_region_proc_detach(r, &p);
out_close:
	gs_region_close(r);
}

static int region_fuzz_run(enum region_fuzz_file w, const uint8_t *data,
                           size_t size)
{
	static struct region_fuzz f;

	if (!f.ready)
		region_fuzz_setup(&f, w);
	region_fuzz_apply(&f, data, size);
	region_fuzz_daemon(f.owner[f.region]);
	region_fuzz_tenant(&f);
	region_fuzz_restore(&f.file);
	region_fuzz_restore(&f.other);
	return 0;
}

#endif
