/*
 * cmd_swap.c - `gpuslice swap out|in SLICE`: asks a slice's processes to
 * move their memory to host memory, or back (docs/swap.md), through the
 * slice's swap record in the region (gs/region_swap.h), and waits for the
 * answer of its shims. Works on the region of `gpuslice run` slices and,
 * as the region's owner, on a daemon's; the daemon's reconciler will make
 * the same requests from the policy.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "gs/region.h"
#include "gs/region_swap.h"

#define CMD "swap"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuslice swap out|in SLICE [--run-dir DIR] [--timeout S]\n"
	           "\n"
	           "Asks SLICE's processes to swap their GPU memory out to host memory, or\n"
	           "back in, and waits (default 60 s) for the answer. A process stops at\n"
	           "its next GPU call while swapped out. Prints the slice's swap record\n"
	           "as one JSON line. Only memory of slices run with --swap moves.\n");
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int gs_cli_swap(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"run-dir", required_argument, NULL, 'd'},
	    {"timeout", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *run_dir = NULL;
	double timeout = 60, t0;
	char dir[GS_REGION_DIR_MAX];
	struct gs_errbuf eb = {0};
	struct gs_region *r = NULL;
	struct gs_slice_ref s;
	struct gs_swap_rec rec;
	enum gs_swap_verb verb;
	uint32_t seq;
	gs_err err;
	int opt;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'd':
			run_dir = optarg;
			break;
		case 't':
			timeout = atof(optarg);
			break;
		case 'h':
			usage(stdout);
			return GS_EXIT_OK;
		default:
			usage(stderr);
			return GS_EXIT_USAGE;
		}
	}
	if (argc - optind != 2 || (strcmp(argv[optind], "out") != 0 &&
	                           strcmp(argv[optind], "in") != 0) ||
	    !(timeout > 0)) {
		usage(stderr);
		return GS_EXIT_USAGE;
	}
	verb = strcmp(argv[optind], "out") == 0 ? GS_SWAP_VERB_OUT
	                                        : GS_SWAP_VERB_IN;
	err = gs_region_dir_resolve(run_dir, dir, &eb);
	if (err == GS_OK)
		err = gs_region_open(dir, GS_REGION_TENANT, &r, &eb);
	if (err != GS_OK)
		return gs_cli_fail(CMD, err, &eb);
	err = gs_region_slice_find(r, argv[optind + 1], &s);
	if (err == GS_OK)
		err = gs_region_swap_request(r, &s, verb, &seq);
	if (err != GS_OK) {
		gs_cli_error(CMD, "slice %s: %s", argv[optind + 1],
		             gs_strerror(err));
		gs_region_close(r);
		return gs_err_exit_code(err);
	}
	t0 = mono_s();
	for (;;) {
		struct timespec ts = {0, 2 * 1000 * 1000};

		err = gs_region_swap_read(r, &s, &rec);
		if (err != GS_OK || rec.ack_seq == seq)
			break;
		if (mono_s() - t0 > timeout) {
			gs_cli_error(CMD, "slice %s: no process answered in %.0f s (only processes holding memory of a slice run with --swap answer)", argv[optind + 1], timeout);
			gs_region_close(r);
			return gs_err_exit_code(GS_ERR_TIMEOUT);
		}
		nanosleep(&ts, NULL);
	}
	gs_region_close(r);
	if (err != GS_OK)
		return gs_cli_fail(CMD, err, NULL);
	printf("{\"slice\": \"%s\", \"verb\": \"%s\", \"result\": \"%s\", \"seconds\": %.6f, \"swapped_bytes\": %llu, \"swap_outs\": %u, \"swap_ins\": %u, \"pinned\": \"%s\"}\n",
	       argv[optind + 1], argv[optind], gs_strerror(rec.result),
	       mono_s() - t0, (unsigned long long)rec.swapped_bytes,
	       rec.swap_outs, rec.swap_ins, gs_swap_pin_reason(rec.pinned));
	if (rec.result != GS_OK) {
		if (rec.pinned != GS_SWAP_PIN_NONE)
			gs_cli_error(CMD, "slice %s cannot swap: pinned, its process %s", argv[optind + 1], gs_swap_pin_reason(rec.pinned));
		else
			gs_cli_error(CMD, "slice %s: swap %s failed: %s", argv[optind + 1], argv[optind], gs_strerror(rec.result));
		return gs_err_exit_code(rec.result);
	}
	return GS_EXIT_OK;
}
