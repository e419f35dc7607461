/*
 * trace_csv.h - reads the node and task lists of a cluster trace (the
 * column layout of Alibaba's cluster-trace-gpu-v2023, openb_*.csv) into
 * the types of gs/trace.h.
 *
 * Columns are found by their header names, in any order; others are
 * ignored. Nodes need cpu_milli, memory_mib, gpu and model (sn is kept
 * for nothing). Tasks need cpu_milli, memory_mib, num_gpu and gpu_milli;
 * gpu_spec is optional. Every problem is reported as GS_ERR_PARSE or
 * GS_ERR_RANGE (or GS_ERR_UNKNOWN_MODEL for a gpu_spec naming a model no
 * node has) with "FILE:LINE: what" in the error buffer, and nothing is
 * returned: the caller owns *out only on success (free() it).
 */
#ifndef GS_TRACE_CSV_H
#define GS_TRACE_CSV_H

#include <stddef.h>

#include "gs/err.h"
#include "gs/trace.h"

/* Input caps: anything larger is refused as absurd, not parsed. */
#define GS_TRACE_CSV_MAX_BYTES (512u << 20)
#define GS_TRACE_CSV_MAX_ROWS  (1u << 24)
#define GS_TRACE_CSV_MAX_LINE  65536

/* Reads a whole file into a NUL-terminated buffer the caller frees. */
gs_err gs_trace_csv_read_file(const char *path, char **buf, size_t *len,
                              struct gs_errbuf *eb);

/*
 * Parses a node list from `buf` (`len` bytes; need not be terminated).
 * `fname` names it in messages. GPU models are added to `models`.
 */
gs_err gs_trace_csv_parse_nodes(const char *buf, size_t len, const char *fname,
                                struct gs_trace_models *models,
                                struct gs_trace_node **out, size_t *n,
                                struct gs_errbuf *eb);

/* Parses a task list; gpu_spec models must already be in `models`. */
gs_err gs_trace_csv_parse_pods(const char *buf, size_t len, const char *fname,
                               const struct gs_trace_models *models,
                               struct gs_trace_pod **out, size_t *n,
                               struct gs_errbuf *eb);

#endif
