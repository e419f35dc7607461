/*
 * main.c - `gpuslice`: the global --socket option, then one subcommand
 * per cli/cmd_*.c (GS_CLI_COMMANDS in cli.h lists them all; every one is
 * built).
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

struct cli_cmd {
	const char *name;
	const char *help;
	int (*fn)(int argc, char **argv);
};

static const struct cli_cmd commands[] = {
#define GS__CLI_ENTRY(name, help) {#name, help, gs_cli_##name},
	GS_CLI_COMMANDS(GS__CLI_ENTRY)
#undef GS__CLI_ENTRY
};

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuslice <command> [options]\n\n"
		   "GPU sharing: enforced fractions, time-slicing, MPS and MIG under one allocator.\n"
		   "\n"
		   "commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(f,
		"\n"
		"global option: --socket PATH  gpusliced's API socket (else $GPUSLICE_SOCKET)\n"
		"\n`gpuslice <command> --help` describes each command.\n"
		"Exit status: 0 ok, 1 failure, 2 usage or bad input, 3 not found,\n"
		"4 permission denied, 5 does not fit or over quota, 6 daemon unreachable;\n"
		"`run` exits with its command's status.\n");
}

int main(int argc, char **argv)
{
	/* Global options before the command: --socket S (gpusliced's API). */
	while (argc >= 2 && strncmp(argv[1], "--socket", 8) == 0) {
		if (argv[1][8] == '=') {
			gs_cli_socket = argv[1] + 9;
			argc -= 1;
			argv += 1;
		} else if (argv[1][8] == '\0' && argc >= 3) {
			gs_cli_socket = argv[2];
			argc -= 2;
			argv += 2;
		} else {
			gs_cli_error("--socket", "needs a path");
			return GS_EXIT_USAGE;
		}
	}
	if (argc < 2) {
		usage(stderr);
		return GS_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return GS_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(argv[1], commands[i].name) != 0)
			continue;
		return commands[i].fn(argc - 1, argv + 1);
	}
	gs_cli_error(argv[1], "unknown command (see `gpuslice --help`)");
	return GS_EXIT_USAGE;
}
