/*
 * cmd.h - runs a helper program to completion: its input on stdin, its
 * stdout captured, a deadline, and the environment the caller decides
 * (on top of ours). The one spawner for the tools gpuslice drives through
 * their command line (nvidia-cuda-mps-control, nvidia-smi).
 *
 * Writes nothing to stdout/stderr itself.
 */
#ifndef GS_CMD_H
#define GS_CMD_H

#include <stddef.h>

/* Flags for gs_cmd_run: where the program's stderr goes (default: ours). */
#define GS_CMD_ERR_NULL 0x1u /* to /dev/null */
#define GS_CMD_ERR_OUT  0x2u /* into `out` with its stdout */

/*
 * Runs `argv[0]` (from PATH unless it holds a '/') with our environment
 * changed by `env` (NULL-terminated, may be NULL): "K=V" sets K, a bare
 * "K" removes it; a later entry wins over an earlier one. `input` (may be
 * NULL) goes to its stdin. Its stdout (at most len-1 bytes,
 * NUL-terminated) goes into out when out is not NULL, else to /dev/null;
 * reading stops once the program exits, so a daemon it leaves behind
 * holding the pipe does not hold us. `timeout_ms` <= 0: no deadline; past
 * the deadline the program is killed (SIGKILL).
 *
 * Returns its exit status, or -1 when it could not run, was killed by a
 * signal or timed out.
 */
int gs_cmd_run(char *const argv[], const char *const env[], const char *input,
               char *out, size_t len, int timeout_ms, unsigned int flags);

#endif
