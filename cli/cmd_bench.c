/*
 * cmd_bench.c - `gpuslice bench <study|trace>`: dispatches to the
 * benchmark subcommands, each in its own file (cmd_bench_*.c).
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

int gs_cli_bench_study(int argc, char **argv);
int gs_cli_bench_trace(int argc, char **argv);

static void bench_usage(FILE *f)
{
	fprintf(f, "usage: gpuslice bench <study|trace> [options]\n"
		   "  study   the seed study (seeds/003) on the sim or a real GPU\n"
		   "  trace   replay a cluster trace and compare placement policies\n");
}

int gs_cli_bench(int argc, char **argv)
{
	int (*fn)(int, char **) = NULL;

	if (argc < 2) {
		bench_usage(stderr);
		return GS_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		bench_usage(stdout);
		return GS_EXIT_OK;
	}
	if (strcmp(argv[1], "study") == 0)
		fn = gs_cli_bench_study;
	else if (strcmp(argv[1], "trace") == 0)
		fn = gs_cli_bench_trace;
	else {
		gs_cli_error("bench", "unknown benchmark '%s'", argv[1]);
		return GS_EXIT_USAGE;
	}
	return fn(argc - 1, argv + 1);
}
