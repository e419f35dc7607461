/*
 * gresconf.h - the shards per GPU of a node, read from Slurm's gres.conf.
 *
 * Used when plugstack.conf gives no shards_per_gpu=N. Only what that
 * question needs is read: lines with Name=shard, their Count= and File=,
 * and NodeName= when a line is for some nodes only. The forms
 * understood are the ones Slurm documents for shards:
 *
 *   Name=shard Count=4 File=/dev/nvidia0         4 on that GPU
 *   Name=shard Count=8 File=/dev/nvidia[0-1]     4 on each of the two
 *   NodeName=gpu[01-16] Name=shard Count=4 File=/dev/nvidia0
 *
 * Keys are case-insensitive; '#' starts a comment; a NodeName= host list
 * may hold comma-separated names and one bracketed range each
 * (node[1-4,7]). Every GPU of the node must have the same count (it is
 * one number per node: a shard share is held / per GPU).
 *
 * Pure: the caller reads the file.
 */
#ifndef GS_SLURM_GRESCONF_H
#define GS_SLURM_GRESCONF_H

#include <stdbool.h>

#include "gs/err.h"

/*
 * Shards per GPU for node `node` (NULL: lines with a NodeName= are
 * skipped) in gres.conf text `text`. OUT: *per_gpu, 0 when no shard line
 * applies. GS_ERR_PARSE for a shard line it cannot read;
 * GS_ERR_UNSUPPORTED for shards without File= or with counts that
 * differ between GPUs. The errbuf names the line.
 */
gs_err gs_gresconf_shards_per_gpu(const char *text, const char *node,
                                  int *per_gpu, struct gs_errbuf *eb);

/*
 * Whether `name` is in Slurm host list `list` ("a,b", "node[1-4,7]",
 * "gpu[01-16]"). Malformed lists match nothing.
 */
bool gs_gresconf_hostlist_has(const char *list, const char *name);

/*
 * How many names a File= expression stands for ("/dev/nvidia0" 1,
 * "/dev/nvidia[0-3]" 4, "/dev/nvidia0,/dev/nvidia2" 2); -1 when
 * malformed.
 */
int gs_gresconf_file_count(const char *expr);

#endif
