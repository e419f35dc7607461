/*
 * mps_server.h - the MPS control daemon that `gpuslice run --mode mps`
 * starts, shares and stops: one per device set (a GPU, a MIG instance or
 * whatever CUDA_VISIBLE_DEVICES names), in a pipe directory of its own
 * under the run directory.
 *
 * Every run in MPS mode joins the daemon of its device set: the first one
 * starts it, the others find it alive and use it; each keeps a shared
 * lock on the directory's users file while its command runs. The run that
 * leaves last (it gets the users lock exclusively) tells the daemon to
 * quit. Joining and leaving take the directory's start lock, so a run
 * that joins while the last one leaves waits and then starts a new daemon.
 */
#ifndef GS_CLI_MPS_SERVER_H
#define GS_CLI_MPS_SERVER_H

#include <limits.h>
#include <stdbool.h>

#include "gs/err.h"

struct gs_mps_server {
	char pipe_dir[PATH_MAX]; /* CUDA_MPS_PIPE_DIRECTORY for clients */
	int users_fd;            /* shared lock held while joined; -1 */
	bool started;            /* this run started the daemon */
};

/*
 * Joins (starting it if needed) the daemon for the devices `visible`
 * (a CUDA_VISIBLE_DEVICES value; NULL or "" for all) under `run_dir`.
 * nvidia-cuda-mps-control is $GPUSLICE_MPS_CONTROL or the first on PATH.
 * The caller must call gs_mps_server_leave() once its clients are gone.
 */
gs_err gs_mps_server_join(struct gs_mps_server *s, const char *run_dir,
                          const char *visible, struct gs_errbuf *eb);

/* Leaves; the last user stops the daemon. Safe on a server never joined
 * (users_fd -1). */
void gs_mps_server_leave(struct gs_mps_server *s);

/* Whether an MPS control program can be found ($GPUSLICE_MPS_CONTROL, else
 * nvidia-cuda-mps-control on PATH): `--mode auto` picks MPS only then. */
bool gs_mps_server_control_found(void);

#endif
