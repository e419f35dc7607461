/*
 * mps.h - the MPS control driver: starting, asking and stopping one
 * nvidia-cuda-mps-control daemon through its own command line, as an
 * administrator would (`-d` to start it, commands such as `quit` on its
 * stdin), and telling from the pid file in its pipe directory whether it
 * is alive. Used by gpusliced (daemon/reconcile.c), `gpuslice run --mode
 * mps` (cli/mps_server.c) and the seed study (bench/study_node.c).
 *
 * Policy stays with the caller: where the pipe and log directories are,
 * which devices the daemon serves, what else its environment holds, how
 * long to wait and when to try again. Nothing here writes to
 * stdout/stderr.
 */
#ifndef GS_MPS_H
#define GS_MPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gs/cmd.h"

#define GS_MPS_CONTROL  "nvidia-cuda-mps-control"
#define GS_MPS_PID_FILE GS_MPS_CONTROL ".pid"

/* One control daemon as its callers reach it. The strings are borrowed. */
struct gs_mps_ctl {
	const char *prog;       /* the control program (path, or a name on
	                           PATH) */
	const char *pipe_dir;   /* CUDA_MPS_PIPE_DIRECTORY */
	const char *log_dir;    /* CUDA_MPS_LOG_DIRECTORY */
	const char *visible;    /* CUDA_VISIBLE_DEVICES; NULL: unset */
	const char *const *env; /* applied before the three above: "K=V"
	                           or "K" (unset), NULL-terminated; may be
	                           NULL */
	int timeout_ms;         /* per run of the program; <= 0: none */
	unsigned int flags;     /* GS_CMD_ERR_* for its stderr */
};

/*
 * Runs the control program once with `arg` (NULL: none) and `input`
 * (NULL: none) on its stdin, in the daemon's environment; its stdout into
 * out (may be NULL) as gs_cmd_run does. Returns its exit status, -1 when
 * it could not run or timed out.
 */
int gs_mps_control(const struct gs_mps_ctl *c, const char *arg,
                   const char *input, char *out, size_t len);

/* `prog -d`: starts the daemon (it returns once the daemon is up). */
int gs_mps_start(const struct gs_mps_ctl *c, char *out, size_t len);

/* `quit` on its stdin: tells the daemon to stop (it may take a while). */
int gs_mps_quit(const struct gs_mps_ctl *c);

/* The pid of the daemon whose pid file is in `pipe_dir`, when it is alive
 * (also when it is another uid's); 0 otherwise. */
int32_t gs_mps_pid(const char *pipe_dir);

/* Polls every step_ms for at most timeout_ms until the daemon is up;
 * returns its pid, 0 when it did not come up. */
int32_t gs_mps_wait_up(const char *pipe_dir, int timeout_ms, int step_ms);

/* Polls every step_ms for at most timeout_ms until the daemon is gone;
 * returns whether it is. */
bool gs_mps_wait_gone(const char *pipe_dir, int timeout_ms, int step_ms);

/* Whether one of the daemon's servers is in FAULT (a client's fatal GPU
 * error reached all of its clients, which have not all exited yet). */
bool gs_mps_is_faulted(const struct gs_mps_ctl *c);

#endif
