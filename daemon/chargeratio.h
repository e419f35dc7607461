/*
 * chargeratio.h - each limited slice's charge ratio (chargeratio.c): the
 * share of the GPU time its books say that NVML accounting measured for
 * it, over a recent window, bounded and smoothed. The daemon publishes it
 * in the slice's limits record (gs_region_slice_set_charge) and the shim
 * scales what it charges the slice's token bucket by it. Pure: the caller
 * (acct.c, each accounting poll) passes the time, the books and NVML's
 * figures in; nothing here reads a clock, a file or the region.
 */
#ifndef GS_DAEMON_CHARGERATIO_H
#define GS_DAEMON_CHARGERATIO_H

#include <stdbool.h>
#include <stdint.h>

struct gs__cratio;

/* Empty (NULL: out of memory); destroy(NULL) is a no-op. */
struct gs__cratio *gs__cratio_create(void);
void gs__cratio_destroy(struct gs__cratio *cr);

/*
 * NVML charged slice `id` `nvml_ns` more GPU time in this poll; `res_ns`
 * is how far NVML's running figures of that process may be off now (a
 * running process's figure is a whole percent of its life: life / 100).
 * Called for each process accounting lists, before gs__cratio_step.
 */
void gs__cratio_add(struct gs__cratio *cr, int64_t id, uint64_t nvml_ns,
                    uint64_t res_ns);

/* What one step saw and decided, for the log and the tests. */
struct gs__cratio_fig {
	double ratio;    /* the smoothed ratio (what is published) */
	double raw;      /* NVML / books over the window, unbounded; < 0:
	                    no window had enough data this step */
	double books_s;  /* the window's books */
	double nvml_s;   /* the window's NVML figure */
	double window_s; /* its length */
};

/*
 * One accounting poll for slice `id` at `now_ns`: `books_ns` is its books'
 * busy-time counter when `valid` (books that passed the ledger's check,
 * and NVML accounting on for its GPUs); otherwise this poll's figures are
 * dropped and the window restarts. Returns the ratio to publish, in
 * 1/65536 (GS_CHARGE_ONE is 1: charge what the books say); OUT:
 * *publish when it differs from what was last published (or nothing
 * was), *fig (may be NULL).
 */
uint32_t gs__cratio_step(struct gs__cratio *cr, int64_t id, int64_t now_ns,
                         bool valid, uint64_t books_ns, bool *publish,
                         struct gs__cratio_fig *fig);

/* Slice `id` is no longer corrected (gone, or no limit): its state goes
 * (the next step starts afresh and publishes). */
void gs__cratio_forget(struct gs__cratio *cr, int64_t id);

/* Slices not stepped since the last sweep are forgotten. */
void gs__cratio_sweep(struct gs__cratio *cr);

#endif
