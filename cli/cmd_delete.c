/*
 * cmd_delete.c - `gpuslice delete NAME...`: deletes slices. Each name is
 * tried; the exit status is that of the first failure.
 */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "gs/client.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuslice [--socket S] delete NAME... [--json]\n"
	           "\n"
	           "Deletes slices. Their processes keep running but lose the slice's\n"
	           "share (their next allocation fails).\n");
}

int gs_cli_delete(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	bool as_json = false;
	json_t *done = json_array();
	int opt, rc = GS_EXIT_OK;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			as_json = true;
			break;
		case 'h':
			usage(stdout);
			json_decref(done);
			return GS_EXIT_OK;
		default:
			usage(stderr);
			json_decref(done);
			return GS_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		json_decref(done);
		return GS_EXIT_USAGE;
	}
	for (int i = optind; i < argc; i++) {
		struct gs_errbuf eb = {0};
		gs_err err =
		    gs_client_slice_delete(gs_cli_socket, argv[i], &eb);

		if (err) {
			int r = gs_cli_fail("delete", err, &eb);

			if (rc == GS_EXIT_OK)
				rc = r;
			continue;
		}
		json_array_append_new(done, json_string(argv[i]));
		if (!as_json)
			printf("deleted slice %s\n", argv[i]);
	}
	if (as_json) {
		json_t *o = json_object();

		json_object_set_new(o, "deleted", done);
		gs_cli_print_json(o);
		json_decref(o);
	} else {
		json_decref(done);
	}
	return rc;
}
