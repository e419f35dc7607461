/*
 * cli.h - what every `gpuslice` subcommand shares.
 *
 * Each subcommand lives in its own file cli/cmd_<name>.c and exports one
 * entry point `int gs_cli_<name>(int argc, char **argv)`, where argv[0] is
 * the subcommand's name. The return value is the process exit status:
 *
 *   0  success                     4  permission denied
 *   1  runtime failure             5  does not fit / quota exceeded
 *   2  usage error or bad input    6  daemon unreachable
 *   3  not found
 *
 * (gs_err_exit_code() gives the status for each gs_err.) `gpuslice run`
 * returns the command's own status instead. Errors are printed as one
 * line, `gpuslice <cmd>: <message>`, on stderr, by gs_cli_error().
 */
#ifndef GS_CLI_H
#define GS_CLI_H

#include <jansson.h>
#include <stddef.h>

#include "gs/err.h"

enum gs_cli_exit {
	GS_EXIT_OK = 0,
	GS_EXIT_FAILURE = 1,
	GS_EXIT_USAGE = 2,
	GS_EXIT_NOT_FOUND = 3,
	GS_EXIT_PERM = 4,
	GS_EXIT_NO_FIT = 5,
	GS_EXIT_UNAVAILABLE = 6,
};

/* Prints "gpuslice <cmd>: <formatted message>\n" on stderr. */
void gs_cli_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Prints the errbuf's message (or the code's) and returns its exit status. */
int gs_cli_fail(const char *cmd, gs_err err, const struct gs_errbuf *eb);

/*
 * gpusliced's socket from `gpuslice --socket S <command>` (set by main.c),
 * NULL when not given: the client library then uses its default
 * (gs_client_default_socket(): $GPUSLICE_SOCKET, ...). Every command
 * passes it to the gs_client_* calls.
 */
extern const char *gs_cli_socket;

/* "512MiB", "4.0GiB", "80GiB": short, for tables (view.c). */
void gs_cli_fmt_bytes(unsigned long long bytes, char *buf, size_t len);
/* The "swap:" lines of `show` from the slice's "swap" object (show_swap.c);
 * nothing when it is not an object. */
void gs_cli_show_swap(json_t *sw);
/* Prints `j` on stdout, indented, in key order, with a newline. */
void gs_cli_print_json(const json_t *j);
/* Fits the compute figures (percent of one GPU) of the slices sharing a
 * GPU to what the GPU can give: each at most 100, and when they add up to
 * more than 100 (windows that caught a burst, overlapping processes) all
 * scaled down by the same factor, so their proportions stay. Returns the
 * sum after fitting. */
double gs_cli_fit_compute(double *pct, size_t n);

/* Subcommand entry points (each defined in its own cmd_*.c). */
#define GS_CLI_COMMANDS(X)                                                     \
	X(sim, "manage the simulated GPU node (init, env, status, reset)")    \
	X(run, "run a command in a GPU slice")                                 \
	X(create, "create a slice on the node daemon")                         \
	X(list, "list slices on the node daemon")                              \
	X(show, "show one slice")                                              \
	X(delete, "delete a slice")                                            \
	X(top, "live per-GPU, per-slice view")                                 \
	X(swap, "swap a slice's memory out to host memory or back in")         \
	X(quota, "set or show team quotas")                                    \
	X(usage, "usage and cost report from the ledger")                      \
	X(events, "list daemon events")                                        \
	X(plan, "plan a MIG layout or validate a mig-parted config")           \
	X(advise, "which sharing mechanism fits a workload")                   \
	X(import, "translate device-plugin or DRA configs into slices")        \
	X(bench, "benchmarks: study (seed study), trace (cluster replay)")    \
	X(doctor, "check this node: driver, MIG, MPS, shim vs a program's libc")

#define GS__CLI_DECL(name, help) int gs_cli_##name(int argc, char **argv);
GS_CLI_COMMANDS(GS__CLI_DECL)
#undef GS__CLI_DECL

#endif
