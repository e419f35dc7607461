/*
 * kit.h - what every workload program shares: the common flags, opening a
 * device (driver table, primary context, the embedded kernels), launching
 * the kernels of gs/kernels.h, recording the first CUDA failure, the result
 * line, and a monotonic clock.
 *
 * A program's life:
 *
 *   gs_kit_flags()          parse flags; --help or a usage error ends here
 *   gs_kit_open()           libcuda.so.1 -> cuInit -> device -> primary
 *                           context (current on the calling thread) ->
 *                           module from the embedded PTX -> kernels
 *   ... work; every driver call goes through gs_kit_check(), which keeps
 *       the first failure (call name and CUresult) ...
 *   gs_kit_result()         start the result line: program, source, ...
 *   gs_kit_fail_line()      or: print the error line, get exit status 1
 *   gs_kit_close()          module unloaded, primary context released
 *
 * Output contract: on stdout exactly one JSON line, whether the program
 * succeeds (its results) or fails ({"error":"CUDA_ERROR_...", ...}).
 * Usage errors are one line on stderr. Exit status: 0 success, 1 a CUDA
 * or runtime failure, 2 a usage error.
 */
#ifndef GS_WORKLOADS_KIT_H
#define GS_WORKLOADS_KIT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "cu.h"
#include "flags.h"
#include "jline.h"

enum gs_kit_exit {
	GS_KIT_EXIT_OK = 0,
	GS_KIT_EXIT_FAILURE = 1,
	GS_KIT_EXIT_USAGE = 2,
};

/* Flags every program takes. */
struct gs_kit_common {
	long device;             /* --device N, default 0 */
	bool via_getprocaddress; /* --via-getprocaddress */
};

/* Table entries for the common flags, to put in a program's gs_flag[]. */
#define GS_KIT_COMMON_FLAGS(c)                                                 \
	{"device", GS_FLAG_INT, &(c)->device, 0, 1023, NULL, false},           \
	{                                                                      \
		"via-getprocaddress", GS_FLAG_BOOL, &(c)->via_getprocaddress,  \
		    0, 0, NULL, false                                          \
	}

/* Usage text for the common flags, to end a program's --help. */
#define GS_KIT_COMMON_USAGE                                                    \
	"  --device N           CUDA device ordinal (default 0)\n"             \
	"  --via-getprocaddress resolve every driver entry point through\n"    \
	"                       cuGetProcAddress_v2, like CUDA 12+ runtimes\n" \
	"  --help               this text\n"

/*
 * Parses flags (see flags.h). Returns true when the program must exit now
 * with *status: after printing `usage` on stdout for --help (status 0), or
 * after one line "<prog>: <reason> (see --help)" on stderr (status 2).
 */
bool gs_kit_flags(const char *prog, const char *usage, int argc, char **argv,
                  struct gs_flag *flags, size_t nflags, int *status);

/* The kernels of gs/kernels.h, in the order of their names there. */
enum gs_kit_kernel {
	GS_KIT_SPIN,
	GS_KIT_MATMUL,
	GS_KIT_BURN,
	GS_KIT_INFER_LAYER,
	GS_KIT_FILL,
	GS_KIT_FAULT,
	GS_KIT_NKERNELS,
};

struct gs_kit {
	const char *prog;
	enum gs_cu_resolve how;
	CUdevice dev;
	CUcontext ctx; /* the device's primary context, or NULL */
	CUmodule mod;
	CUfunction fn[GS_KIT_NKERNELS];
	char source[256]; /* cuDeviceGetName, "" until known */
	int sm_count;
	uint64_t total_mem;
	int driver_version;

	/* The first failure; later ones are dropped (the first is the cause).
	 */
	pthread_mutex_t lock;
	bool failed;
	CUresult err;
	const char *err_call;
	char err_name[48];
	char err_msg[256];
};

/*
 * Fills `k` and opens device `c->device`, leaving its primary context
 * current on the calling thread. Returns 0, or -1 with the failure
 * recorded in `k` (print it with gs_kit_fail_line()). Either way call
 * gs_kit_close() at the end; it undoes only what succeeded.
 */
int gs_kit_open(struct gs_kit *k, const char *prog,
                const struct gs_kit_common *c);
void gs_kit_close(struct gs_kit *k);

/* Makes the kit's context current on the calling thread (worker threads). */
CUresult gs_kit_bind_thread(struct gs_kit *k);

/*
 * Records `r` as the kit's failure if it is the first non-success seen,
 * naming `call`, a string literal. Returns `r` so callers can write
 * `if (gs_kit_check(k, gs_cu.cuMemAlloc(&p, n), "cuMemAlloc")) goto out;`.
 * Thread-safe.
 */
CUresult gs_kit_check(struct gs_kit *k, CUresult r, const char *call);

/*
 * Records a failure that has no CUresult, if it is the first: `name` takes
 * the place of the CUDA error name ("HOST_OUT_OF_MEMORY", "OS_ERROR",
 * "LIBCUDA_LOAD_FAILED"), `call` and `msg` are copied or kept as given
 * (call must be a string literal). Thread-safe.
 */
void gs_kit_fail_other(struct gs_kit *k, const char *name, const char *call,
                       const char *msg);

/* Whether a failure has been recorded. Thread-safe. */
bool gs_kit_failed(struct gs_kit *k);

/*
 * Launches kernel `which` with grid (gx, gy) of blocks (bx, by) on
 * `stream`, its parameters in `args` as cuLaunchKernel takes them.
 */
CUresult gs_kit_launch(struct gs_kit *k, enum gs_kit_kernel which, unsigned gx,
                       unsigned gy, unsigned bx, unsigned by, CUstream stream,
                       void **args);

/*
 * Starts the result line: {"program":..,"source":..,"resolve":..} (source
 * is null when the device was never reached). Add members, then print with
 * gs_jline_print(j, stdout).
 */
void gs_kit_result(struct gs_kit *k, struct gs_jline *j);

/* Adds "error", "call" and "message" for the recorded failure (or
 * "error":null when there is none). */
void gs_kit_put_error(struct gs_kit *k, struct gs_jline *j);

/*
 * Prints the failure line {program, source, resolve, error, call, message}
 * on stdout and returns GS_KIT_EXIT_FAILURE, for `return
 * gs_kit_fail_line(k);` on the way out.
 */
int gs_kit_fail_line(struct gs_kit *k);

/* Seconds on CLOCK_MONOTONIC. */
double gs_kit_now(void);
/* Sleeps `s` seconds (restarting after signals). */
void gs_kit_sleep(double s);

#endif
