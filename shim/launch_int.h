/*
 * launch_int.h - what the launch hooks (launch_hooks.c) share with the
 * launch scheduler (launch.c): a thread's open batch, the lease path the
 * hooks take inline, and the slow path's begin and end. Private to those
 * two files; the design is in launch.c's header comment.
 */
#ifndef GS_SHIM_LAUNCH_INT_H
#define GS_SHIM_LAUNCH_INT_H

#include "shim_int.h"

#define GS__SPAN_NS     2000000ULL /* host time a batch stays open, at most */
#define GS__SPAN_EVERY  16 /* the lease path reads the clock so seldom */

/*
 * One thread's open batch: launches on one stream admitted together
 * (one lease) and timed by one pair of events. Only its thread opens,
 * joins and closes it; gs__launch_ctx_gone() may forget it from another
 * thread. mu is held from a launch's begin to its end.
 */
struct batch {
	pthread_mutex_t mu;
	struct batch *next; /* every thread's batch: reg_mu */
	bool open;
	bool timed;   /* start recorded */
	bool booked;  /* admitted under the region lock */
	bool measure; /* timed and charged (else only counted) */
	bool probe;   /* one launch, closed right after it (see close_batch) */
	bool idle_start; /* a probe opened with none of our work in flight */
	bool known;      /* the per-launch estimate was learned at opening */
	bool pt;
	CUcontext ctx;
	CUstream stream;
	/* The lease path (lease_take) reads these, and only its thread
	 * writes them, without b->mu: */
	uint32_t left; /* launches of the lease not yet made; 0: none open */
	CUcontext cur; /* the thread's current context, GS__CTX_UNKNOWN when
	                  it must be asked of the driver */
	const uint32_t *watch; /* a word of the GPU's scheduler record: the
	                          lease ends when (*watch & watch_mask) !=
	                          watch_val (want moved, or the gate) */
	uint32_t watch_mask, watch_val;
	const uint64_t *epoch_p; /* the region's limits epoch word */
	int dev;
	int32_t slice;
	uint32_t n;     /* launches so far */
	uint32_t lease; /* launches admitted */
	uint32_t want;  /* gs_sched_dev.want at admission */
	uint32_t opens; /* batches opened by this thread */
	uint64_t each;  /* estimated GPU time per launch */
	uint64_t charged;
	uint64_t lim_epoch; /* limits epoch at admission */
	uint64_t opened;    /* host time it was opened */
	uint64_t rec0;      /* host time before its start event's record */
	uint64_t rec1;      /* and after it */
	uint64_t launch0;   /* a probe's: host time before its launch */
	uint64_t launch1;   /* and after it (a batch of one's) */
	bool shared;        /* its span may hold another slice's work */
	CUevent start;
	/* A sync closed the batch but not its lease (lease_resume): the
	 * launches the lease had left then; 0: nothing to resume. */
	uint32_t resume_left;
	uint64_t admitted; /* host time of the lease's admission under the
	                      region lock; 0: not admitted */
};

/* A current context no launch is in: the lease path asks again. */
#define GS__CTX_UNKNOWN ((CUcontext)(uintptr_t)1)

/* The calling thread's batch (launch.c), NULL before its first slow
 * launch. */
extern __thread struct batch *gs__my_batch
    __attribute__((tls_model("initial-exec")));

struct ticket {
	struct batch *b; /* the launch is in b (b->mu held); NULL: unscheduled */
	CUresult refused; /* with b NULL: the launch must not run (no batch
	                     to schedule it: out of host memory) */
	bool measure;
	int dev;
	int32_t slice;
	uint64_t est; /* charged for the lease */
	uint32_t want;
	bool shared; /* another slice's work in flight at admission, or
	                ours handed the turn over (gs__span_rec.shared) */
};

/*
 * The lease path: whether this launch, on `stream`, is one more of the
 * calling thread's open lease, taken if so. Thread-local loads and a
 * decrement; the two shared words it compares (the GPU's want or gate,
 * the limits epoch) are plain loads of lines nobody writes while the
 * lease stands. The lease ends when it is used up, the thread's current
 * context changed, someone on the GPU wants in (want moved) or the
 * limits changed; and, looked at once every GS__SPAN_EVERY launches, when
 * it has been open GS__SPAN_NS (a slow launcher's lease must not keep
 * its turn's work "in flight" for long).
 */
/* Whether nobody wanted in on the GPU (or the gate stayed as it was)
 * and the limits did not change since the lease was admitted. */
static inline bool lease_unmoved(const struct batch *b)
{
	return (__atomic_load_n(b->watch, __ATOMIC_RELAXED) & b->watch_mask) ==
	           b->watch_val &&
	       __atomic_load_n(b->epoch_p, __ATOMIC_RELAXED) == b->lim_epoch;
}

static inline bool lease_take(struct batch *b, CUstream stream, bool pt)
{
	if (b == NULL || b->left == 0 || b->stream != stream || b->pt != pt ||
	    b->cur != b->ctx)
		return false;
	if (!lease_unmoved(b))
		return false;
	if (GS_UNLIKELY(b->n % GS__SPAN_EVERY == 0) &&
	    gs__now() - b->opened >= GS__SPAN_NS)
		return false;
	b->left--;
	b->n++;
	return true;
}

/* The lease path's launch failed: not launched, not charged. */
static inline CUresult lease_undo(struct batch *b, CUresult r)
{
	if (GS_UNLIKELY(r != CUDA_SUCCESS)) {
		b->left++;
		b->n--;
	}
	return r;
}

/*
 * Slow path before a launch on `stream`. Returns false when the launch
 * goes to the driver unscheduled (nothing to do afterwards); true with
 * t->b locked, to be released by gs__launch_end().
 */
bool gs__launch_begin(struct ticket *t, CUstream stream, bool pt);
/* Slow path after the launch returned `r`. */
CUresult gs__launch_end(struct ticket *t, CUresult r);

#endif
