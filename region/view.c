/*
 * view.c - views of the limits in a privileged region: limits.<uid> for
 * each slice owner (its slices whole, others' only as far as the
 * scheduler needs them) and limits.public, found or made with their ACL,
 * and republished by the writer after each change (gs__views_publish).
 *
 * Calls only util.c.
 */
#include "region_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ---- views of the limits (privileged regions) ------------------------- */

static void view_path(const struct gs_region *r, uint32_t uid, char *out,
                      size_t n)
{
	if (uid == GS_RL_VIEW_PUBLIC)
		(void)snprintf(out, n, "%s/%s", r->dir, GS_RL_VIEW_PUBLIC_FILE);
	else
		(void)snprintf(out, n, "%s/%s.%u", r->dir,
		               GS_REGION_LIMITS_FILE, (unsigned)uid);
}

/*
 * Read access for `uid` alone, besides the file's owner: mode 0640 with
 * the access ACL user::rw-, user:<uid>:r--, group::---, mask::r--,
 * other::--- (the kernel's xattr form, entries in tag order). -1 where
 * the filesystem keeps no ACLs.
 */
static int acl_user_read(int fd, uint32_t uid)
{
	struct {
		uint32_t version;
		struct {
			uint16_t tag, perm;
			uint32_t id;
		} e[5];
	} a = {2,
	       {{0x01, 6, UINT32_MAX},
	        {0x02, 4, uid},
	        {0x04, 0, UINT32_MAX},
	        {0x10, 4, UINT32_MAX},
	        {0x20, 0, UINT32_MAX}}};

	static_assert(sizeof(a) == 4 + 5 * 8, "posix_acl xattr layout");
	return fsetxattr(fd, "system.posix_acl_access", &a, sizeof(a), 0);
}

/* Whether a mapped view is this region's view for `uid`. */
static bool view_valid(const struct gs_region *r, const struct gs_rl_file *v,
                       uint32_t uid)
{
	return __atomic_load_n(&v->h.magic, __ATOMIC_ACQUIRE) == GS_RL_MAGIC &&
	       v->h.version == GS_REGION_VERSION && v->h.size == sizeof(*v) &&
	       (v->h.flags & GS_RL_VIEW) && v->h.view_uid == uid &&
	       v->h.region_id == r->rl->h.region_id &&
	       v->h.boot_id == r->rl->h.boot_id;
}

/*
 * Writers' lock held: the view[] index of `uid`'s view, mapped, made
 * afresh (and renamed into place) when missing or not this region's.
 * -1 when it cannot be had (eb says why).
 */
static int view_find(struct gs_region *r, uint32_t uid, struct gs_errbuf *eb)
{
	char path[GS_REGION_DIR_MAX + GS_RO_NAME_MAX];
	char tmp[GS_REGION_DIR_MAX + GS_RO_NAME_MAX + 8];
	struct gs_rl_file *v;
	struct stat st;
	void *p;
	int fd, e, k;

	for (k = 0; k < r->n_view; k++)
		if (r->view[k].uid == uid)
			return k;
	if (r->n_view >= MAX_OWNERS + 1) {
		(void)gs_fail(eb, GS_ERR_NO_FIT, "too many limits views");
		return -1;
	}
	view_path(r, uid, path, sizeof(path));
	fd = gs__file_open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == geteuid() && (uint64_t)st.st_size == sizeof(*v)) {
		p = gs__file_map(sizeof(*v), PROT_READ | PROT_WRITE, fd);
		if (p != MAP_FAILED && view_valid(r, p, uid))
			goto keep;
		if (p != MAP_FAILED)
			(void)munmap(p, sizeof(*v));
	}
	if (fd >= 0)
		(void)close(fd);
	(void)snprintf(tmp, sizeof(tmp), "%s.new", path);
	fd = gs__file_open(
	    tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		goto fail_errno;
	if (gs__file_truncate(fd, (off_t)sizeof(*v)) != 0 ||
	    fchmod(fd, 0600) != 0)
		goto fail_errno_fd;
	p = gs__file_map(sizeof(*v), PROT_READ | PROT_WRITE, fd);
	if (p == MAP_FAILED)
		goto fail_errno_fd;
	v = p;
	v->h = r->rl->h;
	v->h.magic = 0;
	v->h.flags |= GS_RL_VIEW;
	v->h.view_uid = uid;
	v->h.seq = 0;
	__atomic_store_n(&v->h.magic, GS_RL_MAGIC, __ATOMIC_RELEASE);
	/* Only `uid` (and the writer) may read it; the public view, and
	 * any view on a filesystem without ACLs, all may. */
	if ((uid == GS_RL_VIEW_PUBLIC || acl_user_read(fd, uid) != 0) &&
	    fchmod(fd, 0644) != 0)
		goto fail_errno_unmap;
	if (gs__file_publish(tmp, path) != 0)
		goto fail_errno_unmap;
keep:
	k = r->n_view++;
	r->view[k].uid = uid;
	r->view[k].fd = fd;
	r->view[k].rl = p;
	return k;
fail_errno_unmap:
	e = errno;
	(void)munmap(p, sizeof(*v));
	goto fail;
fail_errno_fd:
	e = errno;
fail:
	(void)close(fd);
	(void)unlink(tmp);
	(void)gs_fail(eb, GS_ERR_IO, "limits view %s: %s", path, strerror(e));
	return -1;
fail_errno:
	e = errno;
	(void)gs_fail(eb, GS_ERR_IO, "limits view %s: %s", path, strerror(e));
	return -1;
}

/* Slot `src` as the view of `uid` shows it. */
static void view_copy(const struct gs_rl_slice *src, struct gs_rl_slice *dst,
                      uint32_t uid)
{
	if (src->state != GS_RL_LIVE || src->lim.owner_uid == uid ||
	    src->lim.owner_uid == 0) {
		*dst = *src;
		return;
	}
	memset(dst, 0, sizeof(*dst));
	dst->generation = src->generation;
	dst->state = src->state;
	dst->lim.compute_pct = src->lim.compute_pct;
	dst->lim.priority = src->lim.priority;
	dst->lim.weight = src->lim.weight;
	dst->lim.mode = src->lim.mode;
	dst->lim.flags = src->lim.flags & GS_SLICE_MPS;
	dst->lim.owner_uid = GS_RL_VIEW_PUBLIC;
}

/*
 * Writers' lock held, the limits changed (their seq still odd): makes
 * the views every owner of a live slice needs and republishes them all,
 * each under its own seq. A view that cannot be made leaves its uid
 * reading limits.public: fewer slices, never another's.
 */
void gs__views_publish(struct gs_region *r)
{
	uint64_t epoch = r->rl->h.epoch;

	if (!(r->rl->h.flags & GS_RL_PRIVILEGED) || !r->limits_writable)
		return;
	(void)view_find(r, GS_RL_VIEW_PUBLIC, NULL);
	for (int s = 0; s < GS_REGION_MAX_SLICES; s++)
		if (r->rl->slice[s].state == GS_RL_LIVE &&
		    r->rl->slice[s].lim.owner_uid != 0)
			(void)view_find(r, r->rl->slice[s].lim.owner_uid, NULL);
	for (int k = 0; k < r->n_view; k++) {
		struct gs_rl_file *v = r->view[k].rl;

		__atomic_store_n(&v->h.seq, v->h.seq | 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		for (int s = 0; s < GS_REGION_MAX_SLICES; s++)
			view_copy(&r->rl->slice[s], &v->slice[s],
			          r->view[k].uid);
		v->h.epoch = epoch;
		__atomic_store_n(&v->h.need_wait_ms, r->rl->h.need_wait_ms,
		                 __ATOMIC_RELAXED);
		__atomic_store_n(&v->h.seq, v->h.seq + 1, __ATOMIC_RELEASE);
	}
}
