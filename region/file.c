/*
 * file.c - opening and closing a region: creating its files or joining
 * them, reusing or rebuilding what an earlier boot or another layout left,
 * rebuilding a shared usage file whose lock is wedged, and reporting
 * files cut short. Owns struct gs_region's life (gs_region_open ..
 * gs_region_close). Contract: include/gs/region.h.
 *
 * Creation protocol. Creators (OWNER, RUNNER) hold the writers' lock - an
 * in-process mutex plus flock(LOCK_EX) on <dir>/limits.lock, a file only
 * the creator's uid can open (0600) in a directory tenants cannot write -
 * while they check and, if needed, build both files afresh and rename
 * them into place (usage first). Readers (the shim) take no lock at all:
 * what they open is always a complete pair, and they retry the moment
 * between the two renames. So a tenant has no lock the daemon waits on;
 * the one lock tenants share (the usage file's robust mutex) is only ever
 * waited on with a deadline. A region from an earlier boot (pids mean
 * nothing any more) is rebuilt by a creator.
 *
 * The top of region/'s file layer: calls layout.c, lock.c, view.c,
 * owner.c and util.c; nothing in region/ calls back into it.
 */
#include "guard.h"
#include "region_int.h"

#include "gs/faultinj.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether the open files are a complete region this creator may reuse. */
static bool reusable(struct gs_region *r, struct gs_errbuf *eb, gs_err *err)
{
	bool owner = r->role == GS_REGION_OWNER;

	*err = GS_OK;
	if (gs__fd_size(r->lfd) != sizeof(*r->rl) ||
	    gs__fd_size(r->ufd) != sizeof(*r->ru))
		return false;
	*err = gs__map_files(r, true, eb);
	if (*err != GS_OK)
		return false;
	*err = gs__validate(r->rl, sizeof(*r->rl), r->ru, sizeof(*r->ru), NULL);
	if (*err == GS_ERR_VERSION && owner) {
		/* The daemon after an upgrade: its slices are in its store
		 * and go back into new files (recovery); processes of the
		 * old version keep the old ones. */
		r->replaced_version = true;
		*err = GS_OK;
		gs__unmap_files(r);
		return false;
	}
	if (*err == GS_ERR_VERSION && !(r->rl->h.flags & GS_RL_PRIVILEGED)) {
		/* A region `gpuslice run` made with another build (an
		 * upgrade): built again, as one of an earlier boot would be.
		 * Its processes keep their (orphaned) copy and their limits;
		 * they no longer take turns with the new build's. The caller
		 * says so (gs_region_replaced_version). */
		r->replaced_version = true;
		*err = GS_OK;
		gs__unmap_files(r);
		return false;
	}
	if (*err == GS_ERR_VERSION) {
		/* The daemon's region of another build: only that daemon
		 * (or this build's, after an upgrade) may replace it. */
		*err = gs__validate(r->rl, sizeof(*r->rl), r->ru,
		                    sizeof(*r->ru), eb);
		return false;
	}
	*err = GS_OK;
	if (gs__validate(r->rl, sizeof(*r->rl), r->ru, sizeof(*r->ru), NULL) ==
	        GS_OK &&
	    r->rl->h.boot_id == gs__boot_id() &&
	    (!owner || ((r->rl->h.flags & GS_RL_PRIVILEGED) &&
	                r->rl->h.owner_uid == (uint32_t)geteuid()))) {
		gs_err lk;

		if (!owner)
			return true;
		/* A region of the other kind (the daemon's, found by the
		 * Slurm plugin on its own, or the reverse) is replaced. */
		if (((r->ru->h.flags & GS_RU_ARBITER) != 0) != r->arbiter) {
			gs__unmap_files(r);
			return false;
		}
		/* The usage file's mutex is shared with tenants: one may hold
		 * it (stopped, or a forged owner thread id) to wedge every
		 * run. The daemon repairs that at start: a lock it cannot take
		 * within the deadline means new files (processes that map the
		 * old ones keep an orphaned copy with their limits). */
		lk = gs_region_lock(r);
		if (lk == GS_OK) {
			gs_region_unlock(r);
			return true;
		}
		r->rebuilt_wedged = true;
	}
	gs__unmap_files(r);
	return false;
}

/*
 * Creator path, writers' lock held: reuse the region when complete, from
 * this boot and (OWNER) privileged and ours; otherwise build both files
 * afresh under temporary names and rename them into place, usage first,
 * so that a reader (who takes no lock) opens either the old complete
 * files or the new complete ones, and a process that still maps the old
 * files keeps a valid (orphaned) copy instead of a truncated one.
 */
static gs_err create_locked(struct gs_region *r, struct gs_errbuf *eb)
{
	bool owner = r->role == GS_REGION_OWNER;
	char lp[GS_REGION_DIR_MAX + 32], up[GS_REGION_DIR_MAX + 32];
	char ltmp[GS_REGION_DIR_MAX + 48], utmp[GS_REGION_DIR_MAX + 48];
	uint64_t id;
	gs_err err;
	int e, lfd, ufd;

	if (gs__open_file(r->dir, GS_REGION_LIMITS_FILE, O_RDWR, 0, &lfd,
	                  NULL) == GS_OK) {
		r->lfd = lfd;
		if (gs__open_file(r->dir, GS_REGION_USAGE_FILE, O_RDWR, 0, &ufd,
		                  NULL) == GS_OK) {
			r->ufd = ufd;
			if (reusable(r, eb, &err))
				return GS_OK;
			if (err != GS_OK)
				return err;
			(void)close(r->ufd);
			r->ufd = -1;
		}
		(void)close(r->lfd);
		r->lfd = -1;
	}
	(void)snprintf(lp, sizeof(lp), "%s/%s", r->dir, GS_REGION_LIMITS_FILE);
	(void)snprintf(up, sizeof(up), "%s/%s", r->dir, GS_REGION_USAGE_FILE);
	(void)snprintf(ltmp, sizeof(ltmp), "%s.new", lp);
	(void)snprintf(utmp, sizeof(utmp), "%s.new", up);
	r->lfd = gs__file_open(
	    ltmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (r->lfd < 0)
		goto fail_errno;
	/* The daemon's region has an arbiter (the shared file is its). */
	r->ufd = gs__usage_tmp_open(utmp, r->arbiter);
	if (r->ufd < 0)
		goto fail_errno;
	/* Tenants read limits through their views (views_publish). */
	if (gs__file_truncate(r->lfd, (off_t)sizeof(*r->rl)) != 0 ||
	    fchmod(r->lfd, 0600))
		goto fail_errno;
	err = gs__map_files(r, true, eb);
	if (err != GS_OK)
		goto fail;
	id = gs__random_u64();
	err = gs__init_usage(r->ru, id, gs__boot_id(),
	                     r->arbiter ? GS_RU_ARBITER : 0, eb);
	if (err != GS_OK)
		goto fail;
	gs__init_limits(r->rl, id, gs__boot_id(), owner);
	if (gs__file_publish(utmp, up) != 0 || gs__file_publish(ltmp, lp) != 0)
		goto fail_errno;
	return GS_OK;
fail_errno:
	e = errno;
	err = gs_fail(eb, GS_ERR_IO, "create region files in %s: %s", r->dir,
	              strerror(e));
fail:
	/* Nothing half-made stays behind (a new usage file renamed into
	 * place without its limits is another region's: not trusted). */
	(void)unlink(ltmp);
	(void)unlink(utmp);
	return err;
}

/*
 * OWNER: a region whose files belong to someone else (runners made it
 * before the daemon started) is replaced, so that the daemon's limits and
 * lock files are its own, read-only (limits) or closed (lock) to tenants.
 * Processes that still map the old files keep an orphaned copy.
 */
static void unlink_foreign(const char *dir)
{
	static const char *const names[] = {GS_REGION_LOCK_FILE,
	                                    GS_REGION_LIMITS_FILE,
	                                    GS_REGION_USAGE_FILE};
	char p[GS_REGION_DIR_MAX + 32];
	struct stat st;
	bool foreign = false;

	for (int i = 0; i < 2; i++) {
		(void)snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		if (lstat(p, &st) == 0 &&
		    (st.st_uid != geteuid() || !S_ISREG(st.st_mode)))
			foreign = true;
	}
	if (!foreign)
		return;
	for (int i = 0; i < 3; i++) {
		(void)snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		(void)unlink(p);
	}
}

/*
 * A reader's limits: its own view (limits.<euid>), else the public one,
 * else the writer's file (root; a region `gpuslice run` made, whose
 * limits are its creator's). A tenant that may open none of them has no
 * slice here (GS_ERR_NOT_FOUND).
 */
static gs_err open_limits(struct gs_region *r, struct gs_errbuf *eb)
{
	char name[GS_RO_NAME_MAX];
	gs_err err;

	if (geteuid() != 0) {
		(void)snprintf(name, sizeof(name), "%s.%u",
		               GS_REGION_LIMITS_FILE, (unsigned)geteuid());
		if (gs__open_file(r->dir, name, O_RDONLY, 0, &r->lfd, NULL) ==
		        GS_OK ||
		    gs__open_file(r->dir, GS_RL_VIEW_PUBLIC_FILE, O_RDONLY, 0,
		                  &r->lfd, NULL) == GS_OK)
			return GS_OK;
	}
	err = gs__open_file(r->dir, GS_REGION_LIMITS_FILE, O_RDONLY, 0, &r->lfd,
	                    NULL);
	if (err == GS_ERR_PERM)
		return gs_fail(eb, GS_ERR_NOT_FOUND,
		               "no limits in %s readable by uid %u (it has no slice there)",
		               r->dir, (unsigned)geteuid());
	if (err != GS_OK)
		return gs__open_file(r->dir, GS_REGION_LIMITS_FILE, O_RDONLY, 0,
		                     &r->lfd, eb);
	return GS_OK;
}

/*
 * Reader path (TENANT, or a RUNNER in someone else's region): no lock. The
 * files are published by rename, complete, so a pair that does not match
 * (opened between the two renames) is retried a few times.
 */
static gs_err join_files(struct gs_region *r, struct gs_errbuf *eb)
{
	gs_err err = GS_OK;

	for (int tries = 0; tries < 20; tries++) {
		if (tries > 0) {
			struct timespec nap = {0, 5000000L};

			gs__unmap_files(r);
			(void)close(r->lfd);
			(void)close(r->ufd);
			r->lfd = r->ufd = -1;
			(void)nanosleep(&nap, NULL);
		}
		err = open_limits(r, eb);
		if (err != GS_OK)
			return err;
		err = gs__open_file(r->dir, GS_REGION_USAGE_FILE, O_RDWR, 0,
		                    &r->ufd, NULL);
		if (err == GS_ERR_PERM) /* a daemon's: read, never written */
			err = gs__open_file(r->dir, GS_REGION_USAGE_FILE,
			                    O_RDONLY, 0, &r->ufd, NULL);
		/* Opened again for the message; should that one succeed, the
		 * file is taken through the checks below like the first. */
		if (err != GS_OK &&
		    (err = gs__open_file(r->dir, GS_REGION_USAGE_FILE, O_RDWR,
		                         0, &r->ufd, eb)) != GS_OK)
			return err;
		if (gs__fd_size(r->lfd) != sizeof(*r->rl) ||
		    gs__fd_size(r->ufd) != sizeof(*r->ru)) {
			err = gs_fail(eb, GS_ERR_NOT_FOUND,
			              "region in %s not initialised", r->dir);
			continue;
		}
		err = gs__map_files(r, false, eb);
		if (err != GS_OK)
			return err;
		err = gs__validate(r->rl, sizeof(*r->rl), r->ru, sizeof(*r->ru),
		                   NULL);
		if (err == GS_ERR_NOT_FOUND || err == GS_ERR_CORRUPT)
			continue;
		if (err != GS_OK)
			return gs__validate(r->rl, sizeof(*r->rl), r->ru,
			                    sizeof(*r->ru), eb);
		if (r->rl->h.boot_id != gs__boot_id())
			return gs_fail(eb, GS_ERR_NOT_FOUND,
			               "region in %s is from an earlier boot",
			               r->dir);
		r->arb_client = (r->ru->h.flags & GS_RU_ARBITER) != 0;
		if (!r->arb_client && !gs__usage_writable(r->ufd))
			return gs_fail(eb, GS_ERR_PERM,
			               "%s/%s: not writable, and no daemon arbitrates it",
			               r->dir, GS_REGION_USAGE_FILE);
		return GS_OK;
	}
	return err == GS_ERR_NOT_FOUND
	           ? gs_fail(eb, err, "region in %s not initialised", r->dir)
	           : gs__validate(r->rl, sizeof(*r->rl), r->ru, sizeof(*r->ru),
	                          eb);
}

static gs_err region_open(const char *dir, enum gs_region_role role,
                          bool arbiter, struct gs_region **out,
                          struct gs_errbuf *eb);

gs_err gs_region_open(const char *dir, enum gs_region_role role,
                      struct gs_region **out, struct gs_errbuf *eb)
{
	return region_open(dir, role, role == GS_REGION_OWNER, out, eb);
}

gs_err gs_region_open_owner(const char *dir, bool arbiter,
                            struct gs_region **out, struct gs_errbuf *eb)
{
	return region_open(dir, GS_REGION_OWNER, arbiter, out, eb);
}

static gs_err region_open(const char *dir, enum gs_region_role role,
                          bool arbiter, struct gs_region **out,
                          struct gs_errbuf *eb)
{
	struct gs_region *r;
	bool creator = role != GS_REGION_TENANT;
	gs_err err;

	*out = NULL;
	if (strlen(dir) >= GS_REGION_DIR_MAX)
		return gs_fail(eb, GS_ERR_RANGE, "run directory path too long");
	r = gs_fault_calloc("region.malloc", 1, sizeof(*r));
	if (r == NULL)
		return gs_fail(eb, GS_ERR_NOMEM, "region handle");
	(void)snprintf(r->dir, sizeof(r->dir), "%s", dir);
	r->role = role;
	r->arbiter = arbiter && role == GS_REGION_OWNER;
	r->lfd = r->ufd = r->kfd = -1;
	r->me = -1;
	r->pidns = gs__pidns_of(0);
	(void)pthread_mutex_init(&r->wmu, NULL);
	(void)pthread_mutex_init(&r->omu, NULL);
	(void)pthread_mutex_init(&r->fmu, NULL);
	(void)pthread_rwlock_init(&r->remap, NULL);

	if (creator) {
		err =
		    gs__mkdir_p(dir, role == GS_REGION_OWNER ? 0755 : 0700, eb);
		if (err == GS_OK)
			err = gs__dir_safe(dir, eb);
		if (err != GS_OK)
			goto fail;
		if (role == GS_REGION_OWNER)
			unlink_foreign(dir);
		err = gs__open_file(dir, GS_REGION_LOCK_FILE, O_RDWR | O_CREAT,
		                    0600, &r->kfd, NULL);
		if (err == GS_OK) {
			(void)fchmod(r->kfd, 0600);
			r->limits_writable = true;
			err = gs__wlock_take(r, eb);
			if (err != GS_OK)
				goto fail;
			err = create_locked(r, eb);
			if (err == GS_OK) {
				/* A writer killed between wseq_open and
				 * wseq_close left the sequence odd: every
				 * reader would spin on it. Its slot may be
				 * torn; the creator rewrites what it holds
				 * (gpusliced's recovery from its store). */
				if (r->rl->h.seq & 1) {
					r->rl->h.epoch++;
					__atomic_store_n(&r->rl->h.seq,
					                 r->rl->h.seq + 1,
					                 __ATOMIC_RELEASE);
				}
				gs__views_publish(
				    r); /* views of a reused region
				                     may be missing or torn */
				memcpy(r->dev_copy, r->ru->dev,
				       sizeof(r->dev_copy));
			}
			gs__wlock_drop(r);
			if (err != GS_OK)
				goto fail;
			*out = r;
			return GS_OK;
		}
		if (err != GS_ERR_PERM || role == GS_REGION_OWNER) {
			err =
			    gs_fail(eb, err, "cannot open the lock in %s", dir);
			goto fail;
		}
		/* A RUNNER in someone else's (the daemon's) region: join. */
	} else {
		err = gs__dir_safe(dir, eb);
		if (err != GS_OK && err != GS_ERR_NOT_FOUND)
			goto fail;
	}
	err = join_files(r, eb);
	if (err != GS_OK)
		goto fail;
	*out = r;
	return GS_OK;
fail:
	gs_region_close(r);
	return err;
}

void gs_region_close(struct gs_region *r)
{
	if (r == NULL)
		return;
	gs__unmap_files(r);
	if (r->ru_old != NULL) {
		gs__guard_del(r->ru_old);
		(void)munmap(r->ru_old, sizeof(*r->ru_old));
	}
	for (int i = 0; i < r->n_own; i++) {
		gs__guard_del(r->own[i].ro);
		(void)munmap(r->own[i].ro, sizeof(*r->own[i].ro));
		(void)close(r->own[i].fd);
	}
	for (int i = 0; i < r->n_view; i++) {
		(void)munmap(r->view[i].rl, sizeof(*r->view[i].rl));
		(void)close(r->view[i].fd);
	}
	if (r->lfd >= 0)
		(void)close(r->lfd);
	if (r->ufd >= 0)
		(void)close(r->ufd);
	if (r->kfd >= 0)
		(void)close(r->kfd);
	(void)pthread_mutex_destroy(&r->wmu);
	(void)pthread_mutex_destroy(&r->omu);
	(void)pthread_mutex_destroy(&r->fmu);
	(void)pthread_rwlock_destroy(&r->remap);
	free(r->arb_cfg);
	free(r->arb_ask);
	free(r->arb_own);
	free(r);
}

bool gs_region_repaired_lock(const struct gs_region *r)
{
	return r->rebuilt_wedged;
}

bool gs_region_replaced_version(const struct gs_region *r)
{
	return r->replaced_version;
}

gs_err gs_region_rebuild_usage(struct gs_region *r, struct gs_errbuf *eb)
{
	char up[GS_REGION_DIR_MAX + 32], utmp[GS_REGION_DIR_MAX + 48];
	struct gs_ru_file *nu, *old;
	void *p = MAP_FAILED;
	gs_err err;
	int fd = -1, e;

	if (!r->limits_writable || r->kfd < 0)
		return gs_fail(eb, GS_ERR_PERM,
		               "only the region's creator rebuilds its usage file");
	err = gs__wlock_take(r, eb);
	if (err != GS_OK)
		return err;
	(void)snprintf(up, sizeof(up), "%s/%s", r->dir, GS_REGION_USAGE_FILE);
	(void)snprintf(utmp, sizeof(utmp), "%s.new", up);
	fd = gs__usage_tmp_open(utmp, gs__arbitrated(r));
	if (fd < 0)
		goto fail_errno;
	p = gs__file_map(sizeof(*nu), PROT_READ | PROT_WRITE, fd);
	if (p == MAP_FAILED)
		goto fail_errno;
	nu = p;
	err = gs__init_usage(nu, r->rl->h.region_id, r->rl->h.boot_id,
	                     r->ru->h.flags & GS_RU_ARBITER, eb);
	if (err != GS_OK)
		goto fail;
	for (int d = 0; d < GS_REGION_MAX_DEVICES; d++) {
		const struct gs_ru_device *c = &r->dev_copy[d];

		if (!c->in_use)
			continue;
		memcpy(nu->dev[d].uuid, c->uuid, sizeof(c->uuid));
		nu->dev[d].total_bytes = c->total_bytes;
		nu->dev[d].ctx_overhead = c->ctx_overhead;
		nu->dev[d].in_use = 1;
	}
	if (gs__file_publish(utmp, up) != 0)
		goto fail_errno;
	(void)gs__guard_add(p, sizeof(*nu));
	if (r->ru_old != NULL) {
		gs__guard_del(r->ru_old);
		(void)munmap(r->ru_old, sizeof(*r->ru_old));
	}
	old = r->ru;
	__atomic_store_n(&r->ru, nu, __ATOMIC_RELEASE);
	r->ru_old = old;
	(void)close(r->ufd);
	r->ufd = fd;
	r->ru_cut = false;
	gs__wlock_drop(r);
	return GS_OK;
fail_errno:
	e = errno;
	err = gs_fail(eb, GS_ERR_IO, "rebuild %s: %s", up, strerror(e));
fail:
	if (p != MAP_FAILED)
		(void)munmap(p, sizeof(*nu));
	if (fd >= 0)
		(void)close(fd);
	(void)unlink(utmp);
	gs__wlock_drop(r);
	return err;
}

gs_err gs_region_repair_shared(struct gs_region *r, bool *rebuilt,
                               struct gs_errbuf *eb)
{
	uint64_t now = gs__mono_ns();
	gs_err err;

	*rebuilt = false;
	if (!r->limits_writable || r->kfd < 0)
		return GS_OK;
	err = gs__shared_lock(r);
	if (err == GS_OK) {
		gs__shared_unlock(r);
		r->wedged_since = 0;
		return GS_OK;
	}
	if (err != GS_ERR_TIMEOUT)
		return gs_fail(eb, err,
		               "the shared usage lock cannot be taken (%s)",
		               gs_err_name(err));
	if (r->wedged_since == 0) {
		r->wedged_since = now;
		return GS_OK;
	}
	if (now - r->wedged_since < LOCK_TIMEOUT_S * 1000000000ull)
		return GS_OK;
	err = gs_region_rebuild_usage(r, eb);
	if (err != GS_OK)
		return err;
	r->wedged_since = 0;
	*rebuilt = true;
	return GS_OK;
}

int gs_region_truncated(struct gs_region *r, bool *shared,
                        struct gs_region_cut *cut, int max)
{
	int n = 0, n_own = __atomic_load_n(&r->n_own, __ATOMIC_ACQUIRE);

	*shared = false;
	if (r->ru != NULL && !r->ru_cut &&
	    (gs__guard_tripped(r->ru) ||
	     gs__fd_size(r->ufd) < sizeof(*r->ru))) {
		r->ru_cut = true;
		*shared = true;
	}
	gs__own_use(r); /* a remap may replace a private books file */
	for (int i = 0; i < n_own && n < max; i++) {
		struct gs_own *o = &r->own[i];

		if (o->cut || (!gs__guard_tripped(o->ro) &&
		               gs__fd_size(o->fd) >= sizeof(*o->ro)))
			continue;
		o->cut = true;
		cut[n].uid = o->uid;
		cut[n].slot = o->slot;
		n++;
	}
	gs__own_unuse(r);
	return n;
}

bool gs_region_can_write_limits(const struct gs_region *r)
{
	return r->limits_writable;
}

const char *gs_region_dir(const struct gs_region *r)
{
	return r->dir;
}

struct gs_rl_file *gs__region_limits(struct gs_region *r)
{
	return r->rl;
}

struct gs_ru_file *gs__region_usage(struct gs_region *r)
{
	return r->ru;
}
