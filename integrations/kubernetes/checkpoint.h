/*
 * checkpoint.h - the driver's record of the claims it prepared, in
 * <state_dir>/checkpoint.json, and the atomic file write it (and the CDI
 * specs) rely on.
 *
 * The checkpoint is a JSON object
 *   {"version": 1, "claims": {<claim uid>: {
 *       "namespace", "name", "slice", "state": "preparing" | "prepared",
 *       "devices": [{"request", "pool", "device", "shareID"?}]}}}
 * A claim is recorded as "preparing" before its slice is created, and
 * "prepared" after its CDI spec is written: after a crash, a "preparing"
 * claim's slice (named from the UID) is adopted by the retried prepare or
 * deleted by unprepare, so nothing is lost or made twice.
 *
 *   (absent) --prepare: record--> preparing --slice+CDI--> prepared
 *   preparing|prepared --unprepare: slice, CDI, then entry--> (absent)
 *
 * Ownership: json_t results are the caller's.
 */
#ifndef GS_KUBE_CHECKPOINT_H
#define GS_KUBE_CHECKPOINT_H

#include <jansson.h>
#include <stddef.h>

#include "gs/err.h"

#define GS_KCKPT_FILE    "checkpoint.json"
#define GS_KCKPT_VERSION 1

/*
 * Writes `len` bytes to <dir>/<name>: a temp file in dir, fsync, rename,
 * fsync of dir. Creates dir (0755) when absent. On error the old file (if
 * any) is intact and no temp file remains.
 */
gs_err gs_kfile_write_atomic(const char *dir, const char *name,
                             const char *data, size_t len,
                             struct gs_errbuf *eb);

/* The same without fsync: for a file on a tmpfs (the run directory),
 * which a power failure takes away anyway. */
gs_err gs_kfile_write_atomic_nosync(const char *dir, const char *name,
                                    const char *data, size_t len,
                                    struct gs_errbuf *eb);

/*
 * Loads the checkpoint from dir. OUT: *ck (an empty one when the file is
 * absent). GS_ERR_CORRUPT for a file that is not a checkpoint,
 * GS_ERR_VERSION for a newer version.
 */
gs_err gs_kckpt_load(const char *dir, json_t **ck, struct gs_errbuf *eb);
/* Saves `ck` atomically. */
gs_err gs_kckpt_save(const char *dir, const json_t *ck, struct gs_errbuf *eb);
/*
 * Saves `ck` atomically (a reader sees the old or the new file, never a
 * mix) without fsync: for a state whose loss in a power failure costs
 * nothing, because what it records is found again another way (a claim's
 * "preparing" record: its slice is named from the claim UID). Survives a
 * crash of the process, not of the machine.
 */
gs_err gs_kckpt_save_nosync(const char *dir, const json_t *ck,
                            struct gs_errbuf *eb);

#endif
