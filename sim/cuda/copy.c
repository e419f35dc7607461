/*
 * copy.c - copies and memsets of the sim driver (cuMemcpy*, cuMemset*, and
 * the bodies their per-thread and legacy versions share): a synchronous
 * call waits for the work queued before it on the timeline (timeline.c);
 * the data moves at once (addr.c).
 *
 * Copies take no simulated GPU time; a synchronous copy waits for the work
 * queued before it (the legacy default stream orders after everything).
 * With the bus modelled (bus.h), a host<->device copy returns after its
 * modelled time. Copies keep the sim's sparse memory sparse: what was
 * never written is not read, and zeros make no pages (sparse copies,
 * below).
 */
#include "bus.h"
#include "cuda_int.h"
#include "mem_int.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- sparse copies ------------------------------------------------------ */

/*
 * The sim's memory is sparse: device memory mapped from a VMM handle is a
 * memfd whose untouched pages are holes, and cuMemAlloc's memory and
 * cuMemHostAlloc's are private anonymous mappings whose untouched pages
 * are not there; both read as zero and cost the host nothing. A copy
 * keeps it so, with the same bytes as a plain memmove, as a GPU's copy
 * engine leaves the host no pages to make:
 *
 *   - a stretch of the source that is not there (a hole; an anonymous
 *     page never touched, found in /proc/self/pagemap) is not read (a read
 *     fault would map pages);
 *   - onto a destination stretch that is not there either, nothing is
 *     written; onto the sim's own memory, its whole pages are given back
 *     (they read as zero again) rather than cleared; onto other memory
 *     (a program's malloc), only pages that do not already read zero are
 *     cleared: the check reads them, which maps no memory for a page never
 *     touched;
 *   - source pages that hold only zeros are treated alike, so a swap-in of
 *     a host copy into fresh device memory makes pages for the data only.
 *
 * Copies shorter than SPARSE_MIN and overlapping ones are one memmove as
 * before. A stretch whose state cannot be read counts as data (copied).
 */
#define SPARSE_MIN (64u << 10)
#define PAGE       4096u
#define PM_BATCH   512 /* pagemap entries read at a time */

/* What a side of a copy is: a memfd (holes by lseek), the sim's private
 * anonymous memory (holes by pagemap, given back by madvise), or memory
 * the sim does not own (its pages read to see whether they are zero). */
struct side {
	int fd;    /* >= 0: the memfd behind the range */
	off_t off; /* the range's offset in it */
	bool anon; /* the sim's private anonymous mapping */
	int pm;    /* /proc/self/pagemap for anon (-1: unreadable) */
};

/* /proc/self/pagemap, opened once per process, checked at every use (the
 * program may have closed the descriptor and reused its number; one
 * inherited across a fork reads the parent's pages). -1 when unreadable.
 * The driver's lock is held (gs__dcopy's callers). */
static int pagemap(void)
{
	static int fd = -1;
	static pid_t pid;
	static dev_t dev;
	static ino_t ino;
	struct stat st;

	if (fd >= 0) {
		bool ours =
		    fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;

		if (ours && pid == getpid())
			return fd;
		/* not ours any more: the program's now, left alone; ours
		 * but inherited: the parent's pages, closed */
		if (ours)
			(void)close(fd);
	}
	pid = getpid();
	/* its entries are per host page; PAGE is what this file walks */
	fd = sysconf(_SC_PAGESIZE) == PAGE
	         ? open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)
	         : -1;
	if (fd >= 0 && fstat(fd, &st) == 0) {
		dev = st.st_dev;
		ino = st.st_ino;
	} else if (fd >= 0) {
		(void)close(fd);
		fd = -1;
	}
	return fd;
}

static struct side side_of(const struct gs__alloc *a, uint64_t p)
{
	struct side s = {.fd = -1, .off = 0, .anon = false, .pm = -1};

	if (a == NULL)
		return s;
	if (a->kind == GS__A_VMM_MAP && a->vmm != NULL) {
		s.fd = a->vmm->fd;
		s.off = (off_t)(p - a->base);
	} else if (a->map_len != 0 && a->backed &&
	           (a->kind == GS__A_DEVICE || a->kind == GS__A_MANAGED ||
	            a->kind == GS__A_HOST)) {
		s.anon = true;
		s.pm = pagemap();
	}
	return s;
}

/* The run at `off` of at most `len` bytes that is all data or all hole.
 * OUT: *data. An error reads as data (copied as is). */
static uint64_t run_at(int fd, off_t off, uint64_t len, bool *data)
{
	off_t d = lseek(fd, off, SEEK_DATA), h;

	*data = true;
	if (d < 0) {
		*data = errno != ENXIO; /* ENXIO: only holes past off */
		return len;
	}
	if (d > off) {
		*data = false;
		return (uint64_t)(d - off) < len ? (uint64_t)(d - off) : len;
	}
	h = lseek(fd, off, SEEK_HOLE);
	if (h <= off)
		return len;
	return (uint64_t)(h - off) < len ? (uint64_t)(h - off) : len;
}

/* The run at p of at most `len` bytes of private anonymous memory whose
 * pages are all there (present or swapped: data) or all absent (never
 * touched or given back: zeros). OUT: *data. Unreadable: data. */
static uint64_t anon_run(int pm, const uint8_t *p, uint64_t len, bool *data)
{
	uint64_t e[PM_BATCH], first = (uintptr_t)p / PAGE, run = 0;
	uint64_t head = PAGE - (uintptr_t)p % PAGE;
	size_t i = 0;
	ssize_t got = 0;

	*data = true;
	if (pm < 0)
		return len;
	for (uint64_t pg = first;; pg++, i++) {
		bool there;

		if (i == (size_t)got / 8) {
			got =
			    pread(pm, e, sizeof(e), (off_t)(pg * sizeof(e[0])));
			if (got < 8)
				return run ? run : len;
			i = 0;
		}
		/* bit 63: present, bit 62: swapped (or migrating) */
		there = (e[i] >> 62) != 0;
		if (pg == first)
			*data = there;
		else if (there != *data)
			break;
		run = pg == first ? head : run + PAGE;
		if (run >= len)
			return len;
	}
	return run;
}

/* The run of side `sd` (at address p, `pos` bytes into the copy) of at
 * most len bytes. OUT: *data. */
static uint64_t side_run(const struct side *sd, const uint8_t *p, uint64_t pos,
                         uint64_t len, bool *data)
{
	if (sd->fd >= 0)
		return run_at(sd->fd, sd->off + (off_t)pos, len, data);
	if (sd->anon)
		return anon_run(sd->pm, p, len, data);
	*data = true;
	return len;
}

static bool all_zero(const uint8_t *p, uint64_t n)
{
	uint64_t i = 0, w;

	for (; i < n && (uintptr_t)(p + i) % 8 != 0; i++)
		if (p[i] != 0)
			return false;
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8); /* aligned: one load */
		if (w != 0)
			return false;
	}
	for (; i < n; i++)
		if (p[i] != 0)
			return false;
	return true;
}

/* Writes n bytes of s at d, `pos` bytes into the copy, on side sd: into a
 * memfd by pwrite, which fills the file's pages without a page fault each
 * as the memmove through the mapping would take (about half the host time
 * for a fresh handle); the mapping sees them. */
static void put(const struct side *sd, uint64_t pos, uint8_t *d,
                const uint8_t *s, uint64_t n)
{
	off_t off = sd->off + (off_t)pos;

	while (sd->fd >= 0 && n > 0) {
		ssize_t w = pwrite(sd->fd, s, (size_t)n, off);

		if (w <= 0)
			break;
		off += w;
		d += w;
		s += w;
		n -= (uint64_t)w;
	}
	if (n > 0)
		memcpy(d, s, (size_t)n);
}

/* Zeros n bytes at d on side sd: the sim's own whole pages are given back
 * (anonymous: dropped; memfd: punched), the rest cleared where it does
 * not already read zero. */
static void zero_out(const struct side *sd, uint8_t *d, uint64_t n)
{
	uint64_t head = (PAGE - (uintptr_t)d % PAGE) % PAGE, mid;
	int how = sd->fd >= 0 ? MADV_REMOVE : MADV_DONTNEED;

	if ((sd->fd < 0 && !sd->anon) || n < head + PAGE) {
		for (uint64_t pos = 0, k; pos < n; pos += k) {
			k = PAGE - (uintptr_t)(d + pos) % PAGE;
			if (k > n - pos)
				k = n - pos;
			if (!all_zero(d + pos, k))
				memset(d + pos, 0, (size_t)k);
		}
		return;
	}
	mid = (n - head) / PAGE * PAGE;
	memset(d, 0, (size_t)head);
	if (madvise(d + head, (size_t)mid, how) != 0)
		memset(d + head, 0, (size_t)mid);
	memset(d + head + mid, 0, (size_t)(n - head - mid));
}

/* Data onto n bytes at d (side sd, `pos` bytes into the copy; `hole`: the
 * destination reads zero there): piece by piece up to each destination
 * page's end, a piece of zeros is not written where the destination reads
 * zero and is zeroed (zero_out) where it does not; the rest is written in
 * runs. */
static void copy_data(const struct side *sd, uint64_t pos, uint8_t *d,
                      const uint8_t *s, uint64_t n, bool hole)
{
	uint64_t at = 0, run = 0; /* [run, at): not yet written */
	uint64_t z = 0, zn = 0;   /* [z, z + zn): to zero */

	while (at < n) {
		uint64_t k = PAGE - ((uintptr_t)(d + at) % PAGE);

		if (k > n - at)
			k = n - at;
		if (!all_zero(s + at, k)) {
			at += k;
			continue;
		}
		if (at > run)
			put(sd, pos + run, d + run, s + run, at - run);
		if (!hole && !all_zero(d + at, k)) {
			if (zn == 0 || z + zn != at) {
				if (zn)
					zero_out(sd, d + z, zn);
				z = at;
				zn = 0;
			}
			zn += k;
		}
		at += k;
		run = at;
	}
	if (n > run)
		put(sd, pos + run, d + run, s + run, n - run);
	if (zn)
		zero_out(sd, d + z, zn);
}

static void sparse_copy(uint8_t *d, const uint8_t *s, uint64_t len,
                        const struct side *ds, const struct side *ss)
{
	uint64_t pos = 0;

	while (pos < len) {
		bool sdata, ddata;
		uint64_t n = side_run(ss, s + pos, pos, len - pos, &sdata);
		uint64_t m;

		if (!sdata && ds->anon) {
			/* giving back pages never touched costs less than
			 * finding them */
			zero_out(ds, d + pos, n);
			pos += n;
			continue;
		}
		m = side_run(ds, d + pos, pos, n, &ddata);
		if (!sdata && !ddata)
			; /* zeros onto zeros */
		else if (!sdata)
			zero_out(ds, d + pos, m);
		else
			copy_data(ds, pos, d + pos, s + pos, m, !ddata);
		pos += m;
	}
}

void gs__dcopy(uint64_t dst, uint64_t src, uint64_t len)
{
	struct gs__alloc *d = gs__alloc_find(dst, len);
	struct gs__alloc *s = gs__alloc_find(src, len);
	struct side ds, ss;

	if (d != NULL && !d->backed)
		return;
	if (s != NULL && !s->backed) {
		memset((void *)(uintptr_t)dst, 0, (size_t)len);
		return;
	}
	if (len < SPARSE_MIN || (dst < src + len && src < dst + len)) {
		memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src,
		        (size_t)len);
		return;
	}
	ds = side_of(d, dst);
	ss = side_of(s, src);
	sparse_copy((uint8_t *)(uintptr_t)dst, (const uint8_t *)(uintptr_t)src,
	            len, &ds, &ss);
}

/* Device memory we may copy to/from: a live allocation range (or, for a
 * copy being captured, a graph allocation's address: it lives when the
 * graph runs). */
static bool is_dev_range(uint64_t p, uint64_t len, const struct gs__stream *s)
{
	struct gs__alloc *a = gs__alloc_find(p, len);

	return gs__alloc_usable(a) || (a != NULL && a->kind == GS__A_GRAPH &&
	                               s != NULL && s->capture != NULL);
}

/* A copy on a capturing stream: a memcpy node (a synchronous one cannot
 * be captured and ends the capture). Lock held. */
static CUresult capture_copy(struct gs__stream *s, bool sync, uint64_t dst,
                             uint64_t src, uint64_t len)
{
	struct gs__node *n;
	CUresult r;

	if (sync) {
		gs__capture_invalidate(s,
		                       CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	n = gs__node_new(GS__N_MEMCPY);
	if (n == NULL)
		return CUDA_ERROR_OUT_OF_MEMORY;
	n->cpy_dst = dst;
	n->cpy_src = src;
	n->cpy_len = len;
	n->memcpy.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
	n->memcpy.srcDevice = (CUdeviceptr)src;
	n->memcpy.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
	n->memcpy.dstDevice = (CUdeviceptr)dst;
	n->memcpy.WidthInBytes = len;
	n->memcpy.Height = 1;
	n->memcpy.Depth = 1;
	r = gs__capture_node(s, n);
	if (r != CUDA_SUCCESS)
		gs__graph_node_free(n);
	return r;
}

/*
 * One copy or memset call. `sync`: returns after the work queued before it
 * is done (legacy: the whole context; per-thread: that stream). Async
 * calls apply their data at once (see the file comment) and queue nothing.
 */

CUresult gs__xfer(enum xfer_kind k, uint64_t dst, uint64_t src, uint64_t len,
                  CUstream hStream, bool sync, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	uint64_t t0;
	CUresult r;

	gs__copy_delay(); /* swapcheck.c: none unless asked for */
	t0 = gs__bus_now();
	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(sync ? NULL : hStream, pt, &ctx, &s);
	if (r != CUDA_SUCCESS)
		goto out;
	if (len == 0)
		goto out;
	if (dst == 0 || src == 0 ||
	    ((k == X_HTOD || k == X_DTOD) && !is_dev_range(dst, len, s)) ||
	    ((k == X_DTOH || k == X_DTOD) && !is_dev_range(src, len, s))) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (s->capture != NULL) {
		r = capture_copy(s, sync, dst, src, len);
		len = 0; /* a node: no bytes moved now */
		goto out;
	}
	if (sync) {
		r = gs__wait(ctx, pt ? s->last : ctx->last);
		if (r != CUDA_SUCCESS)
			goto out;
		/* the wait dropped the lock: the ranges may be gone */
		if (((k == X_HTOD || k == X_DTOD) &&
		     !is_dev_range(dst, len, s)) ||
		    ((k == X_DTOH || k == X_DTOD) &&
		     !is_dev_range(src, len, s))) {
			r = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
	}
	gs__dcopy(dst, src, len);
out:
	gs__unlock();
	if (r == CUDA_SUCCESS && len && (k == X_HTOD || k == X_DTOH))
		gs__bus_wait(gs__drv.st->gpus[gs__drv.dev[ctx->dev].gpu].model,
		             len, t0, !sync); /* bus.h: off unless asked for */
	return r;
}

CUresult gs__memset_call(uint64_t p, uint64_t pitch, uint32_t value,
                         unsigned int esize, uint64_t width, uint64_t height,
                         CUstream hStream, bool sync, bool pt)
{
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	r = gs__stream_get(sync ? NULL : hStream, pt, &ctx, &s);
	if (r == CUDA_SUCCESS && s->capture != NULL) {
		struct gs__node *n = sync ? NULL : gs__node_new(GS__N_MEMSET);

		if (sync) {
			gs__capture_invalidate(
			    s, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
			r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		} else if (n == NULL) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			n->memset.dst = (CUdeviceptr)p;
			n->memset.pitch = pitch ? pitch : width * esize;
			n->memset.value = value;
			n->memset.elementSize = esize;
			n->memset.width = width;
			n->memset.height = height;
			r = gs__capture_node(s, n);
			if (r != CUDA_SUCCESS)
				gs__graph_node_free(n);
		}
		gs__unlock();
		return r;
	}
	if (r == CUDA_SUCCESS && sync)
		r = gs__wait(ctx, pt ? s->last : ctx->last);
	if (r == CUDA_SUCCESS)
		r = gs__memset(p, pitch ? pitch : width * esize, value, esize,
		               width, height);
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void *srcHost,
                                 size_t ByteCount)
{
	return gs__xfer(X_HTOD, dstDevice, (uint64_t)(uintptr_t)srcHost,
	                ByteCount, NULL, true, false);
}

CUresult CUDAAPI cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice,
                                 size_t ByteCount)
{
	return gs__xfer(X_DTOH, (uint64_t)(uintptr_t)dstHost, srcDevice,
	                ByteCount, NULL, true, false);
}

CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                 size_t ByteCount)
{
	return gs__xfer(X_DTOD, dstDevice, srcDevice, ByteCount, NULL, true,
	                false);
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	return gs__xfer(X_ANY, dst, src, ByteCount, NULL, true, false);
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice,
                                      const void *srcHost, size_t ByteCount,
                                      CUstream hStream)
{
	return gs__xfer(X_HTOD, dstDevice, (uint64_t)(uintptr_t)srcHost,
	                ByteCount, hStream, false, false);
}

CUresult CUDAAPI cuMemcpyDtoHAsync_v2(void *dstHost, CUdeviceptr srcDevice,
                                      size_t ByteCount, CUstream hStream)
{
	return gs__xfer(X_DTOH, (uint64_t)(uintptr_t)dstHost, srcDevice,
	                ByteCount, hStream, false, false);
}

CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice,
                                      CUdeviceptr srcDevice, size_t ByteCount,
                                      CUstream hStream)
{
	return gs__xfer(X_DTOD, dstDevice, srcDevice, ByteCount, hStream, false,
	                false);
}

CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src,
                               size_t ByteCount, CUstream hStream)
{
	return gs__xfer(X_ANY, dst, src, ByteCount, hStream, false, false);
}

CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr dstDevice, unsigned char uc,
                               size_t N)
{
	return gs__memset_call(dstDevice, 0, uc, 1, N, 1, NULL, true, false);
}

CUresult CUDAAPI cuMemsetD16_v2(CUdeviceptr dstDevice, unsigned short us,
                                size_t N)
{
	return gs__memset_call(dstDevice, 0, us, 2, N, 1, NULL, true, false);
}

CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr dstDevice, unsigned int ui,
                                size_t N)
{
	return gs__memset_call(dstDevice, 0, ui, 4, N, 1, NULL, true, false);
}

CUresult CUDAAPI cuMemsetD2D8_v2(CUdeviceptr dstDevice, size_t dstPitch,
                                 unsigned char uc, size_t Width, size_t Height)
{
	return gs__memset_call(dstDevice, dstPitch, uc, 1, Width, Height, NULL,
	                       true, false);
}

CUresult CUDAAPI cuMemsetD2D16_v2(CUdeviceptr dstDevice, size_t dstPitch,
                                  unsigned short us, size_t Width,
                                  size_t Height)
{
	return gs__memset_call(dstDevice, dstPitch, us, 2, Width, Height, NULL,
	                       true, false);
}

CUresult CUDAAPI cuMemsetD2D32_v2(CUdeviceptr dstDevice, size_t dstPitch,
                                  unsigned int ui, size_t Width, size_t Height)
{
	return gs__memset_call(dstDevice, dstPitch, ui, 4, Width, Height, NULL,
	                       true, false);
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc,
                                 size_t N, CUstream hStream)
{
	return gs__memset_call(dstDevice, 0, uc, 1, N, 1, hStream, false,
	                       false);
}

CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us,
                                  size_t N, CUstream hStream)
{
	return gs__memset_call(dstDevice, 0, us, 2, N, 1, hStream, false,
	                       false);
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui,
                                  size_t N, CUstream hStream)
{
	return gs__memset_call(dstDevice, 0, ui, 4, N, 1, hStream, false,
	                       false);
}

CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr dstDevice, size_t dstPitch,
                                   unsigned char uc, size_t Width,
                                   size_t Height, CUstream hStream)
{
	return gs__memset_call(dstDevice, dstPitch, uc, 1, Width, Height,
	                       hStream, false, false);
}

CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr dstDevice, size_t dstPitch,
                                    unsigned short us, size_t Width,
                                    size_t Height, CUstream hStream)
{
	return gs__memset_call(dstDevice, dstPitch, us, 2, Width, Height,
	                       hStream, false, false);
}

CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr dstDevice, size_t dstPitch,
                                    unsigned int ui, size_t Width,
                                    size_t Height, CUstream hStream)
{
	return gs__memset_call(dstDevice, dstPitch, ui, 4, Width, Height,
	                       hStream, false, false);
}

/*
 * cuMemcpyPeer(Async): a copy between two contexts' memory. A simulated
 * GPU has no peer access, so the real driver would stage it through the
 * host; here both are host memory and the bytes move at once. The
 * synchronous form first waits for the work queued in both contexts (the
 * driver serializes it with them).
 */
CUresult gs__memcpy_peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src,
                         CUcontext sctx, size_t len, CUstream hStream,
                         bool sync, bool pt)
{
	struct gs__ctx *dc = (struct gs__ctx *)dctx,
	               *sc = (struct gs__ctx *)sctx;
	struct gs__ctx *ctx = NULL;
	struct gs__stream *s = NULL;
	struct gs__alloc *da, *sa;
	CUresult r;

	if ((r = gs__enter()) != CUDA_SUCCESS)
		return r;
	if (!gs__h_is(dc, GS__H_CTX) || !gs__h_is(sc, GS__H_CTX) ||
	    dc->destroyed || sc->destroyed) {
		r = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	if (!sync &&
	    (r = gs__stream_get(hStream, pt, &ctx, &s)) != CUDA_SUCCESS)
		goto out;
	if (len == 0)
		goto out;
	da = gs__alloc_find(dst, len);
	sa = gs__alloc_find(src, len);
	if (!is_dev_range(dst, len, s) || !is_dev_range(src, len, s) ||
	    da->dev != dc->dev || sa->dev != sc->dev) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (s != NULL && s->capture != NULL) {
		r = capture_copy(s, false, dst, src, len);
		goto out;
	}
	if (sync) {
		r = gs__wait(dc, dc->last);
		if (r == CUDA_SUCCESS)
			r = gs__wait(sc, sc->last);
		if (r != CUDA_SUCCESS)
			goto out;
		if (!is_dev_range(dst, len, s) || !is_dev_range(src, len, s)) {
			r = CUDA_ERROR_INVALID_VALUE; /* freed while we waited */
			goto out;
		}
	}
	gs__dcopy(dst, src, len);
out:
	gs__unlock();
	return r;
}

CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext,
                              CUdeviceptr srcDevice, CUcontext srcContext,
                              size_t ByteCount)
{
	return gs__memcpy_peer(dstDevice, dstContext, srcDevice, srcContext,
	                       ByteCount, NULL, true, false);
}

CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                   CUdeviceptr srcDevice, CUcontext srcContext,
                                   size_t ByteCount, CUstream hStream)
{
	return gs__memcpy_peer(dstDevice, dstContext, srcDevice, srcContext,
	                       ByteCount, hStream, false, false);
}
