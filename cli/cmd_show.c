/*
 * cmd_show.c - `gpuslice show NAME`: one slice, its placement, its live
 * usage and the environment a process joining it gets.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "gs/client.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: gpuslice [--socket S] show NAME [--json]\n"
	           "\n"
	           "Shows one slice: what it asked for, where it runs, what it uses now.\n");
}

int gs_cli_show(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	struct gs_errbuf eb = {0};
	bool as_json = false;
	json_t *s = NULL, *u, *g, *mig, *env, *pids;
	char a[32], b[32];
	const char *key;
	json_t *val;
	int opt;
	gs_err err;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
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
	if (optind != argc - 1) {
		usage(stderr);
		return GS_EXIT_USAGE;
	}
	err = gs_client_slice_get(gs_cli_socket, argv[optind], &s, &eb);
	if (err)
		return gs_cli_fail("show", err, &eb);
	if (as_json) {
		gs_cli_print_json(s);
		json_decref(s);
		return GS_EXIT_OK;
	}
	g = json_object_get(s, "gpu");
	mig = json_object_get(s, "mig");
	u = json_object_get(s, "usage");
	printf("name:        %s\n", gs_client_str(s, "name"));
	printf("team:        %s (owner uid %lld)\n", gs_client_str(s, "team"),
	       gs_client_int(s, "owner_uid"));
	printf("state:       %s%s%s\n", gs_client_str(s, "state"),
	       gs_client_str(s, "reason")[0] ? ": " : "",
	       gs_client_str(s, "reason"));
	printf("mode:        %s (asked: %s)\n", gs_client_str(s, "mode"),
	       gs_client_str(s, "mode_requested"));
	printf("gpu:         %lld %s\n", gs_client_int(g, "index"),
	       gs_client_str(g, "uuid"));
	if (json_is_object(mig))
		printf("mig:         %s %s (gi %lld, ci %lld)\n",
		       gs_client_str(mig, "profile"),
		       gs_client_str(mig, "uuid"), gs_client_int(mig, "gi"),
		       gs_client_int(mig, "ci"));
	gs_cli_fmt_bytes(
	    (unsigned long long)gs_client_int(u, "memory_used_bytes"), a,
	    sizeof(a));
	gs_cli_fmt_bytes((unsigned long long)gs_client_int(s, "memory_bytes"),
	                 b, sizeof(b));
	printf("memory:      %s used of %s\n", a,
	       gs_client_int(s, "memory_bytes") ? b : "no cap");
	printf("compute:     %.1f%% achieved of %s%lld%%\n",
	       gs_client_num(u, "compute_achieved"),
	       gs_client_int(s, "compute") ? "" : "no limit: ",
	       gs_client_int(s, "compute") ? gs_client_int(s, "compute") : 100);
	printf("priority:    %s, weight %lld\n", gs_client_str(s, "priority"),
	       gs_client_int(s, "weight"));
	printf("isolation:   %s\n", gs_client_str(s, "isolation"));
	gs_cli_show_swap(json_object_get(s, "swap"));
	printf("on exit:     %s\n", gs_client_str(s, "on_exit"));
	if (json_object_size(json_object_get(s, "labels")) > 0) {
		const char *sep = "";

		printf("labels:     ");
		json_object_foreach(json_object_get(s, "labels"), key, val)
		{
			printf("%s %s=%s", sep, key, json_string_value(val));
			sep = ",";
		}
		printf("\n");
	}
	printf("created:     %s\n", gs_client_str(s, "created"));
	printf("gpu time:    %.2f s, throttled %.2f s\n",
	       gs_client_num(u, "gpu_seconds"),
	       gs_client_num(u, "throttled_seconds"));
	printf("sm time:     %.2f s (SM share %.2f)\n",
	       gs_client_num(u, "sm_seconds"), gs_client_num(s, "sm_share"));
	printf("processes:   %lld", gs_client_int(u, "processes"));
	pids = json_object_get(s, "pids");
	for (size_t i = 0; i < json_array_size(pids); i++)
		printf("%s%lld", i ? "," : " (attached: ",
		       (long long)json_integer_value(json_array_get(pids, i)));
	printf("%s\n", json_array_size(pids) ? ")" : "");
	env = json_object_get(s, "env");
	printf("environment:\n");
	json_object_foreach(env, key, val)
	    printf("  %s=%s\n", key, json_string_value(val));
	json_decref(s);
	return GS_EXIT_OK;
}
