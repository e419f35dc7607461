/*
 * cmd_list.c - `gpuslice list`: the slices the caller may see, as a table
 * or as the daemon's JSON.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gs/client.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuslice [--socket S] list [--team T] [--json]\n"
	           "\n"
	           "Lists slices on the node daemon (yours, or all for administrators).\n"
	           "\n"
	           "  --team T   only team T's slices\n"
	           "  --json     the daemon's JSON: {\"slices\": [...]}\n");
}

int gs_cli_list(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"team", required_argument, NULL, 't'},
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct gs_errbuf eb = {0};
	char path[200] = "/v1/slices";
	const char *team = NULL;
	bool as_json = false;
	json_t *out = NULL, *a;
	int opt;
	gs_err err;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 't':
			team = optarg;
			break;
		case 'j':
			as_json = true;
			break;
		case 'h':
			usage(stdout);
			return GS_EXIT_OK;
		default:
			usage(stderr);
			return GS_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		gs_cli_error("list", "unexpected argument '%s'", argv[optind]);
		return GS_EXIT_USAGE;
	}
	if (team) {
		strcat(path, "?team=");
		gs_client_urlencode(team, path, sizeof(path));
	}
	err = gs_client_call(gs_cli_socket, "GET", path, NULL, &out, &eb);
	if (err)
		return gs_cli_fail("list", err, &eb);
	if (as_json) {
		gs_cli_print_json(out);
		json_decref(out);
		return GS_EXIT_OK;
	}
	a = json_object_get(out, "slices");
	printf("%-20s %-12s %-14s %-4s %-9s %-7s %-8s %s\n", "NAME", "TEAM",
	       "MODE", "GPU", "MEMORY", "COMPUTE", "PRIORITY", "STATE");
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *s = json_array_get(a, i);
		char mem[32], comp[16], mode[40];
		json_t *mig = json_object_get(s, "mig");

		gs_cli_fmt_bytes(
		    (unsigned long long)gs_client_int(s, "memory_bytes"), mem,
		    sizeof(mem));
		if (gs_client_int(s, "compute"))
			snprintf(comp, sizeof(comp), "%lld%%",
			         gs_client_int(s, "compute"));
		else
			snprintf(comp, sizeof(comp), "-");
		snprintf(mode, sizeof(mode), "%s%s%s", gs_client_str(s, "mode"),
		         json_is_object(mig) ? ":" : "",
		         json_is_object(mig) ? gs_client_str(mig, "profile")
		                             : "");
		printf("%-20s %-12s %-14s %-4lld %-9s %-7s %-8s %s\n",
		       gs_client_str(s, "name"), gs_client_str(s, "team"), mode,
		       gs_client_int(json_object_get(s, "gpu"), "index"),
		       gs_client_int(s, "memory_bytes") ? mem : "-", comp,
		       gs_client_str(s, "priority"), gs_client_str(s, "state"));
	}
	json_decref(out);
	return GS_EXIT_OK;
}
